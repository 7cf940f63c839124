//! The contract between the server and the code answering messages: [`A2aHandler`], what it
//! receives ([`HandlerRequest`]) and how it reports ([`TaskEventSink`]).
//!
//! The sink writes to a [`RunSink`], a trait defined here and implemented by the engine
//! (`engine` / `sink`), so this contract imports nothing of the engine: the dependency runs
//! one way, engine → contract.

use std::sync::Arc;

use subagent_spi::{CancellationToken, async_trait};

use super::util::new_id;
use crate::task_store::ContextSessionStore;
use crate::types::{JsonObject, ProtocolVersion, v1};

/// One event a handler reports, as its [`TaskEventSink`] hands it to the run.
pub(crate) enum Emission {
    Reply(v1::Message),
    /// A state change, with an optional message and metadata (merged into the task's, and
    /// carried by the status update event).
    Status(v1::TaskState, Option<v1::Message>, Option<JsonObject>),
    Artifact {
        artifact: v1::Artifact,
        append: bool,
        last_chunk: bool,
    },
    /// A live-only status update carrying `metadata` (the progress extension): sent to the
    /// task's current subscribers in order with its other events, never saved, pushed or
    /// merged into the task (it reports, it changes nothing).
    Progress(JsonObject),
}

/// What [`RunSink::reply_now`] did with a direct reply.
pub(crate) enum ReplyNow {
    /// Taken, or refused, at once.
    Done(Result<(), SinkError>),
    /// To be sent through [`RunSink::emit`].
    Defer(v1::Message),
}

/// What a [`TaskEventSink`] writes to: the run of one task. The engine implements it for each
/// handler run; the contract knows only this trait.
#[async_trait]
pub(crate) trait RunSink: Send + Sync + 'static {
    /// The task id.
    fn task_id(&self) -> &str;
    /// The context id.
    fn context_id(&self) -> &str;
    /// Applies one event to the task (stored, streamed, pushed as the engine does).
    async fn emit(&self, event: Emission) -> Result<(), SinkError>;
    /// Takes a direct reply at once, when this sink can without waiting (no boxed future),
    /// or hands it back for [`RunSink::emit`].
    fn reply_now(&self, message: v1::Message) -> ReplyNow {
        ReplyNow::Defer(message)
    }
    /// Puts the task in `state` with `question` and waits, in this run, for the client's
    /// answer.
    async fn await_input(
        &self,
        state: v1::TaskState,
        question: v1::Message,
    ) -> Result<Arc<v1::Message>, SinkError>;
    /// From now on, messages on the running task go to `inbox`.
    fn open_inbox(&self, inbox: tokio::sync::mpsc::Sender<Arc<v1::Message>>);
    /// The agent's store of conversation sessions, when it keeps them.
    fn context_sessions(&self) -> Option<Arc<dyn ContextSessionStore>>;
}

/// The messages a client sends to a running task, for a handler that takes them
/// ([`TaskEventSink::inbox`]).
#[derive(Debug)]
pub struct TaskInbox {
    rx: tokio::sync::mpsc::Receiver<Arc<v1::Message>>,
}

impl TaskInbox {
    /// Waits for the next message (already in the task's history); `None` once the inbox is
    /// replaced by a later [`TaskEventSink::inbox`] call. Watch the cancellation token too.
    pub async fn next(&mut self) -> Option<Arc<v1::Message>> {
        self.rx.recv().await
    }
}

/// One incoming message for a handler, with the ids the server chose or continued.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct HandlerRequest {
    /// The path of the agent being called (e.g. `/echo`, empty for the root).
    pub agent_path: String,
    /// The task this message belongs to: new (server-generated) or continued.
    pub task_id: String,
    /// The conversation: the client's, the continued task's, or a new one.
    pub context_id: String,
    /// The user's message, with `taskId` and `contextId` filled in. Shared with the server,
    /// which copies it into the task's history only if the handler creates a task.
    pub message: Arc<v1::Message>,
    /// The task as it was before this message, when the message continues one (e.g. the answer
    /// to an input-required question); its history does not yet hold `message`.
    pub task: Option<v1::Task>,
    /// The request's options.
    pub configuration: Option<v1::SendMessageConfiguration>,
    /// The request's metadata.
    pub metadata: Option<JsonObject>,
    /// True for `SendStreamingMessage` / `message/stream`.
    pub streaming: bool,
    /// The protocol version the client spoke.
    pub version: ProtocolVersion,
}

