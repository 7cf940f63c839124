//! The background-task ledger on a database (feature `ledger`), and the recovery that marks the
//! tasks of processes that died as `interrupted`.

use std::collections::HashSet;
use std::sync::{Arc, LazyLock, Mutex};
use std::time::Duration;

use sqlx::Connection as _;
use subagent_spi::{TaskStatus, async_trait};
use task_tool::{LedgerError, TaskLedger, TaskRecord};

use crate::sql::{from_ms, len_i64, ms, now_ms, on_conflict_update, to_ms, with_conn, with_pool};
use crate::writer::{BatchRow, Conn, GroupCommit};
use crate::{Db, StoreError};

/// How long a running task's owner may stay silent before its tasks count as interrupted (the
/// writer beats every 10 s). An owner on this machine is seen to be gone at once (its process
/// no longer runs); for an owner on another machine (PostgreSQL) only the lease tells.
pub const OWNER_LEASE: Duration = Duration::from_secs(30);

/// This machine's name, stored with each owner (`host/pid:random`) so that a process can tell
/// whether an owner ran here and can be checked directly. Read once (without blocking the
/// async threads); empty where there is none, and then only the lease decides.
static HOST: tokio::sync::OnceCell<String> = tokio::sync::OnceCell::const_new();

async fn host() -> &'static str {
    HOST.get_or_init(|| async {
        tokio::fs::read_to_string("/proc/sys/kernel/hostname")
            .await
            .map(|h| h.trim().to_string())
            .unwrap_or_default()
    })
    .await
}

/// The owner as stored: the task tool's `pid:random` with this machine's name in front.
fn stored_owner(host: &str, owner: &str) -> String {
    format!("{host}/{owner}")
}

/// Owners that wrote through a ledger of this process: alive while the process is.
static LIVE_OWNERS: LazyLock<Mutex<HashSet<String>>> = LazyLock::new(Default::default);

fn live_owners() -> std::sync::MutexGuard<'static, HashSet<String>> {
    LIVE_OWNERS.lock().unwrap_or_else(|p| p.into_inner())
}

/// A [`TaskLedger`] on a [`Db`]. Records are upserted in one transaction per batch; reading a
/// running task whose owner is gone marks that owner's tasks `interrupted` first (and so does
/// [`recover_interrupted`], run when the store is opened and by the maintenance task).
#[derive(Debug, Clone)]
pub struct SqlTaskLedger {
    db: Db,
    writer: Arc<GroupCommit<Row>>,
}

impl SqlTaskLedger {
    /// A ledger on `db` (already migrated by [`Db::open`]).
    pub fn new(db: Db) -> Self {
        Self {
            writer: Arc::new(GroupCommit::new(db.clone())),
            db,
        }
    }

    async fn put_inner(&self, records: &[TaskRecord]) -> Result<(), StoreError> {
        if records.is_empty() {
            return Ok(());
        }
        let host = host().await;
        let rows = records
            .iter()
            .map(|r| Row::encode(r, host))
            .collect::<Result<Vec<_>, _>>()?;
        {
            // Owners of this process that write are alive (a record of another process with
            // the same id, reused, is not).
            let mut live = live_owners();
            for r in rows
                .iter()
                .filter(|r| owner_pid(&r.owner) == Some(std::process::id()))
            {
                if !live.contains(&r.owner) {
                    live.insert(r.owner.clone());
                }
            }
        }
        // Returns once the batch holding these rows is committed.
        self.writer.write(rows).await
    }

    async fn get_inner(&self, id: &str) -> Result<Option<TaskRecord>, StoreError> {
        let Some(row) = self.fetch(id).await? else {
            return Ok(None);
        };
        if row.status == TaskStatus::Running.as_str() && owner_gone(&row).await {
            // Recorded when the store can take it; read as interrupted either way (a full disk
            // must not keep a reader from its tasks).
            match interrupt_owner(&self.db, &row.owner).await {
                Ok(_) => return self.fetch(id).await?.map(Row::decode).transpose(),
                Err(e) => {
                    tracing::warn!(error = %e, "interrupted tasks not marked in the store");
                    return row.decode().map(|r| Some(interrupted(r)));
                }
            }
        }
        Ok(Some(row.decode()?))
    }

