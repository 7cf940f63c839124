//! [`Workflows`]: runs and resumes workflow scripts against an [`AgentCaller`] and a
//! [`Journal`]. This is the host's side: the engine thread makes calls, this loop journals them,
//! runs them, journals their ends and hands their values back, in that order.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::time::{Duration, Instant, SystemTime};

use serde_json::{Value, json};
use subagent_core::BudgetExt;
use subagent_spi::{
    ApprovalRequest, ProgressEvent, ProgressKind, ProgressSink, TaskCall, TaskContext, TaskStatus,
    Usage, UsageNode,
};
use tokio::task::JoinSet;
use tracing::Instrument;

use crate::caller::AgentCaller;
use crate::engine::{self, EngineInput, Issued, Known, Replay, Request, ToHost, ToJs};
use crate::error::WorkflowError;
use crate::journal::{CallRecord, CallState, Journal, RunRecord, RunStatus};
use crate::limits::WorkflowLimits;

/// The agent name of a workflow's node in progress events and usage trees.
pub const WORKFLOW_AGENT: &str = "workflow";

/// The kind of a workflow's node in usage trees.
pub const WORKFLOW_KIND: &str = "WORKFLOW";

/// The prompt an unfinished call's session is continued with on a resume.
pub const CONTINUE_PROMPT: &str = "Your previous run of this task was interrupted before it \
ended. Continue from where you stopped and give your final answer.";

/// Runs workflow scripts. Cheap to clone.
#[derive(Clone)]
pub struct Workflows {
    caller: Arc<dyn AgentCaller>,
    journal: Arc<dyn Journal>,
    limits: WorkflowLimits,
}

impl std::fmt::Debug for Workflows {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Workflows")
            .field("journal", &self.journal)
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

/// A run ready to execute: a new one (its record saved) or one to resume (its journal read).
#[derive(Debug)]
pub struct PreparedRun {
    record: RunRecord,
    calls: Vec<CallRecord>,
    resumed: bool,
    /// A resume given a script of its own.
    script_given: bool,
}

impl PreparedRun {
    /// The run's id (`wf_…`).
    pub fn run_id(&self) -> &str {
        &self.record.run_id
    }

    /// True for a resume.
    pub fn is_resume(&self) -> bool {
        self.resumed
    }

    /// The calls the journal holds (none for a new run).
    pub fn journaled_calls(&self) -> &[CallRecord] {
        &self.calls
    }
}

/// How many calls a run made, by how they went.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
#[non_exhaustive]
pub struct CallCounts {
    /// Calls whose value came from the journal: nothing ran.
    pub replayed: u32,
    /// Calls that ran in this process and ended with a value.
    pub done: u32,
    /// Calls that ran in this process and ended with an error the script got.
    pub failed: u32,
    /// Calls the journal held unfinished that ran again (continuing their session when known).
    pub rerun: u32,
    /// Calls cancelled with the run (not journaled as finished).
    pub cancelled: u32,
}

/// How a workflow run ended.
#[derive(Debug)]
#[non_exhaustive]
pub struct WorkflowOutcome {
    /// The run's id: `resume` takes it.
    pub run_id: String,
    /// `completed`, `failed` or `cancelled`.
    pub status: RunStatus,
    /// The script's return value (JSON), when it completed.
    pub result: Option<Value>,
    /// Why it did not complete.
    pub error: Option<WorkflowError>,
    /// The calls, counted.
    pub calls: CallCounts,
    /// The usage tree of every call of the run, by position (journaled calls' too: what was
    /// spent before a resume stays spent).
    pub children: Vec<UsageNode>,
    /// This process's part of the run.
    pub duration: Duration,
}

impl WorkflowOutcome {
    /// The run's node in a usage tree, with every call below it.
    pub fn usage_tree(&self) -> UsageNode {
        let status = match self.status {
            RunStatus::Completed => TaskStatus::Completed,
            RunStatus::Cancelled => TaskStatus::Cancelled,
            RunStatus::Failed => TaskStatus::Failed,
            RunStatus::Running => TaskStatus::Running,
        };
        let usage = Usage::new().with_duration_ms(self.duration.as_millis() as u64);
        UsageNode::new(WORKFLOW_AGENT, WORKFLOW_KIND, status, usage)
            .with_task_id(self.run_id.clone())
            .with_children(self.children.clone())
    }
}

impl Workflows {
    /// Workflows whose `agent()` calls go to `caller`, journaled in `journal`, with the default
    /// [`WorkflowLimits`].
    pub fn new(caller: Arc<dyn AgentCaller>, journal: Arc<dyn Journal>) -> Self {
        Self {
            caller,
            journal,
            limits: WorkflowLimits::default(),
        }
    }

