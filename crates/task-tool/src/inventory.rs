//! The background tasks as a whole, for hosts: what runs in this process, what the ledger
//! keeps, waiting for them all, and the usage no caller has read yet.

use std::time::Duration;

use subagent_spi::{SubagentError, UsageNode};

use crate::background::{BackgroundSnapshot, snapshot_of_record};
use crate::registry::TaskTool;

/// The most ledger records [`TaskTool::list_background`] returns, whatever is asked.
pub const MAX_LISTED: usize = 500;

impl TaskTool {
    /// The background tasks this process holds (running, and finished results not yet
    /// expired), oldest first. Reading them takes nothing: their usage is still reported once
    /// to the first `TaskOutput` (or [`take_unreported_usage`](Self::take_unreported_usage)).
    pub fn background_tasks(&self) -> Vec<BackgroundSnapshot> {
        self.inner
            .background
            .snapshots(self.inner.config.result_ttl)
    }

    /// The background tasks of this process and, with a ledger, those it keeps from other and
    /// earlier processes (tasks whose process ended read as `interrupted`), newest first, at
    /// most `limit` (capped at [`MAX_LISTED`]). A task of this process shows its live state.
    ///
    /// Without a ledger only this process's tasks are listed; a ledger that cannot be read is
    /// an error naming it.
    pub async fn list_background(
        &self,
        limit: usize,
    ) -> Result<Vec<BackgroundSnapshot>, SubagentError> {
        let limit = limit.min(MAX_LISTED);
        let mut here = self.background_tasks();
        here.reverse();
        let records = match self.inner.background.ledger_records(limit).await {
            None => Vec::new(),
            Some(Ok(r)) => r,
            Some(Err(e)) => {
                return Err(SubagentError::InvalidInput(format!(
                    "the task ledger could not be read: {e}"
                )));
            }
        };
        let mut out = here;
        for r in records {
            if !out.iter().any(|s| s.task_id == r.id) {
                out.push(snapshot_of_record(r));
            }
        }
        out.sort_by_key(|s| std::cmp::Reverse(s.started_at));
        out.truncate(limit);
        Ok(out)
    }

    /// Waits up to `wait` for a background task to end or to need an approval answer, then
    /// reads it, like [`output`](Self::output) but leaving its usage unreported (for
    /// [`take_unreported_usage`](Self::take_unreported_usage)).
    pub async fn watch_background(
        &self,
        task_id: &str,
        wait: Duration,
    ) -> Result<BackgroundSnapshot, SubagentError> {
        self.inner
            .background
            .watch(task_id, wait, self.inner.config.result_ttl)
            .await
    }

    /// Cancels every background task of this process that has not ended (as `TaskStop`
    /// does, without waiting): each winds down within the stop grace and ends `cancelled`
    /// with its partial output, recorded in the ledger like any result. Returns how many were
    /// cancelled.
    pub fn cancel_background(&self) -> usize {
        self.inner.background.cancel_running()
    }

    /// The usage trees of the background tasks of this process that ended and whose usage no
    /// caller has read yet (with `TaskOutput` or `TaskStop`), oldest first; each tree is
    /// reported once. A host adds them to its run's usage tree when the run ends, so the work
    /// of a child the model never read still counts.
    pub fn take_unreported_usage(&self) -> Vec<UsageNode> {
        self.inner.background.take_unreported_usage()
    }
}