    async fn fetch(&self, id: &str) -> Result<Option<Row>, StoreError> {
        const SELECT: &str = "SELECT id, agent, kind, call, status, session_id, partial, \
             outcome, error, usage, owner, started_at, heartbeat_at, finished_at, bytes \
             FROM background_tasks WHERE id = $1";
        let row = with_pool!(&self.db, |pool| {
            let r: Option<Row> = sqlx::query_as(SELECT)
                .bind(id)
                .fetch_optional(pool)
                .await
                .map_err(StoreError::query("read task ledger"))?;
            r
        });
        Ok(row)
    }

    async fn list_inner(&self, limit: usize) -> Result<Vec<TaskRecord>, StoreError> {
        // Tasks of processes that ended read as interrupted, as with `get`: marked in the store
        // when it can take the write, and in what is read in any case (a full disk must not
        // keep a reader from its tasks).
        let marked = recover_interrupted(&self.db).await;
        if let Err(e) = &marked {
            tracing::warn!(error = %e, "interrupted tasks not marked in the store");
        }
        const SELECT: &str = "SELECT id, agent, kind, call, status, session_id, partial, \
             outcome, error, usage, owner, started_at, heartbeat_at, finished_at, bytes \
             FROM background_tasks ORDER BY started_at DESC LIMIT $1";
        let rows = with_pool!(&self.db, |pool| {
            let r: Vec<Row> = sqlx::query_as(SELECT)
                .bind(len_i64(limit))
                .fetch_all(pool)
                .await
                .map_err(StoreError::query("list task ledger"))?;
            r
        });
        let mut out = Vec::with_capacity(rows.len());
        for row in rows {
            let gone = marked.is_err()
                && row.status == TaskStatus::Running.as_str()
                && owner_gone(&row).await;
            // One unreadable record does not hide the others.
            match row.decode() {
                Ok(r) if gone => out.push(interrupted(r)),
                Ok(r) => out.push(r),
                Err(e) => tracing::warn!(error = %e, "task ledger record skipped"),
            }
        }
        Ok(out)
    }

    async fn request_stop_inner(&self, id: &str) -> Result<bool, StoreError> {
        let n = with_pool!(&self.db, |pool| {
            sqlx::query(
                "UPDATE background_tasks SET stop_requested = $1 WHERE id = $2 AND status = 'running'",
            )
            .bind(now_ms())
            .bind(id)
            .execute(pool)
            .await
            .map_err(StoreError::query("ask a task to stop"))?
            .rows_affected()
        });
        Ok(n > 0)
    }

    async fn stop_requests_inner(&self, owner: &str) -> Result<Vec<String>, StoreError> {
        let ids = with_pool!(&self.db, |pool| {
            let r: Vec<(String,)> = sqlx::query_as(
                "SELECT id FROM background_tasks WHERE owner = $1 AND status = 'running' \
                 AND stop_requested IS NOT NULL",
            )
            .bind(stored_owner(host().await, owner))
            .fetch_all(pool)
            .await
            .map_err(StoreError::query("read stop requests"))?;
            r
        });
        Ok(ids.into_iter().map(|(id,)| id).collect())
    }

    async fn heartbeat_inner(&self, owner: &str) -> Result<(), StoreError> {
        with_pool!(&self.db, |pool| {
            sqlx::query(
                "UPDATE background_tasks SET heartbeat_at = $1 WHERE owner = $2 AND status = 'running'",
            )
            .bind(now_ms())
            .bind(stored_owner(host().await, owner))
            .execute(pool)
            .await
            .map_err(StoreError::query("task ledger heartbeat"))?;
        });
        Ok(())
    }
}

