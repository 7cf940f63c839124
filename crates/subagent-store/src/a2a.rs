//! The A2A server's task store on a [`Db`] (feature `a2a`): [`SqlTaskStore`] implements
//! the A2A server's storage contract (`subagent_a2a::task_store`: `TaskStore`, and the
//! `PushConfigStore`, `ContextSessionStore` and, on PostgreSQL, `ReplicaBus` it offers) on
//! SQLite or PostgreSQL.
//!
//! - Tasks are rows of `a2a_tasks`: the task as A2A 1.0 JSON plus the columns `ListTasks`
//!   filters and sorts on (agent, context, state, status timestamp), so filtering and
//!   pagination run in SQL.
//! - **Restarts.** A task that was submitted or working when its server stopped cannot go on
//!   (its handler is gone): it becomes `failed` with the status message
//!   [`INTERRUPTED_BY_RESTART`] (SQLite: when the next process opens the file) or
//!   [`INTERRUPTED_BY_LEASE`] (PostgreSQL: when the lease of the process running it expires).
//!   Interrupted tasks (`input-required`, `auth-required`) wait for their follow-up message on
//!   any process.
//! - **Versions.** Every row has a `version`, bumped by each write; every write of a task
//!   (`TaskStore::save_versioned`, and the lease sweep) is a compare-and-set on it, so writers
//!   fence each other: one continuation of an `input-required` task wins, and a process that
//!   stalled past its lease cannot overwrite what was written meanwhile.
//! - **Replicas (PostgreSQL).** Every process holds a lease on the tasks it runs, renewed every
//!   third of [`A2aStoreOptions::lease`]; any process turns tasks with an expired lease into
//!   `failed`. Events of running tasks are written to `a2a_task_events` and their ids sent with
//!   `NOTIFY subagents_a2a`; every process `LISTEN`s and hands them to its subscribers. Cancel
//!   requests travel the same way. See `docs/scaling.md`.
//! - **Sessions.** The executor session each conversation (contextId) of a hosted agent
//!   continues is a row of `a2a_context_sessions` (`ContextSessionStore::save_context_session`), so
//!   `SubagentHandler` resumes it after a restart; it goes with the context's last task.
//! - **Retention.** Terminal tasks expire after [`Retention::terminal_ttl`]; over
//!   [`Retention::max_tasks`] or [`Retention::max_bytes`] the oldest terminal, then interrupted
//!   tasks go (running ones never). Pruning runs at open and every
//!   [`A2aStoreOptions::prune_interval`]; [`prune_a2a_tasks`] prunes by hand
//!   ([`prune_a2a_tasks_dry_run`] says what it would remove).
//!
//! One SQLite file serves one server process: [`SqlTaskStore::open`] locks `<file>.a2a-lock`
//! and refuses a second opener ([`StoreError::Locked`], naming the file and the holder's pid),
//! so the restart rule above only ever meets tasks of a process that is gone. Several
//! processes share a PostgreSQL database.

use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use async_trait::async_trait;
use sqlx::Connection as _;
use subagent_a2a::task_store::{
    ContextSessionStore, MAX_PUSH_CONFIGS_PER_TASK, PushConfigStore, RemoteSignal, ReplicaBus,
    StoreError as A2aStoreError, TaskFilter, TaskPage, TaskStore, VersionedTask, now_rfc3339,
    task_bytes,
};
use subagent_a2a::types::v1;
use tokio::sync::broadcast;
use tokio::task::JoinHandle;

use crate::sql::{ms, now_ms, on_conflict_update, with_conn, with_pool};
use crate::writer::{BatchRow, Conn, GroupCommit};
use crate::{Db, StoreError};

/// The status message of a task that was running when its SQLite-backed server stopped.
pub const INTERRUPTED_BY_RESTART: &str =
    "interrupted: the server restarted while this task was running";

/// The status message of a task whose PostgreSQL lease expired (its server process stopped).
pub const INTERRUPTED_BY_LEASE: &str =
    "interrupted: the server process running this task stopped (its lease expired)";

/// The PostgreSQL notification channel of task events and cancel requests.
const CHANNEL: &str = "subagents_a2a";

/// How long published events stay readable by other replicas.
const EVENT_TTL: Duration = Duration::from_secs(600);

/// Task states whose handler may be running: unspecified, submitted, working (a literal, for
/// `concat!` into static SQL).
macro_rules! running {
    () => {
        "(0, 1, 2)"
    };
}

/// How long persisted tasks are kept, and how much.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Retention {
    /// Terminal tasks are deleted this long after their last change (default 7 days).
    pub terminal_ttl: Duration,
    /// The most tasks kept (default 100,000).
    pub max_tasks: u64,
    /// The most bytes of tasks kept, counted as the in-memory store does
    /// (`subagent_a2a::task_store::task_bytes`; default 1 GiB).
    pub max_bytes: u64,
}

impl Default for Retention {
    fn default() -> Self {
        Self {
            terminal_ttl: Duration::from_secs(7 * 24 * 3600),
            max_tasks: 100_000,
            max_bytes: 1024 * 1024 * 1024,
        }
    }
}

impl Retention {
    /// Sets the time-to-live of terminal tasks (builder style).
    #[must_use]
    pub fn with_terminal_ttl(mut self, ttl: Duration) -> Self {
        self.terminal_ttl = ttl;
        self
    }

    /// Sets the most tasks kept (at least 1; builder style).
    #[must_use]
    pub fn with_max_tasks(mut self, n: u64) -> Self {
        self.max_tasks = n.max(1);
        self
    }

    /// Sets the most bytes kept (at least 1; builder style).
    #[must_use]
    pub fn with_max_bytes(mut self, n: u64) -> Self {
        self.max_bytes = n.max(1);
        self
    }
}

/// What a prune removed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct PruneReport {
    /// Terminal tasks past their time-to-live.
    pub expired: u64,
    /// Finished or interrupted tasks removed to get under the count or byte bound.
    pub evicted: u64,
    /// Replica events past their time-to-live.
    pub events: u64,
}

