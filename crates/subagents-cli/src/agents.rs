//! `subagents agents list` and `subagents agents validate`.

use std::path::PathBuf;

use serde::Serialize;
use subagents::claude::{ScanReport, builtin_names, load_agent_file, scan_dir};
use subagents::models::ModelRoutes;
use subagents::spi::SubagentDefinition;

use crate::error::CliError;
use crate::output::terminal_safe;

/// One loaded agent in the JSON report.
#[derive(Debug, Serialize)]
pub(crate) struct Loaded {
    /// File path (or `embedded:NAME` for built-ins).
    pub path: String,
    /// Agent name.
    pub name: String,
    /// Kind (`CLAUDE`).
    pub kind: String,
    /// Warnings (lenient YAML, non-canonical name...).
    pub warnings: Vec<String>,
    /// Description (list only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The model it would run on under the current flags, configuration and environment
    /// (list only; `-` when none is known).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
}

/// One skipped file in the JSON report.
#[derive(Debug, Serialize)]
pub(crate) struct Skipped {
    /// File path.
    pub path: String,
    /// Why it was skipped or failed.
    pub reason: String,
}

/// The JSON report of `list` and `validate`.
#[derive(Debug, Default, Serialize)]
pub(crate) struct Report {
    /// Loaded agents.
    pub loaded: Vec<Loaded>,
    /// Skipped or failed files.
    pub skipped: Vec<Skipped>,
}

impl Report {
    fn add_scan(&mut self, scan: ScanReport, routes: Option<&ModelRoutes>) {
        for a in scan.loaded {
            self.loaded.push(Loaded {
                path: a.path.display().to_string(),
                name: a.definition.name().to_string(),
                kind: subagents::claude::KIND.to_string(),
                warnings: a.warnings,
                description: routes.map(|_| a.definition.description().to_string()),
                model: routes.map(|r| crate::routes::shown(r, &a.definition)),
            });
        }
        for s in scan.skipped {
            self.skipped.push(Skipped {
                path: s.path.display().to_string(),
                reason: s.reason,
            });
        }
    }
}

/// The agent directories to use: the given ones, else those discovered from the current
/// directory (`.claude/agents` upwards) and the home directory.
pub(crate) fn agent_dirs(given: &[PathBuf]) -> Vec<PathBuf> {
    if !given.is_empty() {
        return given.to_vec();
    }
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    let home = subagents::claude::home_dir();
    subagents::claude::agent_dirs(&cwd, home.as_deref())
        .into_iter()
        .map(|d| d.path)
        .filter(|p| p.is_dir())
        .collect()
}

/// `agents list`, each agent with the model `routes` give it.
pub(crate) async fn list(
    dirs: &[PathBuf],
    json: bool,
    routes: &ModelRoutes,
) -> Result<(), CliError> {
    let mut report = Report::default();
    for name in builtin_names() {
        let def = subagents::claude::builtin_agent(&name)
            .map_err(|e| CliError::Failed(format!("built-in agent {name}: {e}")))?;
        report.loaded.push(Loaded {
            path: format!("embedded:{name}"),
            name: def.name().to_string(),
            kind: subagents::claude::KIND.to_string(),
            warnings: Vec::new(),
            description: Some(def.description().to_string()),
            model: Some(crate::routes::shown(routes, &def)),
        });
    }
    for dir in agent_dirs(dirs) {
        let scan = scan_dir(dir.clone())
            .await
            .map_err(|e| CliError::Config(e.to_string()))?;
        report.add_scan(scan, Some(routes));
    }
    if json {
        print_json(&report)?;
    } else {
        for a in &report.loaded {
            let desc = a.description.as_deref().unwrap_or("");
            let first = desc.lines().next().unwrap_or("");
            let short: String = first.chars().take(80).collect();
            crate::output::outln!(
                "{:<28} {:<7} {}",
                terminal_safe(&a.name),
                a.kind,
                terminal_safe(&short)
            );
            crate::output::outln!(
                "{:<28} {:<7} ({}) model {}",
                "",
                "",
                terminal_safe(&a.path),
                terminal_safe(a.model.as_deref().unwrap_or("-"))
            );
        }
        for s in &report.skipped {
            eprintln!(
                "skipped {}: {}",
                terminal_safe(&s.path),
                terminal_safe(&s.reason)
            );
        }
    }
    Ok(())
}

/// `agents validate`.
pub(crate) async fn validate(paths: &[PathBuf], json: bool) -> Result<(), CliError> {
    let mut report = Report::default();
    let mut failed = 0usize;
    for path in paths {
        if path.is_dir() {
            match scan_dir(path.clone()).await {
                Ok(scan) => report.add_scan(scan, None),
                Err(e) => {
                    failed += 1;
                    report.skipped.push(Skipped {
                        path: path.display().to_string(),
                        reason: e.to_string(),
                    });
                }
            }
            continue;
        }
        match load_agent_file(path.clone()).await {
            Ok((def, warnings)) => report.loaded.push(Loaded {
                path: path.display().to_string(),
                name: def.name().to_string(),
                kind: subagents::claude::KIND.to_string(),
                warnings,
                description: None,
                model: None,
            }),
            Err(e) => {
                failed += 1;
                report.skipped.push(Skipped {
                    path: path.display().to_string(),
                    reason: e.to_string(),
                });
            }
        }
    }
    if json {
        print_json(&report)?;
    } else {
        for a in &report.loaded {
            crate::output::outln!(
                "ok      {} ({})",
                terminal_safe(&a.path),
                terminal_safe(&a.name)
            );
            for w in &a.warnings {
                crate::output::outln!("        warning: {}", terminal_safe(w));
            }
        }
        for s in &report.skipped {
            crate::output::outln!(
                "skipped {}: {}",
                terminal_safe(&s.path),
                terminal_safe(&s.reason)
            );
        }
        crate::output::outln!(
            "{} loaded, {} skipped, {} failed",
            report.loaded.len(),
            report.skipped.len() - failed,
            failed
        );
    }
    if failed > 0 {
        return Err(CliError::Failed(format!(
            "{failed} file(s) named on the command line failed to load"
        )));
    }
    Ok(())
}

fn print_json(v: &impl Serialize) -> Result<(), CliError> {
    let text = serde_json::to_string_pretty(v)
        .map_err(|e| CliError::Failed(format!("cannot encode JSON: {e}")))?;
    crate::output::outln!("{text}");
    Ok(())
}