    /// Sets the limits of every run.
    #[must_use]
    pub fn with_limits(mut self, limits: WorkflowLimits) -> Self {
        self.limits = limits;
        self
    }

    /// The limits of every run.
    pub fn limits(&self) -> &WorkflowLimits {
        &self.limits
    }

    /// The journal.
    pub fn journal(&self) -> &Arc<dyn Journal> {
        &self.journal
    }

    /// Runs `script` with `args` as a child of `ctx` (its approver answers `ask()`, its budget
    /// covers the calls, its cancel token stops the run).
    pub async fn run(
        &self,
        script: &str,
        args: Value,
        ctx: &TaskContext,
    ) -> Result<WorkflowOutcome, WorkflowError> {
        let prepared = self.prepare(script, args).await?;
        Ok(self.execute(prepared, ctx).await)
    }

    /// Resumes run `run_id` (see [`prepare_resume`](Self::prepare_resume)).
    pub async fn resume(
        &self,
        run_id: &str,
        script: Option<&str>,
        ctx: &TaskContext,
    ) -> Result<WorkflowOutcome, WorkflowError> {
        let prepared = self.prepare_resume(run_id, script).await?;
        Ok(self.execute(prepared, ctx).await)
    }

    /// Checks `script` and `args` and saves a new run's record; nothing runs yet.
    pub async fn prepare(&self, script: &str, args: Value) -> Result<PreparedRun, WorkflowError> {
        self.check(script, &args)?;
        let run_id = format!("wf_{}", uuid::Uuid::new_v4().simple());
        let record = RunRecord::new(run_id, script, args);
        self.journal
            .save_run(&record)
            .await
            .map_err(WorkflowError::Journal)?;
        Ok(PreparedRun {
            record,
            calls: Vec::new(),
            resumed: false,
            script_given: false,
        })
    }

    /// Reads run `run_id` back to run it again from the top, with its journaled values: with
    /// `script`, that script instead of the journaled one (a call whose inputs changed at a
    /// journaled position then stops the resume). A completed run is returned as it ended
    /// when no script is given, and nothing runs.
    pub async fn prepare_resume(
        &self,
        run_id: &str,
        script: Option<&str>,
    ) -> Result<PreparedRun, WorkflowError> {
        let mut record = self
            .journal
            .load_run(run_id)
            .await
            .map_err(WorkflowError::Journal)?
            .ok_or_else(|| WorkflowError::UnknownRun(run_id.to_string()))?;
        let calls = self
            .journal
            .load_calls(run_id)
            .await
            .map_err(WorkflowError::Journal)?;
        if let Some(s) = script {
            self.check(s, &record.args)?;
            record.script = s.to_string();
        }
        Ok(PreparedRun {
            record,
            calls,
            resumed: true,
            script_given: script.is_some(),
        })
    }

    fn check(&self, script: &str, args: &Value) -> Result<(), WorkflowError> {
        let max = self.limits.max_script_bytes;
        if script.len() > max {
            return Err(WorkflowError::Invalid(format!(
                "the script is {} bytes; at most {max} (max_script_bytes)",
                script.len()
            )));
        }
        let n = args.to_string().len();
        if n > self.limits.max_value_bytes {
            return Err(WorkflowError::Invalid(format!(
                "args is {n} bytes of JSON; at most {} (max_value_bytes)",
                self.limits.max_value_bytes
            )));
        }
        Ok(())
    }

