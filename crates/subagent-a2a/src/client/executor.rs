//! [`A2aExecutor`]: runs a `TaskCall` against a remote A2A agent.

use std::time::{Duration, Instant};

use futures::StreamExt;
use subagent_core::{ApprovalText, Budget, BudgetExt};
use subagent_spi::{
    ApprovalRequest, ProgressKind, SubagentError, SubagentKind, SubagentReference, TaskCall,
    TaskContext, TaskOutcome, TaskStatus, Usage, UsageNode,
};

use super::definition::A2aSubagentDefinition;
use super::endpoint::EventStream;
use super::resolver::A2aResolver;
use super::transport::A2aClient;
use crate::error::A2aError;
use crate::types::JsonObject;
use crate::types::approval::ApprovalQuestion;
use crate::types::progress::RemoteProgress;
use crate::types::usage::{UsageReport, read_usage_report};
use crate::types::v1::{self, PartContent, TaskState};
use crate::util::new_id;

/// The most questions (`input-required` / `auth-required`) of one run answered through the
/// caller's approver; after that the run ends as `needs_input`, resumable.
pub(super) const MAX_QUESTIONS: usize = 32;

/// How long a best-effort `CancelTask` may take after the caller gave up.
const CANCEL_GRACE: Duration = Duration::from_secs(10);

/// The most artifact content (bytes of text, data and inline files) kept for one task: a peer
/// streaming endless chunks gets an error instead of growing memory without bound.
pub const MAX_ARTIFACT_BYTES: usize = 16 * 1024 * 1024;

fn parts_size(parts: &[v1::Part]) -> usize {
    parts
        .iter()
        .map(|p| match &p.content {
            PartContent::Text(t) | PartContent::Raw(t) | PartContent::Url(t) => t.len(),
            PartContent::Data(v) => v.to_string().len(),
        })
        .sum()
}

/// Runs tasks on remote A2A agents resolved by [`A2aResolver`](super::A2aResolver).
///
/// One call = one user message: `SendStreamingMessage` when the card declares streaming (each
/// event becomes a progress event), else `SendMessage`; a task that is still running is
/// followed (`SubscribeToTask`, or `GetTask` polling) to a terminal or interrupted state.
/// Cancelling `ctx.cancel()` sends `CancelTask` and returns a `cancelled` outcome.
///
/// It is the whole `A2A` kind ([`SubagentKind`]): it resolves references with its
/// [`A2aResolver`] (on the same HTTP client), and the SPI's blanket impls make it the
/// [`SubagentResolver`](subagent_spi::SubagentResolver) and
/// [`SubagentExecutor`](subagent_spi::SubagentExecutor) hosts use.
#[derive(Debug, Clone)]
pub struct A2aExecutor {
    http: reqwest::Client,
    /// Reads agent cards for [`SubagentKind::resolve`].
    resolver: A2aResolver,
}

impl Default for A2aExecutor {
    fn default() -> Self {
        Self::new()
    }
}

impl A2aExecutor {
    /// An executor with its own HTTP client. A `reqwest::Client` in the context's extensions
    /// takes precedence.
    pub fn new() -> Self {
        Self::with_client(super::default_http_client())
    }

    /// An executor using the given HTTP client, for cards too.
    pub fn with_client(http: reqwest::Client) -> Self {
        Self {
            resolver: A2aResolver::with_client(http.clone()),
            http,
        }
    }

    /// Resolves references with `resolver` (builder style), e.g. one with a card-signature
    /// policy ([`A2aResolver::with_card_verification`]).
    #[must_use]
    pub fn with_resolver(mut self, resolver: A2aResolver) -> Self {
        self.resolver = resolver;
        self
    }
}

/// Encodes the (contextId, taskId) pair a later `resume` continues.
///
/// Format: `a2a:<context length>:<context id><task id>` (either id may be empty), so ids may
/// hold any character.
pub fn encode_session(context_id: Option<&str>, task_id: Option<&str>) -> String {
    let c = context_id.unwrap_or("");
    format!("a2a:{}:{}{}", c.len(), c, task_id.unwrap_or(""))
}

