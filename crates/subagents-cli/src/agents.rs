//! `subagents agents list` and `subagents agents validate`, and the one-line rendering of an
//! agent's load warnings the other commands print.

use std::path::{Path, PathBuf};

use serde::Serialize;
use subagents::claude::{
    AgentDir, AgentScope, ClaudeAgentDefinition, Discovery, LoadCheck, agent_load_warnings,
    agent_slug, builtin_names, load_agent_file, scan_dir,
};
use subagents::models::ModelRoutes;
use subagents::spi::SubagentDefinition;

use crate::config::Config;
use crate::error::CliError;
use crate::loaded::Loaded;
use crate::output::terminal_safe;

/// One skipped file in the JSON report.
#[derive(Debug, Serialize)]
pub(crate) struct Skipped {
    /// File path.
    pub path: String,
    /// Why it was skipped or failed.
    pub reason: String,
    /// A broken agent file (frontmatter that does not load), as opposed to a file that is no
    /// agent (a README, a SKILL.md).
    pub invalid: bool,
}

/// An agent hidden by one of the same name with higher precedence.
#[derive(Debug, Serialize)]
pub(crate) struct Shadowed {
    /// The name.
    pub name: String,
    /// The file that is not used.
    pub path: String,
    /// The file used instead.
    pub by: String,
}

/// The JSON report of `list` and `validate`.
#[derive(Debug, Default, Serialize)]
pub(crate) struct Report {
    /// Loaded agents.
    pub loaded: Vec<Loaded>,
    /// Skipped or failed files.
    pub skipped: Vec<Skipped>,
    /// Agents shadowed by one of higher precedence.
    pub shadowed: Vec<Shadowed>,
    /// Names defined twice in one scope: a run uses the first file (in path order); each entry
    /// names both files. `validate --strict` fails on them.
    pub duplicates: Vec<String>,
}

impl Report {
    fn add_definition(
        &mut self,
        path: &Path,
        def: &ClaudeAgentDefinition,
        check: &LoadCheck,
        routes: Option<&ModelRoutes>,
    ) {
        let slug = agent_slug(&def.name);
        self.loaded.push(Loaded {
            path: path.display().to_string(),
            name: def.name.clone(),
            slug: (slug != def.name).then_some(slug),
            kind: subagents::claude::KIND.to_string(),
            warnings: agent_load_warnings(def, check),
            description: routes.map(|_| def.description.clone()),
            model: routes.map(|r| crate::routes::shown(r, def)),
            url: None,
        });
    }

    fn add_discovery(&mut self, d: Discovery, check: &LoadCheck, routes: Option<&ModelRoutes>) {
        for a in &d.agents {
            self.add_definition(&a.path, &a.definition, check, routes);
        }
        for s in d.skipped {
            self.skipped.push(Skipped {
                path: s.path.display().to_string(),
                reason: s.reason,
                invalid: s.invalid,
            });
        }
        for s in d.shadowed {
            self.shadowed.push(Shadowed {
                name: s.name,
                path: s.path.display().to_string(),
                by: s.winner.display().to_string(),
            });
        }
        self.duplicates
            .extend(d.duplicates.iter().map(ToString::to_string));
    }
}

/// The agent directories to use, in precedence order: the given ones (one scope: a name in two
/// of them is an error), else those discovered from the current directory (`.claude/agents`
/// upwards, then the home directory's).
pub(crate) fn agent_dirs(given: &[PathBuf]) -> Vec<AgentDir> {
    if !given.is_empty() {
        return given
            .iter()
            .map(|d| AgentDir::new(d, AgentScope::Cli))
            .collect();
    }
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    let home = subagents::claude::home_dir();
    subagents::claude::agent_dirs(&cwd, home.as_deref())
}