impl HandlerRequest {
    /// The text of the message's text parts, joined by newlines.
    pub fn text(&self) -> String {
        let mut out = String::new();
        for p in &self.message.parts {
            if let Some(t) = p.as_text() {
                if !out.is_empty() {
                    out.push('\n');
                }
                out.push_str(t);
            }
        }
        out
    }
}

/// How a handler fails. Errors before any task event answer the request; later ones end the
/// task (`failed` / `rejected`).
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum HandlerError {
    /// The work failed: the task ends `failed` with this message.
    #[error("{message}")]
    Failed {
        /// Shown to the client as the status message.
        message: String,
    },
    /// The agent refuses the task: it ends `rejected` with this message.
    #[error("rejected: {message}")]
    Rejected {
        /// Shown to the client as the status message.
        message: String,
    },
    /// The request is wrong: answered with this A2A / JSON-RPC error code when no task event
    /// was sent yet (else the task fails).
    #[error("error {code}: {message}")]
    Protocol {
        /// A code from [`crate::types::jsonrpc::codes`].
        code: i32,
        /// The message.
        message: String,
    },
    /// An event could not be reported (the task was already closed): the task fails, and the
    /// sink's error is kept as the source. Lets handlers write `events.working().await?`.
    #[error(transparent)]
    Sink(#[from] SinkError),
}

impl HandlerError {
    /// A [`HandlerError::Failed`].
    pub fn failed(message: impl Into<String>) -> Self {
        HandlerError::Failed {
            message: message.into(),
        }
    }
}

/// Why an event was not accepted.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum SinkError {
    /// The task already reached a terminal state (or a direct reply was sent): nothing more
    /// can be reported.
    #[error("task `{task_id}` is closed: {reason}")]
    Closed {
        /// The task.
        task_id: String,
        /// Why.
        reason: &'static str,
    },
}

/// Answers A2A messages. Implement this directly for full control over the task lifecycle, or
/// host any SPI subagent with [`SubagentHandler`](super::SubagentHandler).
///
/// The handler runs in its own tokio task. It reports through `events`: either one direct
/// [`reply`](TaskEventSink::reply) (no task is stored), or task events (status changes and
/// artifacts). When it returns `Ok` with the task still running, the task completes; when it
/// returns an error, the task fails. `cancel` fires when a client cancels the task (or the
/// server shuts down); return promptly then (the task ends `canceled`).
#[async_trait]
pub trait A2aHandler: Send + Sync + 'static {
    /// Handles one message.
    async fn handle(
        &self,
        request: HandlerRequest,
        events: TaskEventSink,
        cancel: CancellationToken,
    ) -> Result<(), HandlerError>;
}

/// A handler made of one function: `handler_fn(|request, events, cancel| async move { .. })`
/// answers like an [`A2aHandler`] whose `handle` calls it. For small agents and test rigs; state
/// the function needs is captured (clone it into the `async move` block).
pub fn handler_fn<F, Fut>(f: F) -> FnHandler<F>
where
    F: Fn(HandlerRequest, TaskEventSink, CancellationToken) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = Result<(), HandlerError>> + Send + 'static,
{
    FnHandler(f)
}

/// The [`A2aHandler`] [`handler_fn`] makes.
pub struct FnHandler<F>(F);

impl<F> std::fmt::Debug for FnHandler<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("FnHandler")
    }
}

#[async_trait]
impl<F, Fut> A2aHandler for FnHandler<F>
where
    F: Fn(HandlerRequest, TaskEventSink, CancellationToken) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = Result<(), HandlerError>> + Send + 'static,
{
    async fn handle(
        &self,
        request: HandlerRequest,
        events: TaskEventSink,
        cancel: CancellationToken,
    ) -> Result<(), HandlerError> {
        (self.0)(request, events, cancel).await
    }
}

