//! Background runs: spawn, read (blocking or not), stop, and bounded retention.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant, SystemTime};

use dashmap::DashMap;
use subagent_core::{BudgetExt, SessionApprover};
use subagent_spi::{
    ApprovalDecision, ApprovalRequest, Approver, CancellationToken, InboxMessage, ProgressEvent,
    ProgressKind, ProgressSink, SubagentError, TaskCall, TaskContext, TaskOutcome, TaskStatus,
    Usage, UsageNode, async_trait,
};
use tokio::sync::{oneshot, watch};

use crate::concurrency::{RunPermit, Slots};
use crate::config::TaskConfig;
use crate::ledger::TaskRecord;
use crate::mailbox::{Mailbox, Scope, check_name};
use crate::persist::{LedgerWriter, Persisted, Shared};
use crate::routing::Target;
use crate::share::{BackgroundCaller, Shares};

/// What a background task needs of the tool that starts it: its settings, the cap on children
/// at once, whether `TaskStop` is offered (for the wording of limits), and the metered run
/// itself. The `Task` tool implements it; this module never names the tool.
pub(crate) trait BackgroundRunner: Send + Sync + 'static {
    /// The settings (background cap, grace, inbox bounds).
    fn config(&self) -> &TaskConfig;
    /// The places under the cap on children at once.
    fn slots(&self) -> &Arc<Slots>;
    /// True when `TaskStop` is offered.
    fn offers_stop(&self) -> bool;
    /// The registry the task is counted in (the spawned task outlives the call's borrow).
    fn background(&self) -> &BackgroundRegistry;
    /// One child's run, metered and settled (its context carries its meter already).
    fn run<'a>(
        &'a self,
        target: &'a Target,
        call: TaskCall,
        child: TaskContext,
    ) -> impl Future<Output = Result<TaskOutcome, SubagentError>> + Send + 'a;
}

/// Partial output kept per background task (the most recent text).
const PARTIAL_CAP: usize = 64 * 1024;
/// Beyond the stop grace, how long stopping a task of another process waits for it to end:
/// that process polls for stop requests every second and writes its end in a batch.
const STOP_ELSEWHERE_SLACK: Duration = Duration::from_secs(5);
/// How often the record of a task being stopped elsewhere is read.
const STOP_ELSEWHERE_POLL: Duration = Duration::from_millis(200);

/// The state of a background task.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum BackgroundState {
    /// Started, waiting for a place under the concurrency cap
    /// ([`max_concurrent`](crate::TaskToolBuilder::max_concurrent)).
    Queued,
    /// Still running.
    Running,
    /// Running, but stopped at a tool call that needs approval: the question, answered with
    /// `TaskOutput`'s `approve` ([`TaskTool::answer_approval`](crate::TaskTool::answer_approval) from Rust).
    WaitingForApproval(ApprovalRequest),
    /// Ended with an outcome (completed, needs input, limit reached, cancelled...).
    Finished(TaskOutcome),
    /// Ended with an error.
    Failed(String),
}

impl BackgroundState {
    /// Not ended yet (running, or waiting for approval).
    fn is_running(&self) -> bool {
        matches!(
            self,
            BackgroundState::Queued
                | BackgroundState::Running
                | BackgroundState::WaitingForApproval(_)
        )
    }

    /// Ended, or waiting for an answer: a reader waiting for news may stop waiting.
    fn needs_attention(&self) -> bool {
        !matches!(self, BackgroundState::Running | BackgroundState::Queued)
    }
}

/// What `TaskOutput` / `TaskStop` report about a background task.
#[derive(Debug, Clone)]
pub struct BackgroundSnapshot {
    /// The task id.
    pub task_id: String,
    /// The agent's name.
    pub agent: String,
    /// The agent's kind.
    pub kind: String,
    /// The call's short description.
    pub description: String,
    /// The state.
    pub state: BackgroundState,
    /// Time since the task started (or its whole duration, once finished).
    pub elapsed: Duration,
    /// Text streamed so far (bounded; the most recent part).
    pub partial: String,
    /// True when a caller asked to wait and the wait ran out before the task finished.
    pub wait_timed_out: bool,
    /// A remark for the reader: the result was read back from the task ledger (it ran in an
    /// earlier or another process), or it could not be saved to the ledger.
    pub note: Option<String>,
    /// When the task started (wall clock).
    pub started_at: SystemTime,
    /// The session the task's run announced (what `resume` continues), once known.
    pub session_id: Option<String>,
    /// Messages sent to the task (`SendMessage`) that it ended without reading, oldest first
    /// (empty while it runs).
    pub unread_messages: Vec<InboxMessage>,
}

impl BackgroundSnapshot {
    /// The status: `Running` (also while queued or waiting for approval), the outcome's
    /// status, or `Failed`.
    pub fn status(&self) -> TaskStatus {
        match &self.state {
            BackgroundState::Queued
            | BackgroundState::Running
            | BackgroundState::WaitingForApproval(_) => TaskStatus::Running,
            BackgroundState::Finished(o) => o.status,
            BackgroundState::Failed(_) => TaskStatus::Failed,
        }
    }