    /// Runs a prepared run to its end as a child of `ctx`, and records how it ended.
    pub async fn execute(&self, prepared: PreparedRun, ctx: &TaskContext) -> WorkflowOutcome {
        let run_id = prepared.record.run_id.clone();
        // The workflow's node: under the caller in the tree, at the caller's depth (a workflow
        // orchestrates for its caller; its calls are at the depth the caller's Task calls are).
        let wctx = ctx
            .child(WORKFLOW_AGENT, Some(run_id.clone()))
            .with_depth(ctx.depth());
        let span = tracing::info_span!(
            "invoke_workflow",
            otel.name = %format_args!("invoke_workflow {run_id}"),
            otel.kind = "internal",
            gen_ai.operation.name = "invoke_workflow",
            subagents.workflow.run_id = %run_id,
            subagents.workflow.resumed = prepared.resumed,
            subagents.workflow.calls = tracing::field::Empty,
            subagents.status = tracing::field::Empty,
            error.type = tracing::field::Empty,
        );
        let outcome = self
            .execute_in(prepared, &wctx)
            .instrument(span.clone())
            .await;
        if !span.is_disabled() {
            span.record("subagents.status", outcome.status.as_str());
            span.record("subagents.workflow.calls", outcome.children.len() as i64);
            if let Some(e) = &outcome.error {
                span.record("error.type", e.kind());
            }
        }
        outcome
    }

