//! The background tasks as a whole, for hosts: what runs in this process, what the ledger
//! keeps, waiting for them all, and the usage no caller has read yet.

use subagent_spi::SubagentError;

use crate::background::{BackgroundRegistry, BackgroundSnapshot, snapshot_of_record};

/// The most ledger records [`TaskTool::list_background`](crate::TaskTool::list_background) returns, whatever is asked.
pub const MAX_LISTED: usize = 500;

/// [`TaskTool::list_background`](crate::TaskTool::list_background): `here` (this process's tasks, oldest first) with the
/// records of `bg`'s ledger.
pub(crate) async fn list(
    mut here: Vec<BackgroundSnapshot>,
    bg: &BackgroundRegistry,
    limit: usize,
) -> Result<Vec<BackgroundSnapshot>, SubagentError> {
    let limit = limit.min(MAX_LISTED);
    here.reverse();
    let records = match bg.ledger_records(limit).await {
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
