//! Hosting any SPI subagent (a [`SubagentDefinition`] + its [`SubagentExecutor`]) as an A2A
//! agent.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use subagent_core::{Budget, BudgetExt, SessionApprover};
use subagent_spi::{
    BudgetLimits, CancellationToken, ProgressEvent, ProgressKind, SubagentDefinition,
    SubagentError, SubagentExecutor, TaskCall, TaskContext, TaskOutcome, TaskStatus, async_trait,
};
use tokio::sync::mpsc;

use super::approval::{ClientApprover, DEFAULT_APPROVAL_TIMEOUT};
use super::card::AgentInfo;
use super::handler::{A2aHandler, HandlerError, HandlerRequest, TaskEventSink};
use crate::types::jsonrpc::codes;
use crate::types::progress::{
    MAX_PROGRESS_BATCH, progress_extension, progress_to_metadata, push_coalesced,
};
use crate::types::usage::{usage_extension, usage_to_metadata};
use crate::types::{JsonObject, v1};

/// The most conversations whose executor session is remembered for resuming.
const MAX_SESSIONS: usize = 10_000;

/// An [`A2aHandler`] running an SPI subagent: each message becomes a [`TaskCall`] whose prompt
/// is the message's text (data parts as JSON); the outcome becomes the task's end state.
///
/// | outcome | A2A task |
/// |---|---|
/// | completed | a `result` text artifact, then `completed` |
/// | needs input | `input-required` with the agent's question; the next message with the same `taskId` or `contextId` resumes the executor's session |
/// | failed / error | `failed` with the message |
/// | cancelled | `canceled` |
/// | limit reached | the partial text as artifact, then `completed` with a status message naming the limit |
///
/// The executor's `Status` progress events are streamed as `working` status updates.
///
/// ## Sessions
///
/// A message continues the executor session (e.g. a Markdown agent's transcript) that the
/// last task of its `contextId` ended in. The handler remembers sessions in memory and records
/// them in the agent's task store ([`ContextSessionStore::save_context_session`](super::ContextSessionStore::save_context_session))
/// before the task's final state is reported, so with a durable store (`subagent-store`) a
/// conversation resumes its session after the server restarted.
///
/// ## Usage
///
/// The card declares the usage extension
/// ([`USAGE_EXTENSION_URI`](crate::types::usage::USAGE_EXTENSION_URI)), and the final status
/// update and the task's `metadata` carry the run's usage tree under it (tokens, turns, model,
/// duration, and the runs it delegated to; see [`crate::types::usage`]), so our client counts a
/// remote subtree in its caller's usage, cost and budget.
/// [`with_usage_report(false)`](Self::with_usage_report) keeps it private.
///
/// ## Progress
///
/// The run's status lines become `working` updates with that message. Its other progress
/// events, and those of every run below it (text deltas, tool calls and results, turns,
/// starts and ends), reach streaming clients as live `working` updates through the progress
/// extension ([`PROGRESS_EXTENSION_URI`](crate::types::progress::PROGRESS_EXTENSION_URI),
/// declared in the card; see [`crate::types::progress`]): never saved, pushed or added to
/// the task. Session ids are not sent.
///
/// An agent with a budget of its own ([`SubagentDefinition::budget`]) runs under it, nested in
/// the base context's budget when there is one.
///
/// ## Approvals
///
/// A tool call that needs approval (a Markdown agent in the `default` mode running `Bash`)
/// is asked of the context's approver when it can answer (a host's `--yes`); otherwise of the
/// A2A client: the task goes `input-required` with the question (agent path, tool, input
/// summary, reason; also as JSON under the status message's `metadata` key
/// [`APPROVAL_METADATA_KEY`](crate::types::approval::APPROVAL_METADATA_KEY)), and the
/// client's next message on the task answers it: `yes`, `always` (for the rest of this task)
/// or `no` / `no: reason`, ignoring case; any other text is a denial quoting it. The run then
/// goes on in the same task. Without an answer within the approval timeout
/// ([`with_approval_timeout`](Self::with_approval_timeout), default 300 s) the call is
/// denied and the task goes on; the model reads every denial.
pub struct SubagentHandler {
    definition: Arc<dyn SubagentDefinition>,
    executor: Arc<dyn SubagentExecutor>,
    /// The context every run starts from (delegation handle, extensions, depth).
    base: TaskContext,
    /// contextId -> executor session id, for resuming.
    sessions: Mutex<HashMap<String, String>>,
    /// How long an approval question waits for the client (zero: never ask).
    approval_timeout: Duration,
    /// Usage reported in task metadata (the usage extension).
    report_usage: bool,
    /// The agent's own budget, when set here (else its definition's).
    budget: Option<BudgetLimits>,
}

