//! `subagents prune`: drops old transcripts and background-task results from the store.

use subagents::store::{Db, Retention, StoreUrl, prune as prune_store};

use crate::cli::PruneArgs;
use crate::config::Config;
use crate::error::CliError;

/// Prunes the configured store (`--store`, `store = "..."`, or the default SQLite file).
pub(crate) async fn prune(args: &PruneArgs, config: &Config) -> Result<(), CliError> {
    let url = config.store_url()?;
    if url == StoreUrl::Memory {
        return Err(CliError::Config(
            "the store is `memory`: nothing is persisted, so nothing can be pruned".into(),
        ));
    }
    if let StoreUrl::Sqlite(path) = &url
        && !tokio::fs::try_exists(path).await.unwrap_or(false)
    {
        print(args, &url, 0, 0, 0);
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
    print(args, &url, r.tasks, r.sessions, r.transcript_bytes);
    Ok(())
}

fn print(args: &PruneArgs, url: &StoreUrl, tasks: u64, sessions: u64, bytes: u64) {
    if args.json {
        let v = serde_json::json!({
            "store": url.redacted(),
            "dry_run": args.dry_run,
            "tasks": tasks,
            "sessions": sessions,
            "transcript_bytes": bytes,
        });
        crate::output::outln!("{v}");
    } else {
        let verb = if args.dry_run {
            "would drop"
        } else {
            "dropped"
        };
        crate::output::outln!(
            "{}: {verb} {tasks} background task(s) and {sessions} transcript session(s) ({bytes} bytes)",
            url.redacted()
        );
    }
}
