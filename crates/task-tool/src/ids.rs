//! Task ids: `task_` and a random v4 UUID in hex (unguessable, so one run cannot read or stop
//! another's background task by guessing).

/// A fresh id `prefix_` + 32 hex digits.
pub(crate) fn new_id(prefix: &str) -> String {
    format!("{prefix}_{}", uuid::Uuid::new_v4().simple())
}