impl std::fmt::Debug for SubagentHandler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SubagentHandler")
            .field("agent", &self.definition.name())
            .field("delegation", &self.base.delegation().is_some())
            .finish()
    }
}

impl SubagentHandler {
    /// Hosts `definition`, run by `executor`.
    pub fn new(
        definition: Arc<dyn SubagentDefinition>,
        executor: Arc<dyn SubagentExecutor>,
    ) -> Self {
        Self {
            definition,
            executor,
            base: TaskContext::new(),
            sessions: Mutex::new(HashMap::new()),
            approval_timeout: DEFAULT_APPROVAL_TIMEOUT,
            report_usage: true,
            budget: None,
        }
    }

    /// Runs every task of the agent under a budget of its own (a host's configuration,
    /// winning over [`SubagentDefinition::budget`]), nested in the base context's budget when
    /// there is one. Builder style.
    #[must_use]
    pub fn with_budget(mut self, limits: BudgetLimits) -> Self {
        self.budget = Some(limits);
        self
    }

    /// Reports each run's usage tree in the task's metadata and declares the usage extension in
    /// the card (default true); `false` tells clients nothing about tokens, models or the
    /// agents below. Builder style.
    #[must_use]
    pub fn with_usage_report(mut self, yes: bool) -> Self {
        self.report_usage = yes;
        self
    }

    /// How long a tool call that needs approval waits for the A2A client's answer before it
    /// is denied (default 300 s); zero never asks the client (such calls are denied at once,
    /// unless the base context's approver allows them). Builder style.
    #[must_use]
    pub fn with_approval_timeout(mut self, timeout: Duration) -> Self {
        self.approval_timeout = timeout;
        self
    }

    /// Runs every task from `base`: its delegation handle (so a served agent can delegate),
    /// extensions, depth and limits; cancellation, progress, agent name and task id are set
    /// per task (builder style).
    #[must_use]
    pub fn with_context(mut self, base: TaskContext) -> Self {
        self.base = base;
        self
    }

    /// The card information derived from the definition: its name and description, one
    /// skill describing it, and the usage extension (unless
    /// [`with_usage_report(false)`](Self::with_usage_report)).
    pub fn agent_info(&self) -> AgentInfo {
        let d = &self.definition;
        let mut info = AgentInfo::new(d.name(), d.description());
        if self.report_usage {
            info.extensions.push(usage_extension());
        }
        info.extensions.push(progress_extension());
        info.with_skill(v1::AgentSkill {
            id: d.name().to_string(),
            name: d.name().to_string(),
            description: d.description().to_string(),
            tags: vec!["subagent".to_string()],
            examples: Vec::new(),
            input_modes: Vec::new(),
            output_modes: Vec::new(),
            security_requirements: Vec::new(),
        })
    }

    /// The usage report of `outcome` for the task's metadata, when reported.
    fn usage_metadata(&self, outcome: &TaskOutcome, task_id: &str) -> Option<JsonObject> {
        self.report_usage.then(|| {
            let d = &self.definition;
            usage_to_metadata(&outcome.usage_tree(
                d.name(),
                d.reference().kind.as_str(),
                Some(task_id),
            ))
        })
    }

