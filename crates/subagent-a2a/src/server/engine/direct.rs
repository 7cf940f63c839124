//! The direct-reply path of a blocking send: the handler of a new task runs inside the request,
//! and what answers the request (a direct Message, or the task once it is terminal or
//! interrupted) is handed over in place, not through the run's event fan-out.
//!
//! A blocking `SendMessage` (not streaming, not `returnImmediately`) of a new task has exactly
//! one listener, the request itself, until the handler's first task event. So such a send
//! starts no run of the engine: its handler reports to a [`DirectSink`], which holds a direct
//! reply (no task, nothing registered, nothing stored, no run state) until the request takes
//! it. Only when the handler does something a task needs (a status, an artifact, a question,
//! an inbox, or returning without a reply) does the sink become a run of the engine
//! ([`Run::create`]), started exactly as any run (then `SubscribeToTask` may join through the
//! usual subscribers, and the task, its store writes, push notifications, the trace span and
//! cancellation follow as for any run); from then on, the run's [`Direct`] slot holds the
//! request's answer, or notes that the task settled, and wakes the request if the handler
//! reported from another tokio task.

use std::future::poll_fn;
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::task::{Poll, Waker};

use subagent_spi::{CancellationToken, async_trait};
use tokio::sync::mpsc;

use super::{ApiError, Driver, Engine, Fence, NewRun, Run, SendParams, settled_reply};
use crate::server::handler::{
    Emission, HandlerError, HandlerRequest, ReplyNow, RunSink, SinkError, TaskEventSink,
};
use crate::task_store::ContextSessionStore;
use crate::types::{ProtocolVersion, v1};

/// What the request of a direct run waits for once the run exists: set by the engine as it
/// applies the handler's events ([`Direct::reply`], [`Direct::settle`]).
pub(crate) struct Direct {
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    /// The handler's direct reply.
    reply: Option<v1::Message>,
    /// The task reached a state that answers a blocking send (terminal or interrupted).
    settled: bool,
    /// The request, when it waits for a handler reporting from another tokio task.
    waker: Option<Waker>,
}

