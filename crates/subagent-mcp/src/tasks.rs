//! The MCP tasks extension (`io.modelcontextprotocol/tasks`, SEP-2663) on the serving side: a
//! `tools/call` of a tool that runs as a task answers at once with a task handle, and the
//! client follows it with `tasks/get`, answers its approval questions with `tasks/update` and
//! cancels it with `tasks/cancel`.
//!
//! The work itself is the host's background machinery behind [`McpTaskBackend`] (the
//! `subagents` facade maps it onto the `Task` tool's background tasks, so an MCP task is the
//! same task `TaskOutput`, `TaskStop` and the task ledger see). This module keeps only what
//! the wire needs on top: which ids were handed out as tasks and to which caller
//! ([`McpCaller`](crate::McpCaller)), their timestamps, and the keys of the approval questions
//! shown as `inputRequests`.
//!
//! Each task belongs to the caller that created it: another caller's `tasks/get`,
//! `tasks/update` and `tasks/cancel` find no such task. Question keys are random
//! (`approval_` and 32 hex digits), new for each question. A caller holds at most the table's
//! limit of tasks (running, or ended and not yet forgotten; making room forgets only its own
//! ended ones), and the table at most [`CALLERS_HELD`] times that over all callers.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::ErrorData;
use rmcp::model::{
    CallToolResult, ContentBlock, CreateTaskResult, DetailedTask, InputRequests, InputResponses,
    JsonObject, Task, TaskPayload, TaskStatus,
};
use rmcp::task_manager::current_timestamp;
use subagent_spi::{ApprovalDecision, ApprovalRequest, TaskContext, ToolError, ToolOutput};

/// How many tasks a server keeps track of by default (running, or finished and not yet
/// evicted); a `tools/call` beyond it is refused with a tool error.
pub const DEFAULT_MAX_TASKS: usize = 64;
/// The polling interval a server suggests to clients by default (`pollIntervalMs`).
pub const DEFAULT_TASK_POLL_INTERVAL: Duration = Duration::from_secs(1);
/// The shortest time between two looks at a task for its `notifications/tasks`.
const MIN_CHANGE_WAIT: Duration = Duration::from_millis(20);
/// How many callers' worth of tasks the table holds at most (`max` per caller, this many
/// times `max` in all).
pub(crate) const CALLERS_HELD: usize = 16;

/// What a [`McpTaskBackend`] reports about one of its tasks.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum McpTaskState {
    /// Queued or running; `message` says what it does, if anything.
    Working {
        /// A short status line for the client's user.
        message: Option<String>,
    },
    /// Stopped at a tool call that needs approval; answered by
    /// [`McpTaskBackend::answer`].
    WaitingForApproval(ApprovalRequest),
    /// Ended with a result (a run that ended badly is a result with
    /// [`is_error`](ToolOutput::is_error), as a tool's failure is).
    Completed(ToolOutput),
    /// Ended because it was cancelled.
    Cancelled,
    /// Ended without a result (the machinery itself failed).
    Failed(String),
}

/// Background work behind the MCP tasks extension: what
/// [`McpToolServer::with_task_backend`](crate::McpToolServer::with_task_backend) runs a
/// task-capable tool call as.
#[subagent_spi::async_trait]
pub trait McpTaskBackend: Send + Sync {
    /// True when a call of `tool` runs as a task for clients that declared the extension
    /// (others get the tool's ordinary, synchronous answer).
    fn runs_as_task(&self, tool: &str) -> bool;

    /// Starts `tool`'s call with `input` in the background and returns its id (unguessable:
    /// it is all a client needs to read or cancel the task). `ctx` carries the server's
    /// approver and a cancellation token of the task's own.
    async fn start(
        &self,
        tool: &str,
        input: serde_json::Value,
        ctx: TaskContext,
    ) -> Result<String, ToolError>;

    /// The task's state now; `Err` when the id is unknown (or its result expired).
    async fn state(&self, task_id: &str) -> Result<McpTaskState, String>;

    /// Answers the approval question the task waits on.
    fn answer(&self, task_id: &str, decision: ApprovalDecision) -> Result<(), String>;

    /// Asks the task to stop (cooperatively: it may still end otherwise); returns at once.
    async fn cancel(&self, task_id: &str) -> Result<(), String>;

    /// How long a finished task's result stays readable (advertised as `ttlMs`); `None`
    /// when it stays while the server runs.
    fn ttl(&self) -> Option<Duration> {
        None
    }

    /// Waits until task `task_id` may have changed (it ended, or stopped at a question), at
    /// most `within`; the server's `notifications/tasks` look at the task again then. The
    /// default waits `within` (the server's poll interval).
    async fn changed(&self, task_id: &str, within: Duration) {
        let _ = task_id;
        tokio::time::sleep(within).await;
    }
}

/// The tasks a server handed out, and the wire state of each.
pub(crate) struct TaskTable {
    backend: Arc<dyn McpTaskBackend>,
    entries: Mutex<HashMap<String, Entry>>,
    max: usize,
    poll: Duration,
    next_order: std::sync::atomic::AtomicU64,
}

