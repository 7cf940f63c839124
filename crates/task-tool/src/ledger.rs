//! The background-task ledger contract: what a durable store keeps of each background task so
//! its result outlives the process that ran it.

use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};
use subagent_spi::{TaskCall, TaskOutcome, TaskStatus, Usage, async_trait};

/// One background task as a ledger keeps it.
///
/// Written when the task starts, as it streams (coalesced), when its session id becomes known,
/// and when it ends. A record whose process died while it ran is read back with status
/// [`TaskStatus::Interrupted`] (the ledger implementation decides when an owner is gone).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct TaskRecord {
    /// The task id (`task_...`).
    pub id: String,
    /// The agent's registered name.
    pub agent: String,
    /// The agent's kind.
    pub kind: String,
    /// The call that started it.
    pub call: TaskCall,
    /// `Running` while it runs, then the outcome's status (`Failed` for an error).
    pub status: TaskStatus,
    /// The session to resume, once the run announced it.
    pub session_id: Option<String>,
    /// The most recent streamed text (bounded).
    pub partial: String,
    /// The final outcome (text, status, usage, children), once ended.
    pub outcome: Option<TaskOutcome>,
    /// The error, when the task failed with one.
    pub error: Option<String>,
    /// Usage so far (the outcome's once ended).
    pub usage: Usage,
    /// Which process instance runs (ran) it: `<pid>:<random>`.
    pub owner: String,
    /// When it started.
    pub started_at: SystemTime,
    /// When the record last changed.
    pub updated_at: SystemTime,
    /// When it ended.
    pub finished_at: Option<SystemTime>,
}

impl TaskRecord {
    /// A record of a task that starts now.
    pub fn new(
        id: impl Into<String>,
        agent: impl Into<String>,
        kind: impl Into<String>,
        call: TaskCall,
        owner: impl Into<String>,
    ) -> Self {
        let now = SystemTime::now();
        Self {
            id: id.into(),
            agent: agent.into(),
            kind: kind.into(),
            call,
            status: TaskStatus::Running,
            session_id: None,
            partial: String::new(),
            outcome: None,
            error: None,
            usage: Usage::default(),
            owner: owner.into(),
            started_at: now,
            updated_at: now,
            finished_at: None,
        }
    }

    /// How long it ran (until now, when it has not ended).
    pub fn elapsed(&self) -> Duration {
        self.finished_at
            .unwrap_or_else(SystemTime::now)
            .duration_since(self.started_at)
            .unwrap_or_default()
    }
}

/// A ledger operation that failed.
pub type LedgerError = subagent_core::StoreError<LedgerKind>;

/// Names the task ledger in its errors (`task ledger: ...`).
#[derive(Debug)]
pub enum LedgerKind {}

impl subagent_core::StoreKind for LedgerKind {
    const NAME: &'static str = "task ledger";
}

/// Where background tasks are recorded so that `TaskOutput` works after a restart.
///
/// Without one (the default for library users) background tasks live only in the
/// [`TaskTool`](crate::TaskTool)'s bounded memory. With one
/// ([`TaskToolBuilder::ledger`](crate::TaskToolBuilder::ledger)), the tool writes records in
/// batches from one background writer (never on the task's own path) and reads a record back
/// when an id is not in memory.
///
/// **Failure policy**: a failed batch is retried (three attempts, backing off); when it still
/// fails the results stay readable in this process, a warning is logged, and `TaskOutput` says
/// that the result was not saved (it is lost if the process ends). **What a crash loses**:
/// writes are batched every few milliseconds, so a crash loses at most the last batch: a result
/// that finished in that window reads back as `interrupted` (its transcript, written by the
/// runtime itself, still resumes), and the last streamed text.
#[async_trait]
pub trait TaskLedger: Send + Sync {
    /// Inserts or replaces these records, all in one transaction when the store has them.
    async fn put(&self, records: &[TaskRecord]) -> Result<(), LedgerError>;

    /// The record of `id`, if any. A running record whose owner is gone comes back as
    /// [`TaskStatus::Interrupted`].
    async fn get(&self, id: &str) -> Result<Option<TaskRecord>, LedgerError>;

    /// The most recent records, newest first (by start), at most `limit`; running records
    /// whose owner is gone come back as [`TaskStatus::Interrupted`], as with
    /// [`get`](Self::get). The default says the ledger cannot list.
    async fn list(&self, limit: usize) -> Result<Vec<TaskRecord>, LedgerError> {
        let _ = limit;
        Err(LedgerError::msg("this task ledger cannot list its tasks"))
    }

    /// Asks the process running task `id` to stop it (a process cannot cancel another's
    /// task directly): the owner's writer polls [`stop_requests`](Self::stop_requests).
    /// Returns whether a running task was asked. The default says the ledger cannot.
    async fn request_stop(&self, id: &str) -> Result<bool, LedgerError> {
        let _ = id;
        Err(LedgerError::msg(
            "this task ledger cannot pass stop requests between processes",
        ))
    }

    /// The ids of `owner`'s running tasks that another process asked to stop (polled about
    /// every second while the owner runs background tasks). The default: none.
    async fn stop_requests(&self, owner: &str) -> Result<Vec<String>, LedgerError> {
        let _ = owner;
        Ok(Vec::new())
    }

    /// Tells the ledger that `owner` is alive and still runs its running tasks (called
    /// periodically by the writer; a ledger that detects dead owners otherwise may ignore it).
    async fn heartbeat(&self, owner: &str) -> Result<(), LedgerError> {
        let _ = owner;
        Ok(())
    }
}