    fn sessions(&self) -> std::sync::MutexGuard<'_, HashMap<String, String>> {
        self.sessions.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The executor session the conversation `context_id` continues: remembered here, else
    /// recorded in the agent's task store (by an earlier process of this server, when the
    /// store is durable).
    async fn session_of(&self, events: &TaskEventSink, context_id: &str) -> Option<String> {
        if let Some(id) = self.sessions().get(context_id) {
            return Some(id.clone());
        }
        let store = events.context_sessions()?;
        match store.context_session(context_id).await {
            Ok(id) => id,
            Err(e) => {
                tracing::warn!(context = %context_id, error = %e,
                    "cannot read the agent session of a conversation; starting a new one");
                None
            }
        }
    }

    /// Remembers that the conversation `context_id` is now in session `after` (`None`: no
    /// session to resume), here and, when it changed from `before`, in the task store.
    async fn remember_session(
        &self,
        events: &TaskEventSink,
        context_id: &str,
        before: Option<&str>,
        after: Option<&str>,
    ) {
        {
            let mut s = self.sessions();
            match after {
                Some(id) => {
                    if s.len() >= MAX_SESSIONS {
                        s.clear();
                    }
                    s.insert(context_id.to_owned(), id.to_owned());
                }
                None => {
                    s.remove(context_id);
                }
            }
        }
        if before == after {
            return;
        }
        if let Some(store) = events.context_sessions()
            && let Err(e) = store.save_context_session(context_id, after).await
        {
            tracing::warn!(context = %context_id, error = %e,
                "cannot record the agent session of a conversation");
        }
    }
}

fn prompt_of(message: &v1::Message) -> String {
    let mut out: Vec<String> = Vec::new();
    for p in &message.parts {
        if crate::typed::schema_in(p).is_some() {
            continue; // the output schema (crate::typed), not part of the prompt
        }
        match &p.content {
            v1::PartContent::Text(t) => out.push(t.clone()),
            v1::PartContent::Data(v) => out.push(v.to_string()),
            v1::PartContent::Url(u) => out.push(format!(
                "[file {}: {u}]",
                p.filename.as_deref().unwrap_or("")
            )),
            v1::PartContent::Raw(_) => out.push(format!(
                "[inline file {} ({})]",
                p.filename.as_deref().unwrap_or(""),
                p.media_type
                    .as_deref()
                    .unwrap_or("application/octet-stream")
            )),
        }
    }
    out.join("\n")
}

/// Progress events of a served run waiting to be forwarded; past this they are dropped.
const PROGRESS_QUEUE: usize = 256;

/// Forwards a served run's progress in order: each status line as a `working` update with
/// that message, the other events in batches as live progress-extension updates (text deltas
/// of one run merged), until the task no longer takes events.
async fn forward_progress(mut rx: mpsc::Receiver<ProgressEvent>, events: TaskEventSink) {
    let mut batch: Vec<ProgressEvent> = Vec::new();
    async fn flush(events: &TaskEventSink, batch: &mut Vec<ProgressEvent>) -> bool {
        if batch.is_empty() {
            return true;
        }
        let sent = events.live_metadata(progress_to_metadata(batch)).await;
        batch.clear();
        sent.is_ok()
    }
    while let Some(first) = rx.recv().await {
        // Everything already waiting goes in one go.
        let mut next = Some(first);
        while let Some(e) = next.take() {
            match e.kind {
                ProgressKind::Status { message } => {
                    if !flush(&events, &mut batch).await
                        || events.working_text(message).await.is_err()
                    {
                        return;
                    }
                }
                _ => {
                    if batch.len() >= MAX_PROGRESS_BATCH && !flush(&events, &mut batch).await {
                        return;
                    }
                    push_coalesced(&mut batch, e);
                }
            }
            next = rx.try_recv().ok();
        }
        if !flush(&events, &mut batch).await {
            return;
        }
    }
}