    async fn execute_in(&self, prepared: PreparedRun, wctx: &TaskContext) -> WorkflowOutcome {
        let started = Instant::now();
        let PreparedRun {
            mut record,
            calls,
            resumed,
            script_given,
        } = prepared;
        let run_id = record.run_id.clone();
        let verb = if resumed { "resumed" } else { "started" };
        wctx.emit(ProgressKind::Started {
            description: format!("workflow {run_id} {verb}"),
        });
        let mut counts = CallCounts::default();
        // What was spent before a resume stays spent (a cancelled call's partial usage too).
        let journaled: BTreeMap<u32, UsageNode> = calls
            .iter()
            .filter_map(|c| c.usage.clone().map(|u| (c.position, u)))
            .collect();
        if let Some(budget) = wctx.budget() {
            for node in journaled.values() {
                charge_tree(budget, node);
            }
        }
        if resumed && record.status == RunStatus::Completed && !script_given {
            let outcome = WorkflowOutcome {
                run_id,
                status: RunStatus::Completed,
                result: record.result.clone(),
                error: None,
                calls: CallCounts {
                    replayed: calls.iter().filter(|c| c.state.is_finished()).count() as u32,
                    ..counts
                },
                children: journaled.into_values().collect(),
                duration: started.elapsed(),
            };
            finish_event(wctx, &outcome);
            return outcome;
        }
        record.status = RunStatus::Running;
        record.error = None;
        record.updated_at = SystemTime::now();
        if let Err(e) = self.journal.save_run(&record).await {
            let outcome = WorkflowOutcome {
                run_id,
                status: RunStatus::Failed,
                result: None,
                error: Some(WorkflowError::Journal(e)),
                calls: counts,
                children: journaled.into_values().collect(),
                duration: started.elapsed(),
            };
            finish_event(wctx, &outcome);
            return outcome;
        }
        let mut host = Host {
            journal: self.journal.clone(),
            caller: self.caller.clone(),
            run_id: run_id.clone(),
            records: calls.iter().map(|c| (c.position, c.clone())).collect(),
            next_seq: calls
                .iter()
                .filter_map(|c| c.seq)
                .max()
                .map_or(0, |s| s + 1),
            nodes: journaled,
            live: Arc::new(Live::default()),
            shown: (0, 0, 0, 0),
        };
        counts.replayed = calls.iter().filter(|c| c.state.is_finished()).count() as u32;
        let replay = replay_of(&calls);
        let result = host
            .drive(&record, replay, &self.limits, wctx, &mut counts)
            .await;
        let (status, value, error) = match result {
            Ok(v) => (RunStatus::Completed, Some(v), None),
            Err(WorkflowError::Cancelled) => {
                (RunStatus::Cancelled, None, Some(WorkflowError::Cancelled))
            }
            Err(e) => (RunStatus::Failed, None, Some(e)),
        };
        record.status = status;
        record.result = value.clone();
        record.error = error.as_ref().map(ToString::to_string);
        record.updated_at = SystemTime::now();
        let error = match self.journal.save_run(&record).await {
            Ok(()) => error,
            Err(e) => {
                tracing::warn!(run = %run_id, error = %e, "workflow end not saved");
                error.or(Some(WorkflowError::Journal(e)))
            }
        };
        let outcome = WorkflowOutcome {
            run_id,
            status: if error.is_some() && status == RunStatus::Completed {
                RunStatus::Failed
            } else {
                status
            },
            result: value,
            error,
            calls: counts,
            children: host.nodes.into_values().collect(),
            duration: started.elapsed(),
        };
        finish_event(wctx, &outcome);
        outcome
    }
}

/// The `Finished` event of the workflow's node.
fn finish_event(wctx: &TaskContext, outcome: &WorkflowOutcome) {
    let status = outcome.usage_tree().status;
    let mut usage = Usage::new().with_duration_ms(outcome.duration.as_millis() as u64);
    for c in &outcome.children {
        usage.add_tokens(&c.total());
    }
    wctx.emit(ProgressKind::Finished { status, usage });
}

/// Charges a journaled call's usage tree to `budget`, node by node.
fn charge_tree(budget: &subagent_core::Budget, node: &UsageNode) {
    let u = &node.usage;
    if u.input_tokens > 0 || u.output_tokens > 0 || u.turns > 0 {
        let _ = budget.charge_usage(
            u.model.as_deref().unwrap_or(""),
            u.input_tokens,
            u.output_tokens,
            u.turns,
        );
    }
    for c in &node.children {
        charge_tree(budget, c);
    }
}

/// The engine's view of a journal.
fn replay_of(calls: &[CallRecord]) -> Replay {
    let known = calls
        .iter()
        .map(|c| {
            let finished = c.state.is_finished().then(|| {
                (
                    c.state == CallState::Done,
                    c.value.clone().unwrap_or(Value::Null),
                )
            });
            (
                c.position,
                Known {
                    agent: c.agent.clone(),
                    hash: c.input_hash.clone(),
                    session: c.session_id.clone(),
                    finished,
                },
            )
        })
        .collect();
    let mut order: Vec<(u64, u32)> = calls
        .iter()
        .filter(|c| c.state.is_finished())
        .map(|c| (c.seq.unwrap_or(u64::MAX), c.position))
        .collect();
    order.sort_unstable();
    Replay {
        known,
        order: order.into_iter().map(|(_, p)| p).collect(),
    }
}

/// Calls of this process by how they stand, for the live tree.
#[derive(Debug, Default)]
struct Live {
    queued: AtomicU32,
    running: AtomicU32,
    done: AtomicU32,
    failed: AtomicU32,
}

/// What a call's sink saw of its child run.
#[derive(Debug)]
enum Attach {
    Task(u32, String),
    Session(u32, String),
}

/// A call's progress sink: forwards every event of its subtree, and tells the host when the
/// call's own run starts (its task id) and announces its session.
struct CallSink {
    inner: Arc<dyn ProgressSink>,
    run_id: String,
    position: u32,
    live: Arc<Live>,
    attach: tokio::sync::mpsc::UnboundedSender<Attach>,
    started: std::sync::atomic::AtomicBool,
}

impl ProgressSink for CallSink {
    fn emit(&self, event: ProgressEvent) {
        if event.parent_task_id.as_deref() == Some(self.run_id.as_str()) {
            match &event.kind {
                ProgressKind::Started { .. } => {
                    if !self.started.swap(true, Ordering::Relaxed) {
                        self.live.queued.fetch_sub(1, Ordering::Relaxed);
                        self.live.running.fetch_add(1, Ordering::Relaxed);
                    }
                    if let Some(t) = &event.task_id {
                        let _ = self.attach.send(Attach::Task(self.position, t.clone()));
                    }
                }
                ProgressKind::Session { session_id } => {
                    let _ = self
                        .attach
                        .send(Attach::Session(self.position, session_id.clone()));
                }
                _ => {}
            }
        }
        if !self.inner.discards_events() {
            self.inner.emit(event);
        }
    }