#[async_trait]
impl TaskLedger for SqlTaskLedger {
    async fn put(&self, records: &[TaskRecord]) -> Result<(), LedgerError> {
        self.put_inner(records).await.map_err(ledger_error)
    }

    async fn get(&self, id: &str) -> Result<Option<TaskRecord>, LedgerError> {
        self.get_inner(id).await.map_err(ledger_error)
    }

    async fn list(&self, limit: usize) -> Result<Vec<TaskRecord>, LedgerError> {
        self.list_inner(limit).await.map_err(ledger_error)
    }

    async fn request_stop(&self, id: &str) -> Result<bool, LedgerError> {
        self.request_stop_inner(id).await.map_err(ledger_error)
    }

    async fn stop_requests(&self, owner: &str) -> Result<Vec<String>, LedgerError> {
        self.stop_requests_inner(owner).await.map_err(ledger_error)
    }

    async fn heartbeat(&self, owner: &str) -> Result<(), LedgerError> {
        self.heartbeat_inner(owner).await.map_err(ledger_error)
    }
}

fn ledger_error(e: StoreError) -> LedgerError {
    LedgerError::new(e.to_string(), e)
}

/// Marks the running tasks of every owner that is gone as `interrupted` (their partial output
/// and session stay); returns how many tasks were marked. Run by [`Db`] users at startup and
/// periodically ([`spawn_maintenance`](crate::spawn_maintenance) does both).
pub async fn recover_interrupted(db: &Db) -> Result<u64, StoreError> {
    const OWNERS: &str = "SELECT owner, MAX(heartbeat_at) FROM background_tasks \
         WHERE status = 'running' GROUP BY owner";
    let owners: Vec<(String, Option<i64>)> = with_pool!(db, |pool| {
        sqlx::query_as(OWNERS)
            .fetch_all(pool)
            .await
            .map_err(StoreError::query("find running tasks"))?
    });
    let mut marked = 0;
    for (owner, heartbeat) in owners {
        let probe = Row::probe(owner.clone(), heartbeat.unwrap_or(0));
        if owner_gone(&probe).await {
            marked += interrupt_owner(db, &owner).await?;
        }
    }
    Ok(marked)
}

/// A running record whose owner is gone, read as the store would mark it ([`interrupt_owner`])
/// when it cannot take the write.
fn interrupted(mut r: TaskRecord) -> TaskRecord {
    r.status = TaskStatus::Interrupted;
    r.finished_at.get_or_insert_with(std::time::SystemTime::now);
    r
}

/// Marks `owner`'s running tasks interrupted.
async fn interrupt_owner(db: &Db, owner: &str) -> Result<u64, StoreError> {
    let now = now_ms();
    let n = with_pool!(db, |pool| {
        sqlx::query(
            "UPDATE background_tasks SET status = 'interrupted', finished_at = $1, \
             updated_at = $1 WHERE owner = $2 AND status = 'running'",
        )
        .bind(now)
        .bind(owner)
        .execute(pool)
        .await
        .map_err(StoreError::query("mark interrupted tasks"))?
        .rows_affected()
    });
    if n > 0 {
        tracing::info!(
            owner,
            tasks = n,
            "background tasks of a process that ended marked interrupted"
        );
    }
    Ok(n)
}

/// Whether the process that owns a running record is gone: its lease ran out, or it ran on this
/// machine and no process of that id runs, or this process has that id but never wrote as that
/// owner (the id was reused).
async fn owner_gone(row: &Row) -> bool {
    let this_host = host().await;
    let here = row
        .owner
        .split_once('/')
        .is_some_and(|(host, _)| !host.is_empty() && host == this_host);
    let pid = owner_pid(&row.owner);
    if here && pid == Some(std::process::id()) {
        return !live_owners().contains(&row.owner);
    }
    if now_ms().saturating_sub(row.heartbeat_at) > ms(OWNER_LEASE) {
        return true;
    }
    match pid {
        Some(pid) if here => !process_alive(pid).await,
        _ => false,
    }
}