/// Settings of a [`SqlTaskStore`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct A2aStoreOptions {
    /// PostgreSQL: how long a process's claim on its running tasks lasts without renewal
    /// (default 30 s; renewed every third of it). After it, other processes mark the tasks
    /// interrupted.
    pub lease: Duration,
    /// How much is kept.
    pub retention: Retention,
    /// How often pruning runs (default 60 s).
    pub prune_interval: Duration,
}

impl Default for A2aStoreOptions {
    fn default() -> Self {
        Self {
            lease: Duration::from_secs(30),
            retention: Retention::default(),
            prune_interval: Duration::from_secs(60),
        }
    }
}

impl A2aStoreOptions {
    /// Sets the lease (at least 1 s; builder style).
    #[must_use]
    pub fn with_lease(mut self, lease: Duration) -> Self {
        self.lease = lease.max(Duration::from_secs(1));
        self
    }

    /// Sets the retention (builder style).
    #[must_use]
    pub fn with_retention(mut self, retention: Retention) -> Self {
        self.retention = retention;
        self
    }

    /// Sets how often pruning runs (at least 1 s; builder style).
    #[must_use]
    pub fn with_prune_interval(mut self, every: Duration) -> Self {
        self.prune_interval = every.max(Duration::from_secs(1));
        self
    }
}

struct Inner {
    db: Db,
    /// Task saves, group-committed.
    writer: GroupCommit<TaskRow>,
    /// Published events (PostgreSQL), group-committed.
    events: GroupCommit<EventRow>,
    /// This process's id, the owner of the leases it takes.
    owner: String,
    options: A2aStoreOptions,
    /// PostgreSQL: signals read from `LISTEN`.
    signals: Option<broadcast::Sender<RemoteSignal>>,
    /// The maintenance and listener loops, stopped when the store goes.
    loops: Mutex<Vec<JoinHandle<()>>>,
    /// SQLite: the lock file held while the store is open (see [`SqlTaskStore::open`]).
    _lock: Option<ProcessLock>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        let loops = self.loops.get_mut().unwrap_or_else(|e| e.into_inner());
        for h in loops.drain(..) {
            h.abort();
        }
    }
}

/// An exclusive advisory lock on `<database>.a2a-lock`, holding the process id; released when
/// the file closes (the store is dropped, or the process ends however it ends).
#[derive(Debug)]
struct ProcessLock {
    _file: std::fs::File,
}

impl ProcessLock {
    /// Locks the lock file of the SQLite database `db` (created when missing); `None` for an
    /// in-memory database. [`StoreError::Locked`] when another store holds it.
    fn acquire(db: &std::path::Path) -> Result<Option<Self>, StoreError> {
        use std::io::{Seek as _, Write as _};
        let name = db.as_os_str();
        if name.is_empty() || name == ":memory:" {
            return Ok(None);
        }
        let mut path = name.to_os_string();
        path.push(".a2a-lock");
        let path = std::path::PathBuf::from(path);
        let io = |source| StoreError::LockFile {
            path: path.clone(),
            source,
        };
        let mut file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(io)?;
        match file.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                // The holder writes its id just after locking: it may not be there yet.
                let text = std::fs::read_to_string(&path).unwrap_or_default();
                return Err(StoreError::Locked {
                    path: db.to_owned(),
                    lock: path.clone(),
                    pid: text.trim().parse().ok(),
                });
            }
            Err(std::fs::TryLockError::Error(e)) => return Err(io(e)),
        }
        file.set_len(0).map_err(io)?;
        file.rewind().map_err(io)?;
        writeln!(file, "{}", std::process::id()).map_err(io)?;
        Ok(Some(Self { _file: file }))
    }
}

/// The A2A server's [`TaskStore`] on a database. Cheap to clone; clones share the database
/// and background loops. Each hosted agent uses its own [`for_agent`](Self::for_agent) view
/// (tasks are kept apart by agent path).
#[derive(Clone)]
pub struct SqlTaskStore {
    inner: Arc<Inner>,
    scope: Arc<str>,
}

impl std::fmt::Debug for SqlTaskStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqlTaskStore")
            .field("scope", &self.scope)
            .field("owner", &self.inner.owner)
            .field("options", &self.inner.options)
            .finish_non_exhaustive()
    }
}

/// A task as stored in `a2a_tasks`, written if the stored version is `version - 1` (or the task
/// is absent).
struct TaskRow {
    id: String,
    scope: String,
    context_id: String,
    state: i64,
    terminal: i64,
    status_ts: String,
    updated_ms: i64,
    bytes: i64,
    owner: Option<String>,
    lease_until_ms: Option<i64>,
    body: String,
    /// The version this write gives the task.
    version: i64,
}

/// Rows per upsert statement (12 parameters each: far below both dialects' limits).
const ROWS_PER_STATEMENT: usize = 256;

/// The columns an upsert of a stored task rewrites (not its id or scope).
const UPDATED_COLUMNS: &str = "context_id, state, terminal, status_ts, updated_ms, bytes, owner, \
     lease_until_ms, body, version";

/// A multi-row compare-and-set of `rows` (`(position, row)`, distinct tasks) into `a2a_tasks`,
/// run on `$exec`: a new task is inserted, a stored one updated only if its version is the
/// row's `version - 1` (and its agent the row's); the positions of the rows refused go to
/// `$refused`.
macro_rules! upsert_tasks {
    ($rows:expr, $exec:expr, $refused:expr) => {{
        let rows: Vec<(usize, TaskRow)> = $rows;
        let at: Vec<(usize, String)> = rows.iter().map(|(i, r)| (*i, r.id.clone())).collect();
        let mut qb = sqlx::QueryBuilder::new(
            "INSERT INTO a2a_tasks (id, scope, context_id, state, terminal, status_ts, \
             updated_ms, bytes, owner, lease_until_ms, body, version) ",
        );
        qb.push_values(rows, |mut b, (_, r): (usize, TaskRow)| {
            b.push_bind(r.id)
                .push_bind(r.scope)
                .push_bind(r.context_id)
                .push_bind(r.state)
                .push_bind(r.terminal)
                .push_bind(r.status_ts)
                .push_bind(r.updated_ms)
                .push_bind(r.bytes)
                .push_bind(r.owner)
                .push_bind(r.lease_until_ms)
                .push_bind(r.body)
                .push_bind(r.version);
        });
        qb.push(on_conflict_update(UPDATED_COLUMNS)).push(
            " WHERE a2a_tasks.version = excluded.version - 1 \
             AND a2a_tasks.scope = excluded.scope RETURNING id",
        );
        let written: Vec<String> = qb
            .build_query_scalar()
            .fetch_all($exec)
            .await
            .map_err(StoreError::query(TaskRow::WHAT))?;
        let written: std::collections::HashSet<String> = written.into_iter().collect();
        $refused.extend(
            at.into_iter()
                .filter(|(_, id)| !written.contains(id))
                .map(|(i, _)| i),
        );
    }};
}