/// Decodes a session id made by [`encode_session`] into (contextId, taskId).
pub fn decode_session(s: &str) -> Option<(Option<String>, Option<String>)> {
    let rest = s.strip_prefix("a2a:")?;
    let (len, ids) = rest.split_once(':')?;
    let len: usize = len.parse().ok()?;
    if !ids.is_char_boundary(len) {
        return None;
    }
    let (c, t) = ids.split_at(len);
    let some = |x: &str| (!x.is_empty()).then(|| x.to_string());
    Some((some(c), some(t)))
}

/// Renders parts as text: text parts as is, data parts as JSON, files as a short reference.
pub fn parts_text(parts: &[v1::Part]) -> String {
    let mut out: Vec<String> = Vec::new();
    for p in parts {
        // A file's name and media type: `name (type)`.
        let file = || {
            let media_type = p.media_type.as_deref().map(|m| format!(" ({m})"));
            format!(
                "{}{}",
                p.filename.as_deref().unwrap_or(""),
                media_type.unwrap_or_default()
            )
        };
        match &p.content {
            PartContent::Text(t) => out.push(t.clone()),
            PartContent::Data(v) => out.push(v.to_string()),
            PartContent::Url(u) => out.push(format!("[file {}: {u}]", file())),
            PartContent::Raw(b) => out.push(format!(
                "[file {}: {} base64 bytes inline]",
                file(),
                b.len()
            )),
        }
    }
    out.join("\n")
}

/// What is known about the remote run so far.
#[derive(Debug, Default)]
struct Run {
    task_id: Option<String>,
    context_id: Option<String>,
    state: Option<TaskState>,
    status_message: Option<v1::Message>,
    artifacts: Vec<v1::Artifact>,
    history: Vec<v1::Message>,
    reply: Option<v1::Message>,
    artifact_bytes: usize,
    /// The latest usage report of the usage extension, read (and bounded) as it arrived.
    usage: Option<UsageReport>,
    /// The peer's progress events (the progress extension), placed in the caller's tree.
    progress: RemoteProgress,
}

impl Run {
    /// Applies one event; the first time the remote task's id is known, it is announced as the
    /// run's session ([`ProgressKind::Session`]), so a host that records it (a workflow's
    /// journal, the background ledger) can follow the task after a restart.
    fn apply(
        &mut self,
        ev: v1::StreamResponse,
        ctx: &TaskContext,
        url: &str,
    ) -> Result<(), A2aError> {
        let before = self.task_id.clone();
        let r = self.apply_event(ev, ctx, url);
        if self.task_id != before
            && let Some(task) = &self.task_id
        {
            ctx.emit(ProgressKind::Session {
                session_id: encode_session(self.context_id.as_deref(), Some(task)),
            });
        }
        r
    }

    fn apply_event(
        &mut self,
        ev: v1::StreamResponse,
        ctx: &TaskContext,
        url: &str,
    ) -> Result<(), A2aError> {
        match ev {
            v1::StreamResponse::Task(t) => {
                self.read_usage(t.metadata.as_ref());
                self.task_id = Some(t.id);
                if t.context_id.is_some() {
                    self.context_id = t.context_id;
                }
                self.set_status(t.status, ctx);
                if !t.artifacts.is_empty() {
                    self.artifact_bytes = t.artifacts.iter().map(|a| parts_size(&a.parts)).sum();
                    self.artifacts = t.artifacts;
                }
                if !t.history.is_empty() {
                    self.history = t.history;
                }
            }
            v1::StreamResponse::Message(m) => {
                if m.context_id.is_some() {
                    self.context_id = m.context_id.clone();
                }
                if m.task_id.is_some() {
                    self.task_id = m.task_id.clone();
                }
                let text = parts_text(&m.parts);
                if !text.is_empty() && !self.progress.streamed_text() {
                    ctx.emit(ProgressKind::TextDelta { text });
                }
                self.reply = Some(m);
            }
            v1::StreamResponse::StatusUpdate(e) => {
                self.read_usage(e.metadata.as_ref());
                self.progress.read(e.metadata.as_ref(), &e.task_id, ctx);
                self.task_id = Some(e.task_id);
                if !e.context_id.is_empty() {
                    self.context_id = Some(e.context_id);
                }
                self.set_status(e.status, ctx);
            }
            v1::StreamResponse::ArtifactUpdate(e) => {
                self.task_id = Some(e.task_id);
                if !e.context_id.is_empty() {
                    self.context_id = Some(e.context_id);
                }
                self.artifact_bytes += parts_size(&e.artifact.parts);
                if self.artifact_bytes > MAX_ARTIFACT_BYTES {
                    return Err(A2aError::TooLarge {
                        url: url.to_string(),
                        limit: MAX_ARTIFACT_BYTES,
                    });
                }
                // A peer that streamed its run's text (progress extension) repeats it here.
                let text = parts_text(&e.artifact.parts);
                if !text.is_empty() && !self.progress.streamed_text() {
                    ctx.emit(ProgressKind::TextDelta { text });
                }
                match self
                    .artifacts
                    .iter_mut()
                    .find(|a| a.artifact_id == e.artifact.artifact_id)
                {
                    Some(a) if e.append => a.parts.extend(e.artifact.parts),
                    Some(a) => *a = e.artifact,
                    None => self.artifacts.push(e.artifact),
                }
            }
        }
        Ok(())
    }