/// Where a handler reports. Events are applied to the task in order, stored, and streamed to
/// every subscriber; the calls wait while a subscriber's buffer is full (bounded memory).
///
/// The server makes one per run and hands it to [`A2aHandler::handle`]: a handler never builds
/// one, and what it writes to (the engine's run behind a crate-private trait) is not part of
/// the contract. To exercise a handler without a socket, mount it and send requests to
/// [`A2aServer::router`](super::A2aServer::router) in process:
///
/// ```
/// use subagent_a2a::server::{
///     A2aHandler, A2aServer, AgentInfo, AgentMount, HandlerError, HandlerRequest, TaskEventSink,
/// };
/// use subagent_spi::{CancellationToken, async_trait};
/// use tower::ServiceExt;
///
/// struct Shout;
///
/// #[async_trait]
/// impl A2aHandler for Shout {
///     async fn handle(
///         &self,
///         request: HandlerRequest,
///         events: TaskEventSink,
///         _cancel: CancellationToken,
///     ) -> Result<(), HandlerError> {
///         events.reply_text(request.text().to_uppercase()).await?;
///         Ok(())
///     }
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let server = A2aServer::builder()
///     .mount(AgentMount::new("/shout", AgentInfo::new("shout", "Shouts back"), Shout))
///     .build()
///     .unwrap();
/// let call = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params":
///     {"message": {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "hi"}]}}});
/// let request = http::Request::post("/shout")
///     .header("content-type", "application/json")
///     .header("A2A-Version", "1.0")
///     .body(axum::body::Body::from(call.to_string()))
///     .unwrap();
/// let response = server.router().oneshot(request).await.unwrap();
/// let body = axum::body::to_bytes(response.into_body(), 1 << 20).await.unwrap();
/// let answer: serde_json::Value = serde_json::from_slice(&body).unwrap();
/// assert_eq!(answer["result"]["message"]["parts"][0]["text"], "HI");
/// # }
/// ```
#[derive(Clone)]
pub struct TaskEventSink {
    run: Arc<dyn RunSink>,
}

impl std::fmt::Debug for TaskEventSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskEventSink")
            .field("task_id", &self.run.task_id())
            .finish()
    }
}

impl TaskEventSink {
    /// A sink writing to `run`.
    pub(crate) fn new(run: Arc<dyn RunSink>) -> Self {
        Self { run }
    }

    /// The agent's store of conversation sessions, when it keeps them (`None` also once the
    /// server is gone).
    pub(crate) fn context_sessions(&self) -> Option<Arc<dyn ContextSessionStore>> {
        self.run.context_sessions()
    }

    /// The task id.
    pub fn task_id(&self) -> &str {
        self.run.task_id()
    }

    /// The context id.
    pub fn context_id(&self) -> &str {
        self.run.context_id()
    }

    /// An agent message with a fresh id, this task's ids and one text part.
    pub fn agent_text(&self, text: impl Into<String>) -> v1::Message {
        self.agent_message(vec![v1::Part::text(text)])
    }

    /// An agent message with a fresh id, this task's ids and the given parts.
    pub fn agent_message(&self, parts: Vec<v1::Part>) -> v1::Message {
        let mut m = v1::Message::new(v1::Role::Agent, new_id(), parts);
        m.context_id = Some(self.run.context_id().to_string());
        m.task_id = Some(self.run.task_id().to_string());
        m
    }

    /// Answers with a direct message instead of a task (only as the first and only event).
    /// The message's `taskId` is cleared and its `contextId` set.
    pub async fn reply(&self, mut message: v1::Message) -> Result<(), SinkError> {
        message.task_id = None;
        if message.context_id.is_none() {
            message.context_id = Some(self.run.context_id().to_string());
        }
        match self.run.reply_now(message) {
            ReplyNow::Done(done) => done,
            ReplyNow::Defer(message) => self.run.emit(Emission::Reply(message)).await,
        }
    }

    /// Answers with a direct text message (see [`reply`](Self::reply)).
    pub async fn reply_text(&self, text: impl Into<String>) -> Result<(), SinkError> {
        let mut m = self.agent_text(text);
        m.task_id = None;
        self.reply(m).await
    }

    /// Moves the task to `state`, with an optional agent message (added to the history).
    pub async fn status(
        &self,
        state: v1::TaskState,
        message: Option<v1::Message>,
    ) -> Result<(), SinkError> {
        self.run.emit(Emission::Status(state, message, None)).await
    }

    /// Like [`status`](Self::status), with `metadata`: its keys are set in the task's
    /// `metadata` (replacing the same keys) and the status update event carries it, so
    /// streaming clients, `GetTask` and push receivers all see it (e.g. a usage report,
    /// [`crate::types::usage`]).
    pub async fn status_with_metadata(
        &self,
        state: v1::TaskState,
        message: Option<v1::Message>,
        metadata: JsonObject,
    ) -> Result<(), SinkError> {
        self.run
            .emit(Emission::Status(state, message, Some(metadata)))
            .await
    }