impl BatchRow for TaskRow {
    const WHAT: &'static str = "save A2A task";
    // Not coalesced (the default): every write of a task is a compare-and-set on its version.

    fn key(&self) -> &str {
        &self.id
    }

    async fn write(conn: &mut Conn, rows: Vec<Self>) -> Result<(), StoreError> {
        Self::write_checked(conn, rows).await.map(drop)
    }

    /// The k-th write of each task queued in the batch goes in the k-th round (a statement
    /// writes a row once, and a later write of a task expects the version of the earlier
    /// one); each round is sorted by task id, so that replicas writing to one PostgreSQL
    /// database lock rows in one order.
    async fn write_checked(conn: &mut Conn, rows: Vec<Self>) -> Result<Vec<usize>, StoreError> {
        let mut rounds: Vec<Vec<(usize, TaskRow)>> = Vec::new();
        let mut nth: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
        for (i, r) in rows.into_iter().enumerate() {
            let k = nth.entry(r.id.clone()).or_insert(0);
            if rounds.len() <= *k {
                rounds.push(Vec::new());
            }
            rounds[*k].push((i, r));
            *k += 1;
        }
        for r in &mut rounds {
            r.sort_by(|a, b| a.1.id.cmp(&b.1.id));
        }
        let mut refused = Vec::new();
        with_conn!(conn, |c| {
            if rounds.len() == 1 && rounds[0].len() <= ROWS_PER_STATEMENT {
                // One statement commits on its own: no BEGIN / COMMIT round trips.
                let round = rounds.pop().unwrap_or_default();
                upsert_tasks!(round, &mut **c, refused);
            } else {
                let mut tx = c.begin().await.map_err(StoreError::query(Self::WHAT))?;
                for round in rounds {
                    let mut round = round.into_iter().peekable();
                    while round.peek().is_some() {
                        let chunk: Vec<(usize, TaskRow)> =
                            round.by_ref().take(ROWS_PER_STATEMENT).collect();
                        upsert_tasks!(chunk, &mut *tx, refused);
                    }
                }
                tx.commit().await.map_err(StoreError::query(Self::WHAT))?;
            }
        });
        Ok(refused)
    }
}

/// An event of a task running here, for the other replicas (PostgreSQL).
struct EventRow {
    task_id: String,
    created_ms: i64,
    body: String,
}

impl BatchRow for EventRow {
    const WHAT: &'static str = "publish task event";

    fn key(&self) -> &str {
        &self.task_id
    }

    /// The rows, then their ids as notifications, in one statement per 1,000 events (payloads
    /// stay far below PostgreSQL's 8,000-byte limit whatever the event's size). Notifications
    /// are delivered in the order sent, so a task's events keep their order.
    async fn write(conn: &mut Conn, rows: Vec<Self>) -> Result<(), StoreError> {
        let Conn::Postgres(c) = conn else {
            return Ok(());
        };
        let q = StoreError::query(Self::WHAT);
        let mut tx = c.begin().await.map_err(q)?;
        let mut rows = rows.into_iter().peekable();
        while rows.peek().is_some() {
            let chunk: Vec<EventRow> = rows.by_ref().take(1000).collect();
            let mut qb = sqlx::QueryBuilder::<sqlx::Postgres>::new(
                "WITH e AS (INSERT INTO a2a_task_events (task_id, created_ms, body) ",
            );
            qb.push_values(chunk, |mut b, r| {
                b.push_bind(r.task_id)
                    .push_bind(r.created_ms)
                    .push_bind(r.body);
            });
            qb.push(" RETURNING id) SELECT pg_notify(")
                .push_bind(CHANNEL)
                .push(", 'e:' || id) FROM e ORDER BY id");
            qb.build()
                .execute(&mut *tx)
                .await
                .map_err(StoreError::query(Self::WHAT))?;
        }
        tx.commit().await.map_err(StoreError::query(Self::WHAT))?;
        Ok(())
    }
}

fn running(state: v1::TaskState) -> bool {
    !state.is_terminal() && !state.is_interrupted()
}

fn backend(task_id: &str) -> impl FnOnce(StoreError) -> A2aStoreError + '_ {
    move |e| A2aStoreError::Backend {
        task_id: task_id.to_owned(),
        message: e.to_string(),
    }
}

fn decode<T: serde::de::DeserializeOwned>(what: &'static str, body: &str) -> Result<T, StoreError> {
    serde_json::from_str(body).map_err(|e| StoreError::Corrupt {
        what,
        reason: e.to_string(),
    })
}