    fn discards_events(&self) -> bool {
        // The call's own Started and Session events are needed whatever the sink.
        false
    }
}

/// How one call ended.
struct Ended {
    position: u32,
    /// `None`: cancelled with the run (not journaled as finished).
    value: Option<(bool, Value)>,
    usage: Option<UsageNode>,
    task_id: Option<String>,
    session_id: Option<String>,
}

/// The host loop's state for one run.
struct Host {
    journal: Arc<dyn Journal>,
    caller: Arc<dyn AgentCaller>,
    run_id: String,
    records: HashMap<u32, CallRecord>,
    next_seq: u64,
    nodes: BTreeMap<u32, UsageNode>,
    live: Arc<Live>,
    /// The counts last shown.
    shown: (u32, u32, u32, u32),
}

impl Host {
    async fn drive(
        &mut self,
        record: &RunRecord,
        replay: Replay,
        limits: &WorkflowLimits,
        wctx: &TaskContext,
        counts: &mut CallCounts,
    ) -> Result<Value, WorkflowError> {
        let (to_host, mut from_engine) = tokio::sync::mpsc::unbounded_channel();
        let (to_engine, from_host) = std::sync::mpsc::channel();
        let pending_logs = Arc::new(AtomicUsize::new(0));
        let mut engine = engine::spawn(EngineInput {
            script: record.script.clone(),
            args: record.args.clone(),
            limits: limits.clone(),
            replay,
            cancel: wctx.cancel().clone(),
            to_host,
            from_host,
            pending_logs: pending_logs.clone(),
        })?;
        let (attach_tx, mut attach_rx) = tokio::sync::mpsc::unbounded_channel();
        let mut running: JoinSet<Ended> = JoinSet::new();
        let mut tick = tokio::time::interval(Duration::from_millis(250));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let parent_span = tracing::Span::current();
        let result = loop {
            tokio::select! {
                biased;
                r = &mut engine => {
                    break r.unwrap_or_else(|_| Err(WorkflowError::Engine("the engine thread ended without a result".into())));
                }
                Some(ended) = running.join_next(), if !running.is_empty() => {
                    let ended = match ended {
                        Ok(e) => e,
                        Err(e) => {
                            // A panicking call is a bug; the run cannot say what it did.
                            let _ = to_engine.send(ToJs::Stop(WorkflowError::Engine(format!("a call task failed: {e}"))));
                            continue;
                        }
                    };
                    if let Err(e) = self.ended(ended, &to_engine, counts).await {
                        let _ = to_engine.send(ToJs::Stop(e));
                    }
                }
                Some(message) = from_engine.recv() => match message {
                    ToHost::Log(text) => {
                        pending_logs.fetch_sub(1, Ordering::Relaxed);
                        wctx.emit(ProgressKind::Status { message: format!("log: {text}") });
                    }
                    ToHost::Call(issued) => {
                        if issued.again {
                            counts.rerun += 1;
                        }
                        match self.start(*issued, wctx, &attach_tx, &parent_span, &mut running).await {
                            Ok(()) => {}
                            Err(e) => { let _ = to_engine.send(ToJs::Stop(e)); }
                        }
                    }
                },
                Some(a) = attach_rx.recv() => self.attach(a).await,
                _ = tick.tick() => self.show(wctx),
            }
        };
        // Calls still running (the script did not wait for them, or the run stopped) are
        // cancelled; one cancelled before it ended is not finished in the journal, so a resume
        // runs it again. One that ended anyway is journaled as finished, after every value the
        // script got: a resume hands it over in that order.
        if !running.is_empty() {
            wctx.cancel().cancel();
            while let Some(ended) = running.join_next().await {
                let Ok(ended) = ended else { continue };
                let position = ended.position;
                if let Err(e) = self.ended(ended, &to_engine, counts).await {
                    tracing::warn!(run = %self.run_id, position, error = %e, "call's end not saved");
                }
            }
        }
        // Lines the script logged just before it returned are still queued: show them, in order.
        while let Ok(message) = from_engine.try_recv() {
            if let ToHost::Log(text) = message {
                pending_logs.fetch_sub(1, Ordering::Relaxed);
                wctx.emit(ProgressKind::Status {
                    message: format!("log: {text}"),
                });
            }
        }
        while let Ok(a) = attach_rx.try_recv() {
            self.attach(a).await;
        }
        self.show(wctx);
        result
    }