/// What a run of the command checks agents' load warnings against: the built-in tools, the
/// models a run can resolve (subagents.toml `[models]`, Claude Code's aliases, any
/// `provider:model` spec), the skills found from here, and this directory as the workspace.
async fn load_check(config: &Config) -> LoadCheck {
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    let home = subagents::claude::home_dir();
    let mut models: Vec<String> = config.models.keys().cloned().collect();
    models.extend(
        subagents::providers::default_aliases()
            .into_iter()
            .map(|(alias, _)| alias.to_string()),
    );
    models.push("default".into());
    models.push(subagents::models::CLAUDE_MODEL_IDS.into());
    let skill_dirs = subagents::claude::skill_dirs(&cwd, home.as_deref());
    let skills = subagents::claude::SkillSet::discover(skill_dirs).await;
    LoadCheck::new()
        .tools(subagents::tools::ToolSet::NAMES.iter().copied())
        .models(models)
        .skills(skills.skills.iter().map(|s| s.name.clone()))
        .project(cwd, home)
}

/// Scans `dirs` in precedence order.
async fn discover(dirs: Vec<AgentDir>) -> Result<Discovery, CliError> {
    let mut d = Discovery::default();
    for dir in dirs {
        let scan = scan_dir(dir.path.clone())
            .await
            .map_err(|e| CliError::Config(e.to_string()))?;
        d.add_scan(dir, scan);
    }
    Ok(d)
}