impl SqlTaskStore {
    /// A store on `db` (opened with [`Db::open`], which creates the tables). On SQLite, tasks
    /// left running by an earlier process are marked interrupted now; on PostgreSQL, leases
    /// start being renewed and expired ones swept, and the process starts listening for the
    /// other replicas' events. Prunes once, then every
    /// [`prune_interval`](A2aStoreOptions::prune_interval). Needs a tokio runtime.
    ///
    /// **One process per SQLite file.** The store takes an exclusive lock on
    /// `<file>.a2a-lock` beside the database (an OS advisory lock, released when the store is
    /// dropped or the process ends, even by SIGKILL) and writes its process id there; a second
    /// opener, in this or another process, gets [`StoreError::Locked`] naming the file and
    /// that process id, so it never marks the running tasks of a live server interrupted.
    /// Other users of the file (transcripts, the background-task ledger of `subagents run`)
    /// do not take it.
    pub async fn open(db: Db, options: A2aStoreOptions) -> Result<Self, StoreError> {
        let postgres = matches!(db, Db::Postgres(_));
        let lock = match &db {
            Db::Sqlite(pool) => ProcessLock::acquire(pool.connect_options().get_filename())?,
            _ => None,
        };
        let inner = Arc::new(Inner {
            _lock: lock,
            writer: GroupCommit::new(db.clone()),
            events: GroupCommit::new(db.clone()),
            db,
            owner: uuid::Uuid::new_v4().to_string(),
            options,
            signals: postgres.then(|| broadcast::channel(4096).0),
            loops: Mutex::new(Vec::new()),
        });
        let store = SqlTaskStore {
            inner,
            scope: Arc::from(""),
        };
        store.sweep(!postgres).await?;
        prune_a2a_tasks(&store.inner.db, &store.inner.options.retention).await?;
        let mut loops = Vec::new();
        loops.push(tokio::spawn(maintain(Arc::downgrade(&store.inner))));
        if let Db::Postgres(pool) = &store.inner.db {
            let mut listener = sqlx::postgres::PgListener::connect_with(pool)
                .await
                .map_err(StoreError::query("listen for replica events"))?;
            listener
                .listen(CHANNEL)
                .await
                .map_err(StoreError::query("listen for replica events"))?;
            loops.push(tokio::spawn(listen(Arc::downgrade(&store.inner), listener)));
        }
        *store.inner.loops.lock().unwrap_or_else(|e| e.into_inner()) = loops;
        Ok(store)
    }

    /// The view of the agent mounted at `path` (its tasks only).
    pub fn for_agent(&self, path: &str) -> SqlTaskStore {
        SqlTaskStore {
            inner: self.inner.clone(),
            scope: Arc::from(path),
        }
    }

    /// The database.
    pub fn db(&self) -> &Db {
        &self.inner.db
    }

    /// Prunes now with this store's [`Retention`].
    pub async fn prune(&self) -> Result<PruneReport, StoreError> {
        prune_a2a_tasks(&self.inner.db, &self.inner.options.retention).await
    }

    /// Marks interrupted the running tasks that cannot go on: every one not owned by this
    /// process (`all_foreign`, SQLite at open) or those whose lease expired (PostgreSQL). Each
    /// mark is a compare-and-set on the version read and bumps it, so the owner's later write
    /// (a process that stalled past its lease) is refused.
    async fn sweep(&self, all_foreign: bool) -> Result<u64, StoreError> {
        let db = &self.inner.db;
        let now = now_ms();
        let (sql, update, message) = if all_foreign {
            (
                concat!(
                    "SELECT id, body, version FROM a2a_tasks WHERE state IN ",
                    running!(),
                    " AND (owner IS NULL OR owner <> $1) AND $2 >= 0 LIMIT 500"
                ),
                concat!(
                    "UPDATE a2a_tasks SET state = $1, terminal = 1, status_ts = $2, ",
                    "updated_ms = $4, owner = NULL, lease_until_ms = NULL, body = $5, bytes = $6, ",
                    "version = version + 1 WHERE id = $7 AND version = $8 AND state IN ",
                    running!(),
                    " AND (owner IS NULL OR owner <> $3)"
                ),
                INTERRUPTED_BY_RESTART,
            )
        } else {
            (
                concat!(
                    "SELECT id, body, version FROM a2a_tasks WHERE state IN ",
                    running!(),
                    " AND lease_until_ms < $2 AND $1 <> '' LIMIT 500"
                ),
                concat!(
                    "UPDATE a2a_tasks SET state = $1, terminal = 1, status_ts = $2, ",
                    "updated_ms = $4, owner = NULL, lease_until_ms = NULL, body = $5, bytes = $6, ",
                    "version = version + 1 WHERE id = $7 AND version = $8 AND state IN ",
                    running!(),
                    " AND lease_until_ms < $4 AND $3 <> ''"
                ),
                INTERRUPTED_BY_LEASE,
            )
        };
        let mut marked = 0;
        loop {
            let rows: Vec<(String, String, i64)> = with_pool!(db, |p| sqlx::query_as(sql)
                .bind(&self.inner.owner)
                .bind(now)
                .fetch_all(p)
                .await
                .map_err(StoreError::query("find interrupted tasks"))?);
            let n = rows.len();
            for (id, body, version) in rows {
                let mut task: v1::Task = match decode("A2A task", &body) {
                    Ok(t) => t,
                    Err(e) => {
                        tracing::warn!(task = %id, error = %e, "skipping unreadable A2A task");
                        continue;
                    }
                };
                let mut m = v1::Message::new(
                    v1::Role::Agent,
                    uuid::Uuid::new_v4().to_string(),
                    vec![v1::Part::text(message)],
                );
                m.context_id = task.context_id.clone();
                m.task_id = Some(task.id.clone());
                task.history.push(m.clone());
                task.status = v1::TaskStatus {
                    state: v1::TaskState::Failed,
                    message: Some(m),
                    timestamp: Some(now_rfc3339()),
                };
                let body = serde_json::to_string(&task).unwrap_or_default();
                let done = with_pool!(db, |p| sqlx::query(update)
                    .bind(i64::from(v1::TaskState::Failed.number()))
                    .bind(task.status.timestamp.clone().unwrap_or_default())
                    .bind(&self.inner.owner)
                    .bind(now)
                    .bind(&body)
                    .bind(i64::try_from(task_bytes(&task)).unwrap_or(i64::MAX))
                    .bind(&id)
                    .bind(version)
                    .execute(p)
                    .await
                    .map_err(StoreError::query("mark task interrupted"))?
                    .rows_affected());
                if done == 1 {
                    marked += 1;
                    tracing::info!(task = %id, "A2A task interrupted: {message}");
                    if self.inner.signals.is_some() {
                        let ev = v1::StreamResponse::StatusUpdate(v1::TaskStatusUpdateEvent {
                            task_id: task.id.clone(),
                            context_id: task.context_id.clone().unwrap_or_default(),
                            status: task.status.clone(),
                            metadata: None,
                        });
                        if let Err(e) = self.publish(&task.id, &ev).await {
                            tracing::warn!(task = %id, error = %e, "cannot publish interruption");
                        }
                    }
                }
            }
            if n < 500 {
                return Ok(marked);
            }
        }
    }