    /// Journals a call's start, then starts it.
    async fn start(
        &mut self,
        issued: Issued,
        wctx: &TaskContext,
        attach: &tokio::sync::mpsc::UnboundedSender<Attach>,
        parent_span: &tracing::Span,
        running: &mut JoinSet<Ended>,
    ) -> Result<(), WorkflowError> {
        let Issued {
            position,
            request,
            hash,
            resume_session,
            again: _,
        } = issued;
        let mut rec = CallRecord::started(
            position,
            request.kind(),
            request.agent(),
            hash,
            request.description(),
        );
        rec.session_id = resume_session.clone();
        self.journal
            .save_call(&self.run_id, &rec)
            .await
            .map_err(WorkflowError::Journal)?;
        self.records.insert(position, rec);
        self.live.queued.fetch_add(1, Ordering::Relaxed);
        let sink = Arc::new(CallSink {
            inner: wctx.progress().clone(),
            run_id: self.run_id.clone(),
            position,
            live: self.live.clone(),
            attach: attach.clone(),
            started: std::sync::atomic::AtomicBool::new(false),
        });
        let ctx = wctx.clone().with_progress(sink.clone());
        let caller = self.caller.clone();
        let span = tracing::info_span!(
            parent: parent_span,
            "workflow_call",
            otel.name = %format_args!("workflow_call #{position} {}", request.agent()),
            otel.kind = "internal",
            subagents.workflow.position = i64::from(position),
            gen_ai.agent.name = request.agent(),
            subagents.workflow.call_kind = request.kind().as_str(),
        );
        let live = self.live.clone();
        running.spawn(
            async move {
                let ended =
                    run_call(caller.as_ref(), position, request, resume_session, &ctx).await;
                if sink.started.load(Ordering::Relaxed) {
                    live.running.fetch_sub(1, Ordering::Relaxed);
                } else {
                    live.queued.fetch_sub(1, Ordering::Relaxed);
                }
                match &ended.value {
                    Some((true, _)) => live.done.fetch_add(1, Ordering::Relaxed),
                    Some((false, _)) => live.failed.fetch_add(1, Ordering::Relaxed),
                    None => 0,
                };
                ended
            }
            .instrument(span),
        );
        Ok(())
    }

    /// Journals a call's end, then hands its value to the script.
    async fn ended(
        &mut self,
        ended: Ended,
        to_engine: &std::sync::mpsc::Sender<ToJs>,
        counts: &mut CallCounts,
    ) -> Result<(), WorkflowError> {
        let Ended {
            position,
            value,
            usage,
            task_id,
            session_id,
        } = ended;
        if let Some(u) = &usage {
            self.nodes.insert(position, u.clone());
        }
        let Some(rec) = self.records.get_mut(&position) else {
            return Ok(());
        };
        rec.task_id = task_id.or(rec.task_id.take());
        rec.session_id = session_id.or(rec.session_id.take());
        rec.usage = usage;
        let Some((ok, value)) = value else {
            rec.state = CallState::Cancelled;
            let rec = rec.clone();
            counts.cancelled += 1;
            return self
                .journal
                .save_call(&self.run_id, &rec)
                .await
                .map_err(WorkflowError::Journal);
        };
        rec.state = if ok {
            CallState::Done
        } else {
            CallState::Failed
        };
        rec.seq = Some(self.next_seq);
        rec.value = Some(value.clone());
        rec.finished_at = Some(SystemTime::now());
        let rec = rec.clone();
        // Durable before the script sees it: a resume hands it over again in the same order.
        self.journal
            .save_call(&self.run_id, &rec)
            .await
            .map_err(WorkflowError::Journal)?;
        self.next_seq += 1;
        if ok {
            counts.done += 1;
        } else {
            counts.failed += 1;
        }
        let _ = to_engine.send(ToJs::Deliver {
            position,
            ok,
            value,
        });
        Ok(())
    }

    /// Journals a call's child task or session id (best effort: the call runs either way).
    async fn attach(&mut self, a: Attach) {
        let (position, changed) = match a {
            Attach::Task(p, id) => (p, self.records.get_mut(&p).map(|r| r.task_id = Some(id))),
            Attach::Session(p, id) => {
                (p, self.records.get_mut(&p).map(|r| r.session_id = Some(id)))
            }
        };
        if changed.is_none() {
            return;
        }
        if let Some(rec) = self.records.get(&position).cloned()
            && let Err(e) = self.journal.save_call(&self.run_id, &rec).await
        {
            tracing::warn!(run = %self.run_id, position, error = %e, "call's session not saved");
        }
    }