    /// The question the task waits on, when it waits for approval.
    pub fn pending_approval(&self) -> Option<&ApprovalRequest> {
        match &self.state {
            BackgroundState::WaitingForApproval(r) => Some(r),
            _ => None,
        }
    }

    /// The outcome, once finished.
    pub fn outcome(&self) -> Option<&TaskOutcome> {
        match &self.state {
            BackgroundState::Finished(o) => Some(o),
            _ => None,
        }
    }
}

pub(crate) struct Entry {
    agent: String,
    kind: String,
    description: String,
    /// The call, kept for the ledger's record (only with a ledger).
    call: Option<TaskCall>,
    started_wall: SystemTime,
    finished_wall: Mutex<Option<SystemTime>>,
    session_id: Mutex<Option<String>>,
    usage: Mutex<Usage>,
    /// Why the last ledger write of this task failed, until one succeeds.
    persist_error: Mutex<Option<String>>,
    cancel: CancellationToken,
    started: Instant,
    state: watch::Sender<BackgroundState>,
    finished_at: Mutex<Option<Instant>>,
    partial: Mutex<String>,
    /// Usage is reported to the caller once, on the first read after the end.
    usage_reported: AtomicBool,
    /// Approval requests waiting for an answer, oldest first.
    pending: Mutex<VecDeque<Pending>>,
    next_pending: AtomicU64,
    /// Its name, caller and inbox (`SendMessage`).
    mailbox: Mailbox,
}

/// One approval request of a background task, waiting for its answer.
struct Pending {
    id: u64,
    request: ApprovalRequest,
    answer: oneshot::Sender<ApprovalDecision>,
}

impl Entry {
    pub(crate) fn snapshot(&self, task_id: &str, wait_timed_out: bool) -> BackgroundSnapshot {
        let state = self.state.borrow().clone();
        let state_session = match &state {
            BackgroundState::Finished(o) => o.session_id.clone(),
            _ => None,
        };
        let elapsed = match *self.finished_at.lock().unwrap_or_else(|p| p.into_inner()) {
            Some(end) => end.duration_since(self.started),
            None => self.started.elapsed(),
        };
        BackgroundSnapshot {
            task_id: task_id.to_string(),
            agent: self.agent.clone(),
            kind: self.kind.clone(),
            description: self.description.clone(),
            state,
            elapsed,
            partial: self
                .partial
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .clone(),
            wait_timed_out,
            note: lock(&self.persist_error).as_ref().map(|e| {
                format!("this result could not be saved to the task ledger ({e}); it is lost if this process ends")
            }),
            started_at: self.started_wall,
            session_id: match &state_session {
                Some(s) => Some(s.clone()),
                None => lock(&self.session_id).clone(),
            },
            unread_messages: self.mailbox.unread(),
        }
    }

    /// Its name, caller and inbox.
    pub(crate) fn mailbox(&self) -> &Mailbox {
        &self.mailbox
    }

    /// The agent's name.
    pub(crate) fn agent(&self) -> &str {
        &self.agent
    }

    /// The agent's kind.
    pub(crate) fn kind(&self) -> &str {
        &self.kind
    }

    /// Not ended yet.
    pub(crate) fn is_running(&self) -> bool {
        self.state.borrow().is_running()
    }

    /// Cancels the task (it winds down within the stop grace).
    pub(crate) fn cancel_now(&self) {
        self.cancel.cancel();
    }

    pub(crate) fn set_persist_error(&self, e: String) {
        *lock(&self.persist_error) = Some(e);
    }

    pub(crate) fn clear_persist_error(&self) {
        lock(&self.persist_error).take();
    }

    /// The ledger's record of this task, as it is now.
    pub(crate) fn record(&self, task_id: &str, owner: &str) -> TaskRecord {
        let mut call = self.call.clone().unwrap_or_default();
        call.description.clone_from(&self.description);
        let mut r = TaskRecord::new(task_id, &self.agent, &self.kind, call, owner);
        r.started_at = self.started_wall;
        r.finished_at = *lock(&self.finished_wall);
        r.partial = lock(&self.partial).clone();
        r.session_id = lock(&self.session_id).clone();
        r.usage = lock(&self.usage).clone();
        match &*self.state.borrow() {
            // Queued tasks are recorded as running: after a crash both read back as interrupted.
            BackgroundState::Queued
            | BackgroundState::Running
            | BackgroundState::WaitingForApproval(_) => {}
            BackgroundState::Finished(o) => {
                r.status = o.status;
                r.usage = o.usage.clone();
                if o.session_id.is_some() {
                    r.session_id.clone_from(&o.session_id);
                }
                r.outcome = Some(o.clone());
            }
            BackgroundState::Failed(e) => {
                r.status = TaskStatus::Failed;
                r.error = Some(e.clone());
            }
        }
        r
    }