    /// PostgreSQL: extends the leases of the tasks this process runs.
    async fn renew(&self) -> Result<(), StoreError> {
        let until = now_ms().saturating_add(ms(self.inner.options.lease));
        const SQL: &str = concat!(
            "UPDATE a2a_tasks SET lease_until_ms = $1 WHERE owner = $2 AND state IN ",
            running!()
        );
        with_pool!(&self.inner.db, |p| sqlx::query(SQL)
            .bind(until)
            .bind(&self.inner.owner)
            .execute(p)
            .await
            .map_err(StoreError::query("renew task leases"))
            .map(drop)?);
        Ok(())
    }

    async fn publish(&self, task_id: &str, event: &v1::StreamResponse) -> Result<(), StoreError> {
        if !matches!(self.inner.db, Db::Postgres(_)) {
            return Ok(());
        }
        let row = EventRow {
            task_id: task_id.to_owned(),
            created_ms: now_ms(),
            body: serde_json::to_string(event).unwrap_or_default(),
        };
        self.inner.events.write(vec![row]).await
    }
}

/// The maintenance loop: lease renewal and sweeping (PostgreSQL), pruning.
async fn maintain(weak: Weak<Inner>) {
    let (postgres, lease, prune_every) = match weak.upgrade() {
        Some(i) => (
            matches!(i.db, Db::Postgres(_)),
            i.options.lease,
            i.options.prune_interval,
        ),
        None => return,
    };
    let tick = if postgres {
        (lease / 3).min(prune_every)
    } else {
        prune_every
    };
    let mut last_prune = tokio::time::Instant::now();
    loop {
        tokio::time::sleep(tick).await;
        let Some(inner) = weak.upgrade() else { return };
        let store = SqlTaskStore {
            inner,
            scope: Arc::from(""),
        };
        if postgres {
            if let Err(e) = store.renew().await {
                tracing::warn!(error = %e, "A2A task lease renewal failed");
            }
            if let Err(e) = store.sweep(false).await {
                tracing::warn!(error = %e, "A2A task lease sweep failed");
            }
        }
        if last_prune.elapsed() >= prune_every {
            last_prune = tokio::time::Instant::now();
            match store.prune().await {
                Ok(r) if r != PruneReport::default() => {
                    tracing::debug!(?r, "pruned A2A tasks");
                }
                Ok(_) => {}
                Err(e) => tracing::warn!(error = %e, "A2A task pruning failed"),
            }
        }
    }
}

/// PostgreSQL: reads the replicas' notifications and hands them out as [`RemoteSignal`]s.
async fn listen(weak: Weak<Inner>, mut listener: sqlx::postgres::PgListener) {
    loop {
        let n = match listener.recv().await {
            Ok(n) => n,
            Err(e) => {
                // The listener reconnects on the next call; notifications sent meanwhile are
                // lost (subscribers miss those events; tasks stay readable).
                tracing::warn!(error = %e, "A2A replica listener failed; reconnecting");
                tokio::time::sleep(Duration::from_secs(1)).await;
                continue;
            }
        };
        let Some(inner) = weak.upgrade() else { return };
        let Some(tx) = &inner.signals else { return };
        let payload = n.payload();
        let signal = if let Some(task_id) = payload.strip_prefix("c:") {
            Some(RemoteSignal::Cancel {
                task_id: task_id.to_owned(),
            })
        } else if let Some(id) = payload
            .strip_prefix("e:")
            .and_then(|i| i.parse::<i64>().ok())
        {
            read_event(&inner.db, id).await
        } else {
            None
        };
        if let Some(s) = signal {
            // No receiver yet (no engine listening) is fine.
            let _ = tx.send(s);
        }
    }
}

async fn read_event(db: &Db, id: i64) -> Option<RemoteSignal> {
    let row: Option<(String, String)> = with_pool!(db, |p| sqlx::query_as(
        "SELECT task_id, body FROM a2a_task_events WHERE id = $1"
    )
    .bind(id)
    .fetch_optional(p)
    .await
    .map_err(|e| tracing::warn!(error = %e, "cannot read replica event"))
    .ok()
    .flatten());
    let (task_id, body) = row?;
    match decode::<v1::StreamResponse>("A2A task event", &body) {
        Ok(event) => Some(RemoteSignal::Event {
            task_id,
            event: Arc::new(event),
        }),
        Err(e) => {
            tracing::warn!(error = %e, "skipping unreadable replica event");
            None
        }
    }
}

/// Prunes the A2A tasks of `db` (every agent's) to `retention`: terminal tasks past their
/// time-to-live, then, over the count or byte bound, the oldest terminal tasks and then the
/// oldest interrupted ones until 90% of the bound (running tasks are never removed), and
/// replica events older than ten minutes, in one transaction. For `subagents prune`; stores
/// also prune on their own.
pub async fn prune_a2a_tasks(db: &Db, retention: &Retention) -> Result<PruneReport, StoreError> {
    prune_a2a(db, retention, false).await
}

/// What [`prune_a2a_tasks`] would remove now, removing nothing (the transaction is rolled back):
/// `subagents prune --dry-run`.
pub async fn prune_a2a_tasks_dry_run(
    db: &Db,
    retention: &Retention,
) -> Result<PruneReport, StoreError> {
    prune_a2a(db, retention, true).await
}