/// The process id in a stored owner (`host/pid:random`).
fn owner_pid(owner: &str) -> Option<u32> {
    let (_, rest) = owner.split_once('/')?;
    rest.split_once(':')?.0.parse().ok()
}

/// True when process `pid` runs (and is not a zombie). Where `/proc` is missing, assumes it
/// does, leaving the decision to the lease.
async fn process_alive(pid: u32) -> bool {
    if !tokio::fs::try_exists("/proc/self").await.unwrap_or(false) {
        return true;
    }
    match tokio::fs::read_to_string(format!("/proc/{pid}/stat")).await {
        // The state follows the command name in parentheses: `pid (comm) S ...`.
        Ok(stat) => stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|state| state != "Z" && state != "X"),
        Err(_) => false,
    }
}

/// Rows per upsert statement (16 parameters each: far below both dialects' limits).
const ROWS_PER_STATEMENT: usize = 512;

/// The columns an upsert of a stored record rewrites (not what a task starts with).
const UPDATED_COLUMNS: &str = "status, session_id, partial, outcome, error, usage, owner, \
     updated_at, heartbeat_at, finished_at, bytes";

/// A multi-row upsert of `rows` into `background_tasks`, run on `$exec`.
macro_rules! upsert_records {
    ($rows:expr, $exec:expr) => {{
        let mut qb = sqlx::QueryBuilder::new(
            "INSERT INTO background_tasks (id, agent, kind, call, status, session_id, partial, \
             outcome, error, usage, owner, started_at, updated_at, heartbeat_at, finished_at, \
             bytes) ",
        );
        qb.push_values($rows, |mut b, r: Row| {
            b.push_bind(r.id)
                .push_bind(r.agent)
                .push_bind(r.kind)
                .push_bind(r.call)
                .push_bind(r.status)
                .push_bind(r.session_id)
                .push_bind(r.partial)
                .push_bind(r.outcome)
                .push_bind(r.error)
                .push_bind(r.usage)
                .push_bind(r.owner)
                .push_bind(r.started_at)
                .push_bind(r.heartbeat_at)
                .push_bind(r.heartbeat_at)
                .push_bind(r.finished_at)
                .push_bind(r.bytes);
        });
        qb.push(on_conflict_update(UPDATED_COLUMNS));
        qb.build()
            .execute($exec)
            .await
            .map_err(StoreError::query(Row::WHAT))?;
    }};
}

impl BatchRow for Row {
    const WHAT: &'static str = "write task ledger";
    /// A task's later record replaces an earlier one queued in the same batch.
    const COALESCE: bool = true;

    fn key(&self) -> &str {
        &self.id
    }

    /// Multi-row upserts (one round trip per 512 records), in one transaction.
    async fn write(conn: &mut Conn, rows: Vec<Self>) -> Result<(), StoreError> {
        with_conn!(conn, |c| {
            if rows.len() <= ROWS_PER_STATEMENT {
                upsert_records!(rows, &mut **c);
            } else {
                let mut tx = c.begin().await.map_err(StoreError::query(Self::WHAT))?;
                let mut rows = rows.into_iter().peekable();
                while rows.peek().is_some() {
                    let chunk: Vec<Row> = rows.by_ref().take(ROWS_PER_STATEMENT).collect();
                    upsert_records!(chunk, &mut *tx);
                }
                tx.commit().await.map_err(StoreError::query(Self::WHAT))?;
            }
        });
        Ok(())
    }
}

/// A record as stored: JSON texts and Unix milliseconds.
struct Row {
    id: String,
    agent: String,
    kind: String,
    call: String,
    status: String,
    session_id: Option<String>,
    partial: String,
    outcome: Option<String>,
    error: Option<String>,
    usage: String,
    owner: String,
    started_at: i64,
    heartbeat_at: i64,
    finished_at: Option<i64>,
    bytes: i64,
}