    /// Publishes the oldest pending question (or `Running` when none is left), unless the task
    /// has ended.
    fn publish_pending(&self) {
        // Holding the queue's lock while publishing keeps publishers in order.
        let pending = self.pending.lock().unwrap_or_else(|p| p.into_inner());
        let front = pending.front().map(|p| p.request.clone());
        self.state.send_if_modified(|s| {
            if !s.is_running() {
                return false;
            }
            *s = match front {
                Some(r) => BackgroundState::WaitingForApproval(r),
                None => BackgroundState::Running,
            };
            true
        });
    }

    fn remove_pending(&self, id: u64) {
        self.pending
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .retain(|p| p.id != id);
        self.publish_pending();
    }

    fn expired(&self, ttl: Duration, now: Instant) -> bool {
        self.finished_at
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .is_some_and(|end| now.duration_since(end) > ttl)
    }

    fn push_partial(&self, text: &str) {
        let mut p = self.partial.lock().unwrap_or_else(|p| p.into_inner());
        p.push_str(text);
        if p.len() > PARTIAL_CAP {
            let mut cut = p.len() - PARTIAL_CAP;
            while !p.is_char_boundary(cut) {
                cut += 1;
            }
            p.drain(..cut);
        }
    }

    /// Takes the usage tree to report, the first time only. A task that failed reports the
    /// usage it announced before failing (its tokens were spent all the same) and its error
    /// (crate::failed).
    pub(crate) fn take_usage(&self, task_id: &str) -> Option<UsageNode> {
        let state = self.state.borrow();
        let node = match &*state {
            BackgroundState::Finished(o) => {
                crate::failed::outcome_node(o, &self.agent, &self.kind, task_id)
                    .with_answer(&o.text)
            }
            BackgroundState::Failed(e) => {
                let usage = lock(&self.usage).clone();
                UsageNode::new(&self.agent, &self.kind, TaskStatus::Failed, usage)
                    .with_task_id(task_id)
                    .with_error(crate::failed::reason(e))
            }
            _ => return None,
        };
        if self.usage_reported.swap(true, Ordering::AcqRel) {
            return None;
        }
        Some(node)
    }
}

/// Forwards events and keeps the task's own text deltas as partial output.
struct PartialSink {
    entry: Weak<Entry>,
    task_id: String,
    inner: Arc<dyn ProgressSink>,
    /// The ledger writer to tell about changes, when there is a ledger.
    ledger: Option<Arc<Shared>>,
}

impl ProgressSink for PartialSink {
    fn emit(&self, event: ProgressEvent) {
        if event.task_id.as_deref() == Some(self.task_id.as_str())
            && let Some(e) = self.entry.upgrade()
        {
            let changed = match &event.kind {
                ProgressKind::TextDelta { text } => {
                    e.push_partial(text);
                    true
                }
                ProgressKind::Session { session_id } => {
                    *lock(&e.session_id) = Some(session_id.clone());
                    true
                }
                ProgressKind::Usage { usage } => {
                    *lock(&e.usage) = usage.clone();
                    true
                }
                _ => false,
            };
            if changed && let Some(w) = &self.ledger {
                w.mark(&self.task_id, &e);
            }
        }
        self.inner.emit(event);
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The approver of a background task: a request waits in the task's entry (visible to
/// `TaskOutput` as `waiting_for_approval`) until the caller answers it, unless the upstream
/// approver already allowed it for the session. The task wraps it in a [`SessionApprover`],
/// which remembers the caller's "allow for the session" answers.
struct BackgroundApprover {
    entry: Weak<Entry>,
    upstream: Option<Arc<dyn Approver>>,
}

/// Removes a pending request when its wait ends early (the task was cancelled).
struct PendingGuard<'a> {
    entry: &'a Entry,
    id: u64,
}

impl Drop for PendingGuard<'_> {
    fn drop(&mut self) {
        self.entry.remove_pending(self.id);
    }
}

#[async_trait]
impl Approver for BackgroundApprover {
    async fn request(&self, request: ApprovalRequest) -> ApprovalDecision {
        let Some(entry) = self.entry.upgrade() else {
            return ApprovalDecision::deny("the background task's record is gone.");
        };
        let (tx, rx) = oneshot::channel();
        let id = entry.next_pending.fetch_add(1, Ordering::AcqRel);
        entry
            .pending
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push_back(Pending {
                id,
                request,
                answer: tx,
            });
        entry.publish_pending();
        let _guard = PendingGuard { entry: &entry, id };
        rx.await.unwrap_or_else(|_| {
            ApprovalDecision::deny("the question was dropped without an answer.")
        })
    }

    fn granted(&self, request: &ApprovalRequest) -> bool {
        self.upstream.as_ref().is_some_and(|u| u.granted(request))
    }
}

pub(crate) struct BackgroundRegistry {
    entries: DashMap<String, Arc<Entry>>,
    /// Where records go, when the tool has a ledger.
    ledger: Option<LedgerWriter>,
    running: AtomicUsize,
    /// Running tasks per [`BackgroundCaller`] (crate::share).
    shares: Shares,
    finished: AtomicUsize,
    epoch: Instant,
    last_sweep_ms: AtomicU64,
}

