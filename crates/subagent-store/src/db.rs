//! Opening a database and bringing its schema up to date.

use std::str::FromStr;
use std::time::Duration;

use sqlx::postgres::{PgPool, PgPoolOptions};
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};

use crate::migrations::{Dialect, migrator};
use crate::url::parent_dir;
use crate::{StoreError, StoreUrl};

/// How long a connection waits for a lock (SQLite) or for a free pooled connection.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// An open database with its schema migrated. Cheap to clone (the pools are shared).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Db {
    /// A SQLite file in WAL mode.
    Sqlite(SqlitePool),
    /// A PostgreSQL database.
    Postgres(PgPool),
}

impl Db {
    /// Connects to `url` and runs the migrations; `Ok(None)` for [`StoreUrl::Memory`].
    ///
    /// SQLite: the file and its directory are created when missing; WAL journal,
    /// `synchronous = NORMAL` (a committed transaction survives a process crash; a power loss
    /// may lose the last ones), foreign keys on, a 10 s busy timeout, a 16 MiB page cache per
    /// connection, checkpoints every 32 MiB of WAL. Writes of the stores go
    /// through one writer per store that group-commits them (see the crate docs), so the
    /// pool's other connections serve reads beside it (WAL).
    pub async fn open(url: &StoreUrl) -> Result<Option<Db>, StoreError> {
        let db = match url {
            StoreUrl::Memory => return Ok(None),
            StoreUrl::Sqlite(path) => {
                if let Some(dir) = parent_dir(path) {
                    tokio::fs::create_dir_all(dir).await.map_err(|source| {
                        StoreError::CreateDir {
                            path: dir.to_owned(),
                            source,
                        }
                    })?;
                }
                return open_sqlite(url, path).await.map(Some);
            }
            StoreUrl::Postgres(raw) => {
                let options =
                    sqlx::postgres::PgConnectOptions::from_str(raw).map_err(open_error(url))?;
                let pool = PgPoolOptions::new()
                    .max_connections(16)
                    .acquire_timeout(BUSY_TIMEOUT)
                    .connect_with(options)
                    .await
                    .map_err(open_error(url))?;
                Db::Postgres(pool)
            }
        };
        db.migrate(url).await?;
        Ok(Some(db))
    }

    /// Brings the schema up to date, once even when several processes open a fresh database at
    /// the same moment.
    ///
    /// PostgreSQL: sqlx's migrator holds an advisory lock. SQLite: sqlx's lock is a no-op, so
    /// two processes could both read "nothing applied" and both apply a step (the second then
    /// failed with "duplicate column name"). The whole run happens in one `BEGIN IMMEDIATE`
    /// transaction instead: SQLite's writer lock is taken before the applied steps are read,
    /// the other opener waits on it (the busy timeout) and then finds every step applied. Each
    /// step is a savepoint inside it; a failing step rolls the whole run back.
    async fn migrate(&self, url: &StoreUrl) -> Result<(), StoreError> {
        let err = |source| StoreError::Migrate {
            url: url.redacted(),
            source,
        };
        match self {
            Db::Sqlite(pool) => {
                let mut tx = pool
                    .begin_with("BEGIN IMMEDIATE")
                    .await
                    .map_err(|e| err(e.into()))?;
                // `run_direct` is `run` on a connection already held (sqlx's own way around
                // `Acquire`'s lifetime, which would make this future not `Send`).
                let conn: &mut sqlx::SqliteConnection = &mut tx;
                migrator(Dialect::Sqlite)
                    .run_direct(None, conn, false)
                    .await
                    .map_err(err)?;
                tx.commit().await.map_err(|e| err(e.into()))
            }
            Db::Postgres(pool) => migrator(Dialect::Postgres).run(pool).await.map_err(err),
        }
    }