async fn prune_a2a(
    db: &Db,
    retention: &Retention,
    dry_run: bool,
) -> Result<PruneReport, StoreError> {
    let now = now_ms();
    let mut report = PruneReport::default();
    let cutoff = now.saturating_sub(ms(retention.terminal_ttl));
    let q = StoreError::query;
    const SELECT: &str = concat!(
        "SELECT id, bytes FROM a2a_tasks WHERE state NOT IN ",
        running!(),
        " ORDER BY terminal DESC, updated_ms ASC LIMIT 500"
    );
    with_pool!(db, |p| {
        let mut tx = p.begin().await.map_err(q("prune A2A tasks"))?;
        report.expired =
            sqlx::query("DELETE FROM a2a_tasks WHERE terminal = 1 AND updated_ms < $1")
                .bind(cutoff)
                .execute(&mut *tx)
                .await
                .map_err(q("expire A2A tasks"))?
                .rows_affected();
        report.events = sqlx::query("DELETE FROM a2a_task_events WHERE created_ms < $1")
            .bind(now.saturating_sub(ms(EVENT_TTL)))
            .execute(&mut *tx)
            .await
            .map_err(q("expire A2A task events"))?
            .rows_affected();
        let (count, bytes): (i64, i64) = sqlx::query_as(
            "SELECT COUNT(*), CAST(COALESCE(SUM(bytes), 0) AS BIGINT) FROM a2a_tasks",
        )
        .fetch_one(&mut *tx)
        .await
        .map_err(q("measure A2A tasks"))?;
        let (mut count, mut bytes) = (count.max(0) as u64, bytes.max(0) as u64);
        let target_count = retention.max_tasks - retention.max_tasks / 10;
        let target_bytes = retention.max_bytes - retention.max_bytes / 10;
        let (count_over, bytes_over) = (count > retention.max_tasks, bytes > retention.max_bytes);
        let over = move |c: u64, b: u64| {
            (count_over && c > target_count) || (bytes_over && b > target_bytes)
        };
        'evict: while over(count, bytes) {
            let rows: Vec<(String, i64)> = sqlx::query_as(SELECT)
                .fetch_all(&mut *tx)
                .await
                .map_err(q("choose A2A tasks to evict"))?;
            if rows.is_empty() {
                break;
            }
            for (id, b) in rows {
                if !over(count, bytes) {
                    break 'evict;
                }
                let gone = sqlx::query("DELETE FROM a2a_tasks WHERE id = $1")
                    .bind(&id)
                    .execute(&mut *tx)
                    .await
                    .map_err(q("evict A2A task"))?
                    .rows_affected();
                if gone == 1 {
                    report.evicted += 1;
                    count = count.saturating_sub(1);
                    bytes = bytes.saturating_sub(b.max(0) as u64);
                }
            }
        }
        // Push configs go with their task.
        sqlx::query("DELETE FROM a2a_push_configs WHERE task_id NOT IN (SELECT id FROM a2a_tasks)")
            .execute(&mut *tx)
            .await
            .map_err(q("drop push configs of pruned A2A tasks"))?;
        // A context's session goes with its last task.
        sqlx::query(concat!(
            "DELETE FROM a2a_context_sessions WHERE NOT EXISTS (SELECT 1 FROM a2a_tasks t ",
            "WHERE t.scope = a2a_context_sessions.scope ",
            "AND t.context_id = a2a_context_sessions.context_id)"
        ))
        .execute(&mut *tx)
        .await
        .map_err(q("drop sessions of pruned A2A contexts"))?;
        if dry_run {
            tx.rollback().await.map_err(q("prune A2A tasks"))?;
        } else {
            tx.commit().await.map_err(q("prune A2A tasks"))?;
        }
    });
    Ok(report)
}

#[async_trait]
impl PushConfigStore for SqlTaskStore {
    async fn save_push_config(
        &self,
        config: v1::TaskPushNotificationConfig,
    ) -> Result<(), A2aStoreError> {
        let task_id = config.task_id.clone().unwrap_or_default();
        let config_id = config.id.clone().unwrap_or_default();
        let db = &self.inner.db;
        let task_exists: Option<i32> = with_pool!(db, |p| sqlx::query_scalar(
            "SELECT 1 FROM a2a_tasks WHERE id = $1 AND scope = $2"
        )
        .bind(&task_id)
        .bind(&*self.scope)
        .fetch_optional(p)
        .await
        .map_err(StoreError::query("find the task of a push config"))
        .map_err(backend(&task_id))?);
        if task_exists.is_none() {
            return Err(A2aStoreError::Backend {
                task_id,
                message: "no such task".into(),
            });
        }
        let others: i64 = with_pool!(db, |p| sqlx::query_scalar(
            "SELECT COUNT(*) FROM a2a_push_configs WHERE task_id = $1 AND config_id <> $2"
        )
        .bind(&task_id)
        .bind(&config_id)
        .fetch_one(p)
        .await
        .map_err(StoreError::query("count push configs"))
        .map_err(backend(&task_id))?);
        if others >= MAX_PUSH_CONFIGS_PER_TASK as i64 {
            return Err(A2aStoreError::Backend {
                task_id,
                message: format!(
                    "the task already has {MAX_PUSH_CONFIGS_PER_TASK} push notification configs \
                     (the limit); delete one first"
                ),
            });
        }
        let body = serde_json::to_string(&config).map_err(|e| A2aStoreError::Backend {
            task_id: task_id.clone(),
            message: format!("cannot encode the push config: {e}"),
        })?;
        with_pool!(db, |p| sqlx::query(concat!(
            "INSERT INTO a2a_push_configs (task_id, config_id, seq, body) VALUES ($1, $2, ",
            "(SELECT COALESCE(MAX(seq), 0) + 1 FROM a2a_push_configs WHERE task_id = $1), $3) ",
            "ON CONFLICT (task_id, config_id) DO UPDATE SET body = excluded.body"
        ))
        .bind(&task_id)
        .bind(&config_id)
        .bind(&body)
        .execute(p)
        .await
        .map_err(StoreError::query("save push config"))
        .map_err(backend(&task_id))?
        .rows_affected());
        Ok(())
    }