    /// Keeps the usage report in `metadata`, if there is one (a later one replaces it).
    fn read_usage(&mut self, metadata: Option<&JsonObject>) {
        if let Some(report) = read_usage_report(metadata) {
            self.usage = Some(report);
        }
    }

    fn set_status(&mut self, status: v1::TaskStatus, ctx: &TaskContext) {
        let changed = self.state != Some(status.state);
        self.state = Some(status.state);
        let text = status
            .message
            .as_ref()
            .map(|m| parts_text(&m.parts))
            .unwrap_or_default();
        if !text.is_empty() {
            ctx.emit(ProgressKind::Status { message: text });
        } else if changed {
            ctx.emit(ProgressKind::Status {
                message: format!("remote task {}", state_word(status.state)),
            });
        }
        self.status_message = status.message;
    }

    /// Forgets the interrupted state before a follow-up message on the same task.
    fn reset_for_follow_up(&mut self) {
        self.state = None;
        self.status_message = None;
        self.reply = None;
    }

    /// True when the run is over from the client's point of view.
    fn settled(&self) -> bool {
        self.reply.is_some()
            || self
                .state
                .is_some_and(|s| s.is_terminal() || s.is_interrupted())
    }

    fn status_text(&self) -> String {
        self.status_message
            .as_ref()
            .map(|m| parts_text(&m.parts))
            .unwrap_or_default()
    }

    fn result_text(&self) -> String {
        let artifacts = self
            .artifacts
            .iter()
            .map(|a| parts_text(&a.parts))
            .filter(|t| !t.is_empty())
            .collect::<Vec<_>>()
            .join("\n");
        if !artifacts.is_empty() {
            return artifacts;
        }
        let status = self.status_text();
        if !status.is_empty() {
            return status;
        }
        self.history
            .iter()
            .rev()
            .find(|m| m.role == v1::Role::Agent)
            .map(|m| parts_text(&m.parts))
            .unwrap_or_default()
    }
}

fn state_word(s: TaskState) -> &'static str {
    match s {
        TaskState::Unspecified => "in an unspecified state",
        TaskState::Submitted => "submitted",
        TaskState::Working => "working",
        TaskState::Completed => "completed",
        TaskState::Failed => "failed",
        TaskState::Canceled => "canceled",
        TaskState::InputRequired => "needs input",
        TaskState::Rejected => "rejected",
        TaskState::AuthRequired => "needs authorization",
    }
}

async fn consume(
    stream: &mut EventStream,
    run: &mut Run,
    ctx: &TaskContext,
    url: &str,
) -> Result<(), A2aError> {
    while let Some(ev) = stream.next().await {
        run.apply(ev?, ctx, url)?;
        if run.settled() {
            break;
        }
    }
    Ok(())
}