struct Entry {
    /// The caller that created it (an [`McpCaller`](crate::McpCaller) id).
    owner: String,
    created_at: String,
    last_updated_at: String,
    status: TaskStatus,
    /// The key the pending approval question is shown under, while there is one (random,
    /// new for each question).
    pending_key: Option<String>,
    order: u64,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// At most 80 characters of a client-supplied id, for an error message.
fn short(id: &str) -> String {
    match id.char_indices().nth(80) {
        Some((i, _)) => format!("{}...", &id[..i]),
        None => id.to_string(),
    }
}

/// A fresh, unguessable key for an approval question.
fn question_key() -> String {
    format!("approval_{}", uuid::Uuid::new_v4().simple())
}

fn unknown(task_id: &str) -> ErrorData {
    ErrorData::invalid_params(
        format!(
            "unknown task `{}`: it was not started here, or its result expired",
            short(task_id)
        ),
        None,
    )
}

impl TaskTable {
    pub(crate) fn new(backend: Arc<dyn McpTaskBackend>, max: usize, poll: Duration) -> Self {
        Self {
            backend,
            entries: Mutex::new(HashMap::new()),
            max: max.max(1),
            poll,
            next_order: std::sync::atomic::AtomicU64::new(0),
        }
    }

    pub(crate) fn runs_as_task(&self, tool: &str) -> bool {
        self.backend.runs_as_task(tool)
    }

    fn ttl_ms(&self) -> Option<u64> {
        self.backend
            .ttl()
            .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
    }

    fn poll_ms(&self) -> u64 {
        u64::try_from(self.poll.as_millis())
            .unwrap_or(u64::MAX)
            .max(1)
    }

    /// Makes room for one more task of `owner`: forgets its tasks that ended (oldest first)
    /// when it holds `max`, and the table's oldest ended ones when it holds its whole bound.
    /// False when every task in the way still runs.
    async fn make_room(&self, owner: &str) -> bool {
        let (mine, all) = {
            let entries = lock(&self.entries);
            let mine = entries.values().filter(|e| e.owner == owner).count();
            (mine, entries.len())
        };
        let total = self.max.saturating_mul(CALLERS_HELD);
        if mine < self.max && all < total {
            return true;
        }
        // Refresh what is known about each task in the way (a finished one may never have
        // been read).
        let ids: Vec<String> = lock(&self.entries)
            .iter()
            .filter(|(_, e)| all >= total || e.owner == owner)
            .map(|(id, _)| id.clone())
            .collect();
        for id in ids {
            let status = match self.backend.state(&id).await {
                Ok(s) => wire_status(&s),
                // Forgotten by the backend: gone here too.
                Err(_) => TaskStatus::Failed,
            };
            if let Some(e) = lock(&self.entries).get_mut(&id) {
                e.status = status;
            }
        }
        let mut entries = lock(&self.entries);
        loop {
            let mine = entries.values().filter(|e| e.owner == owner).count();
            let over_mine = mine >= self.max;
            if !over_mine && entries.len() < total {
                return true;
            }
            let oldest_ended = entries
                .iter()
                .filter(|(_, e)| e.status.is_terminal() && (!over_mine || e.owner == owner))
                .min_by_key(|(_, e)| e.order)
                .map(|(id, _)| id.clone());
            match oldest_ended {
                Some(id) => {
                    entries.remove(&id);
                }
                None => return false,
            }
        }
    }

    /// `tools/call` of a task tool from a client that declared the extension: starts the work
    /// and answers with its handle, or with a tool error when it cannot start.
    pub(crate) async fn create(
        &self,
        owner: &str,
        tool: &str,
        input: serde_json::Value,
        ctx: TaskContext,
    ) -> Result<Result<CreateTaskResult, CallToolResult>, ErrorData> {
        if !self.make_room(owner).await {
            return Ok(Err(CallToolResult::error(vec![ContentBlock::text(
                format!(
                    "this server already holds {} running tasks of yours (its limit per client) \
                     or as many as it holds for all its clients; wait for one to end, or cancel \
                     one with tasks/cancel",
                    self.max
                ),
            )])));
        }
        let id = match self.backend.start(tool, input, ctx).await {
            Ok(id) => id,
            Err(e) => {
                return Ok(Err(CallToolResult::error(vec![ContentBlock::text(
                    e.to_string(),
                )])));
            }
        };
        let now = current_timestamp();
        let order = self
            .next_order
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        lock(&self.entries).insert(
            id.clone(),
            Entry {
                owner: owner.to_string(),
                created_at: now.clone(),
                last_updated_at: now.clone(),
                status: TaskStatus::Working,
                pending_key: None,
                order,
            },
        );
        let mut task = Task::new(id, TaskStatus::Working, now.clone(), now)
            .with_poll_interval_ms(self.poll_ms());
        task.ttl_ms = self.ttl_ms();
        Ok(Ok(CreateTaskResult::new(task)))
    }

    /// True when `owner` created task `task_id` (and it is still held).
    fn owns(&self, owner: &str, task_id: &str) -> bool {
        lock(&self.entries)
            .get(task_id)
            .is_some_and(|e| e.owner == owner)
    }

