//! Small helpers shared by the stores: running one piece of code on either pool, and times as
//! Unix milliseconds (the portable column type of both dialects).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Runs `$body` with `$pool` bound to the SQLite or the PostgreSQL pool of a [`Db`](crate::Db);
/// the body is compiled once per dialect, so the same query text and binds serve both (queries
/// use `$1, $2, ...` placeholders in order, which both accept).
macro_rules! with_pool {
    ($db:expr, |$pool:ident| $body:expr) => {
        match $db {
            $crate::Db::Sqlite($pool) => $body,
            $crate::Db::Postgres($pool) => $body,
        }
    };
}
pub(crate) use with_pool;

/// Runs `$body` with `$conn` bound to the connection (`&mut PoolConnection<_>`) of either
/// dialect held in a [`Conn`](crate::writer::Conn), as [`with_pool!`] does for pools.
#[cfg(any(feature = "a2a", feature = "ledger"))]
macro_rules! with_conn {
    ($c:expr, |$conn:ident| $body:expr) => {
        match $c {
            $crate::writer::Conn::Sqlite($conn) => $body,
            $crate::writer::Conn::Postgres($conn) => $body,
        }
    };
}
#[cfg(any(feature = "a2a", feature = "ledger"))]
pub(crate) use with_conn;

/// A time as Unix milliseconds (0 before the epoch, saturating far in the future).
pub(crate) fn to_ms(t: SystemTime) -> i64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// Unix milliseconds as a time.
#[cfg(any(feature = "ledger", feature = "workflow"))]
pub(crate) fn from_ms(ms: i64) -> SystemTime {
    UNIX_EPOCH + Duration::from_millis(u64::try_from(ms).unwrap_or(0))
}

/// Now, in Unix milliseconds.
pub(crate) fn now_ms() -> i64 {
    to_ms(SystemTime::now())
}

/// `d` in milliseconds, saturating.
pub(crate) fn ms(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

/// A byte count as a column value.
#[cfg(any(feature = "ledger", feature = "transcripts"))]
pub(crate) fn len_i64(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// ` ON CONFLICT (id) DO UPDATE SET c = excluded.c, ...` for each column `c` of `columns` (a
/// comma-separated list): the update part of a multi-row upsert keyed by `id`.
#[cfg(any(feature = "a2a", feature = "ledger"))]
pub(crate) fn on_conflict_update(columns: &str) -> String {
    let set: Vec<String> = columns
        .split(',')
        .map(|c| format!("{c} = excluded.{c}", c = c.trim()))
        .collect();
    format!(" ON CONFLICT (id) DO UPDATE SET {}", set.join(", "))
}