    async fn get_push_config(
        &self,
        task_id: &str,
        config_id: &str,
    ) -> Result<Option<v1::TaskPushNotificationConfig>, A2aStoreError> {
        let bodies = self
            .push_config_bodies(task_id, Some(config_id), "read push config")
            .await?;
        bodies
            .first()
            .map(|b| decode("push config", b))
            .transpose()
            .map_err(backend(task_id))
    }

    async fn list_push_configs(
        &self,
        task_id: &str,
    ) -> Result<Vec<v1::TaskPushNotificationConfig>, A2aStoreError> {
        let bodies = self
            .push_config_bodies(task_id, None, "list push configs")
            .await?;
        bodies
            .iter()
            .map(|b| decode("push config", b))
            .collect::<Result<_, _>>()
            .map_err(backend(task_id))
    }

    async fn delete_push_config(
        &self,
        task_id: &str,
        config_id: &str,
    ) -> Result<bool, A2aStoreError> {
        let gone = with_pool!(&self.inner.db, |p| {
            sqlx::query(concat!(
            "DELETE FROM a2a_push_configs WHERE task_id = $1 AND config_id = $2 AND task_id IN ",
            "(SELECT id FROM a2a_tasks WHERE scope = $3)"
        ))
        .bind(task_id)
        .bind(config_id)
        .bind(&*self.scope)
        .execute(p)
        .await
        .map_err(StoreError::query("delete push config"))
        .map_err(backend(task_id))?
        .rows_affected()
        });
        Ok(gone > 0)
    }
}

#[async_trait]
impl ContextSessionStore for SqlTaskStore {
    async fn context_session(&self, context_id: &str) -> Result<Option<String>, A2aStoreError> {
        with_pool!(&self.inner.db, |p| sqlx::query_scalar(
            "SELECT session_id FROM a2a_context_sessions WHERE scope = $1 AND context_id = $2"
        )
        .bind(&*self.scope)
        .bind(context_id)
        .fetch_optional(p)
        .await
        .map_err(StoreError::query("read the session of an A2A context"))
        .map_err(backend("")))
    }

    async fn save_context_session(
        &self,
        context_id: &str,
        session_id: Option<&str>,
    ) -> Result<(), A2aStoreError> {
        let what = "save the session of an A2A context";
        with_pool!(&self.inner.db, |p| match session_id {
            Some(id) => sqlx::query(concat!(
                "INSERT INTO a2a_context_sessions (scope, context_id, session_id, updated_ms) ",
                "VALUES ($1, $2, $3, $4) ON CONFLICT (scope, context_id) DO UPDATE SET ",
                "session_id = excluded.session_id, updated_ms = excluded.updated_ms"
            ))
            .bind(&*self.scope)
            .bind(context_id)
            .bind(id)
            .bind(now_ms())
            .execute(p)
            .await
            .map_err(StoreError::query(what))
            .map_err(backend(""))?
            .rows_affected(),
            None =>
                sqlx::query("DELETE FROM a2a_context_sessions WHERE scope = $1 AND context_id = $2")
                    .bind(&*self.scope)
                    .bind(context_id)
                    .execute(p)
                    .await
                    .map_err(StoreError::query(what))
                    .map_err(backend(""))?
                    .rows_affected(),
        });
        Ok(())
    }
}

impl SqlTaskStore {
    /// The row writing `task` at `version`: the lease is this process's while it runs.
    fn row(&self, task: v1::Task, version: i64) -> Result<TaskRow, A2aStoreError> {
        let state = task.status.state;
        let (owner, lease_until_ms) = if running(state) {
            (
                Some(self.inner.owner.clone()),
                Some(now_ms().saturating_add(ms(self.inner.options.lease))),
            )
        } else {
            (None, None)
        };
        let body = serde_json::to_string(&task).map_err(|e| A2aStoreError::Backend {
            task_id: task.id.clone(),
            message: format!("cannot encode the task: {e}"),
        })?;
        Ok(TaskRow {
            scope: self.scope.to_string(),
            context_id: task.context_id.clone().unwrap_or_default(),
            state: i64::from(state.number()),
            terminal: i64::from(state.is_terminal()),
            status_ts: task.status.timestamp.clone().unwrap_or_default(),
            updated_ms: now_ms(),
            bytes: i64::try_from(task_bytes(&task)).unwrap_or(i64::MAX),
            owner,
            lease_until_ms,
            body,
            id: task.id,
            version,
        })
    }

    /// The stored bodies of task `task_id`'s push configs in this scope, in the order they
    /// were first saved: all of them, or only `config_id`'s; `what` names the read in errors.
    async fn push_config_bodies(
        &self,
        task_id: &str,
        config_id: Option<&str>,
        what: &'static str,
    ) -> Result<Vec<String>, A2aStoreError> {
        Ok(with_pool!(&self.inner.db, |p| sqlx::query_scalar(concat!(
            "SELECT c.body FROM a2a_push_configs c JOIN a2a_tasks t ON t.id = c.task_id ",
            "WHERE c.task_id = $1 AND t.scope = $2 AND ($3 IS NULL OR c.config_id = $3) ",
            "ORDER BY c.seq"
        ))
        .bind(task_id)
        .bind(&*self.scope)
        .bind(config_id)
        .fetch_all(p)
        .await
        .map_err(StoreError::query(what))
        .map_err(backend(task_id))?))
    }
}

#[async_trait]
impl TaskStore for SqlTaskStore {
    /// Writes whatever version is stored (a compare-and-set on the version just read, again
    /// if another writer came between). The server itself writes with
    /// [`save_versioned`](TaskStore::save_versioned).
    async fn save(&self, task: v1::Task) -> Result<(), A2aStoreError> {
        let mut expected = 0;
        for _ in 0..8 {
            expected = self
                .get_versioned(&task.id)
                .await?
                .map_or(0, |stored| stored.version);
            match self.save_versioned(task.clone(), expected).await {
                Err(A2aStoreError::Conflict { .. }) => continue,
                done => return done.map(drop),
            }
        }
        Err(A2aStoreError::Conflict {
            task_id: task.id,
            expected,
        })
    }