    /// The workflow node's line: its calls by how they stand, when that changed.
    fn show(&mut self, wctx: &TaskContext) {
        let l = &self.live;
        let now = (
            l.running.load(Ordering::Relaxed),
            l.done.load(Ordering::Relaxed),
            l.failed.load(Ordering::Relaxed),
            l.queued.load(Ordering::Relaxed),
        );
        if now == self.shown {
            return;
        }
        self.shown = now;
        let (running, done, failed, queued) = now;
        wctx.emit(ProgressKind::Status {
            message: format!("{running} running · {done} done · {failed} failed · {queued} queued"),
        });
    }
}

/// Runs one call.
async fn run_call(
    caller: &dyn AgentCaller,
    position: u32,
    request: Request,
    resume_session: Option<String>,
    ctx: &TaskContext,
) -> Ended {
    match request {
        Request::Agent(a) => {
            let name = a.name;
            let shown = a.description.unwrap_or_else(|| name.clone());
            let mut call = TaskCall::new(name.clone(), format!("#{position} {shown}"), a.prompt);
            call.model = a.model;
            call.output_schema = a.schema;
            let result = match resume_session {
                Some(session) => {
                    let mut again = call.clone();
                    again.resume = Some(session);
                    again.prompt = CONTINUE_PROMPT.to_string();
                    match caller.call(again, ctx).await {
                        // Nothing to continue (no transcript, a task the peer no longer has, a
                        // kind that cannot): from the start. Continuing is only a saving.
                        Err(e) if !ctx.cancel().is_cancelled() => {
                            tracing::debug!(position, error = %e, "could not continue the call's session; running it again");
                            caller.call(call, ctx).await
                        }
                        r => r,
                    }
                }
                None => caller.call(call, ctx).await,
            };
            match result {
                Ok(done) => {
                    let usage =
                        done.outcome
                            .usage_tree(&done.agent, &done.kind, done.task_id.as_deref());
                    let o = &done.outcome;
                    let value = if o.status == TaskStatus::Completed {
                        Some((
                            true,
                            o.structured
                                .clone()
                                .unwrap_or_else(|| Value::String(o.text.clone())),
                        ))
                    } else if o.status == TaskStatus::Cancelled && ctx.cancel().is_cancelled() {
                        None
                    } else {
                        let why = o
                            .limit
                            .as_ref()
                            .map(|l| format!(" ({l})"))
                            .unwrap_or_default();
                        Some((
                            false,
                            json!({
                                "message": format!("agent `{}` ended {}{why}: {}", done.agent, o.status, subagent_schema::cut(&o.text, 500)),
                                "agent": done.agent,
                                "status": o.status.as_str(),
                                "text": o.text,
                            }),
                        ))
                    };
                    Ended {
                        position,
                        value,
                        usage: Some(usage),
                        task_id: done.task_id,
                        session_id: o.session_id.clone(),
                    }
                }
                Err(_) if ctx.cancel().is_cancelled() => Ended {
                    position,
                    value: None,
                    usage: None,
                    task_id: None,
                    session_id: None,
                },
                Err(e) => Ended {
                    position,
                    value: Some((
                        false,
                        json!({"message": e.to_string(), "agent": name, "status": "failed"}),
                    )),
                    usage: None,
                    task_id: None,
                    session_id: None,
                },
            }
        }
        Request::Ask { question } => {
            let summary: String = question.split_whitespace().collect::<Vec<_>>().join(" ");
            let request = ApprovalRequest::new(
                ctx.agent_path(),
                "Workflow",
                summary,
                "the workflow asks (yes or no)",
            );
            let answer = match ctx.approver() {
                Some(a) => {
                    tokio::select! {
                        d = a.request(request) => Some(d.is_allowed()),
                        () = ctx.cancel().cancelled() => None,
                    }
                }
                None => Some(false),
            };
            Ended {
                position,
                value: answer.map(|yes| (true, Value::Bool(yes))),
                usage: None,
                task_id: None,
                session_id: None,
            }
        }
    }
}