impl BackgroundRegistry {
    pub(crate) fn new(ledger: Option<LedgerWriter>) -> Self {
        Self {
            entries: DashMap::new(),
            ledger,
            running: AtomicUsize::new(0),
            shares: Shares::default(),
            finished: AtomicUsize::new(0),
            epoch: Instant::now(),
            last_sweep_ms: AtomicU64::new(0),
        }
    }

    /// Writes every pending change to the ledger now (a no-op without one).
    pub(crate) async fn flush_ledger(&self) -> Result<(), crate::LedgerError> {
        match &self.ledger {
            Some(w) => w.flush().await,
            None => Ok(()),
        }
    }

    /// True when changes are recorded in a ledger.
    pub(crate) fn has_ledger(&self) -> bool {
        self.ledger.is_some()
    }

    /// Number of background tasks running now.
    pub(crate) fn running(&self) -> usize {
        self.running.load(Ordering::Acquire)
    }

    pub(crate) fn spawn<R: BackgroundRunner>(
        &self,
        tool: R,
        target: Target,
        call: TaskCall,
        child: TaskContext,
    ) -> Result<(), SubagentError> {
        let (def, kind) = (target.def().clone(), target.kind().clone());
        let config = tool.config();
        let handle = tokio::runtime::Handle::try_current().map_err(|_| {
            SubagentError::execution(
                def.name(),
                "background tasks need a tokio runtime; call Task from within one",
            )
        })?;
        // A name makes the task reachable by `SendMessage`: plain, and unique among the
        // running tasks of the same caller.
        if let Some(name) = &call.name {
            check_name(name)?;
            if let Some(id) = self.running_named(name, child.parent_task_id()) {
                return Err(SubagentError::InvalidInput(format!(
                    "the name `{name}` is taken by your running task `{id}`; choose another"
                )));
            }
        }
        let max = config.max_background;
        // Only the companions offered are named (crate::offer); a background run needs
        // TaskOutput, so it is there.
        let stop = if tool.offers_stop() {
            ", stop one with TaskStop"
        } else {
            ""
        };
        // A caller of a host serving several gets its fair share (crate::share).
        let caller = child.extensions().get::<BackgroundCaller>().cloned();
        if let Some(c) = &caller
            && let Err((share, mine)) = self.shares.take(c, max)
        {
            return Err(SubagentError::LimitReached {
                agent: def.name().to_string(),
                limit: subagent_spi::Limit::other(format!(
                    "max_background={max}: you already run {mine} background tasks, your share \
                     of the {max} shared by the clients running some now (the limit divided by \
                     their number plus one, kept for a newcomer: {share}). Wait for one with \
                     TaskOutput{stop}, or run this task in the foreground"
                )),
            });
        }
        if self.running.fetch_add(1, Ordering::AcqRel) >= max {
            self.running.fetch_sub(1, Ordering::AcqRel);
            if let Some(c) = &caller {
                self.shares.give_back(c);
            }
            return Err(SubagentError::LimitReached {
                agent: def.name().to_string(),
                limit: subagent_spi::Limit::other(format!(
                    "max_background={max}: {max} background tasks are already running. Wait for one \
                     with TaskOutput{stop}, or run this task in the foreground"
                )),
            });
        }
        self.maybe_sweep(config);

        let task_id = child.task_id().unwrap_or_default().to_string();
        // A place under the cap now, or the task starts queued and waits for one.
        let permit = RunPermit::try_acquire(tool.slots());
        let (tx, _rx) = watch::channel(if permit.is_some() {
            BackgroundState::Running
        } else {
            BackgroundState::Queued
        });
        let entry = Arc::new(Entry {
            agent: def.name().to_string(),
            kind: kind.to_string(),
            description: call.description.clone(),
            call: self.ledger.as_ref().map(|_| call.clone()),
            started_wall: SystemTime::now(),
            finished_wall: Mutex::new(None),
            session_id: Mutex::new(None),
            usage: Mutex::new(Usage::default()),
            persist_error: Mutex::new(None),
            cancel: child.cancel().clone(),
            started: Instant::now(),
            state: tx,
            finished_at: Mutex::new(None),
            partial: Mutex::new(String::new()),
            usage_reported: AtomicBool::new(false),
            pending: Mutex::new(VecDeque::new()),
            next_pending: AtomicU64::new(0),
            mailbox: Mailbox::new(
                call.name.clone(),
                child.parent_task_id().map(str::to_string),
                target.executor().message_delivery(def.as_ref()),
                config.inbox,
            ),
        });
        let sink = Arc::new(PartialSink {
            entry: Arc::downgrade(&entry),
            task_id: task_id.clone(),
            inner: child.progress().clone(),
            ledger: self.ledger.as_ref().map(|w| w.shared().clone()),
        });
        let approver = Arc::new(SessionApprover::new(Arc::new(BackgroundApprover {
            entry: Arc::downgrade(&entry),
            upstream: child.approver().cloned(),
        })));
        let mut child = child.with_progress(sink).with_approver(approver);
        if let Some(inbox) = entry.mailbox.inbox_for_run() {
            child = child.with_messages(Arc::new(inbox));
        }
        let writer = self.ledger.as_ref().map(|w| w.shared().clone());
        if let Some(w) = &writer {
            w.mark(&task_id, &entry);
        }
        self.entries.insert(task_id.clone(), entry.clone());

        let grace = config.stop_grace;
        // The caller's span (its `execute_tool Task`) stays the parent of the background run.
        let caller_span = tracing::Span::current();
        // Its reported usage is charged once, whatever its kind (crate::charge); the meter is
        // kept to settle what it announced should it end without an outcome.
        let child = crate::charge::meter(child);
        let meter = child.budget().cloned();
        handle.spawn(tracing::Instrument::instrument(async move {
            let cancel = child.cancel().clone();
            let agent = def.name().to_string();
            let permit = match permit {
                Some(p) => Some(p),
                None => RunPermit::acquire(tool.slots(), &child).await,
            };
            let result = match permit {
                None => Err(SubagentError::Cancelled { agent }),
                Some(permit) => {
                    entry.state.send_if_modified(|s| {
                        let queued = matches!(s, BackgroundState::Queued);
                        if queued {
                            *s = BackgroundState::Running;
                        }
                        queued
                    });
                    let child = child.with_extension_arc(permit.clone());
                    let fut = tool.run(&target, call, child);
                    tokio::pin!(fut);
                    let result = tokio::select! {
                        biased;
                        r = &mut fut => r,
                        _ = cancel.cancelled() => match tokio::time::timeout(grace, &mut fut).await {
                            Ok(r) => r,
                            Err(_) => Err(SubagentError::Cancelled { agent }),
                        },
                    };
                    permit.release();
                    result
                }
            };
            let partial = || {
                entry
                    .partial
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .clone()
            };
            let state = match result {
                Ok(mut o) => {
                    // A result that reached a budget (crate::charge) says so, not `cancelled`.
                    if cancel.is_cancelled()
                        && o.status != TaskStatus::Completed
                        && !(o.status == TaskStatus::LimitReached && o.limit.is_some())
                    {
                        o.status = TaskStatus::Cancelled;
                    }
                    if o.status == TaskStatus::Cancelled && o.text.is_empty() {
                        o.text = partial();
                    }
                    BackgroundState::Finished(o)
                }
                // Cancelled before it could wind down: the usage it announced still counts.
                Err(_) if cancel.is_cancelled() => {
                    let announced = lock(&entry.usage).clone();
                    crate::charge::settle_announced(meter.as_ref(), &announced);
                    BackgroundState::Finished(
                        TaskOutcome::with_status(partial(), TaskStatus::Cancelled)
                            .with_usage(announced),
                    )
                }
                Err(e) => {
                    crate::charge::settle_announced(meter.as_ref(), &lock(&entry.usage));
                    BackgroundState::Failed(e.to_string())
                }
            };
            // Messages it never read are kept for `TaskOutput`; later sends are refused.
            entry.mailbox.close();
            *entry.finished_at.lock().unwrap_or_else(|p| p.into_inner()) = Some(Instant::now());
            *lock(&entry.finished_wall) = Some(SystemTime::now());
            // Marked for the ledger before the end is published as well as after: a caller
            // woken by `send_replace` may flush the ledger and exit before the mark below runs
            // (seen under load: the record stayed `running`, read back as `interrupted`). The
            // record is built at flush time, so whichever flush comes first writes the end.
            if let Some(w) = &writer {
                w.mark(&task_id, &entry);
            }
            entry.state.send_replace(state);
            if let Some(w) = &writer {
                w.mark(&task_id, &entry);
            }
            let bg = tool.background();
            bg.finished.fetch_add(1, Ordering::AcqRel);
            bg.running.fetch_sub(1, Ordering::AcqRel);
            if let Some(c) = &caller {
                bg.shares.give_back(c);
            }
        }, caller_span));
        Ok(())
    }