/// Sends `req` and follows its task to a settled state; with `attached` (a resumed task the peer
/// still works on), sends nothing and follows that task.
async fn drive(
    client: &A2aClient,
    def: &A2aSubagentDefinition,
    req: v1::SendMessageRequest,
    run: &mut Run,
    ctx: &TaskContext,
    attached: Option<v1::Task>,
) -> Result<(), A2aError> {
    let url = client.endpoint().url.as_str();
    let streaming = def.uses_streaming();
    if let Some(task) = attached {
        run.apply(v1::StreamResponse::Task(task), ctx, url)?;
    } else if streaming {
        let mut stream = client.send_streaming_message(req).await?;
        match consume(&mut stream, run, ctx, url).await {
            // A dropped connection after the task is known: follow the task instead.
            Err(A2aError::Http { .. }) if run.task_id.is_some() && !run.settled() => {
                tracing::debug!(url, "stream broke; following the task");
            }
            other => other?,
        }
    } else {
        let resp = client.send_message(req).await?;
        run.apply(resp.into(), ctx, url)?;
    }
    // Follow a task that is still running.
    let mut try_subscribe = streaming;
    while !run.settled() {
        let Some(id) = run.task_id.clone() else {
            return Err(A2aError::Protocol {
                url: client.endpoint().url.clone(),
                message: "the stream ended before any task or message arrived".into(),
            });
        };
        if try_subscribe {
            try_subscribe = false;
            match client.subscribe_to_task(&id).await {
                Ok(mut stream) => {
                    consume(&mut stream, run, ctx, url).await?;
                    if run.settled() {
                        break;
                    }
                }
                Err(e) => {
                    tracing::debug!(task = %id, error = %e, "subscribe failed; polling instead");
                }
            }
            let t = client.get_task(&id, None).await?;
            run.apply(v1::StreamResponse::Task(t), ctx, url)?;
        } else {
            tokio::time::sleep(def.config.poll_interval).await;
            let t = client.get_task(&id, None).await?;
            run.apply(v1::StreamResponse::Task(t), ctx, url)?;
        }
    }
    Ok(())
}

/// The caller's answer to the remote task's `input-required` / `auth-required` question, as
/// the text of the follow-up message: `None` when the run is not waiting for input or nobody
/// above can answer (no approver, or one that would only deny, e.g. no terminal and no
/// `--yes`), so the run ends as a resumable `needs_input` outcome.
///
/// A question from one of our servers (with an [`ApprovalQuestion`] in its metadata) becomes
/// the same approval request as a local tool call, its agent path continued below this run's;
/// any other question is a request for the tool `input-required` (or `auth-required`) with the
/// question as the summary. The answer is written with [`ApprovalText::reply_text`]:
/// `yes`, `always`, or `no: MESSAGE`.
///
/// [`ApprovalText::reply_text`]: subagent_core::ApprovalText::reply_text
async fn answer_question(run: &Run, agent: &str, ctx: &TaskContext) -> Option<String> {
    if run.reply.is_some() {
        return None;
    }
    let state = run.state?;
    if !state.is_interrupted() {
        return None;
    }
    let approver = ctx.approver()?;
    let task = run.task_id.clone()?;
    let mut path = ctx.agent_path();
    if path.is_empty() {
        path.push(agent.to_string());
    }
    let metadata = run
        .status_message
        .as_ref()
        .and_then(|m| m.metadata.as_ref());
    let request = match ApprovalQuestion::from_metadata(metadata) {
        Some(q) => {
            let mut remote = q.agent_path;
            if remote.first().is_some_and(|first| path.last() == Some(first)) {
                remote.remove(0);
            }
            path.extend(remote);
            let reason = format!("{}; asked by the remote A2A agent `{agent}`", q.reason);
            let mut r = ApprovalRequest::new(path, q.tool, q.summary, reason);
            if let Some(rule) = q.session_rule {
                r = r.with_session_rule(format!("{agent}:{rule}"));
            }
            r
        }
        None => {
            let question = run.status_text();
            let question = if question.is_empty() {
                format!("the agent needs {} to continue", state_word(state))
            } else {
                question.split_whitespace().collect::<Vec<_>>().join(" ")
            };
            let (tool, why) = match state {
                TaskState::AuthRequired => ("auth-required", "asks for authorization"),
                _ => ("input-required", "asks for input"),
            };
            let reason = format!(
                "the remote A2A agent `{agent}` {why} on task {task}; the answer continues that task"
            );
            let rule = format!("{agent}:{tool}:{question}");
            ApprovalRequest::new(path, tool, question, reason).with_session_rule(rule)
        }
    }
    .with_task_id(task);
    if !approver.can_answer(&request) {
        return None;
    }
    let decision = tokio::select! {
        d = approver.request(request) => d,
        () = ctx.cancel().cancelled() => return None,
        // A message sent to this run meanwhile (SendMessage) is the input it asks for.
        text = super::steer::arrival(metadata, ctx), if state == TaskState::InputRequired => {
            return Some(text);
        }
    };
    let text = decision.reply_text();
    ctx.emit(ProgressKind::Status {
        message: format!("answered the remote agent: {text}"),
    });
    Some(text)
}