/// `agents list`, each agent with the model `routes` give it; `explicit_config` is true when
/// `config` was given with `--config`.
pub(crate) async fn list(
    dirs: &[PathBuf],
    json: bool,
    config: &Config,
    explicit_config: bool,
    routes: &ModelRoutes,
) -> Result<(), CliError> {
    let check = load_check(config).await;
    let mut report = Report::default();
    let discovery = discover(agent_dirs(dirs)).await?;
    for name in builtin_names() {
        let def = subagents::claude::builtin_agent(&name)
            .map_err(|e| CliError::Failed(format!("built-in agent {name}: {e}")))?;
        // A project or user agent of the same name replaces the built-in.
        if let Some(winner) = discovery
            .agents
            .iter()
            .find(|a| a.definition.name.eq_ignore_ascii_case(def.name()))
        {
            report.shadowed.push(Shadowed {
                name: def.name().to_string(),
                path: format!("embedded:{name}"),
                by: winner.path.display().to_string(),
            });
            continue;
        }
        report.loaded.push(Loaded {
            path: format!("embedded:{name}"),
            name: def.name().to_string(),
            slug: None,
            kind: subagents::claude::KIND.to_string(),
            warnings: Vec::new(),
            description: Some(def.description().to_string()),
            model: Some(crate::routes::shown(routes, &def)),
            url: None,
        });
    }
    report.add_discovery(discovery, &check, Some(routes));
    // The agents of kinds a third-party binary adds (`subagents_cli::Cli::kind`).
    for a in crate::extension::listed_agents().await? {
        report.loaded.push(Loaded {
            path: a.uri,
            name: a.name,
            slug: None,
            kind: a.kind,
            warnings: Vec::new(),
            description: Some(a.description),
            model: None,
            url: None,
        });
    }
    // The A2A and MCP agents of subagents.toml (crate::config_agents).
    report
        .loaded
        .extend(crate::config_agents::listed(config, explicit_config));
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
            let slug = a
                .slug
                .as_deref()
                .map(|s| format!(" slug {s}"))
                .unwrap_or_default();
            let model_or_url = match &a.url {
                Some(url) => format!("url {url}"),
                None => format!("model {}", a.model.as_deref().unwrap_or("-")),
            };
            crate::output::outln!(
                "{:<28} {:<7} ({}){slug} {}",
                "",
                "",
                terminal_safe(&a.path),
                terminal_safe(&model_or_url)
            );
            for w in &a.warnings {
                crate::output::outln!("{:<28} {:<7} warning: {}", "", "", terminal_safe(w));
            }
        }
        for s in &report.shadowed {
            crate::output::outln!(
                "{:<28} shadowed by {} ({})",
                terminal_safe(&s.name),
                terminal_safe(&s.by),
                terminal_safe(&s.path)
            );
        }
        for d in &report.duplicates {
            crate::output::outln!("{:<28} {}", "defined twice", terminal_safe(d));
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

/// `agents validate`: the given files and directories, or the discovered directories when none
/// is given. Fails (exit 1) when a named file does not load, an agent file in a directory is
/// broken, or (with `strict`) any agent has warnings or one scope defines a name twice.
pub(crate) async fn validate(
    paths: &[PathBuf],
    json: bool,
    strict: bool,
    config: &Config,
) -> Result<(), CliError> {
    let check = load_check(config).await;
    let mut report = Report::default();
    let (dirs, files): (Vec<&PathBuf>, Vec<&PathBuf>) = paths.iter().partition(|p| p.is_dir());
    let dirs = if paths.is_empty() {
        agent_dirs(&[])
    } else {
        dirs.iter()
            .map(|d| AgentDir::new(*d, AgentScope::Cli))
            .collect()
    };
    let mut discovery = Discovery::default();
    for dir in dirs {
        match scan_dir(dir.path.clone()).await {
            Ok(scan) => discovery.add_scan(dir, scan),
            Err(e) => {
                report.skipped.push(Skipped {
                    path: dir.path.display().to_string(),
                    reason: e.to_string(),
                    invalid: true,
                });
            }
        }
    }
    report.add_discovery(discovery, &check, None);
    for path in files {
        match load_agent_file(path.clone()).await {
            Ok((def, _)) => report.add_definition(path, &def, &check, None),
            Err(e) => report.skipped.push(Skipped {
                path: path.display().to_string(),
                reason: e.to_string(),
                invalid: true,
            }),
        }
    }
    let failed = report.skipped.iter().filter(|s| s.invalid).count();
    let warned = report
        .loaded
        .iter()
        .filter(|a| !a.warnings.is_empty())
        .count();
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
        for s in &report.shadowed {
            crate::output::outln!(
                "shadowed {} ({}): {} is used instead",
                terminal_safe(&s.path),
                terminal_safe(&s.name),
                terminal_safe(&s.by)
            );
        }
        for s in &report.skipped {
            crate::output::outln!(
                "{} {}: {}",
                if s.invalid { "failed " } else { "skipped" },
                terminal_safe(&s.path),
                terminal_safe(&s.reason)
            );
        }
        for d in &report.duplicates {
            crate::output::outln!(
                "{} {}",
                if strict { "failed " } else { "twice  " },
                terminal_safe(d)
            );
        }
        crate::output::outln!(
            "{} loaded, {} skipped, {} failed{}",
            report.loaded.len(),
            report.skipped.iter().filter(|s| !s.invalid).count(),
            failed,
            if report.duplicates.is_empty() {
                String::new()
            } else {
                format!(", {} defined twice", report.duplicates.len())
            }
        );
    }
    if failed > 0 {
        return Err(CliError::Failed(format!(
            "{failed} agent file(s) or name(s) failed to load"
        )));
    }
    if strict && (warned > 0 || !report.duplicates.is_empty()) {
        return Err(CliError::Failed(format!(
            "{warned} agent(s) have warnings, {} name(s) are defined twice in one scope (--strict)",
            report.duplicates.len()
        )));
    }
    Ok(())
}

/// An agent's load warnings as one line: `warning: agent NAME (PATH:LINE): w1; w2`.
pub(crate) fn warning_line(w: &subagents::AgentWarnings) -> String {
    let at = match (&w.path, w.line) {
        (Some(p), Some(l)) => format!(" ({}:{l})", p.display()),
        (Some(p), None) => format!(" ({})", p.display()),
        _ => String::new(),
    };
    terminal_safe(&format!(
        "warning: agent {}{at}: {}",
        w.name,
        w.warnings.join("; ")
    ))
    .into_owned()
}

fn print_json(v: &impl Serialize) -> Result<(), CliError> {
    let text = serde_json::to_string_pretty(v)
        .map_err(|e| CliError::Failed(format!("cannot encode JSON: {e}")))?;
    crate::output::outln!("{text}");
    Ok(())
}