    fn lookup(&self, task_id: &str, ttl: Duration) -> Result<Arc<Entry>, SubagentError> {
        let entry = self.entries.get(task_id).map(|e| e.value().clone());
        match entry {
            Some(e) if e.expired(ttl, Instant::now()) => {
                if self.entries.remove(task_id).is_some() {
                    self.finished.fetch_sub(1, Ordering::AcqRel);
                }
                Err(unknown(task_id, ttl))
            }
            Some(e) => Ok(e),
            None => Err(unknown(task_id, ttl)),
        }
    }

    /// [`lookup`](Self::lookup) among the tasks `scope` admits: another starter's task is
    /// unknown, as if it did not exist.
    fn lookup_in(
        &self,
        task_id: &str,
        scope: Scope<'_>,
        ttl: Duration,
    ) -> Result<Arc<Entry>, SubagentError> {
        let entry = self.lookup(task_id, ttl)?;
        if scope.admits(entry.mailbox.parent()) {
            Ok(entry)
        } else {
            Err(unknown(task_id, ttl))
        }
    }

    /// The task `to` names for `SendMessage`: its id, else its name (a running task first, else
    /// the latest that finished), among the tasks `scope` admits.
    pub(crate) fn addressable(
        &self,
        to: &str,
        scope: Scope<'_>,
        ttl: Duration,
    ) -> Option<(String, Arc<Entry>)> {
        let now = Instant::now();
        let ours = |e: &Entry| !e.expired(ttl, now) && scope.admits(e.mailbox.parent());
        if let Some(e) = self.entries.get(to)
            && ours(e.value())
        {
            return Some((to.to_string(), e.value().clone()));
        }
        self.entries
            .iter()
            .filter(|e| ours(e.value()) && e.value().mailbox.name() == Some(to))
            .max_by_key(|e| (e.value().is_running(), e.value().started))
            .map(|e| (e.key().clone(), e.value().clone()))
    }

