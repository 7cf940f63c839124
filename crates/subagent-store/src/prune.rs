//! Retention of persisted data: what is dropped, when, and the maintenance task that does it.
//!
//! [`prune`] is the one entry point (the `subagents prune` command, the maintenance task run at
//! open and periodically). Each store contributes one step; a new store (the A2A server's
//! served tasks) adds its bound to [`Retention`] and its step to [`prune`], and its count to
//! [`PruneReport`].

use std::time::Duration;

use crate::sql::{ms, now_ms, with_pool};
use crate::{Db, StoreError};

/// How much persisted data is kept. The defaults match the in-memory bounds where there are
/// some (finished background results: 30 minutes, 10,000 results; transcripts: 256 MiB) and add
/// an age bound for transcripts (30 days), which memory never needed.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Retention {
    /// Finished (or interrupted) background tasks older than this are dropped.
    pub task_ttl: Duration,
    /// At most this many finished background tasks are kept (the newest).
    pub max_tasks: u64,
    /// Sessions not written for this long are dropped.
    pub transcript_ttl: Duration,
    /// Sessions are dropped, least recently written first, while all transcripts together take
    /// more than this many bytes (their stored JSON).
    pub transcript_max_bytes: u64,
}

impl Default for Retention {
    fn default() -> Self {
        Self {
            task_ttl: Duration::from_secs(30 * 60),
            max_tasks: 10_000,
            transcript_ttl: Duration::from_secs(30 * 24 * 3600),
            transcript_max_bytes: 256 * 1024 * 1024,
        }
    }
}

impl Retention {
    /// Everything older than `age` goes, whatever the other bounds say (`subagents prune
    /// --older-than`); the count and byte bounds stay.
    pub fn older_than(mut self, age: Duration) -> Self {
        self.task_ttl = age;
        self.transcript_ttl = age;
        self
    }
}

/// What [`prune`] dropped (or, in a dry run, would drop).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct PruneReport {
    /// Background-task records.
    pub tasks: u64,
    /// Transcript sessions.
    pub sessions: u64,
    /// Bytes of transcript messages in those sessions.
    pub transcript_bytes: u64,
    /// Workflow runs (with their journaled calls), dropped by the transcripts' age bound.
    pub workflows: u64,
}

/// What goes by the transcripts' age (`$1`: the cutoff), in order, and what each is called in
/// errors: sessions (their messages go with them), then workflow runs' calls and the runs.
const BY_AGE: [(&str, &str); 3] = [
    (
        "DELETE FROM transcript_sessions WHERE updated_at < $1",
        "prune transcripts",
    ),
    (
        "DELETE FROM workflow_calls WHERE run_id IN \
         (SELECT id FROM workflow_runs WHERE updated_at < $1)",
        "prune workflow runs",
    ),
    (
        "DELETE FROM workflow_runs WHERE updated_at < $1",
        "prune workflow runs",
    ),
];

