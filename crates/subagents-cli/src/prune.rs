//! `subagents prune`: drops old transcripts, background-task results and served A2A tasks from
//! the store.

use subagents::store::a2a::{Retention as A2aRetention, prune_a2a_tasks, prune_a2a_tasks_dry_run};
use subagents::store::{Db, Retention, StoreUrl, prune as prune_store};

use crate::cli::PruneArgs;
use crate::config::Config;
use crate::error::CliError;

/// Prunes the configured store (`--store`, `store = "..."`, or the default SQLite file).
pub(crate) async fn prune(args: &PruneArgs, config: &Config) -> Result<(), CliError> {
    let url = crate::config::store_url(config)?;
    if url == StoreUrl::Memory {
        return Err(CliError::Config(
            "the store is `memory`: nothing is persisted, so nothing can be pruned".into(),
        ));
    }
    if let StoreUrl::Sqlite(path) = &url
        && !tokio::fs::try_exists(path).await.unwrap_or(false)
    {
        print(args, &url, Counts::default());
        return Ok(());
    }
    let db = Db::open(&url)
        .await
        .map_err(|e| CliError::Config(e.to_string()))?
        .ok_or_else(|| CliError::Config("the store opened no database".into()))?;
    let mut retention = Retention::default();
    if let Some(age) = args.older_than {
        retention = retention.older_than(age);
    }
    let r = prune_store(&db, &retention, args.dry_run)
        .await
        .map_err(|e| CliError::Failed(e.to_string()))?;
    // The tasks `subagents serve` served over A2A: terminal ones after 7 days (or
    // --older-than), and the store's count and byte bounds.
    let mut a2a_retention = A2aRetention::default();
    if let Some(age) = args.older_than {
        a2a_retention = a2a_retention.with_terminal_ttl(age);
    }
    let a2a = if args.dry_run {
        prune_a2a_tasks_dry_run(&db, &a2a_retention).await
    } else {
        prune_a2a_tasks(&db, &a2a_retention).await
    }
    .map_err(|e| CliError::Failed(e.to_string()))?;
    let counts = Counts {
        tasks: r.tasks,
        sessions: r.sessions,
        bytes: r.transcript_bytes,
        a2a_tasks: a2a.expired + a2a.evicted,
    };
    print(args, &url, counts);
    Ok(())
}

/// What was (or would be) dropped.
#[derive(Debug, Default, Clone, Copy)]
struct Counts {
    tasks: u64,
    sessions: u64,
    bytes: u64,
    a2a_tasks: u64,
}

fn print(args: &PruneArgs, url: &StoreUrl, c: Counts) {
    let Counts {
        tasks,
        sessions,
        bytes,
        a2a_tasks,
    } = c;
    if args.json {
        let v = serde_json::json!({
            "store": url.redacted(),
            "dry_run": args.dry_run,
            "tasks": tasks,
            "sessions": sessions,
            "transcript_bytes": bytes,
            "a2a_tasks": a2a_tasks,
        });
        crate::output::outln!("{v}");
    } else {
        let verb = if args.dry_run {
            "would drop"
        } else {
            "dropped"
        };
        crate::output::outln!(
            "{}: {verb} {tasks} background task(s), {sessions} transcript session(s) ({bytes} bytes) and {a2a_tasks} served A2A task(s)",
            url.redacted()
        );
    }
}