    /// The tasks `scope` admits (see [`addressable`](Self::addressable)), as `id (name)`,
    /// oldest first, at most 20 (for error messages).
    pub(crate) fn tasks_of(&self, scope: Scope<'_>, ttl: Duration) -> Vec<String> {
        let now = Instant::now();
        let mut held: Vec<(Instant, String)> = self
            .entries
            .iter()
            .filter(|e| !e.value().expired(ttl, now) && scope.admits(e.value().mailbox.parent()))
            .map(|e| {
                let v = e.value();
                let state = if v.is_running() { "running" } else { "ended" };
                let label = match v.mailbox.name() {
                    Some(n) => format!("{} (name `{n}`, {state})", e.key()),
                    None => format!("{} ({state})", e.key()),
                };
                (v.started, label)
            })
            .collect();
        held.sort();
        held.into_iter().take(20).map(|(_, l)| l).collect()
    }

    /// The running task of that name started by `parent`, if any.
    fn running_named(&self, name: &str, parent: Option<&str>) -> Option<String> {
        self.entries
            .iter()
            .find(|e| {
                let v = e.value();
                v.is_running() && v.mailbox.name() == Some(name) && v.mailbox.parent() == parent
            })
            .map(|e| e.key().clone())
    }

    /// A task in memory `scope` admits, else its record in the ledger (a task of an earlier or
    /// another process). A task of this process that `scope` does not admit is unknown, also
    /// once it left memory (its starter is not in the ledger).
    async fn find(
        &self,
        task_id: &str,
        scope: Scope<'_>,
        ttl: Duration,
    ) -> Result<Found, SubagentError> {
        let not_here = match self.lookup(task_id, ttl) {
            Ok(e) if scope.admits(e.mailbox.parent()) => return Ok(Found::Here(e)),
            Ok(_) => return Err(unknown(task_id, ttl)),
            Err(e) => e,
        };
        let Some(writer) = &self.ledger else {
            return Err(not_here);
        };
        match writer.ledger().get(task_id).await {
            Ok(Some(r)) => {
                let expired = r.finished_at.is_some_and(|end| {
                    SystemTime::now()
                        .duration_since(end)
                        .is_ok_and(|age| age > ttl)
                });
                let evicted_here =
                    !matches!(scope, Scope::Any) && r.owner == writer.shared().owner();
                if expired || evicted_here {
                    Err(not_here)
                } else {
                    Ok(Found::Ledger(Box::new(snapshot_of_record(r))))
                }
            }
            Ok(None) => Err(not_here),
            Err(e) => Err(SubagentError::InvalidInput(format!(
                "background task `{task_id}` is not in this process, and the task ledger could \
                 not be read: {e}"
            ))),
        }
    }

    /// Reads a task `scope` admits, waiting up to `wait` for it to finish.
    pub(crate) async fn output(
        &self,
        task_id: &str,
        wait: Option<Duration>,
        scope: Scope<'_>,
        ttl: Duration,
    ) -> Result<(BackgroundSnapshot, Option<UsageNode>), SubagentError> {
        let entry = match self.find(task_id, scope, ttl).await? {
            Found::Here(e) => e,
            Found::Ledger(snap) => return Ok((*snap, None)),
        };
        let mut timed_out = false;
        if let Some(wait) = wait {
            let mut rx = entry.state.subscribe();
            let done = tokio::time::timeout(wait, rx.wait_for(|s| s.needs_attention())).await;
            timed_out = done.is_err();
        }
        let snap = entry.snapshot(task_id, timed_out);
        let usage = entry.take_usage(task_id);
        Ok((snap, usage))
    }

    /// Answers the oldest approval request of a task `scope` admits. Errors when the task is
    /// unknown or waits for no answer.
    pub(crate) fn answer(
        &self,
        task_id: &str,
        decision: ApprovalDecision,
        scope: Scope<'_>,
        ttl: Duration,
    ) -> Result<ApprovalRequest, SubagentError> {
        let entry = self.lookup_in(task_id, scope, ttl)?;
        let pending = entry
            .pending
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .pop_front();
        let Some(p) = pending else {
            return Err(SubagentError::InvalidInput(format!(
                "background task `{task_id}` is not waiting for approval"
            )));
        };
        let _ = p.answer.send(decision);
        entry.publish_pending();
        Ok(p.request)
    }