    /// The schema version the database is at (the highest applied migration).
    pub async fn schema_version(&self) -> Result<i64, StoreError> {
        const SQL: &str = "SELECT COALESCE(MAX(version), 0) FROM _sqlx_migrations WHERE success";
        let q = StoreError::query("read schema version");
        match self {
            Db::Sqlite(pool) => sqlx::query_scalar(SQL).fetch_one(pool).await.map_err(q),
            Db::Postgres(pool) => sqlx::query_scalar(SQL).fetch_one(pool).await.map_err(q),
        }
    }
}

/// How long [`open_sqlite`] keeps retrying a fresh file another process is setting up.
const FIRST_OPEN_RETRY: Duration = Duration::from_secs(20);

/// Opens (creating when missing) and migrates the SQLite file at `path`.
///
/// Processes that open one fresh file at the same moment contend while the first sets up the
/// file's WAL journal, and SQLite answers some of those contentions with "database is locked"
/// at once instead of waiting (it cannot wait without risking a deadlock). Such an answer
/// during the open is retried, with a growing pause, for up to [`FIRST_OPEN_RETRY`]; any other
/// error, or a busy one after that, is returned.
async fn open_sqlite(url: &StoreUrl, path: &std::path::Path) -> Result<Db, StoreError> {
    let started = std::time::Instant::now();
    let mut pause = Duration::from_millis(20);
    loop {
        match try_open_sqlite(url, path).await {
            Err(e) if is_busy(&e) && started.elapsed() + pause < FIRST_OPEN_RETRY => {
                tracing::debug!(
                    "store {} is busy while opening; retrying: {e}",
                    url.redacted()
                );
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(Duration::from_millis(500));
            }
            result => return result,
        }
    }
}

async fn try_open_sqlite(url: &StoreUrl, path: &std::path::Path) -> Result<Db, StoreError> {
    let options = SqliteConnectOptions::new()
        .filename(path)
        .create_if_missing(true)
        .journal_mode(SqliteJournalMode::Wal)
        .synchronous(SqliteSynchronous::Normal)
        .foreign_keys(true)
        .busy_timeout(BUSY_TIMEOUT)
        // A page cache of 16 MiB per connection (SQLite's default is 2 MiB): the
        // stores' indexes stay in memory instead of being read back per write.
        .pragma("cache_size", "-16384")
        // Checkpoints (which sync the files) every 32 MiB of WAL instead of 4 MiB:
        // pages written again and again between two are copied once. The WAL file
        // is cut back to 64 MiB after one.
        .pragma("wal_autocheckpoint", "8192")
        .pragma("journal_size_limit", "67108864");
    let pool = SqlitePoolOptions::new()
        .max_connections(4)
        // A local file does not hang up: no ping (a round trip to the
        // connection's thread) before every query.
        .test_before_acquire(false)
        .acquire_timeout(BUSY_TIMEOUT)
        .connect_with(options)
        .await
        .map_err(open_error(url))?;
    let db = Db::Sqlite(pool);
    db.migrate(url).await?;
    Ok(db)
}

/// Maps a failed connect to [`StoreError::Open`] naming `url` with its password redacted.
fn open_error(url: &StoreUrl) -> impl FnOnce(sqlx::Error) -> StoreError + '_ {
    move |source| StoreError::Open {
        url: url.redacted(),
        source,
    }
}

/// Whether `e` is SQLite's "database is locked" / "database table is locked" (primary codes
/// 5 and 6, with their extended codes).
fn is_busy(e: &StoreError) -> bool {
    let sqlx = match e {
        StoreError::Open { source, .. } => source,
        StoreError::Migrate {
            source:
                sqlx::migrate::MigrateError::Execute(source)
                | sqlx::migrate::MigrateError::ExecuteMigration(source, _),
            ..
        } => source,
        _ => return false,
    };
    match sqlx {
        sqlx::Error::Database(d) => d
            .code()
            .and_then(|c| c.parse::<i32>().ok())
            .is_some_and(|c| matches!(c & 0xff, 5 | 6)),
        _ => false,
    }
}