impl Direct {
    /// A slot that wakes `waker` (the request, waiting already) on its first news.
    fn waking(waker: Option<Waker>) -> Self {
        Self {
            inner: Mutex::new(Inner {
                waker,
                ..Inner::default()
            }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The handler answered with a direct message.
    pub(crate) fn reply(&self, message: v1::Message) {
        let mut inner = self.lock();
        inner.reply = Some(message);
        if let Some(w) = inner.waker.take() {
            w.wake();
        }
    }

    /// The task is terminal or interrupted: the request answers with it.
    pub(crate) fn settle(&self) {
        let mut inner = self.lock();
        inner.settled = true;
        if let Some(w) = inner.waker.take() {
            w.wake();
        }
    }
}

/// A direct run as the binding layer holds it: the handler's sink and its run.
pub(crate) struct DirectStart {
    sink: Arc<DirectSink>,
    driver: Driver,
}

/// Starts the handler of a blocking send of a new task (`task_id`, `context_id` chosen) on a
/// [`DirectSink`]: no run of the engine yet.
pub(crate) fn start(
    engine: &Arc<Engine>,
    p: SendParams,
    task_id: String,
    context_id: String,
    pending_push: Option<v1::TaskPushNotificationConfig>,
) -> DirectStart {
    let mut message = p.message;
    message.task_id = Some(task_id.clone());
    message.context_id = Some(context_id.clone());
    let message = Arc::new(message);
    let cancel = engine.run_token();
    let sink = Arc::new(DirectSink {
        engine: Arc::downgrade(engine),
        cancel: cancel.clone(),
        version: p.version,
        slot: Mutex::new(Slot {
            phase: Phase::Open,
            message: Some(message.clone()),
            pending_push,
            waker: None,
            inbox: None,
        }),
        task_id: task_id.clone(),
        context_id: context_id.clone(),
    });
    let request = HandlerRequest {
        agent_path: engine.agent_path.clone(),
        task_id,
        context_id,
        message,
        task: None,
        configuration: p.configuration,
        metadata: p.metadata,
        streaming: p.streaming,
        version: p.version,
    };
    let s2 = sink.clone();
    let driver = Driver::handler(
        engine.handler.clone(),
        request,
        TaskEventSink::new(sink.clone()),
        cancel,
        move |result| async move { s2.finish(result).await },
    );
    DirectStart { sink, driver }
}

/// Where the handler of a direct run reports: holds a direct reply itself, and becomes a run
/// of the engine on the first event a task needs.
pub(crate) struct DirectSink {
    engine: Weak<Engine>,
    task_id: String,
    context_id: String,
    cancel: CancellationToken,
    version: ProtocolVersion,
    slot: Mutex<Slot>,
}

struct Slot {
    phase: Phase,
    /// The user's message, for the run's task (dropped with a reply).
    message: Option<Arc<v1::Message>>,
    /// A push config sent with the message, for the run's task.
    pending_push: Option<v1::TaskPushNotificationConfig>,
    /// The request, waiting for a handler reporting from another tokio task (moved to the
    /// run's [`Direct`] when the run starts).
    waker: Option<Waker>,
    /// An inbox opened after the handler's answer: it never gets a message (kept open, as a
    /// finished run keeps it).
    inbox: Option<mpsc::Sender<Arc<v1::Message>>>,
}

enum Phase {
    /// No event yet.
    Open,
    /// The handler replied: the message, until the request takes it.
    Replied(Option<v1::Message>),
    /// The handler failed with a protocol error before any event: the request's answer.
    Refused(ApiError),
    /// The handler reported a task event (or asked, opened its inbox, or returned without a
    /// reply): a run of the engine, which has everything from here on.
    Run(Arc<Run>),
}

/// What the handler's next call reaches.
enum Target {
    Run(Arc<Run>),
    Closed(&'static str),
}

impl DirectSink {
    fn lock(&self) -> MutexGuard<'_, Slot> {
        self.slot.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn closed(&self, reason: &'static str) -> SinkError {
        SinkError::Closed {
            task_id: self.task_id.clone(),
            reason,
        }
    }

    /// Keeps the handler's direct reply for the request.
    fn replied(slot: &mut Slot, message: v1::Message) {
        slot.phase = Phase::Replied(Some(message));
        // A reply stores no task: the user's message and push config are not needed.
        slot.message = None;
        slot.pending_push = None;
        if let Some(w) = slot.waker.take() {
            w.wake();
        }
    }

    /// The run behind this sink, started now if the handler had reported nothing yet.
    fn run(&self, slot: &mut Slot) -> Target {
        match &slot.phase {
            Phase::Run(r) => Target::Run(r.clone()),
            Phase::Replied(_) => Target::Closed("a direct reply was sent"),
            Phase::Refused(_) => Target::Closed("the task reached a terminal state"),
            Phase::Open => {
                let run = Run::create(
                    self.engine.clone(),
                    NewRun {
                        task_id: self.task_id.clone(),
                        context_id: self.context_id.clone(),
                        cancel: self.cancel.clone(),
                        task: None,
                        user_message: slot.message.take(),
                        subscribers: Vec::new(),
                        pending_push: slot.pending_push.take(),
                        version: self.version,
                        direct: Some(Direct::waking(slot.waker.take())),
                        fence: Fence::default(),
                    },
                );
                slot.phase = Phase::Run(run.clone());
                Target::Run(run)
            }
        }
    }

    /// The run for a task event, or why there is none.
    fn target(&self) -> Result<Arc<Run>, SinkError> {
        match self.run(&mut self.lock()) {
            Target::Run(r) => Ok(r),
            Target::Closed(reason) => Err(self.closed(reason)),
        }
    }

    /// Called once the handler returned: a protocol error before any event answers the
    /// request; any other end of a handler that did not reply is its run's to finish (the
    /// task completes or fails, as for any run).
    async fn finish(&self, result: Result<(), HandlerError>) {
        let run = {
            let mut slot = self.lock();
            match (&slot.phase, &result) {
                (Phase::Open, Err(HandlerError::Protocol { code, message })) => {
                    slot.phase = Phase::Refused(ApiError::new(*code, message.clone()));
                    slot.message = None;
                    slot.pending_push = None;
                    if let Some(w) = slot.waker.take() {
                        w.wake();
                    }
                    None
                }
                (Phase::Replied(_) | Phase::Refused(_), _) => None,
                _ => match self.run(&mut slot) {
                    Target::Run(r) => Some(r),
                    Target::Closed(_) => None,
                },
            }
        };
        if let Some(run) = run {
            run.finish(result).await;
        }
    }
}

#[async_trait]
impl RunSink for DirectSink {
    fn task_id(&self) -> &str {
        &self.task_id
    }

    fn context_id(&self) -> &str {
        &self.context_id
    }

    fn reply_now(&self, message: v1::Message) -> ReplyNow {
        let mut slot = self.lock();
        match &slot.phase {
            Phase::Open => {
                Self::replied(&mut slot, message);
                ReplyNow::Done(Ok(()))
            }
            Phase::Run(_) => ReplyNow::Defer(message),
            Phase::Replied(_) => ReplyNow::Done(Err(self.closed("a direct reply was sent"))),
            Phase::Refused(_) => {
                ReplyNow::Done(Err(self.closed("the task reached a terminal state")))
            }
        }
    }

    async fn emit(&self, event: Emission) -> Result<(), SinkError> {
        let event = match event {
            Emission::Reply(m) => match self.reply_now(m) {
                ReplyNow::Done(done) => return done,
                ReplyNow::Defer(m) => Emission::Reply(m),
            },
            e => e,
        };
        self.target()?.emit(event).await
    }

    async fn await_input(
        &self,
        state: v1::TaskState,
        question: v1::Message,
    ) -> Result<Arc<v1::Message>, SinkError> {
        self.target()?.await_input(state, question).await
    }

    fn open_inbox(&self, inbox: mpsc::Sender<Arc<v1::Message>>) {
        let mut slot = self.lock();
        match self.run(&mut slot) {
            Target::Run(r) => {
                drop(slot);
                *r.inbox.lock().unwrap_or_else(|e| e.into_inner()) = Some(inbox);
            }
            Target::Closed(_) => slot.inbox = Some(inbox),
        }
    }

    fn context_sessions(&self) -> Option<Arc<dyn ContextSessionStore>> {
        self.engine.upgrade().and_then(|e| e.sessions())
    }
}

/// What ends the request's wait.
enum Outcome {
    Message(v1::Message),
    /// The task settled, or the handler ended: the answer is the run's (or its refusal).
    Ended,
}

/// Drives the handler of a direct run inside the request until it answers (a reply, a settled
/// task, or its end), then answers as a blocking send does: the message, or the task with
/// `history_length` messages of history, or the handler's error. A handler that goes on after
/// answering runs on in its own tokio task.
pub(crate) async fn answer(
    started: DirectStart,
    history_length: Option<i32>,
) -> Result<v1::SendMessageResponse, ApiError> {
    let DirectStart { sink, mut driver } = started;
    let outcome = poll_fn(|cx| {
        // The handler first (it usually answers within this poll), then what it reported.
        let done = match driver.pending() {
            Some(fut) => {
                if fut.as_mut().poll(cx).is_ready() {
                    driver.done();
                    true
                } else {
                    false
                }
            }
            None => true,
        };
        let mut guard = sink.lock();
        let slot = &mut *guard;
        let waker = match &mut slot.phase {
            Phase::Replied(m) => {
                return Poll::Ready(m.take().map_or(Outcome::Ended, Outcome::Message));
            }
            Phase::Refused(_) => return Poll::Ready(Outcome::Ended),
            Phase::Open if done => return Poll::Ready(Outcome::Ended),
            Phase::Open => &mut slot.waker,
            Phase::Run(run) => {
                let Some(direct) = run.direct.as_ref() else {
                    return Poll::Ready(Outcome::Ended);
                };
                let mut inner = direct.lock();
                if let Some(m) = inner.reply.take() {
                    return Poll::Ready(Outcome::Message(m));
                }
                if inner.settled || done {
                    return Poll::Ready(Outcome::Ended);
                }
                if !inner
                    .waker
                    .as_ref()
                    .is_some_and(|w| w.will_wake(cx.waker()))
                {
                    inner.waker = Some(cx.waker().clone());
                }
                return Poll::Pending;
            }
        };
        if !waker.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
            *waker = Some(cx.waker().clone());
        }
        Poll::Pending
    })
    .await;
    // Whatever the handler does after answering runs on by itself (and must: `task()` below
    // may queue behind its `finish` for the run's state).
    driver.spawn();
    let run = match outcome {
        Outcome::Message(m) => return Ok(v1::SendMessageResponse::Message(m)),
        Outcome::Ended => match &sink.lock().phase {
            Phase::Run(r) => r.clone(),
            Phase::Refused(e) => return Err(e.clone()),
            Phase::Open | Phase::Replied(_) => {
                return Err(ApiError::internal("the agent ended without answering"));
            }
        },
    };
    let task = run.take_or_clone_task().await;
    settled_reply(&run, task, history_length).await
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    use axum::body::Body;
    use bytes::Bytes;
    use tower::ServiceExt as _;

    use crate::server::{A2aHandler, A2aServer, AgentInfo, AgentMount, HandlerError, handler_fn};

    const SEND: &str = r#"{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"hi"}]}}}"#;

    async fn call(router: &axum::Router, body: Body) -> serde_json::Value {
        let req = http::Request::post("/")
            .header("content-type", "application/json")
            .header("A2A-Version", "1.0")
            .body(body)
            .expect("request");
        let resp = router.clone().oneshot(req).await.expect("infallible");
        let bytes = axum::body::to_bytes(resp.into_body(), 1 << 20)
            .await
            .expect("body");
        serde_json::from_slice(&bytes).expect("json")
    }

    /// The text of a direct reply in a `SendMessage` answer.
    fn reply_text(v: &serde_json::Value) -> &serde_json::Value {
        &v["result"]["message"]["parts"][0]["text"]
    }

    fn router(handler: impl A2aHandler) -> axum::Router {
        A2aServer::builder()
            .mount(AgentMount::new("/", AgentInfo::new("t", "T"), handler))
            .build()
            .expect("server")
            .router()
    }

    /// Sets its flag when the request body's bytes are freed.
    struct Owner(&'static [u8], Arc<AtomicBool>);
    impl AsRef<[u8]> for Owner {
        fn as_ref(&self) -> &[u8] {
            self.0
        }
    }
    impl Drop for Owner {
        fn drop(&mut self) {
            self.1.store(true, Ordering::SeqCst);
        }
    }

    /// Answers whether the request body was already freed when it ran.
    fn body_probe(freed: Arc<AtomicBool>) -> impl A2aHandler {
        handler_fn(move |_req, ev, _cancel| {
            let freed = freed.load(Ordering::SeqCst);
            async move {
                ev.reply_text(if freed { "freed" } else { "held" }).await?;
                Ok(())
            }
        })
    }

    /// A large message must not be held twice (raw body and parsed form) while its handler
    /// runs: the JSON-RPC body is freed once the params are read.
    #[tokio::test]
    async fn a_send_frees_its_body_before_the_handler_runs() {
        let freed = Arc::new(AtomicBool::new(false));
        let app = router(body_probe(freed.clone()));
        let body = Bytes::from_owner(Owner(SEND.as_bytes(), freed.clone()));
        let v = call(&app, Body::from(body)).await;
        assert_eq!(reply_text(&v), "freed", "{v}");
    }

    /// Replies from a task the handler spawned (the handler itself waits on it).
    fn spawned() -> impl A2aHandler {
        handler_fn(|req, ev, _cancel| async move {
            let text = req.text();
            let emitter = ev.clone();
            let job = tokio::spawn(async move {
                tokio::task::yield_now().await;
                emitter.reply_text(format!("from a task: {text}")).await
            });
            // Keeps the handler pending until the other task has replied.
            let _ = job.await;
            Ok(())
        })
    }

    #[tokio::test]
    async fn a_reply_from_another_task_answers_the_blocking_send() {
        let v = call(&router(spawned()), Body::from(SEND)).await;
        assert_eq!(reply_text(&v), "from a task: hi", "{v}");
    }

    /// Completes its task, then waits (its rest runs on after the answer).
    fn complete_then_wait(go: Arc<tokio::sync::Notify>, ended: Arc<AtomicBool>) -> impl A2aHandler {
        handler_fn(move |_req, ev, _cancel| {
            let (go, ended) = (go.clone(), ended.clone());
            async move {
                ev.complete(Some(ev.agent_text("done"))).await?;
                go.notified().await;
                ended.store(true, Ordering::SeqCst);
                Ok(())
            }
        })
    }

    #[tokio::test]
    async fn a_settled_task_answers_while_its_handler_runs_on() {
        let go = Arc::new(tokio::sync::Notify::new());
        let ended = Arc::new(AtomicBool::new(false));
        let app = router(complete_then_wait(go.clone(), ended.clone()));
        let v = call(&app, Body::from(SEND)).await;
        let task = &v["result"]["task"];
        assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{v}");
        assert_eq!(task["history"].as_array().map(Vec::len), Some(2), "{v}");
        assert!(!ended.load(Ordering::SeqCst));
        // The handler's rest was handed to its own tokio task: it ends once released.
        go.notify_one();
        for _ in 0..100 {
            if ended.load(Ordering::SeqCst) {
                break;
            }
            tokio::task::yield_now().await;
        }
        assert!(ended.load(Ordering::SeqCst));
    }

    /// Fails before any event: the request gets the error.
    fn refuses() -> impl A2aHandler {
        handler_fn(|_req, _ev, _cancel| async {
            Err(HandlerError::Protocol {
                code: crate::types::jsonrpc::codes::INVALID_PARAMS,
                message: "no thanks".into(),
            })
        })
    }

    /// Completes its task from a spawned tokio task, then waits until released: the request
    /// must be woken by the task's settling (the run starts on that other tokio task, after
    /// the request began waiting).
    fn complete_elsewhere(go: Arc<tokio::sync::Notify>) -> impl A2aHandler {
        handler_fn(move |_req, ev, _cancel| {
            let go = go.clone();
            async move {
                let emitter = ev.clone();
                tokio::spawn(async move {
                    tokio::task::yield_now().await;
                    let m = emitter.agent_text("done elsewhere");
                    emitter.complete(Some(m)).await
                });
                go.notified().await;
                Ok(())
            }
        })
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_task_settled_from_another_task_wakes_the_blocking_send() {
        let go = Arc::new(tokio::sync::Notify::new());
        let app = router(complete_elsewhere(go.clone()));
        let v = tokio::time::timeout(
            std::time::Duration::from_secs(30),
            call(&app, Body::from(SEND)),
        )
        .await
        .expect("the request was woken");
        go.notify_one();
        let task = &v["result"]["task"];
        assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{v}");
        assert_eq!(
            task["status"]["message"]["parts"][0]["text"], "done elsewhere",
            "{v}"
        );
    }

    /// Replies twice, reporting what the second reply and a later status got.
    fn reply_twice(seen: Arc<std::sync::Mutex<Vec<String>>>) -> impl A2aHandler {
        handler_fn(move |_req, ev, _cancel| {
            let seen = seen.clone();
            async move {
                ev.reply_text("first").await?;
                let second = ev.reply_text("second").await;
                let status = ev.working().await;
                let mut seen = seen.lock().expect("lock");
                seen.push(format!("{second:?}"));
                seen.push(format!("{status:?}"));
                Ok(())
            }
        })
    }

    #[tokio::test]
    async fn after_a_direct_reply_nothing_more_is_accepted() {
        let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
        let v = call(&router(reply_twice(seen.clone())), Body::from(SEND)).await;
        assert_eq!(reply_text(&v), "first", "{v}");
        assert!(v["result"]["message"].get("taskId").is_none(), "{v}");
        let seen = seen.lock().expect("lock").clone();
        assert_eq!(seen.len(), 2, "{seen:?}");
        for s in &seen {
            assert!(s.contains("a direct reply was sent"), "{seen:?}");
        }
    }

    /// Opens an inbox (which needs a run), then replies.
    fn inbox_then_reply() -> impl A2aHandler {
        handler_fn(|_req, ev, _cancel| async move {
            let _inbox = ev.inbox(1);
            ev.reply_text("after the inbox").await?;
            Ok(())
        })
    }

    #[tokio::test]
    async fn a_reply_after_the_run_started_still_answers() {
        let v = call(&router(inbox_then_reply()), Body::from(SEND)).await;
        assert_eq!(reply_text(&v), "after the inbox", "{v}");
    }

    /// Returns without reporting anything: the task completes, as for any run.
    fn silent() -> impl A2aHandler {
        handler_fn(|_req, _ev, _cancel| async { Ok(()) })
    }

    #[tokio::test]
    async fn a_handler_that_reports_nothing_completes_its_task() {
        let app = router(silent());
        let v = call(&app, Body::from(SEND)).await;
        let task = &v["result"]["task"];
        assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{v}");
        let id = task["id"].as_str().expect("task id").to_string();
        let get =
            format!(r#"{{"jsonrpc":"2.0","id":2,"method":"GetTask","params":{{"id":"{id}"}}}}"#);
        let v = call(&app, Body::from(get)).await;
        assert_eq!(v["result"]["id"], id.as_str(), "{v}");
        assert_eq!(
            v["result"]["status"]["state"], "TASK_STATE_COMPLETED",
            "{v}"
        );
    }

    /// Replies, and reports the ids its sink and request saw.
    fn id_probe(ids: Arc<std::sync::Mutex<Option<(String, String)>>>) -> impl A2aHandler {
        handler_fn(move |req, ev, _cancel| {
            assert_eq!(req.task_id, ev.task_id());
            assert_eq!(req.message.task_id.as_deref(), Some(ev.task_id()));
            *ids.lock().expect("lock") = Some((ev.task_id().into(), ev.context_id().into()));
            async move {
                ev.reply_text("ok").await?;
                Ok(())
            }
        })
    }

    /// The spec's rule: a direct Message reply creates no task (its id is unknown to
    /// `GetTask`), and every send gets ids of its own.
    #[tokio::test]
    async fn a_direct_reply_creates_no_task_and_ids_stay_unique() {
        let ids = Arc::new(std::sync::Mutex::new(None));
        let app = router(id_probe(ids.clone()));
        let mut seen = std::collections::HashSet::new();
        for _ in 0..50 {
            let v = call(&app, Body::from(SEND)).await;
            assert_eq!(reply_text(&v), "ok", "{v}");
            let (task_id, context_id) = ids.lock().expect("lock").take().expect("ids");
            assert_eq!(v["result"]["message"]["contextId"], context_id.as_str());
            assert!(seen.insert(task_id.clone()), "task id reused: {task_id}");
            assert!(
                seen.insert(context_id.clone()),
                "context id reused: {context_id}"
            );
            let get = format!(
                r#"{{"jsonrpc":"2.0","id":2,"method":"GetTask","params":{{"id":"{task_id}"}}}}"#
            );
            let v = call(&app, Body::from(get)).await;
            assert_eq!(v["error"]["code"], -32001, "{v}");
        }
    }

    #[tokio::test]
    async fn a_handler_error_before_any_event_answers_the_blocking_send() {
        let v = call(&router(refuses()), Body::from(SEND)).await;
        assert_eq!(v["error"]["code"], -32602, "{v}");
        assert_eq!(v["error"]["message"], "no thanks", "{v}");
    }
}