    /// The oldest question a task `scope` admits waits on.
    pub(crate) fn pending(
        &self,
        task_id: &str,
        scope: Scope<'_>,
        ttl: Duration,
    ) -> Option<ApprovalRequest> {
        let entry = self.lookup_in(task_id, scope, ttl).ok()?;
        let p = entry.pending.lock().unwrap_or_else(|p| p.into_inner());
        p.front().map(|p| p.request.clone())
    }

    /// Cancels a task `scope` admits and waits (up to `grace` + 1 s) for it to wind down.
    pub(crate) async fn stop(
        &self,
        task_id: &str,
        grace: Duration,
        scope: Scope<'_>,
        ttl: Duration,
    ) -> Result<(BackgroundSnapshot, Option<UsageNode>), SubagentError> {
        let entry = match self.find(task_id, scope, ttl).await? {
            Found::Here(e) => e,
            Found::Ledger(snap) if snap.status() == TaskStatus::Running => {
                return self
                    .stop_elsewhere(task_id, grace, ttl)
                    .await
                    .map(|s| (s, None));
            }
            Found::Ledger(snap) => return Ok((*snap, None)),
        };
        entry.cancel.cancel();
        let mut rx = entry.state.subscribe();
        let _ = tokio::time::timeout(
            grace + Duration::from_secs(1),
            rx.wait_for(|s| !s.is_running()),
        )
        .await;
        let snap = entry.snapshot(task_id, false);
        let usage = entry.take_usage(task_id);
        Ok((snap, usage))
    }

    /// Stops a task another process runs: asks it through the ledger, then reads the record
    /// until the task ended (bounded: the owner's poll, its grace, and a write).
    async fn stop_elsewhere(
        &self,
        task_id: &str,
        grace: Duration,
        ttl: Duration,
    ) -> Result<BackgroundSnapshot, SubagentError> {
        let Some(writer) = &self.ledger else {
            return Err(unknown(task_id, ttl));
        };
        let ledger = writer.ledger();
        let refused = |e: crate::LedgerError| {
            SubagentError::InvalidInput(format!(
                "background task `{task_id}` runs in another process, and it could not be asked \
                 to stop: {e}"
            ))
        };
        ledger.request_stop(task_id).await.map_err(refused)?;
        let deadline = tokio::time::Instant::now() + grace + STOP_ELSEWHERE_SLACK;
        loop {
            let record = ledger.get(task_id).await.map_err(refused)?;
            let Some(record) = record else {
                return Err(unknown(task_id, ttl));
            };
            let ended = record.status != TaskStatus::Running;
            if ended || tokio::time::Instant::now() >= deadline {
                let mut snap = snapshot_of_record(record);
                snap.note = Some(if ended {
                    "stopped in the process that ran it (read from the task ledger)".to_string()
                } else {
                    "asked to stop; the process that runs it has not ended it yet".to_string()
                });
                snap.wait_timed_out = !ended;
                return Ok(snap);
            }
            tokio::time::sleep(STOP_ELSEWHERE_POLL).await;
        }
    }

    /// Snapshots of the tasks held in memory (expired results skipped), oldest first, without
    /// taking their usage.
    pub(crate) fn snapshots(&self, ttl: Duration) -> Vec<BackgroundSnapshot> {
        let now = Instant::now();
        let mut held: Vec<(Instant, BackgroundSnapshot)> = self
            .entries
            .iter()
            .filter(|e| !e.value().expired(ttl, now))
            .map(|e| (e.value().started, e.value().snapshot(e.key(), false)))
            .collect();
        held.sort_by_key(|(started, _)| *started);
        held.into_iter().map(|(_, s)| s).collect()
    }

    /// The usage trees of ended tasks that no caller has read yet, each reported once.
    pub(crate) fn take_unreported_usage(&self) -> Vec<UsageNode> {
        let mut taken: Vec<(Instant, UsageNode)> = self
            .entries
            .iter()
            .filter_map(|e| Some((e.value().started, e.value().take_usage(e.key())?)))
            .collect();
        taken.sort_by_key(|(started, _)| *started);
        taken.into_iter().map(|(_, n)| n).collect()
    }

    /// Waits up to `wait` for a task to end or to need an answer, like [`output`](Self::output)
    /// but leaving its usage to be reported later.
    pub(crate) async fn watch(
        &self,
        task_id: &str,
        wait: Duration,
        ttl: Duration,
    ) -> Result<BackgroundSnapshot, SubagentError> {
        let entry = match self.find(task_id, Scope::Any, ttl).await? {
            Found::Here(e) => e,
            Found::Ledger(snap) => return Ok(*snap),
        };
        let mut rx = entry.state.subscribe();
        let timed_out = tokio::time::timeout(wait, rx.wait_for(|s| s.needs_attention()))
            .await
            .is_err();
        Ok(entry.snapshot(task_id, timed_out))
    }

