//! [`prune_store`]: drops old transcripts, background-task results and served A2A tasks from a
//! store (what `subagents prune` does).

use std::time::Duration;

use subagent_store::{Db, Retention, StoreUrl};

/// What [`prune_store`] drops: by default what the store's bounds no longer keep (background
/// results after 30 minutes, transcripts after 30 days, served A2A tasks in a final state after
/// 7 days, and the A2A tasks' count and byte bounds).
#[derive(Debug, Clone, Default)]
#[must_use]
pub struct PruneOptions {
    older_than: Option<Duration>,
    dry_run: bool,
}

impl PruneOptions {
    /// The store's own bounds, for real.
    pub fn new() -> Self {
        Self::default()
    }

    /// Drops what is older than `age` instead (finished background tasks by their end,
    /// transcripts by their last turn, served A2A tasks in a final state by their last change).
    pub fn older_than(mut self, age: Duration) -> Self {
        self.older_than = Some(age);
        self
    }

    /// Only counts what would be dropped (`true`), or drops it (`false`, the default).
    pub fn dry_run(mut self, on: bool) -> Self {
        self.dry_run = on;
        self
    }
}

/// What [`prune_store`] dropped (or, in a dry run, would drop).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
#[non_exhaustive]
pub struct PruneReport {
    /// The store, its password removed.
    pub store: String,
    /// True when nothing was dropped (a dry run).
    pub dry_run: bool,
    /// Background-task records.
    pub tasks: u64,
    /// Transcript sessions.
    pub sessions: u64,
    /// Bytes of transcript messages in those sessions.
    pub transcript_bytes: u64,
    /// Tasks served over A2A (expired, or evicted to get under the store's bounds; feature
    /// `server`, else 0).
    pub a2a_tasks: u64,
}

/// [`prune_store`] failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PruneError {
    /// The store is `memory`: nothing is persisted.
    #[error("the store is `memory`: nothing is persisted, so nothing can be pruned")]
    Memory,
    /// The store cannot be opened (or migrated).
    #[error("{source}")]
    Open {
        /// The store, its password removed.
        url: String,
        /// Why.
        #[source]
        source: subagent_store::StoreError,
    },
    /// Pruning failed (nothing was dropped: each part runs in one transaction).
    #[error("{source}")]
    Prune {
        /// The store, its password removed.
        url: String,
        /// Why.
        #[source]
        source: subagent_store::StoreError,
    },
}

/// Prunes the store at `url` (feature `store`). A SQLite file that does not exist is not
/// created: the report counts nothing. Running background tasks are never dropped.
pub async fn prune_store(
    url: &StoreUrl,
    options: &PruneOptions,
) -> Result<PruneReport, PruneError> {
    let mut report = PruneReport {
        store: url.redacted(),
        dry_run: options.dry_run,
        ..PruneReport::default()
    };
    if *url == StoreUrl::Memory {
        return Err(PruneError::Memory);
    }
    if let StoreUrl::Sqlite(path) = url
        && !tokio::fs::try_exists(path).await.unwrap_or(false)
    {
        return Ok(report);
    }
    let open = |source| PruneError::Open {
        url: url.redacted(),
        source,
    };
    let failed = |source| PruneError::Prune {
        url: url.redacted(),
        source,
    };
    let Some(db) = Db::open(url).await.map_err(open)? else {
        return Err(PruneError::Memory);
    };
    let mut retention = Retention::default();
    if let Some(age) = options.older_than {
        retention = retention.older_than(age);
    }
    let r = subagent_store::prune(&db, &retention, options.dry_run)
        .await
        .map_err(failed)?;
    report.tasks = r.tasks;
    report.sessions = r.sessions;
    report.transcript_bytes = r.transcript_bytes;
    report.a2a_tasks = prune_a2a(&db, options).await.map_err(failed)?;
    Ok(report)
}

/// The tasks `subagents serve` served over A2A: terminal ones after 7 days (or `older_than`),
/// and the store's count and byte bounds.
#[cfg(feature = "server")]
async fn prune_a2a(db: &Db, options: &PruneOptions) -> Result<u64, subagent_store::StoreError> {
    use subagent_store::a2a::{Retention, prune_a2a_tasks, prune_a2a_tasks_dry_run};
    let mut retention = Retention::default();
    if let Some(age) = options.older_than {
        retention = retention.with_terminal_ttl(age);
    }
    let r = if options.dry_run {
        prune_a2a_tasks_dry_run(db, &retention).await
    } else {
        prune_a2a_tasks(db, &retention).await
    }?;
    Ok(r.expired + r.evicted)
}

/// Without the `server` feature no A2A task is served, so none is stored.
#[cfg(not(feature = "server"))]
async fn prune_a2a(_: &Db, _: &PruneOptions) -> Result<u64, subagent_store::StoreError> {
    Ok(0)
}