/// The follow-up message carrying `answer` on the same task and context.
fn follow_up(req: &v1::SendMessageRequest, run: &Run, answer: String) -> v1::SendMessageRequest {
    let mut message = v1::Message::new(v1::Role::User, new_id(), vec![v1::Part::text(answer)]);
    message.context_id = run.context_id.clone();
    message.task_id = run.task_id.clone();
    let mut next = v1::SendMessageRequest::new(message);
    next.configuration = req.configuration.clone();
    next
}

enum Ended {
    Done(Result<(), A2aError>),
    Cancelled,
    TimedOut(Duration),
}

async fn cancel_remote(client: &A2aClient, task_id: Option<&str>, agent: &str) {
    let Some(id) = task_id else { return };
    match tokio::time::timeout(CANCEL_GRACE, client.cancel_task(id)).await {
        Ok(Ok(t)) => {
            tracing::debug!(agent, task = id, state = %t.status.state, "remote task canceled")
        }
        Ok(Err(e)) => tracing::warn!(agent, task = id, error = %e, "CancelTask failed"),
        Err(_) => tracing::warn!(agent, task = id, "CancelTask timed out"),
    }
}

/// The `A2A` kind: cards resolved by the [`A2aResolver`], tasks run on the remote agent.
#[subagent_spi::async_trait]
impl SubagentKind for A2aExecutor {
    type Agent = A2aSubagentDefinition;

    fn kind(&self) -> subagent_spi::Kind {
        super::KIND
    }

    fn can_resolve(&self, reference: &SubagentReference) -> bool {
        subagent_spi::SubagentResolver::can_resolve(&self.resolver, reference)
    }

    async fn resolve(
        &self,
        reference: &SubagentReference,
    ) -> Result<A2aSubagentDefinition, SubagentError> {
        self.resolver.resolve_typed(reference).await
    }