    async fn save_versioned(&self, task: v1::Task, expected: u64) -> Result<u64, A2aStoreError> {
        let task_id = task.id.clone();
        let version = expected.saturating_add(1);
        let row = self.row(task, i64::try_from(version).unwrap_or(i64::MAX))?;
        // Returns once the batch holding this row is committed.
        let refused = self
            .inner
            .writer
            .write_checked(vec![row])
            .await
            .map_err(backend(&task_id))?;
        if refused.is_empty() {
            Ok(version)
        } else {
            Err(A2aStoreError::Conflict { task_id, expected })
        }
    }

    async fn get_versioned(&self, task_id: &str) -> Result<Option<VersionedTask>, A2aStoreError> {
        let row: Option<(String, i64)> = with_pool!(&self.inner.db, |p| sqlx::query_as(
            "SELECT body, version FROM a2a_tasks WHERE id = $1 AND scope = $2"
        )
        .bind(task_id)
        .bind(&*self.scope)
        .fetch_optional(p)
        .await
        .map_err(StoreError::query("read A2A task"))
        .map_err(backend(task_id))?);
        row.map(|(body, version)| {
            decode("A2A task", &body)
                .map(|t| VersionedTask::new(t, u64::try_from(version).unwrap_or(0)))
        })
        .transpose()
        .map_err(backend(task_id))
    }

    async fn get(&self, task_id: &str) -> Result<Option<v1::Task>, A2aStoreError> {
        Ok(self.get_versioned(task_id).await?.map(|stored| stored.task))
    }

    async fn list(
        &self,
        filter: &TaskFilter,
        offset: usize,
        limit: usize,
    ) -> Result<TaskPage, A2aStoreError> {
        let mut cond = String::from("scope = $1");
        let mut n = 1;
        let mut next = |col: &str, op: &str| {
            n += 1;
            format!(" AND {col} {op} ${n}")
        };
        if filter.context_id.is_some() {
            cond += &next("context_id", "=");
        }
        if filter.state.is_some() {
            cond += &next("state", "=");
        }
        if filter.status_timestamp_after.is_some() {
            cond += &next("status_ts", ">");
        }
        let count_sql = format!("SELECT COUNT(*) FROM a2a_tasks WHERE {cond}");
        let page_sql = format!(
            "SELECT body FROM a2a_tasks WHERE {cond} \
             ORDER BY status_ts DESC, updated_ms DESC, id LIMIT {} OFFSET {}",
            i64::try_from(limit).unwrap_or(i64::MAX),
            i64::try_from(offset).unwrap_or(i64::MAX),
        );
        let db = &self.inner.db;
        macro_rules! bound {
            ($q:expr) => {{
                let mut q = $q.bind(&*self.scope);
                if let Some(c) = &filter.context_id {
                    q = q.bind(c.as_str());
                }
                if let Some(s) = filter.state {
                    q = q.bind(i64::from(s.number()));
                }
                if let Some(t) = &filter.status_timestamp_after {
                    q = q.bind(t.as_str());
                }
                q
            }};
        }
        // Audited: the conditions name fixed columns; every value is a bound parameter, and
        // LIMIT / OFFSET are integers.
        let total: i64 = with_pool!(db, |p| bound!(sqlx::query_scalar(sqlx::AssertSqlSafe(
            count_sql.clone()
        )))
        .fetch_one(p)
        .await
        .map_err(StoreError::query("count A2A tasks"))
        .map_err(backend(""))?);
        let bodies: Vec<String> = if limit == 0 || offset as i64 >= total {
            Vec::new()
        } else {
            with_pool!(db, |p| bound!(sqlx::query_scalar(sqlx::AssertSqlSafe(
                page_sql.clone()
            )))
            .fetch_all(p)
            .await
            .map_err(StoreError::query("list A2A tasks"))
            .map_err(backend(""))?)
        };
        let tasks = bodies
            .iter()
            .map(|b| decode("A2A task", b))
            .collect::<Result<Vec<v1::Task>, _>>()
            .map_err(backend(""))?;
        Ok(TaskPage::new(tasks, usize::try_from(total).unwrap_or(0)))
    }

    fn push_configs(self: Arc<Self>) -> Option<Arc<dyn PushConfigStore>> {
        Some(self)
    }

    /// PostgreSQL only: one SQLite file serves one process.
    fn replica_bus(self: Arc<Self>) -> Option<Arc<dyn ReplicaBus>> {
        if self.inner.signals.is_some() {
            Some(self)
        } else {
            None
        }
    }

    fn context_sessions(self: Arc<Self>) -> Option<Arc<dyn ContextSessionStore>> {
        Some(self)
    }
}

/// PostgreSQL: `NOTIFY` / `LISTEN` between the replicas (offered by
/// [`TaskStore::replica_bus`] only there).
#[async_trait]
impl ReplicaBus for SqlTaskStore {
    async fn publish_event(
        &self,
        task_id: &str,
        event: &v1::StreamResponse,
    ) -> Result<(), A2aStoreError> {
        self.publish(task_id, event).await.map_err(backend(task_id))
    }

    async fn request_cancel(&self, task_id: &str) -> Result<(), A2aStoreError> {
        let Db::Postgres(pool) = &self.inner.db else {
            return Ok(());
        };
        // Task ids are the server's UUIDs: far below the 8,000-byte payload limit.
        sqlx::query("SELECT pg_notify($1, $2)")
            .bind(CHANNEL)
            .bind(format!("c:{task_id}"))
            .execute(pool)
            .await
            .map_err(StoreError::query("request cancel"))
            .map_err(backend(task_id))?;
        Ok(())
    }

    fn signals(&self) -> broadcast::Receiver<RemoteSignal> {
        match &self.inner.signals {
            Some(tx) => tx.subscribe(),
            // SQLite: no other process; a receiver that is closed at once.
            None => broadcast::channel(1).1,
        }
    }
}