    /// The ledger's records, newest first (at most `limit`), when there is a ledger.
    pub(crate) async fn ledger_records(
        &self,
        limit: usize,
    ) -> Option<Result<Vec<TaskRecord>, crate::LedgerError>> {
        let writer = self.ledger.as_ref()?;
        Some(writer.ledger().list(limit).await)
    }

    /// Cancels every task that has not ended; returns how many.
    pub(crate) fn cancel_running(&self) -> usize {
        let mut n = 0;
        for e in self.entries.iter() {
            if e.value().state.borrow().is_running() {
                e.value().cancel.cancel();
                n += 1;
            }
        }
        n
    }

    /// Ids of running tasks (for error messages).
    pub(crate) fn running_ids(&self) -> Vec<String> {
        self.entries
            .iter()
            .filter(|e| e.value().state.borrow().is_running())
            .map(|e| e.key().clone())
            .collect()
    }

    /// Drops expired results, and the oldest ones beyond `max_retained`. Runs at most once a
    /// second unless retention is over its cap.
    fn maybe_sweep(&self, config: &TaskConfig) {
        let now_ms = self.epoch.elapsed().as_millis() as u64;
        let last = self.last_sweep_ms.load(Ordering::Relaxed);
        let over_cap = self.finished.load(Ordering::Acquire) > config.max_retained;
        if !over_cap && now_ms.saturating_sub(last) < 1000 {
            return;
        }
        if self
            .last_sweep_ms
            .compare_exchange(last, now_ms, Ordering::AcqRel, Ordering::Relaxed)
            .is_err()
        {
            return; // another caller is sweeping
        }
        let now = Instant::now();
        let mut removed = 0usize;
        self.entries.retain(|_, e| {
            let keep = !e.expired(config.result_ttl, now);
            if !keep {
                removed += 1;
            }
            keep
        });
        self.finished.fetch_sub(removed, Ordering::AcqRel);
        let finished = self.finished.load(Ordering::Acquire);
        if finished > config.max_retained {
            let mut done: Vec<(Instant, String)> = self
                .entries
                .iter()
                .filter_map(|e| {
                    let end = (*e
                        .value()
                        .finished_at
                        .lock()
                        .unwrap_or_else(|p| p.into_inner()))?;
                    Some((end, e.key().clone()))
                })
                .collect();
            done.sort_unstable();
            for (_, id) in done.into_iter().take(finished - config.max_retained) {
                if self.entries.remove(&id).is_some() {
                    self.finished.fetch_sub(1, Ordering::AcqRel);
                }
            }
        }
    }

    /// Number of entries held (running and finished).
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }
}

/// Where a task was found.
enum Found {
    /// Run by this process.
    Here(Arc<Entry>),
    /// Read back from the ledger (boxed: a snapshot is large beside an `Arc`).
    Ledger(Box<BackgroundSnapshot>),
}

/// What `TaskOutput` shows of a ledger record.
pub(crate) fn snapshot_of_record(r: TaskRecord) -> BackgroundSnapshot {
    let elapsed = r.elapsed();
    let running = r.status == TaskStatus::Running;
    let state = match r.status {
        TaskStatus::Running => BackgroundState::Running,
        TaskStatus::Interrupted => {
            let mut o = TaskOutcome::with_status(r.partial.clone(), TaskStatus::Interrupted)
                .with_usage(r.usage.clone());
            o.session_id.clone_from(&r.session_id);
            BackgroundState::Finished(o)
        }
        TaskStatus::Failed if r.outcome.is_none() => {
            BackgroundState::Failed(r.error.clone().unwrap_or_else(|| "(no message)".into()))
        }
        status => BackgroundState::Finished(
            r.outcome
                .clone()
                .unwrap_or_else(|| TaskOutcome::with_status(r.partial.clone(), status)),
        ),
    };
    BackgroundSnapshot {
        task_id: r.id,
        agent: r.agent,
        kind: r.kind,
        description: r.call.description,
        state,
        elapsed,
        partial: r.partial,
        wait_timed_out: false,
        started_at: r.started_at,
        session_id: r.session_id,
        unread_messages: Vec::new(),
        note: Some(if running {
            "this task runs in another process (read from the task ledger); its result shows \
             here once it ends"
                .to_string()
        } else {
            "read from the task ledger: the task ran in an earlier process".to_string()
        }),
    }
}

fn unknown(task_id: &str, ttl: Duration) -> SubagentError {
    SubagentError::InvalidInput(format!(
        "no background task `{task_id}`: the id is unknown, or its result expired {} s after the task finished",
        ttl.as_secs()
    ))
}

impl Persisted for Entry {
    fn is_running(&self) -> bool {
        Entry::is_running(self)
    }

    fn cancel_now(&self) {
        Entry::cancel_now(self)
    }

    fn record(&self, task_id: &str, owner: &str) -> TaskRecord {
        Entry::record(self, task_id, owner)
    }

    fn set_persist_error(&self, e: String) {
        Entry::set_persist_error(self, e)
    }

    fn clear_persist_error(&self) {
        Entry::clear_persist_error(self)
    }
}