    /// An A2A task takes input only when it asks for it (the client sends waiting messages as
    /// the follow-up to its next question).
    fn message_delivery(&self, _agent: &A2aSubagentDefinition) -> Option<&'static str> {
        Some(super::steer::DELIVERY)
    }

    async fn run(
        &self,
        def: &A2aSubagentDefinition,
        call: TaskCall,
        ctx: TaskContext,
    ) -> Result<TaskOutcome, SubagentError> {
        let agent = def.name.clone();
        let (context_id, task_id) = match call.resume.as_deref() {
            None => (None, None),
            Some(s) => decode_session(s).ok_or_else(|| SubagentError::Resume {
                session: s.to_string(),
                reason: format!(
                    "not a session id of the A2A agent `{agent}` (expected the `a2a:...` id of an earlier result)"
                ),
            })?,
        };
        let mut message =
            v1::Message::new(v1::Role::User, new_id(), vec![v1::Part::text(&call.prompt)]);
        message.context_id = context_id.clone();
        let run_task = task_id.clone();
        message.task_id = task_id;
        // Typed result (crate::typed): the schema travels as a data part.
        if let Some(schema) = &call.output_schema {
            message.parts.push(crate::typed::schema_part(schema));
        }
        let mut req = v1::SendMessageRequest::new(message);
        req.configuration = Some(v1::SendMessageConfiguration {
            accepted_output_modes: vec![
                "text/plain".into(),
                "text/markdown".into(),
                "application/json".into(),
            ],
            ..Default::default()
        });
        let http = ctx
            .extensions()
            .get::<reqwest::Client>()
            .cloned()
            .unwrap_or_else(|| self.http.clone());
        // The chosen endpoint, then one per other protocol version the card offers.
        let clients: Vec<A2aClient> = std::iter::once(def.client(http.clone()))
            .chain(
                def.fallbacks
                    .iter()
                    .map(|e| def.client_for(e, http.clone())),
            )
            .collect();
        let mut active = 0usize;
        // The caller's deadline (or its budget's wall time) ends the run with
        // `limit_reached`; the reference's own time limit is a `TimedOut` error.
        let budget_left = ctx
            .budget()
            .and_then(Budget::deadline)
            .map(|d| d.saturating_duration_since(Instant::now()));
        let remaining = match (ctx.remaining(), budget_left) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let (limit, from_deadline) = match remaining {
            Some(r) if r < def.config.timeout => (r, true),
            _ => (def.config.timeout, false),
        };
        let started = Instant::now();
        let mut run = Run {
            context_id,
            ..Run::default()
        };

        let mut questions = 0usize;
        let ended = {
            let fut = async {
                // A resumed task the peer still works on (the caller's process ended while it
                // ran): followed to its end, nothing sent (a working task takes no message).
                let mut attached = match run_task.as_deref() {
                    Some(id) => match clients[active].get_task(id, None).await {
                        Ok(t)
                            if matches!(
                                t.status.state,
                                TaskState::Submitted | TaskState::Working
                            ) =>
                        {
                            tracing::debug!(agent = %agent, task = %id, "re-attached to the remote task");
                            Some(t)
                        }
                        _ => None,
                    },
                    None => None,
                };
                loop {
                    let r = drive(
                        &clients[active],
                        def,
                        req.clone(),
                        &mut run,
                        &ctx,
                        attached.take(),
                    )
                    .await;
                    match r {
                        Err(e)
                            if e.is_version_not_supported()
                                && run.task_id.is_none()
                                && active + 1 < clients.len() =>
                        {
                            tracing::debug!(
                                agent = %agent,
                                refused = clients[active].endpoint().version.as_str(),
                                next = clients[active + 1].endpoint().version.as_str(),
                                "protocol version refused; trying the card's next version"
                            );
                            active += 1;
                        }
                        Ok(()) if questions < MAX_QUESTIONS => {
                            // A question the caller's approver can answer continues the same
                            // task; otherwise it ends the run as `needs_input` (below).
                            // Messages sent to this run (SendMessage) are the input it asks for.
                            let steered = super::steer::follow_up_text(
                                run.reply.is_none() && run.state == Some(TaskState::InputRequired),
                                run.status_message
                                    .as_ref()
                                    .and_then(|m| m.metadata.as_ref()),
                                &ctx,
                            );
                            let answer = match steered {
                                Some(text) => Some(text),
                                None => answer_question(&run, &agent, &ctx).await,
                            };
                            let Some(answer) = answer else {
                                break Ok(());
                            };
                            questions += 1;
                            req = follow_up(&req, &run, answer);
                            run.reset_for_follow_up();
                        }
                        other => break other,
                    }
                }
            };
            tokio::pin!(fut);
            tokio::select! {
                r = &mut fut => Ended::Done(r),
                _ = ctx.cancel().cancelled() => Ended::Cancelled,
                _ = tokio::time::sleep(limit) => Ended::TimedOut(limit),
            }
        };
        let client = &clients[active];
        let elapsed_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        let Remote {
            usage,
            children,
            spent,
        } = remote_usage(run.usage.take(), elapsed_ms, &agent, &ctx);
        let usage = &usage;
        // The remote run's usage and subtree, and the budget its reported tokens spent.
        let account = |mut out: TaskOutcome| {
            out.usage = usage.clone();
            out.children.clone_from(&children);
            if let Some(spent) = &spent
                && matches!(out.status, TaskStatus::Completed | TaskStatus::NeedsInput)
            {
                out.status = TaskStatus::LimitReached;
                out.limit = Some(spent.clone());
            }
            out
        };
        let session = |run: &Run, with_task: bool| {
            encode_session(
                run.context_id.as_deref(),
                if with_task {
                    run.task_id.as_deref()
                } else {
                    None
                },
            )
        };
        match ended {
            Ended::Cancelled => {
                cancel_remote(client, run.task_id.as_deref(), &agent).await;
                let text = format!("cancelled; the remote A2A agent `{agent}` was asked to cancel");
                return Ok(account(
                    TaskOutcome::with_status(text, TaskStatus::Cancelled)
                        .with_session(session(&run, false)),
                ));
            }
            Ended::TimedOut(after) => {
                cancel_remote(client, run.task_id.as_deref(), &agent).await;
                if from_deadline {
                    let mut out = account(
                        TaskOutcome::with_status(run.result_text(), TaskStatus::LimitReached)
                            .with_session(session(&run, false)),
                    );
                    // A budget's wall time is named as the budget.
                    out.limit = Some(ctx.budget().and_then(Budget::spent).unwrap_or_else(|| {
                        subagent_spi::Limit::other(format!("deadline ({} ms)", after.as_millis()))
                    }));
                    return Ok(out);
                }
                return Err(SubagentError::TimedOut { agent, after });
            }
            Ended::Done(Err(e)) => {
                return Err(SubagentError::Execution {
                    message: e.to_string(),
                    agent,
                    source: Some(Box::new(e)),
                });
            }
            Ended::Done(Ok(())) => {}
        }
        // Typed result (crate::typed): the last data part; the Task tool checks it.
        let typed = |mut out: TaskOutcome, data: Option<serde_json::Value>| {
            if call.output_schema.is_some() {
                out.structured = data;
            }
            out
        };
        if let Some(reply) = &run.reply {
            return Ok(account(typed(
                TaskOutcome::completed(parts_text(&reply.parts)).with_session(session(&run, false)),
                crate::typed::result_data(&reply.parts),
            )));
        }
        let task = run.task_id.as_deref().unwrap_or("?");
        match run.state.unwrap_or_default() {
            TaskState::Completed => Ok(account(typed(
                TaskOutcome::completed(run.result_text()).with_session(session(&run, false)),
                crate::typed::result_data(run.artifacts.iter().flat_map(|a| &a.parts)),
            ))),
            s @ (TaskState::Failed | TaskState::Rejected) => {
                let why = run.status_text();
                let why = if why.is_empty() {
                    "the agent gave no reason".to_string()
                } else {
                    why
                };
                Err(SubagentError::execution(
                    agent,
                    format!("remote task {task} {}: {why}", state_word(s)),
                ))
            }
            TaskState::Canceled => Ok(account(
                TaskOutcome::with_status(
                    format!(
                        "the remote agent canceled task {task}. {}",
                        run.status_text()
                    )
                    .trim_end()
                    .to_string(),
                    TaskStatus::Cancelled,
                )
                .with_session(session(&run, false)),
            )),
            TaskState::InputRequired | TaskState::AuthRequired => {
                let q = run.status_text();
                let q = if q.is_empty() {
                    format!("The agent needs more input to continue task {task}.")
                } else {
                    q
                };
                Ok(account(
                    TaskOutcome::with_status(q, TaskStatus::NeedsInput)
                        .with_session(session(&run, true)),
                ))
            }
            other => Err(SubagentError::protocol(
                agent,
                format!(
                    "remote task {task} ended the exchange while {}",
                    state_word(other)
                ),
            )),
        }
    }
}