    /// `tasks/get` of `owner`'s task.
    pub(crate) async fn get(&self, owner: &str, task_id: &str) -> Result<DetailedTask, ErrorData> {
        if !self.owns(owner, task_id) {
            return Err(unknown(task_id));
        }
        let state = match self.backend.state(task_id).await {
            Ok(s) => s,
            Err(_) => {
                lock(&self.entries).remove(task_id);
                return Err(unknown(task_id));
            }
        };
        let mut entries = lock(&self.entries);
        let entry = entries.get_mut(task_id).ok_or_else(|| unknown(task_id))?;
        let mut message = None;
        let payload = match state {
            McpTaskState::Working { message: m } => {
                entry.pending_key = None;
                message = m;
                TaskPayload::Working
            }
            McpTaskState::WaitingForApproval(question) => {
                match crate::approval_form::input_request(&question) {
                    Some(request) => {
                        let key = entry.pending_key.get_or_insert_with(question_key);
                        message = Some(format!("waiting for approval: {}", question.tool));
                        let mut input_requests = InputRequests::new();
                        input_requests.insert(key.clone(), request);
                        TaskPayload::InputRequired { input_requests }
                    }
                    None => TaskPayload::Working,
                }
            }
            McpTaskState::Completed(out) => {
                entry.pending_key = None;
                TaskPayload::Completed {
                    result: result_object(&crate::results::call_result(out)),
                }
            }
            McpTaskState::Cancelled => {
                entry.pending_key = None;
                TaskPayload::Cancelled
            }
            McpTaskState::Failed(why) => {
                entry.pending_key = None;
                TaskPayload::Failed {
                    error: error_object(&ErrorData::internal_error(why, None)),
                }
            }
        };
        if payload.status() != entry.status {
            entry.status = payload.status();
            entry.last_updated_at = current_timestamp();
        }
        let mut task = Task::new(
            task_id,
            entry.status,
            entry.created_at.clone(),
            entry.last_updated_at.clone(),
        )
        .with_poll_interval_ms(self.poll_ms());
        task.ttl_ms = self.ttl_ms();
        task.status_message = message;
        Ok(DetailedTask::new(task, payload))
    }

    /// Waits until a task whose status was `status` may have changed, at most the poll
    /// interval (a task waiting for an answer is looked at again after the interval: only an
    /// answer or a stop moves it on).
    pub(crate) async fn wait_change(&self, task_id: &str, status: TaskStatus) {
        if status == TaskStatus::InputRequired {
            tokio::time::sleep(self.poll).await;
        } else {
            // Never faster than the floor, whatever the backend does.
            let floor = tokio::time::sleep(MIN_CHANGE_WAIT);
            self.backend.changed(task_id, self.poll).await;
            floor.await;
        }
    }

    /// `tasks/update` of `owner`'s task: the answer to the pending approval question, when the
    /// responses carry it; other keys are ignored (as the extension requires).
    pub(crate) fn update(
        &self,
        owner: &str,
        task_id: &str,
        mut responses: InputResponses,
    ) -> Result<(), ErrorData> {
        let answer = {
            let mut entries = lock(&self.entries);
            let entry = entries
                .get_mut(task_id)
                .filter(|e| e.owner == owner)
                .ok_or_else(|| unknown(task_id))?;
            match entry.pending_key.as_ref().and_then(|k| responses.remove(k)) {
                Some(v) => {
                    entry.pending_key = None;
                    entry.last_updated_at = current_timestamp();
                    Some(v)
                }
                None => None,
            }
        };
        if let Some(v) = answer {
            // The question may have gone meanwhile (the task was stopped): nothing to answer.
            let _ = self
                .backend
                .answer(task_id, crate::approval_form::decision_of_value(v));
        }
        Ok(())
    }

    /// `tasks/cancel` of `owner`'s task.
    pub(crate) async fn cancel(&self, owner: &str, task_id: &str) -> Result<(), ErrorData> {
        if !self.owns(owner, task_id) {
            return Err(unknown(task_id));
        }
        self.backend
            .cancel(task_id)
            .await
            .map_err(|_| unknown(task_id))
    }
}

fn wire_status(state: &McpTaskState) -> TaskStatus {
    match state {
        McpTaskState::Working { .. } => TaskStatus::Working,
        McpTaskState::WaitingForApproval(_) => TaskStatus::InputRequired,
        McpTaskState::Completed(_) => TaskStatus::Completed,
        McpTaskState::Cancelled => TaskStatus::Cancelled,
        McpTaskState::Failed(_) => TaskStatus::Failed,
    }
}

fn result_object(result: &CallToolResult) -> JsonObject {
    match serde_json::to_value(result) {
        Ok(serde_json::Value::Object(map)) => map,
        _ => JsonObject::new(),
    }
}

fn error_object(error: &ErrorData) -> JsonObject {
    match serde_json::to_value(error) {
        Ok(serde_json::Value::Object(map)) => map,
        _ => JsonObject::new(),
    }
}
