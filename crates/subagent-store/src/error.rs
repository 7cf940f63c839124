//! The one error type of this crate.

/// What went wrong opening or using a store. Database errors are kept as sources; no variant
/// carries a password.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The store URL could not be understood.
    #[error("invalid store URL {url:?}: {reason} (expected memory, sqlite:PATH or postgres://...)")]
    InvalidUrl {
        /// The URL as given, password removed.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The database could not be opened or reached.
    #[error("cannot open store {url}: {source}")]
    Open {
        /// The URL, password removed.
        url: String,
        /// The driver's error.
        #[source]
        source: sqlx::Error,
    },
    /// Creating the database's directory failed.
    #[error("cannot create the directory {path}: {source}", path = path.display())]
    CreateDir {
        /// The directory.
        path: std::path::PathBuf,
        /// The file-system error.
        #[source]
        source: std::io::Error,
    },
    /// A migration failed; the database is left at the last version that applied.
    #[error("migrating store {url}: {source}")]
    Migrate {
        /// The URL, password removed.
        url: String,
        /// The migrator's error.
        #[source]
        source: sqlx::migrate::MigrateError,
    },
    /// A query failed.
    #[error("store query failed ({what}): {source}")]
    Query {
        /// What was being done, e.g. "load transcript".
        what: &'static str,
        /// The driver's error.
        #[source]
        source: sqlx::Error,
    },
    /// A stored value could not be decoded (a row written by a newer version, or damaged).
    #[error("stored {what} is unreadable: {reason}")]
    Corrupt {
        /// What was being read.
        what: &'static str,
        /// Why it could not be decoded.
        reason: String,
    },
    /// A batched write failed; every caller whose rows were in that batch gets this error.
    #[error("store write failed ({what}): {source}")]
    Batch {
        /// What was being written, e.g. "save A2A task".
        what: &'static str,
        /// Why the batch failed.
        #[source]
        source: std::sync::Arc<StoreError>,
    },
    /// The A2A task store on this SQLite file is open in another process (or another store of
    /// this one): one file serves one server process.
    #[error(
        "the A2A task store {path} is in use by {holder} (lock file {lock}); one SQLite file \
         serves one `subagents serve` at a time: stop that process, use another store file, \
         or PostgreSQL for several server processes",
        path = path.display(),
        lock = lock.display(),
        holder = match pid {
            Some(p) if *p == std::process::id() => format!("this process (pid {p})"),
            Some(p) => format!("process {p}"),
            None => "another process".to_string(),
        }
    )]
    Locked {
        /// The database file.
        path: std::path::PathBuf,
        /// The lock file beside it.
        lock: std::path::PathBuf,
        /// The process holding it, as written in the lock file.
        pid: Option<u32>,
    },
    /// The lock file of an A2A task store could not be created or locked.
    #[error("cannot lock {path}: {source}", path = path.display())]
    LockFile {
        /// The lock file.
        path: std::path::PathBuf,
        /// The file-system error.
        #[source]
        source: std::io::Error,
    },
    /// The store's writer has stopped (its runtime is shutting down).
    #[error("the store's writer has stopped")]
    Closed,
}

impl StoreError {
    /// A [`StoreError::Query`] for `what`; for `.map_err(StoreError::query("..."))`.
    pub fn query(what: &'static str) -> impl FnOnce(sqlx::Error) -> StoreError {
        move |source| StoreError::Query { what, source }
    }
}