/// Drops what `retention` no longer keeps, in one transaction; with `dry_run` the transaction
/// is rolled back and the report says what would have gone. Running background tasks are never
/// dropped.
pub async fn prune(
    db: &Db,
    retention: &Retention,
    dry_run: bool,
) -> Result<PruneReport, StoreError> {
    let now = now_ms();
    let task_cutoff = now.saturating_sub(ms(retention.task_ttl));
    let session_cutoff = now.saturating_sub(ms(retention.transcript_ttl));
    let max_tasks = i64::try_from(retention.max_tasks).unwrap_or(i64::MAX);
    let max_bytes = i64::try_from(retention.transcript_max_bytes).unwrap_or(i64::MAX);
    let q = StoreError::query;
    let report = with_pool!(db, |pool| {
        let mut tx = pool.begin().await.map_err(q("prune"))?;
        let mut report = PruneReport::default();
        // Background tasks: by age, then by count (newest kept).
        report.tasks += sqlx::query(
            "DELETE FROM background_tasks WHERE finished_at IS NOT NULL AND finished_at < $1",
        )
        .bind(task_cutoff)
        .execute(&mut *tx)
        .await
        .map_err(q("prune background tasks"))?
        .rows_affected();
        report.tasks += sqlx::query(
            "DELETE FROM background_tasks WHERE finished_at IS NOT NULL AND id NOT IN \
             (SELECT id FROM background_tasks WHERE finished_at IS NOT NULL \
              ORDER BY finished_at DESC LIMIT $1)",
        )
        .bind(max_tasks)
        .execute(&mut *tx)
        .await
        .map_err(q("prune background tasks"))?
        .rows_affected();
        // Transcripts: by age, then the least recently written while over the byte bound.
        let before: i64 = sqlx::query_scalar(
            "SELECT CAST(COALESCE(SUM(bytes), 0) AS BIGINT) FROM transcript_sessions",
        )
        .fetch_one(&mut *tx)
        .await
        .map_err(q("prune transcripts"))?;
        // By the transcripts' age: sessions, and workflow runs (their calls go with them).
        let mut dropped = [0u64; BY_AGE.len()];
        for ((sql, what), n) in BY_AGE.into_iter().zip(&mut dropped) {
            *n = sqlx::query(sql)
                .bind(session_cutoff)
                .execute(&mut *tx)
                .await
                .map_err(q(what))?
                .rows_affected();
        }
        let [sessions, _, workflows] = dropped;
        report.sessions += sessions;
        report.workflows += workflows;
        let mut total: i64 = sqlx::query_scalar(
            "SELECT CAST(COALESCE(SUM(bytes), 0) AS BIGINT) FROM transcript_sessions",
        )
        .fetch_one(&mut *tx)
        .await
        .map_err(q("prune transcripts"))?;
        while total > max_bytes {
            // The oldest page of sessions; drop from it until under the bound.
            let page: Vec<(String, i64)> = sqlx::query_as(
                "SELECT id, bytes FROM transcript_sessions ORDER BY updated_at, id LIMIT 256",
            )
            .fetch_all(&mut *tx)
            .await
            .map_err(q("prune transcripts"))?;
            if page.is_empty() {
                break;
            }
            for (id, bytes) in page {
                if total <= max_bytes {
                    break;
                }
                sqlx::query("DELETE FROM transcript_sessions WHERE id = $1")
                    .bind(&id)
                    .execute(&mut *tx)
                    .await
                    .map_err(q("prune transcripts"))?;
                report.sessions += 1;
                total -= bytes;
            }
        }
        report.transcript_bytes = u64::try_from(before - total.max(0)).unwrap_or(0);
        if dry_run {
            tx.rollback().await.map_err(q("prune"))?;
        } else {
            tx.commit().await.map_err(q("prune"))?;
        }
        report
    });
    Ok(report)
}

/// Prunes (and, with the `ledger` feature, marks the tasks of dead processes interrupted) now
/// and then every `every`, on the current tokio runtime, until the returned handle is aborted
/// or dropped with the runtime. Failures are logged at `warn` and retried at the next round.
pub fn spawn_maintenance(
    db: Db,
    retention: Retention,
    every: Duration,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(every.max(Duration::from_secs(1)));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            maintain(&db, &retention).await;
        }
    })
}

/// One maintenance round.
pub async fn maintain(db: &Db, retention: &Retention) {
    #[cfg(feature = "ledger")]
    if let Err(e) = crate::ledger::recover_interrupted(db).await {
        tracing::warn!(error = %e, "store maintenance: interrupted tasks not marked");
    }
    match prune(db, retention, false).await {
        Ok(r) if r != PruneReport::default() => {
            tracing::info!(
                tasks = r.tasks,
                sessions = r.sessions,
                bytes = r.transcript_bytes,
                "store pruned"
            );
        }
        Ok(_) => {}
        Err(e) => tracing::warn!(error = %e, "store maintenance: pruning failed"),
    }
}