    /// Sends the task's streaming clients a status update in its current state, with no
    /// message and this `metadata` (e.g. progress events, [`crate::types::progress`]). Live
    /// only: nothing is saved, pushed or added to the task; without a streaming client it
    /// goes nowhere.
    pub async fn live_metadata(&self, metadata: JsonObject) -> Result<(), SinkError> {
        self.run.emit(Emission::Progress(metadata)).await
    }

    /// Moves the task to `working`.
    pub async fn working(&self) -> Result<(), SinkError> {
        self.status(v1::TaskState::Working, None).await
    }

    /// Moves the task to `working` with a progress message.
    pub async fn working_text(&self, text: impl Into<String>) -> Result<(), SinkError> {
        let m = self.agent_text(text);
        self.status(v1::TaskState::Working, Some(m)).await
    }

    /// Completes the task, with an optional final message.
    pub async fn complete(&self, message: Option<v1::Message>) -> Result<(), SinkError> {
        self.status(v1::TaskState::Completed, message).await
    }

    /// Fails the task with a message.
    pub async fn fail(&self, text: impl Into<String>) -> Result<(), SinkError> {
        let m = self.agent_text(text);
        self.status(v1::TaskState::Failed, Some(m)).await
    }

    /// Rejects the task with a message.
    pub async fn reject(&self, text: impl Into<String>) -> Result<(), SinkError> {
        let m = self.agent_text(text);
        self.status(v1::TaskState::Rejected, Some(m)).await
    }

    /// Asks the client a question: the task becomes `input-required` and waits for the next
    /// message with its `taskId`.
    pub async fn require_input(&self, question: impl Into<String>) -> Result<(), SinkError> {
        let m = self.agent_text(question);
        self.status(v1::TaskState::InputRequired, Some(m)).await
    }

    /// Asks the client and waits for the answer **in this handler run**: the task becomes
    /// `input-required` with `question`, and the client's next message with this `taskId`
    /// (its `contextId` must match) is returned here, the task `working` again, instead of
    /// starting a new handler run. Lets a handler ask in the middle of its work (an approval)
    /// and go on. Questions are asked one at a time; concurrent calls queue.
    ///
    /// There is no time limit here: wrap the call in `tokio::time::timeout` (and watch the
    /// cancellation token). Dropping the future withdraws the question (a message arriving
    /// later is refused as for any running task); the task stays `input-required` until the
    /// handler's next event. Fails when the task is closed meanwhile (canceled).
    pub async fn await_input(&self, question: v1::Message) -> Result<Arc<v1::Message>, SinkError> {
        self.run
            .await_input(v1::TaskState::InputRequired, question)
            .await
    }

    /// Takes further messages while the task runs: from now on, a client message with this
    /// task's `taskId` (and its `contextId`, if it names one) joins the task's history, and
    /// arrives on the returned [`TaskInbox`] instead of being refused as a message to a
    /// running task; the task stays `working` and the sender gets it back as it is then (a
    /// blocking send waits, as ever, for the task to end or be interrupted). For
    /// conversational agents that go on reading while they work. Up to `capacity` messages
    /// wait unread (at least one); more are refused. Dropping the inbox closes it; calling
    /// this again replaces it.
    pub fn inbox(&self, capacity: usize) -> TaskInbox {
        let (tx, rx) = tokio::sync::mpsc::channel(capacity.max(1));
        self.run.open_inbox(tx);
        TaskInbox { rx }
    }

    /// Adds an artifact, or, with `append`, extends the artifact with the same id; `last_chunk`
    /// marks its final piece.
    pub async fn artifact(
        &self,
        artifact: v1::Artifact,
        append: bool,
        last_chunk: bool,
    ) -> Result<(), SinkError> {
        self.run
            .emit(Emission::Artifact {
                artifact,
                append,
                last_chunk,
            })
            .await
    }

    /// Adds a one-part text artifact with a fresh id.
    pub async fn text_artifact(
        &self,
        name: Option<&str>,
        text: impl Into<String>,
    ) -> Result<(), SinkError> {
        let a = v1::Artifact {
            artifact_id: new_id(),
            name: name.map(str::to_string),
            description: None,
            parts: vec![v1::Part::text(text)],
            metadata: None,
            extensions: Vec::new(),
        };
        self.artifact(a, false, true).await
    }
}