/// A row read by column name, on either backend.
impl<'r, R: sqlx::Row> sqlx::FromRow<'r, R> for Row
where
    &'r str: sqlx::ColumnIndex<R>,
    String: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    i64: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
{
    fn from_row(row: &'r R) -> Result<Self, sqlx::Error> {
        Ok(Self {
            id: row.try_get("id")?,
            agent: row.try_get("agent")?,
            kind: row.try_get("kind")?,
            call: row.try_get("call")?,
            status: row.try_get("status")?,
            session_id: row.try_get("session_id")?,
            partial: row.try_get("partial")?,
            outcome: row.try_get("outcome")?,
            error: row.try_get("error")?,
            usage: row.try_get("usage")?,
            owner: row.try_get("owner")?,
            started_at: row.try_get("started_at")?,
            heartbeat_at: row.try_get("heartbeat_at")?,
            finished_at: row.try_get("finished_at")?,
            bytes: row.try_get("bytes")?,
        })
    }
}

impl Row {
    fn probe(owner: String, heartbeat_at: i64) -> Self {
        Self {
            id: String::new(),
            agent: String::new(),
            kind: String::new(),
            call: String::new(),
            status: String::new(),
            session_id: None,
            partial: String::new(),
            outcome: None,
            error: None,
            usage: String::new(),
            owner,
            started_at: 0,
            heartbeat_at,
            finished_at: None,
            bytes: 0,
        }
    }

    fn encode(r: &TaskRecord, host: &str) -> Result<Self, StoreError> {
        let json = |what: &'static str, v: Result<String, serde_json::Error>| {
            v.map_err(|e| StoreError::Corrupt {
                what,
                reason: format!("task {}: cannot encode: {e}", r.id),
            })
        };
        let call = json("task call", serde_json::to_string(&r.call))?;
        let outcome = r
            .outcome
            .as_ref()
            .map(|o| json("task outcome", serde_json::to_string(o)))
            .transpose()?;
        let usage = json("task usage", serde_json::to_string(&r.usage))?;
        let bytes = call.len()
            + r.partial.len()
            + outcome.as_ref().map_or(0, String::len)
            + r.error.as_ref().map_or(0, String::len);
        Ok(Self {
            id: r.id.clone(),
            agent: r.agent.clone(),
            kind: r.kind.clone(),
            call,
            status: r.status.as_str().to_string(),
            session_id: r.session_id.clone(),
            partial: r.partial.clone(),
            outcome,
            error: r.error.clone(),
            usage,
            owner: stored_owner(host, &r.owner),
            started_at: to_ms(r.started_at),
            heartbeat_at: now_ms(),
            finished_at: r.finished_at.map(to_ms),
            bytes: len_i64(bytes),
        })
    }

    fn decode(self) -> Result<TaskRecord, StoreError> {
        let id = self.id;
        let corrupt = |what: &'static str, e: serde_json::Error| StoreError::Corrupt {
            what,
            reason: format!("task {id}: {e}"),
        };
        let call = serde_json::from_str(&self.call).map_err(|e| corrupt("task call", e))?;
        let status: TaskStatus = serde_json::from_value(serde_json::Value::String(self.status))
            .map_err(|e| corrupt("task status", e))?;
        let outcome = self
            .outcome
            .as_deref()
            .map(serde_json::from_str)
            .transpose()
            .map_err(|e| corrupt("task outcome", e))?;
        let usage = serde_json::from_str(&self.usage).map_err(|e| corrupt("task usage", e))?;
        let owner = match self.owner.split_once('/') {
            Some((_, owner)) => owner.to_string(),
            None => self.owner,
        };
        let mut r = TaskRecord::new(id.clone(), self.agent, self.kind, call, owner);
        r.status = status;
        r.session_id = self.session_id;
        r.partial = self.partial;
        r.outcome = outcome;
        r.error = self.error;
        r.usage = usage;
        r.started_at = from_ms(self.started_at);
        r.updated_at = from_ms(self.heartbeat_at);
        r.finished_at = self.finished_at.map(from_ms);
        let _ = self.bytes;
        Ok(r)
    }
}
