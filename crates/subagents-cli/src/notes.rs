//! What assembling the agents noted, said once per command (`run`, `task`, `serve`, `mcp`):
//! one summary line by default (`subagents: 12 agents loaded, 7 with notes: see `subagents
//! agents validate` (or -v)`), every note at `-v`, nothing at `--log error`. The notes are the
//! agents' load warnings, broken agent files, names defined twice in one scope (the first file
//! is used), and project instructions cut or not read. `task NAME` of a name defined twice
//! also says which file it runs, in one line.

use std::sync::OnceLock;

use crate::output::terminal_safe;

/// How much of the notes a command prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Level {
    /// Nothing (`--log error` or `off`).
    Quiet,
    /// One summary line (the default).
    Summary,
    /// Every note (`-v`).
    Detail,
}

static LEVEL: OnceLock<Level> = OnceLock::new();
static FOCUS: OnceLock<String> = OnceLock::new();

/// Sets the level from `--log LEVEL` and `-v`, and the agent the command runs by name (`task
/// NAME`, `run --agent NAME`), once per process.
pub(crate) fn set(log: &str, verbose: bool, focus: Option<&str>) {
    let quiet = matches!(log.trim().to_ascii_lowercase().as_str(), "error" | "off");
    let level = if verbose {
        Level::Detail
    } else if quiet {
        Level::Quiet
    } else {
        Level::Summary
    };
    let _ = LEVEL.set(level);
    if let Some(name) = focus.filter(|n| !n.trim().is_empty()) {
        let _ = FOCUS.set(name.trim().to_string());
    }
}

fn level() -> Level {
    LEVEL.get().copied().unwrap_or(Level::Summary)
}

/// `1 agent` / `2 agents`.
fn count(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// Says what assembling `agents` noted, at the command's level (see the module docs).
pub(crate) fn report(agents: &subagents::Subagents) {
    let level = level();
    if level == Level::Quiet {
        return;
    }
    let broken: Vec<&subagents::SkippedAgent> =
        agents.skipped().iter().filter(|s| s.invalid).collect();
    let duplicates = agents.duplicates();
    let warned = agents.agent_warnings();
    let instructions = agents.project_instructions();
    let cut = instructions.is_some_and(|i| i.was_cut());
    let refused = instructions.map_or(0, |i| i.refused.len());
    if let Some(focus) = FOCUS.get()
        && let Some(d) = duplicates
            .iter()
            .find(|d| d.name.eq_ignore_ascii_case(focus))
    {
        eprintln!(
            "subagents: agent `{}` is defined twice in one scope: using {} (first in path \
             order), not {}",
            terminal_safe(&d.name),
            terminal_safe(&d.first.display().to_string()),
            terminal_safe(&d.second.display().to_string()),
        );
    }
    if level == Level::Detail {
        for s in &broken {
            // The reason of a load error names the file (and line) already.
            let path = s.path.display().to_string();
            let text = if s.reason.contains(&path) {
                s.reason.clone()
            } else {
                format!("{path}: {}", s.reason)
            };
            eprintln!("warning: agent file not loaded: {}", terminal_safe(&text));
        }
        for w in warned {
            eprintln!("{}", crate::agents::warning_line(w));
        }
        for d in duplicates {
            eprintln!("note: {}", terminal_safe(&d.to_string()));
        }
        for s in agents.shadowed() {
            eprintln!(
                "note: agent `{}` of {} is shadowed by {}",
                terminal_safe(&s.name),
                terminal_safe(&s.path.display().to_string()),
                terminal_safe(&s.winner.display().to_string())
            );
        }
        if let Some(i) = instructions {
            for f in &i.files {
                let part = if (f.included as u64) < f.size {
                    format!(
                        "cut to {} of its {} bytes (limit {} in all)",
                        f.included,
                        f.size,
                        subagents::claude::MAX_INSTRUCTIONS_BYTES
                    )
                } else {
                    format!("{} bytes", f.size)
                };
                eprintln!(
                    "note: project instructions from {} ({part})",
                    terminal_safe(&f.path.display().to_string())
                );
            }
            for r in &i.refused {
                eprintln!(
                    "warning: project instructions not read: {}",
                    terminal_safe(r)
                );
            }
        }
    }
    let mut parts = Vec::new();
    if !warned.is_empty() {
        parts.push(format!("{} with notes", warned.len()));
    }
    if !duplicates.is_empty() {
        parts.push(format!(
            "{} (the first file in path order is used)",
            count(
                duplicates.len(),
                "name defined twice in one scope",
                "names defined twice in one scope"
            )
        ));
    }
    if !broken.is_empty() {
        parts.push(format!(
            "{} not loaded",
            count(broken.len(), "agent file", "agent files")
        ));
    }
    if cut {
        parts.push("the project instructions (CLAUDE.md) cut to fit".to_string());
    }
    if refused > 0 {
        parts.push(format!(
            "{} not read",
            count(
                refused,
                "project instruction file",
                "project instruction files"
            )
        ));
    }
    if parts.is_empty() {
        return;
    }
    let loaded = agents.task().user_agents().len();
    let details = if level == Level::Detail {
        "`subagents agents validate` checks them"
    } else {
        "see `subagents agents validate` (or -v)"
    };
    eprintln!(
        "subagents: {} loaded, {}: {details}",
        count(loaded, "agent", "agents"),
        parts.join(", ")
    );
}
