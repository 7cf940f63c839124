//! The workflow journal on a database (feature `workflow`): `subagent-workflow`'s [`Journal`],
//! one row per run and one per call, so `subagents workflow resume` works after a crash and
//! `workflow list` / `show` read runs of any process on the same database. Runs are dropped by
//! [`prune`](crate::prune) once not written for the transcripts' age bound (30 days).

use subagent_spi::async_trait;
use subagent_workflow::{
    CallKind, CallRecord, CallState, Journal, JournalError, RunRecord, RunStatus, RunSummary,
};

use crate::sql::{from_ms, to_ms, with_pool};
use crate::{Db, StoreError};

/// A [`Journal`] on a [`Db`]. Every write is its own committed transaction before it returns
/// (a call's start before the call runs, its end before the script sees its value).
#[derive(Debug, Clone)]
pub struct SqlWorkflowJournal {
    db: Db,
}

impl SqlWorkflowJournal {
    /// A journal on `db` (already migrated by [`Db::open`]).
    pub fn new(db: Db) -> Self {
        Self { db }
    }
}

/// Maps a failed statement to the journal's error: `query` names the statement in the
/// [`StoreError::Query`] source, `what` the journal operation.
fn query_failed(
    query: &'static str,
    what: &'static str,
) -> impl FnOnce(sqlx::Error) -> JournalError {
    move |source| JournalError::new(what, StoreError::query(query)(source))
}

fn corrupt(what: &'static str, reason: impl std::fmt::Display) -> JournalError {
    JournalError::new(
        what,
        StoreError::Corrupt {
            what: "workflow journal",
            reason: reason.to_string(),
        },
    )
}

fn json_text(v: &impl serde::Serialize) -> String {
    serde_json::to_string(v).unwrap_or_else(|_| "null".into())
}

fn parse_json<T: serde::de::DeserializeOwned>(
    what: &'static str,
    text: Option<&str>,
) -> Result<Option<T>, JournalError> {
    text.map(|t| serde_json::from_str(t).map_err(|e| corrupt(what, e)))
        .transpose()
}

fn ms_u64(t: i64) -> std::time::SystemTime {
    from_ms(t)
}

type RunRow = (
    String,
    String,
    String,
    String,
    Option<String>,
    Option<String>,
    i64,
    i64,
);

fn run_of(row: RunRow) -> Result<RunRecord, JournalError> {
    let (id, script, args, status, result, error, created, updated) = row;
    let mut r = RunRecord::new(
        id,
        script,
        parse_json("load run", Some(&args))?.unwrap_or(serde_json::Value::Null),
    );
    r.status = RunStatus::parse(&status)
        .ok_or_else(|| corrupt("load run", format!("status `{status}`")))?;
    r.result = parse_json("load run", result.as_deref())?;
    r.error = error;
    r.created_at = ms_u64(created);
    r.updated_at = ms_u64(updated);
    Ok(r)
}

#[async_trait]
impl Journal for SqlWorkflowJournal {
    async fn save_run(&self, run: &RunRecord) -> Result<(), JournalError> {
        let q = query_failed("save workflow run", "save run");
        with_pool!(&self.db, |pool| {
            sqlx::query(
                "INSERT INTO workflow_runs (id, script, args, status, result, error, created_at, updated_at) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (id) DO UPDATE SET \
                 script = excluded.script, args = excluded.args, status = excluded.status, \
                 result = excluded.result, error = excluded.error, updated_at = excluded.updated_at",
            )
            .bind(&run.run_id)
            .bind(&run.script)
            .bind(json_text(&run.args))
            .bind(run.status.as_str())
            .bind(run.result.as_ref().map(json_text))
            .bind(run.error.as_deref())
            .bind(to_ms(run.created_at))
            .bind(to_ms(run.updated_at))
            .execute(pool)
            .await
            .map_err(q)?;
        });
        Ok(())
    }

    async fn load_run(&self, run_id: &str) -> Result<Option<RunRecord>, JournalError> {
        let q = query_failed("load workflow run", "load run");
        let row: Option<RunRow> = with_pool!(&self.db, |pool| {
            sqlx::query_as(
                "SELECT id, script, args, status, result, error, created_at, updated_at \
                 FROM workflow_runs WHERE id = $1",
            )
            .bind(run_id)
            .fetch_optional(pool)
            .await
            .map_err(q)?
        });
        row.map(run_of).transpose()
    }

