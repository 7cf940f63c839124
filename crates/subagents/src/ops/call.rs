//! [`A2aCall`]: one message to a remote A2A agent, outside any assembly (what `subagents call`
//! does): its card resolved, the message sent, the outcome and the remote task's ids returned.

use std::time::Duration;

use derive_setters::Setters;

use subagent_a2a::client::{A2aExecutor, A2aResolver, KIND, decode_session, encode_session};
use subagent_spi::{
    Kind, SubagentError, SubagentExecutor, SubagentReference, SubagentResolver, TaskCall,
    TaskContext, TaskOutcome,
};

/// The default of [`A2aCall::timeout`]: five minutes.
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(300);

/// One message to a remote A2A agent (feature `a2a`): [`send`](Self::send) resolves the agent's
/// card (`URL/.well-known/...`), sends the message and waits for the outcome, all within
/// [`timeout`](Self::timeout).
///
/// The agent's questions (`input-required`, `auth-required`) go to the approver of the context
/// given to `send`; without one the call ends `needs_input`, and
/// [`A2aCallOutcome::task_id`] / [`context_id`](A2aCallOutcome::context_id) send the reply with
/// [`task_id`](Self::task_id) / [`context_id`](Self::context_id). Credentials are named by
/// environment variable, so no secret is passed around.
///
/// ```no_run
/// # async fn demo() -> Result<(), subagents::CallError> {
/// let answer = subagents::A2aCall::new("http://127.0.0.1:9000/researcher", "Summarise issue 29")
///     .send(subagents::TaskContext::new())
///     .await?;
/// println!("{}", answer.outcome.text);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Setters)]
#[setters(generate = false)] // the fields marked `#[setters(generate)]` have a plain setter
#[must_use]
pub struct A2aCall {
    url: String,
    prompt: String,
    /// Streams the run (status updates and text to the context's progress sink) instead of
    /// waiting for the result (default off).
    #[setters(generate)]
    stream: bool,
    /// The environment variable holding a bearer token to send.
    #[setters(generate, strip_option, into)]
    bearer_env: Option<String>,
    /// The environment variable holding an API key to send (in the header the card names).
    #[setters(generate, strip_option, into)]
    api_key_env: Option<String>,
    /// Sends the message to this remote task (the reply to a task that stopped for input).
    #[setters(generate, strip_option, into)]
    task_id: Option<String>,
    /// The remote context of [`task_id`](Self::task_id); alone, a new task in that context.
    #[setters(generate, strip_option, into)]
    context_id: Option<String>,
    timeout: Duration,
}

/// What an [`A2aCall`] ended with.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct A2aCallOutcome {
    /// The agent's name (from its card).
    pub agent: String,
    /// Its kind (`A2A`).
    pub kind: Kind,
    /// The outcome: text, status, usage.
    pub outcome: TaskOutcome,
    /// The remote task's id, when the agent gave one (to reply to a question with).
    pub task_id: Option<String>,
    /// The remote context's id, when the agent gave one.
    pub context_id: Option<String>,
}

/// An [`A2aCall`] failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CallError {
    /// The agent's card cannot be read or used (a configuration problem: the URL, the
    /// credentials' variables).
    #[error("{0}")]
    Resolve(#[source] SubagentError),
    /// The message could not be sent or the run failed.
    #[error("{0}")]
    Failed(#[source] SubagentError),
    /// No answer within [`A2aCall::timeout`].
    #[error("no answer from {url} within {} s", .after.as_secs())]
    Timeout {
        /// The agent's URL, credentials removed.
        url: String,
        /// The timeout.
        after: Duration,
    },
}

impl A2aCall {
    /// A call of the agent at `url` with `prompt` (with [`task_id`](Self::task_id): the reply to
    /// the agent's question).
    pub fn new(url: impl Into<String>, prompt: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            prompt: prompt.into(),
            stream: false,
            bearer_env: None,
            api_key_env: None,
            task_id: None,
            context_id: None,
            timeout: DEFAULT_CALL_TIMEOUT,
        }
    }

    /// How long resolving the card and the whole run may take (default
    /// [`DEFAULT_CALL_TIMEOUT`]; at least one second).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout.max(Duration::from_secs(1));
        self
    }

    /// Resolves the agent and sends the message. `ctx` brings the approver, the progress sink
    /// and the cancellation token (cancelled: the remote task is cancelled and the outcome
    /// keeps what it had); the call runs at depth 1 under the agent's name.
    pub async fn send(self, ctx: TaskContext) -> Result<A2aCallOutcome, CallError> {
        let limit = self.timeout;
        let url = crate::models::redacted(&self.url);
        match tokio::time::timeout(limit, self.send_once(ctx)).await {
            Ok(result) => result,
            Err(_) => Err(CallError::Timeout { url, after: limit }),
        }
    }

    async fn send_once(self, ctx: TaskContext) -> Result<A2aCallOutcome, CallError> {
        let mut reference = SubagentReference::new(&self.url, KIND)
            .with_metadata("streaming", if self.stream { "true" } else { "false" });
        if let Some(var) = &self.bearer_env {
            reference = reference.with_metadata("auth.bearer_env", var.clone());
        }
        if let Some(var) = &self.api_key_env {
            reference = reference.with_metadata("auth.api_key_env", var.clone());
        }
        // Cancelling stops the wait for the card too.
        let cancel = ctx.cancel().clone();
        let resolver = A2aResolver::new();
        let def = tokio::select! {
            r = resolver.resolve(&reference) => r.map_err(CallError::Resolve)?,
            () = cancel.cancelled() => {
                return Err(CallError::Failed(SubagentError::Cancelled {
                    agent: crate::models::redacted(&self.url),
                }));
            }
        };
        let ctx = ctx.with_agent(def.name()).with_depth(1);
        let mut call = TaskCall::new(def.name(), "command-line call", self.prompt);
        if self.task_id.is_some() || self.context_id.is_some() {
            call.resume = Some(encode_session(
                self.context_id.as_deref(),
                self.task_id.as_deref(),
            ));
        }
        let agent = def.name().to_string();
        let outcome = A2aExecutor::new()
            .execute(call, def, ctx)
            .await
            .map_err(CallError::Failed)?;
        let (context_id, task_id) = outcome
            .session_id
            .as_deref()
            .and_then(decode_session)
            .unwrap_or_default();
        Ok(A2aCallOutcome {
            agent,
            kind: KIND,
            outcome,
            task_id,
            context_id,
        })
    }
}
