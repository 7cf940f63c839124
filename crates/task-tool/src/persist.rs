//! The ledger writer: background tasks mark their entry dirty (a sharded map insert and a
//! wake-up, nothing more), and one writer task turns dirty entries into records and writes them
//! in batches. One batch is in flight at a time, so a newer state of a task is never overwritten
//! by an older one.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use dashmap::DashMap;
use subagent_spi::CancellationToken;
use tokio::sync::Notify;

use crate::ledger::{LedgerError, TaskLedger, TaskRecord};

/// How long the writer waits after a wake-up to gather more changes into one batch.
const BATCH_WINDOW: Duration = Duration::from_millis(20);
/// How often running tasks' owner heartbeat is written.
const HEARTBEAT_EVERY: Duration = Duration::from_secs(10);
/// Waits between the attempts of a failing batch.
const RETRY_BACKOFF: [Duration; 2] = [Duration::from_millis(100), Duration::from_millis(500)];
/// The most records written in one batch (one transaction).
const MAX_BATCH: usize = 2048;
/// How often, while this process runs background tasks, the ledger is asked whether another
/// process wants one stopped ([`TaskLedger::stop_requests`]).
const STOP_POLL: Duration = Duration::from_secs(1);

/// What the writer needs of a background task (`crate::background`'s entries are these).
pub(crate) trait Persisted: Send + Sync + 'static {
    /// True until the task ends.
    fn is_running(&self) -> bool;
    /// Cancels the task now (another process asked for it to stop).
    fn cancel_now(&self);
    /// The ledger's record of the task as it is now, marked with `owner`.
    fn record(&self, task_id: &str, owner: &str) -> TaskRecord;
    /// Why the last write of this task failed, for its readers.
    fn set_persist_error(&self, e: String);
    /// A write succeeded: the last failure no longer holds.
    fn clear_persist_error(&self);
}

pub(crate) struct Shared {
    ledger: Arc<dyn TaskLedger>,
    owner: String,
    dirty: DashMap<String, Arc<dyn Persisted>>,
    /// This process's tasks that have not ended, for the stop requests of other processes.
    running: DashMap<String, Arc<dyn Persisted>>,
    wake: Notify,
    /// One batch in flight at a time (the writer's and `flush`'s).
    writing: tokio::sync::Mutex<()>,
    started: AtomicBool,
    closed: CancellationToken,
}

/// The writer's handle, owned by the task tool; dropping it ends the writer after a last flush.
pub(crate) struct LedgerWriter {
    shared: Arc<Shared>,
}

impl Drop for LedgerWriter {
    fn drop(&mut self) {
        self.shared.closed.cancel();
    }
}

impl LedgerWriter {
    /// The state shared with the writer task.
    pub(crate) fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    pub(crate) fn new(ledger: Arc<dyn TaskLedger>) -> Self {
        Self {
            shared: Arc::new(Shared {
                ledger,
                owner: format!("{}:{}", std::process::id(), uuid::Uuid::new_v4().simple()),
                dirty: DashMap::new(),
                running: DashMap::new(),
                wake: Notify::new(),
                writing: tokio::sync::Mutex::new(()),
                started: AtomicBool::new(false),
                closed: CancellationToken::new(),
            }),
        }
    }

    pub(crate) fn ledger(&self) -> &Arc<dyn TaskLedger> {
        &self.shared.ledger
    }

    /// Writes everything queued so far; returns the first error of a batch that failed.
    pub(crate) async fn flush(&self) -> Result<(), LedgerError> {
        self.shared.flush().await
    }
}

async fn run(shared: Arc<Shared>) {
    let mut beat = tokio::time::interval(HEARTBEAT_EVERY);
    beat.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut stops = tokio::time::interval(STOP_POLL);
    stops.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            () = shared.closed.cancelled() => {
                let _ = shared.flush().await;
                return;
            }
            () = shared.wake.notified() => {
                tokio::time::sleep(BATCH_WINDOW).await;
                let _ = shared.flush().await;
            }
            _ = beat.tick() => {
                if let Err(e) = shared.ledger.heartbeat(&shared.owner).await {
                    tracing::warn!(error = %e, "task ledger heartbeat failed");
                }
            }
            _ = stops.tick(), if !shared.running.is_empty() => shared.apply_stop_requests().await,
        }
    }
}

impl Shared {
    /// This process's owner mark on the records it writes.
    pub(crate) fn owner(&self) -> &str {
        &self.owner
    }

    /// Queues the entry's current state for writing (coalesced with earlier changes).
    pub(crate) fn mark<E: Persisted>(self: &Arc<Self>, id: &str, entry: &Arc<E>) {
        let entry: Arc<dyn Persisted> = entry.clone();
        if entry.is_running() {
            if !self.running.contains_key(id) {
                self.running.insert(id.to_string(), entry.clone());
            }
        } else {
            self.running.remove(id);
        }
        self.dirty.insert(id.to_string(), entry.clone());
        self.ensure_started();
        self.wake.notify_one();
    }

    /// Cancels the tasks of this process that another process asked to stop through the
    /// ledger; each winds down as with `TaskStop` and its end is recorded.
    async fn apply_stop_requests(&self) {
        match self.ledger.stop_requests(&self.owner).await {
            Ok(ids) => {
                for id in ids {
                    if let Some(entry) = self.running.get(&id).map(|e| e.value().clone()) {
                        tracing::info!(task = %id, "background task stopped at another process's request");
                        entry.cancel_now();
                    }
                }
            }
            Err(e) => tracing::debug!(error = %e, "stop requests not read"),
        }
    }

    fn ensure_started(self: &Arc<Self>) {
        if self.started.load(Ordering::Acquire) || self.started.swap(true, Ordering::AcqRel) {
            return;
        }
        match tokio::runtime::Handle::try_current() {
            Ok(handle) => {
                handle.spawn(run(self.clone()));
            }
            Err(_) => self.started.store(false, Ordering::Release),
        }
    }

    async fn flush(&self) -> Result<(), LedgerError> {
        let _one_at_a_time = self.writing.lock().await;
        let mut first_error = None;
        loop {
            let ids: Vec<String> = self
                .dirty
                .iter()
                .take(MAX_BATCH)
                .map(|e| e.key().clone())
                .collect();
            if ids.is_empty() {
                break;
            }
            let mut entries = Vec::with_capacity(ids.len());
            let mut records = Vec::with_capacity(ids.len());
            for id in ids {
                if let Some((id, entry)) = self.dirty.remove(&id) {
                    records.push(entry.record(&id, &self.owner));
                    entries.push(entry);
                }
            }
            if let Err(e) = self.put_with_retries(&records).await {
                let note = e.to_string();
                tracing::warn!(error = %note, tasks = records.len(), "background results not saved to the task ledger; they stay readable in this process only");
                for entry in &entries {
                    entry.set_persist_error(note.clone());
                }
                first_error.get_or_insert(e);
            } else {
                for entry in &entries {
                    entry.clear_persist_error();
                }
            }
        }
        first_error.map_or(Ok(()), Err)
    }

    async fn put_with_retries(&self, records: &[TaskRecord]) -> Result<(), LedgerError> {
        let mut attempt = 0;
        loop {
            match self.ledger.put(records).await {
                Ok(()) => return Ok(()),
                Err(e) if attempt < RETRY_BACKOFF.len() => {
                    tracing::debug!(error = %e, attempt, "task ledger write failed; retrying");
                    tokio::time::sleep(RETRY_BACKOFF[attempt]).await;
                    attempt += 1;
                }
                Err(e) => return Err(e),
            }
        }
    }
}