    async fn save_call(&self, run_id: &str, call: &CallRecord) -> Result<(), JournalError> {
        let q = query_failed("save workflow call", "save call");
        with_pool!(&self.db, |pool| {
            sqlx::query(
                "INSERT INTO workflow_calls (run_id, position, kind, agent, input_hash, description, \
                 state, task_id, session_id, seq, value, usage, started_at, finished_at) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14) \
                 ON CONFLICT (run_id, position) DO UPDATE SET kind = excluded.kind, \
                 agent = excluded.agent, input_hash = excluded.input_hash, \
                 description = excluded.description, state = excluded.state, \
                 task_id = excluded.task_id, session_id = excluded.session_id, seq = excluded.seq, \
                 value = excluded.value, usage = excluded.usage, started_at = excluded.started_at, \
                 finished_at = excluded.finished_at",
            )
            .bind(run_id)
            .bind(i64::from(call.position))
            .bind(call.kind.as_str())
            .bind(&call.agent)
            .bind(&call.input_hash)
            .bind(&call.description)
            .bind(call.state.as_str())
            .bind(call.task_id.as_deref())
            .bind(call.session_id.as_deref())
            .bind(call.seq.map(|s| i64::try_from(s).unwrap_or(i64::MAX)))
            .bind(call.value.as_ref().map(json_text))
            .bind(call.usage.as_ref().map(json_text))
            .bind(to_ms(call.started_at))
            .bind(call.finished_at.map(to_ms))
            .execute(pool)
            .await
            .map_err(q)?;
        });
        Ok(())
    }

    async fn load_calls(&self, run_id: &str) -> Result<Vec<CallRecord>, JournalError> {
        type Row = (
            i64,
            String,
            String,
            String,
            String,
            String,
            Option<String>,
            Option<String>,
            Option<i64>,
            Option<String>,
            Option<String>,
            i64,
            Option<i64>,
        );
        let q = query_failed("load workflow calls", "load calls");
        let rows: Vec<Row> = with_pool!(&self.db, |pool| {
            sqlx::query_as(
                "SELECT position, kind, agent, input_hash, description, state, task_id, session_id, \
                 seq, value, usage, started_at, finished_at FROM workflow_calls WHERE run_id = $1 \
                 ORDER BY position",
            )
            .bind(run_id)
            .fetch_all(pool)
            .await
            .map_err(q)?
        });
        rows.into_iter()
            .map(|r| {
                let (
                    pos,
                    kind,
                    agent,
                    hash,
                    desc,
                    state,
                    task,
                    session,
                    seq,
                    value,
                    usage,
                    started,
                    finished,
                ) = r;
                let kind = CallKind::parse(&kind)
                    .ok_or_else(|| corrupt("load calls", format!("kind `{kind}`")))?;
                let mut c = CallRecord::started(
                    u32::try_from(pos).map_err(|e| corrupt("load calls", e))?,
                    kind,
                    agent,
                    hash,
                    desc,
                );
                c.state = CallState::parse(&state)
                    .ok_or_else(|| corrupt("load calls", format!("state `{state}`")))?;
                c.task_id = task;
                c.session_id = session;
                c.seq = seq.map(|s| u64::try_from(s).unwrap_or(0));
                c.value = parse_json("load calls", value.as_deref())?;
                c.usage = parse_json("load calls", usage.as_deref())?;
                c.started_at = ms_u64(started);
                c.finished_at = finished.map(ms_u64);
                Ok(c)
            })
            .collect()
    }

    async fn list_runs(&self, limit: usize) -> Result<Vec<RunSummary>, JournalError> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        const SQL: &str = "SELECT r.id, r.status, r.error, r.created_at, r.updated_at, \
             CAST((SELECT COUNT(*) FROM workflow_calls c WHERE c.run_id = r.id) AS BIGINT), \
             CAST((SELECT COUNT(*) FROM workflow_calls c WHERE c.run_id = r.id AND c.state = 'done') AS BIGINT), \
             CAST((SELECT COUNT(*) FROM workflow_calls c WHERE c.run_id = r.id AND c.state = 'failed') AS BIGINT), \
             CAST((SELECT COUNT(*) FROM workflow_calls c WHERE c.run_id = r.id AND c.state = 'running') AS BIGINT) \
             FROM workflow_runs r ORDER BY r.created_at DESC, r.id LIMIT $1";
        type Row = (String, String, Option<String>, i64, i64, i64, i64, i64, i64);
        let q = query_failed("list workflow runs", "list runs");
        let rows: Vec<Row> = with_pool!(&self.db, |pool| {
            sqlx::query_as(SQL)
                .bind(limit)
                .fetch_all(pool)
                .await
                .map_err(q)?
        });
        let n = |v: i64| u32::try_from(v).unwrap_or(u32::MAX);
        rows.into_iter()
            .map(
                |(id, status, error, created, updated, calls, done, failed_n, running)| {
                    let status = RunStatus::parse(&status)
                        .ok_or_else(|| corrupt("list runs", format!("status `{status}`")))?;
                    let mut s =
                        RunSummary::of(&RunRecord::new(id, "", serde_json::Value::Null), &[]);
                    s.status = status;
                    s.error = error;
                    s.created_at = ms_u64(created);
                    s.updated_at = ms_u64(updated);
                    s.calls = n(calls);
                    s.done = n(done);
                    s.failed = n(failed_n);
                    s.running = n(running);
                    Ok(s)
                },
            )
            .collect()
    }
}
