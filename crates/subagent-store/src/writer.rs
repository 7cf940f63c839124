//! Group commit: one writer task per store turns the rows that concurrent callers hand it into
//! one transaction (a few multi-row upserts), so that SQLite sees one writer instead of several
//! connections taking turns at its write lock, and PostgreSQL one round trip per batch instead
//! of one per row.
//!
//! A caller's [`GroupCommit::write`] returns once the batch holding its rows is committed (or
//! failed): nothing is acknowledged before it is durable. While a batch is being written the
//! next one gathers, so batches grow with the load and a lone write waits for no timer. Rows with
//! the same key queued in one batch are coalesced (the last one wins), unless the table writes
//! conditionally: then every row is written in the order queued, and a row its condition
//! refuses (a compare-and-set that found another version) is reported to its caller alone
//! ([`GroupCommit::write_checked`]). The A2A task store and the background-task ledger both
//! write through it.
//!
//! The writer keeps its pool connection from one batch to the next (a connection given back to
//! the pool is tested with a round trip first: one more hop per batch otherwise). A PostgreSQL
//! connection goes back when the queue is empty, so an idle writer holds none that the server
//! may drop meanwhile; a SQLite file does not hang up, so SQLite's stays. After a failed batch
//! the connection goes back and the next batch takes a fresh one.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};

use sqlx::pool::PoolConnection;
use sqlx::{Postgres, Sqlite};
use tokio::sync::{mpsc, oneshot};

use crate::{Db, StoreError};

/// The most callers gathered into one batch.
const MAX_JOBS: usize = 256;
/// Callers waiting beyond this many make new callers wait for room (bounded memory).
const QUEUE: usize = 4096;

/// Rows of one table written in batches.
pub(crate) trait BatchRow: Sized + Send + Sync + 'static {
    /// What is written, for errors and logs (e.g. "save A2A task").
    const WHAT: &'static str;

    /// Whether rows with the same key queued in one batch are coalesced (and the batch sorted
    /// by key). The default, false, writes every row in the order queued (append-only rows, and
    /// rows each write of which is checked); a table whose later rows replace earlier ones opts in.
    const COALESCE: bool = false;

    /// The row's primary key: a later row with the same key replaces an earlier one queued in
    /// the same batch.
    fn key(&self) -> &str;

    /// Writes `rows` (when coalescing: distinct keys, sorted by key so that concurrent writers
    /// lock rows in one order) in one transaction on `conn`.
    fn write(
        conn: &mut Conn,
        rows: Vec<Self>,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// Writes `rows` as [`write`](Self::write) does, and returns the positions (in `rows`) of
    /// those a condition of the write refused (their callers learn it from
    /// [`GroupCommit::write_checked`]; only a table that does not coalesce may refuse rows).
    /// The default refuses none.
    fn write_checked(
        conn: &mut Conn,
        rows: Vec<Self>,
    ) -> impl Future<Output = Result<Vec<usize>, StoreError>> + Send {
        async move { Self::write(conn, rows).await.map(|()| Vec::new()) }
    }
}

/// The writer's connection, of either dialect (see [`with_conn!`](crate::sql::with_conn)).
pub(crate) enum Conn {
    Sqlite(PoolConnection<Sqlite>),
    Postgres(PoolConnection<Postgres>),
}

impl Conn {
    async fn acquire(db: &Db, what: &'static str) -> Result<Conn, StoreError> {
        Ok(match db {
            Db::Sqlite(p) => Conn::Sqlite(p.acquire().await.map_err(StoreError::query(what))?),
            Db::Postgres(p) => Conn::Postgres(p.acquire().await.map_err(StoreError::query(what))?),
        })
    }
}

struct Job<R> {
    rows: Vec<R>,
    /// The positions (in `rows`) of the rows refused, once the batch is committed.
    done: oneshot::Sender<Result<Vec<usize>, Arc<StoreError>>>,
}

/// The writer of one table on one [`Db`]; its task starts with the first write (on the caller's
/// tokio runtime) and ends when the `GroupCommit` is dropped, after the queued writes.
pub(crate) struct GroupCommit<R: BatchRow> {
    db: Db,
    /// The writer task's queue; replaced when that task is gone (its runtime ended).
    tx: Mutex<Option<mpsc::Sender<Job<R>>>>,
}