fn short_description(prompt: &str) -> String {
    let words: Vec<&str> = prompt.split_whitespace().take(5).collect();
    if words.is_empty() {
        "A2A request".into()
    } else {
        words.join(" ")
    }
}

#[async_trait]
impl A2aHandler for SubagentHandler {
    async fn handle(
        &self,
        request: HandlerRequest,
        events: TaskEventSink,
        cancel: CancellationToken,
    ) -> Result<(), HandlerError> {
        let prompt = prompt_of(&request.message);
        if prompt.trim().is_empty() {
            return Err(HandlerError::Protocol {
                code: codes::INVALID_PARAMS,
                message: format!(
                    "agent `{}` needs a message with text or data",
                    self.definition.name()
                ),
            });
        }
        // Typed result (crate::typed): a schema from a client is checked under the strict
        // profile, and the result checked against it before it is sent.
        let schema = match request
            .message
            .parts
            .iter()
            .find_map(crate::typed::schema_in)
        {
            Some(s) => match subagent_schema::OutputSchema::compile(
                s,
                subagent_schema::Profile::untrusted(),
            ) {
                Ok(compiled) => Some((s.clone(), compiled)),
                Err(e) => {
                    return Err(HandlerError::Protocol {
                        code: codes::INVALID_PARAMS,
                        message: format!("agent `{}`: {e}", self.definition.name()),
                    });
                }
            },
            None => None,
        };
        let _ = events.working().await;
        let mut call = TaskCall::new(self.definition.name(), short_description(&prompt), prompt);
        call.output_schema = schema.as_ref().map(|(s, _)| s.clone());
        let resumed = self.session_of(&events, &request.context_id).await;
        call.resume = resumed.clone();

        // Progress, forwarded in order off the executor's path (bounded; dropped when full):
        // status lines become `working` updates, the other events of the whole subtree go
        // to streaming clients through the progress extension.
        let (tx, rx) = mpsc::channel::<ProgressEvent>(PROGRESS_QUEUE);
        let forwarder = tokio::spawn(forward_progress(rx, events.clone()));
        let base_depth = self.base.depth();
        let sink = move |mut e: ProgressEvent| {
            if matches!(e.kind, ProgressKind::Session { .. }) {
                return;
            }
            // Depths relative to the served run (see the extension).
            e.depth = e.depth.saturating_sub(base_depth);
            let _ = tx.try_send(e);
        };
        // Approvals go to the A2A client (after the host's own approver, when it can answer);
        // "always" lasts for this run.
        let approver = ClientApprover {
            events: events.clone(),
            upstream: self.base.approver().cloned(),
            timeout: self.approval_timeout,
            cancel: cancel.clone(),
        };
        let mut ctx = self.base.clone();
        if let Some(limits) = self
            .budget
            .clone()
            .or_else(|| self.definition.budget())
            .filter(|l| !l.is_unlimited())
        {
            // The agent's own budget, within what the host's budget leaves.
            let name = self.definition.name();
            let budget = match self.base.budget() {
                Some(up) => up.nested(limits, cancel.clone()),
                None => Budget::new(limits, cancel.clone()),
            };
            ctx = ctx.with_budget(budget.with_owner(name));
        }
        let ctx = ctx
            .with_approver(Arc::new(SessionApprover::new(Arc::new(approver))))
            .with_cancel(cancel.clone())
            .with_progress(Arc::new(sink))
            .with_agent(self.definition.name())
            .with_task_id(request.task_id.clone());
        // The run's OpenTelemetry GenAI `invoke_agent` span: the child of the request's server
        // span, which continues the caller's trace.
        let span =
            subagent_core::telemetry::invoke_agent_span(self.definition.name(), &request.task_id);
        span.record("subagents.served", true);
        let result = tracing::Instrument::instrument(
            self.executor.execute(call, self.definition.clone(), ctx),
            span.clone(),
        )
        .await;
        subagent_core::telemetry::record_run_end(&span, &result);
        let _ = forwarder.await;

        let outcome = match result {
            Ok(o) => o,
            Err(SubagentError::Cancelled { .. }) => {
                let _ = events.status(v1::TaskState::Canceled, None).await;
                return Ok(());
            }
            Err(_) if cancel.is_cancelled() => {
                let _ = events.status(v1::TaskState::Canceled, None).await;
                return Ok(());
            }
            Err(e) => return Err(HandlerError::failed(e.to_string())),
        };
        // Before the final state is reported: a follow-up message in this context resumes the
        // session, also after a restart of the server.
        self.remember_session(
            &events,
            &request.context_id,
            resumed.as_deref(),
            outcome.session_id.as_deref(),
        )
        .await;
        let mut outcome = outcome;
        if let Some((_, compiled)) = &schema {
            typed_result(&mut outcome, compiled, self.base.deadline()).await;
        }
        let usage = self.usage_metadata(&outcome, &request.task_id);
        let end = |state: v1::TaskState, message: Option<v1::Message>| {
            let events = events.clone();
            let usage = usage.clone();
            async move {
                match usage {
                    Some(m) => events.status_with_metadata(state, message, m).await,
                    None => events.status(state, message).await,
                }
            }
        };
        let sent = match outcome.status {
            TaskStatus::NeedsInput => {
                end(
                    v1::TaskState::InputRequired,
                    Some(events.agent_text(outcome.text)),
                )
                .await
            }
            TaskStatus::Failed => {
                end(v1::TaskState::Failed, Some(events.agent_text(outcome.text))).await
            }
            TaskStatus::Cancelled => end(v1::TaskState::Canceled, None).await,
            TaskStatus::LimitReached => {
                let _ = events.text_artifact(Some("result"), outcome.text).await;
                let note = events.agent_text(format!(
                    "stopped at a limit{}",
                    outcome
                        .limit
                        .as_ref()
                        .map(|l| format!(": {l}"))
                        .unwrap_or_default()
                ));
                end(v1::TaskState::Completed, Some(note)).await
            }
            _ => {
                match outcome.structured {
                    // A typed result: one data part.
                    Some(value) => {
                        let artifact = v1::Artifact {
                            artifact_id: crate::server::util::new_id(),
                            name: Some("result".into()),
                            description: None,
                            parts: vec![v1::Part::data(value)],
                            metadata: None,
                            extensions: Vec::new(),
                        };
                        let _ = events.artifact(artifact, false, true).await;
                    }
                    None => {
                        let _ = events.text_artifact(Some("result"), outcome.text).await;
                    }
                }
                end(v1::TaskState::Completed, None).await
            }
        };
        // A closed sink means the task was canceled meanwhile: nothing left to report.
        let _ = sent;
        Ok(())
    }
}

/// Checks a completed outcome against the client's schema (off the async threads, at most until
/// `deadline`): its value (or its text's JSON) becomes `structured`; an invalid one fails the
/// task saying why.
async fn typed_result(
    outcome: &mut TaskOutcome,
    schema: &subagent_schema::OutputSchema,
    deadline: Option<std::time::Instant>,
) {
    if outcome.status != TaskStatus::Completed {
        return;
    }
    let checked = match outcome.structured.take() {
        Some(v) => schema.check(v, deadline).await,
        None => schema.check_text_within(&outcome.text, deadline).await,
    };
    match checked {
        Ok(v) => outcome.structured = Some(v),
        Err(e) => {
            outcome.status = TaskStatus::Failed;
            outcome.text = format!(
                "{} the result is not valid under the output schema: {e}",
                subagent_schema::INVALID_OUTPUT_PREFIX
            );
        }
    }
}
