//! `subagents prune`: drops old transcripts, background-task results and served A2A tasks from
//! the store ([`subagents::prune_store`]).

use subagents::{PruneError, PruneOptions, PruneReport};

use crate::cli::PruneArgs;
use crate::config::Config;
use crate::error::CliError;

/// Prunes the configured store (`--store`, `store = "..."`, or the default SQLite file).
pub(crate) async fn prune(args: &PruneArgs, config: &Config) -> Result<(), CliError> {
    let url = crate::config::store_url(config)?;
    let mut options = PruneOptions::new().dry_run(args.dry_run);
    if let Some(age) = args.older_than {
        options = options.older_than(age);
    }
    let report = subagents::prune_store(&url, &options)
        .await
        .map_err(|e| match e {
            PruneError::Prune { .. } => CliError::Failed(e.to_string()),
            other => CliError::Config(other.to_string()),
        })?;
    print(args.json, &report);
    Ok(())
}

fn print(json: bool, r: &PruneReport) {
    if json {
        let v = serde_json::json!(r);
        crate::output::outln!("{v}");
    } else {
        let verb = if r.dry_run { "would drop" } else { "dropped" };
        crate::output::outln!(
            "{}: {verb} {} background task(s), {} transcript session(s) ({} bytes) and {} served A2A task(s)",
            r.store,
            r.tasks,
            r.sessions,
            r.transcript_bytes,
            r.a2a_tasks
        );
    }
}