/// What the remote run used, as this run's usage tree sees it.
struct Remote {
    /// The remote run's own usage; its duration is the one measured here (it includes the
    /// network).
    usage: Usage,
    /// The runs it delegated to.
    children: Vec<UsageNode>,
    /// The budget its reported tokens spent, if they did.
    spent: Option<subagent_spi::Limit>,
}

/// Folds the remote run's usage report (the usage extension) into this run's usage: its tokens,
/// turns and model, its delegated runs as children, every node's tokens charged to the caller's
/// budget. Without a report (a server without the extension) the usage is the duration only
/// (one turn). A report that was refused or is partly malformed counts what is well-formed, and
/// the run as at least [`Budget::remote_unreported_tokens`] tokens (the default without a
/// budget), marked `estimated`: a peer cannot zero its spend by breaking its report.
fn remote_usage(
    report: Option<UsageReport>,
    elapsed_ms: u64,
    agent: &str,
    ctx: &TaskContext,
) -> Remote {
    let Some(report) = report else {
        return Remote {
            usage: Usage::new().with_turns(1).with_duration_ms(elapsed_ms),
            children: Vec::new(),
            spent: None,
        };
    };
    let clean = report.is_clean();
    let mut node = report.node.unwrap_or_else(|| {
        UsageNode::new(
            agent,
            super::KIND.as_str(),
            TaskStatus::Completed,
            Usage::new().with_turns(1),
        )
    });
    if !clean {
        let problems: Vec<String> = report.problems.iter().map(ToString::to_string).collect();
        let floor = ctx.budget().map_or(
            subagent_core::DEFAULT_REMOTE_UNREPORTED_TOKENS,
            Budget::remote_unreported_tokens,
        );
        // What the well-formed values say, over the whole remote tree.
        let reported = node.total().total_tokens();
        tracing::warn!(agent, reported, counted_at_least = floor, problems = %problems.join("; "),
            "the remote agent's usage report is malformed; counting it as an estimate");
        if reported < floor {
            node.usage.input_tokens = node.usage.input_tokens.saturating_add(floor - reported);
        }
        node.usage.estimated = true;
    }
    let spent = ctx.budget().and_then(|b| {
        // Every node of the remote tree, each with its model (for the cost limit).
        let mut spent = None;
        let mut stack = vec![&node];
        while let Some(n) = stack.pop() {
            let u = &n.usage;
            let s = b.charge_usage(
                u.model.as_deref().unwrap_or(""),
                u.input_tokens,
                u.output_tokens,
                u.turns,
            );
            spent = spent.or(s);
            stack.extend(n.children.iter());
        }
        spent
    });
    let UsageNode {
        mut usage,
        children,
        ..
    } = node;
    usage.duration_ms = elapsed_ms;
    Remote {
        usage,
        children,
        spent,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sessions_round_trip_any_ids() {
        for (c, t) in [
            (Some("ctx-1"), Some("task:with:colons")),
            (None, Some("t")),
            (Some("c"), None),
            (Some("ünï:cödé"), Some("x")),
        ] {
            let s = encode_session(c, t);
            assert_eq!(
                decode_session(&s),
                Some((c.map(str::to_string), t.map(str::to_string))),
                "{s}"
            );
        }
        assert_eq!(decode_session("claude-123"), None);
        assert_eq!(decode_session("a2a:99:short"), None);
        assert_eq!(decode_session("a2a:x:y"), None);
    }

    #[test]
    fn artifact_content_is_bounded() {
        let ctx = TaskContext::new();
        let mut run = Run::default();
        let chunk = |text: String, append: bool| {
            v1::StreamResponse::ArtifactUpdate(v1::TaskArtifactUpdateEvent {
                task_id: "t".into(),
                context_id: "c".into(),
                artifact: v1::Artifact {
                    artifact_id: "a".into(),
                    name: None,
                    description: None,
                    parts: vec![v1::Part::text(text)],
                    metadata: None,
                    extensions: vec![],
                },
                append,
                last_chunk: false,
                metadata: None,
            })
        };
        let half = "x".repeat(MAX_ARTIFACT_BYTES / 2);
        run.apply(chunk(half.clone(), false), &ctx, "u").unwrap();
        run.apply(chunk(half.clone(), true), &ctx, "u").unwrap();
        assert_eq!(run.artifacts[0].parts.len(), 2);
        let err = run.apply(chunk("y".into(), true), &ctx, "u").unwrap_err();
        assert!(matches!(
            err,
            A2aError::TooLarge {
                limit: MAX_ARTIFACT_BYTES,
                ..
            }
        ));
    }

    #[test]
    fn parts_render_text_data_and_files() {
        let mut f = v1::Part::from_content(PartContent::Url("http://x/f.png".into()));
        f.media_type = Some("image/png".into());
        let t = parts_text(&[
            v1::Part::text("hello"),
            v1::Part::data(serde_json::json!({"a": 1})),
            f,
        ]);
        assert_eq!(t, "hello\n{\"a\":1}\n[file  (image/png): http://x/f.png]");
    }
}