impl<R: BatchRow> std::fmt::Debug for GroupCommit<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GroupCommit")
            .field("what", &R::WHAT)
            .finish_non_exhaustive()
    }
}

impl<R: BatchRow> GroupCommit<R> {
    pub(crate) fn new(db: Db) -> Self {
        Self {
            db,
            tx: Mutex::new(None),
        }
    }

    /// Writes `rows` with whatever else is queued, returning once that batch is committed.
    pub(crate) async fn write(&self, rows: Vec<R>) -> Result<(), StoreError> {
        self.write_checked(rows).await.map(drop)
    }

    /// Like [`write`](Self::write), and says which of `rows` a condition of the write refused
    /// (their positions; see [`BatchRow::write_checked`]).
    pub(crate) async fn write_checked(&self, rows: Vec<R>) -> Result<Vec<usize>, StoreError> {
        if rows.is_empty() {
            return Ok(Vec::new());
        }
        let tx = {
            let mut slot = self.tx.lock().unwrap_or_else(|e| e.into_inner());
            match &*slot {
                Some(tx) if !tx.is_closed() => tx.clone(),
                _ => {
                    let (tx, rx) = mpsc::channel(QUEUE);
                    tokio::spawn(run(self.db.clone(), rx));
                    *slot = Some(tx.clone());
                    tx
                }
            }
        };
        let (done, committed) = oneshot::channel();
        let closed = || StoreError::Batch {
            what: R::WHAT,
            source: Arc::new(StoreError::Closed),
        };
        tx.send(Job { rows, done }).await.map_err(|_| closed())?;
        match committed.await {
            Ok(Ok(refused)) => Ok(refused),
            Ok(Err(source)) => Err(StoreError::Batch {
                what: R::WHAT,
                source,
            }),
            Err(_) => Err(closed()),
        }
    }
}

async fn run<R: BatchRow>(db: Db, mut rx: mpsc::Receiver<Job<R>>) {
    let mut jobs: Vec<Job<R>> = Vec::new();
    let mut held: Option<Conn> = None;
    while rx.recv_many(&mut jobs, MAX_JOBS).await > 0 {
        let sizes: Vec<usize> = jobs.iter().map(|j| j.rows.len()).collect();
        let queued = jobs.iter_mut().flat_map(|j| j.rows.drain(..));
        let rows = if R::COALESCE {
            coalesce(queued)
        } else {
            queued.collect()
        };
        let result = write(&db, &mut held, rows).await.map_err(Arc::new);
        if let Err(e) = &result {
            tracing::debug!(error = %e, what = R::WHAT, callers = jobs.len(), "batched write failed");
            held = None;
        }
        // Refused positions go back to their callers (rows are in the order queued: a table
        // that coalesces refuses none).
        let mut start = 0;
        for (job, n) in jobs.drain(..).zip(sizes) {
            let mine = match &result {
                Ok(refused) => Ok(refused
                    .iter()
                    .filter(|&&i| (start..start + n).contains(&i))
                    .map(|&i| i - start)
                    .collect()),
                Err(e) => Err(e.clone()),
            };
            start += n;
            let _ = job.done.send(mine);
        }
        if matches!(held, Some(Conn::Postgres(_))) && rx.is_empty() {
            held = None;
        }
    }
}

/// Writes one batch on the held connection, taking one from the pool when none is held.
async fn write<R: BatchRow>(
    db: &Db,
    held: &mut Option<Conn>,
    rows: Vec<R>,
) -> Result<Vec<usize>, StoreError> {
    let conn = match held {
        Some(c) => c,
        None => held.insert(Conn::acquire(db, R::WHAT).await?),
    };
    R::write_checked(conn, rows).await
}

/// The rows with distinct keys (the last one queued wins), sorted by key.
fn coalesce<R: BatchRow>(rows: impl Iterator<Item = R>) -> Vec<R> {
    let mut out: Vec<R> = Vec::new();
    let mut at: HashMap<String, usize> = HashMap::new();
    for r in rows {
        match at.get(r.key()) {
            Some(&i) => out[i] = r,
            None => {
                at.insert(r.key().to_owned(), out.len());
                out.push(r);
            }
        }
    }
    out.sort_unstable_by(|a, b| a.key().cmp(b.key()));
    out
}
