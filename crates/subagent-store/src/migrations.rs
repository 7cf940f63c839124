//! The embedded, versioned schema, one script per version and dialect, applied at startup by
//! [`Db::open`](crate::Db::open) and recorded in sqlx's `_sqlx_migrations` table.
//!
//! Version ranges keep the stores' histories apart: 1–999 this crate's own tables, 1000–1999
//! the transcript store and background-task ledger, 2000–2999 the A2A server's task store,
//! 3000–3999 the workflow journal. A released script never changes (its checksum is verified); a
//! change is a new version.

use std::borrow::Cow;

use sqlx::migrate::{Migration, MigrationType, Migrator};

/// One schema version: its number, what it does, and the script for each dialect.
#[derive(Debug, Clone, Copy)]
pub struct Step {
    /// The version; see the module docs for the ranges.
    pub version: i64,
    /// What the step does, shown in `_sqlx_migrations`.
    pub description: &'static str,
    /// The SQLite script.
    pub sqlite: &'static str,
    /// The PostgreSQL script.
    pub postgres: &'static str,
}

/// Every step, in version order.
pub const STEPS: &[Step] = &[
    Step {
        version: 1,
        description: "store info",
        sqlite: include_str!("../migrations/sqlite/0001_store_info.sql"),
        postgres: include_str!("../migrations/postgres/0001_store_info.sql"),
    },
    Step {
        version: 1000,
        description: "transcripts",
        sqlite: include_str!("../migrations/sqlite/1000_transcripts.sql"),
        postgres: include_str!("../migrations/postgres/1000_transcripts.sql"),
    },
    Step {
        version: 1001,
        description: "background tasks",
        sqlite: include_str!("../migrations/sqlite/1001_background_tasks.sql"),
        postgres: include_str!("../migrations/postgres/1001_background_tasks.sql"),
    },
    Step {
        version: 1002,
        description: "background task stop requests",
        sqlite: include_str!("../migrations/sqlite/1002_background_stop_requests.sql"),
        postgres: include_str!("../migrations/postgres/1002_background_stop_requests.sql"),
    },
    Step {
        version: 2000,
        description: "a2a tasks",
        sqlite: include_str!("../migrations/sqlite/2000_a2a_tasks.sql"),
        postgres: include_str!("../migrations/postgres/2000_a2a_tasks.sql"),
    },
    Step {
        version: 2001,
        description: "a2a push configs",
        sqlite: include_str!("../migrations/sqlite/2001_a2a_push_configs.sql"),
        postgres: include_str!("../migrations/postgres/2001_a2a_push_configs.sql"),
    },
    Step {
        version: 2002,
        description: "a2a running-task index",
        sqlite: include_str!("../migrations/sqlite/2002_a2a_running_index.sql"),
        postgres: include_str!("../migrations/postgres/2002_a2a_running_index.sql"),
    },
    Step {
        version: 2003,
        description: "a2a context sessions",
        sqlite: include_str!("../migrations/sqlite/2003_a2a_context_sessions.sql"),
        postgres: include_str!("../migrations/postgres/2003_a2a_context_sessions.sql"),
    },
    Step {
        version: 2004,
        description: "a2a task versions",
        sqlite: include_str!("../migrations/sqlite/2004_a2a_task_version.sql"),
        postgres: include_str!("../migrations/postgres/2004_a2a_task_version.sql"),
    },
    Step {
        version: 3000,
        description: "workflow runs and calls",
        sqlite: include_str!("../migrations/sqlite/3000_workflows.sql"),
        postgres: include_str!("../migrations/postgres/3000_workflows.sql"),
    },
];

/// Which script of a [`Step`] to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Dialect {
    Sqlite,
    Postgres,
}

/// A migrator over [`STEPS`] for one dialect.
pub(crate) fn migrator(dialect: Dialect) -> Migrator {
    let migrations = STEPS
        .iter()
        .map(|s| {
            let sql = match dialect {
                Dialect::Sqlite => s.sqlite,
                Dialect::Postgres => s.postgres,
            };
            Migration::new(
                s.version,
                Cow::Borrowed(s.description),
                MigrationType::Simple,
                sqlx::SqlSafeStr::into_sql_str(sql),
                false,
            )
        })
        .collect();
    Migrator::with_migrations(migrations)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_increase_and_scripts_exist_for_both_dialects() {
        let mut last = 0;
        for s in STEPS {
            assert!(s.version > last, "step {} is out of order", s.version);
            last = s.version;
            assert!(!s.sqlite.trim().is_empty() && !s.postgres.trim().is_empty());
        }
    }
}
