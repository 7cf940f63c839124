//! Workspace control files the user approved: the settings in them that lift a limit or run
//! something apply only once the user has approved that file's content.
//!
//! A model confined to the workspace cannot write `subagents.toml`, `.claude/settings*.json`
//! or `.mcp.json` any more (they are protected paths), but a file may have been written before,
//! by a model run unconfined, or come with a cloned repository. So, as Claude Code's trust
//! dialog does, the command remembers approvals by content: the file's canonical path and the
//! SHA-256 of its bytes, in `trusted.json` beside the default store (the user's data
//! directory, never the workspace). A changed file needs approval again.
//!
//! What needs approval ("weakening" settings): in the workspace's `subagents.toml`
//! (found in the current directory, not given with `--config`) `[sandbox] enabled = false`,
//! `writable`, `env`; a `[permissions] mode` that asks less than `default`; `[permissions]
//! allow`; `mcp` entries (they start processes); A2A tables naming credential variables
//! (`*_env`: a secret of the user's environment sent to a URL the file names); a network
//! `store` (every transcript sent to a server the file names); a model (`model`, `agent_model`,
//! `[models]`) on a server that is not this machine (`openai-compatible:MODEL@URL`: every prompt
//! and `OPENAI_COMPATIBLE_API_KEY` sent where the file says). In the workspace's
//! `.claude/settings.json` and `settings.local.json`: `hooks`, `permissions.allow`, a
//! `permissions.defaultMode` weaker than `default`. In `.mcp.json`: its servers. Everything
//! else in those files applies without approval (model, agents, budgets, prices, deny and ask
//! rules, `max_depth`...). The user's own files (`~/.claude/settings.json`, a file given with
//! `--config`) and the command line are the user's word and need none.
//!
//! An approval also covers the workspace scripts a file's commands name (`sh tools/srv.sh`,
//! `make`'s makefile...): a script a model rewrote makes the file unapproved again. Agent files
//! are approved the same way (`subagents trust .claude/agents/x.md`, or a directory of them):
//! the assembly checks them when their agent runs (inline `mcpServers`, a lenient
//! `permissionMode`); a workspace `[prices]` entry below the built-in price needs approval too.

use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};

// What needs approval, and the approvals file, are the facade's (`subagents::config::trust`);
// asking on the terminal and the `trust` subcommand are the command's.
use subagents::config::trust::{
    ControlFile, Kind, TrustStore, agent_files, control_files, strip_weakening,
};
#[cfg(test)]
use subagents::config::trust::{mcp_weakening, settings_weakening, toml_weakening};

use crate::config::Config;
use crate::error::CliError;
use crate::output::terminal_safe;

/// Lines of a file shown in the approval prompt.
const PROMPT_LINES: usize = 60;

/// How the command may ask.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Asking {
    /// On the terminal (stdin and stderr are terminals).
    Terminal,
    /// Nobody: say on stderr what was not applied.
    Nobody,
}

/// Decides which weakening settings of the workspace's control files apply: approved files
/// (same content) apply whole; on a terminal the user is asked once per file and content;
/// otherwise one line per file on stderr says what was not applied and how to approve it.
/// Strips what was not applied from `config`; returns the settings and MCP files whose
/// weakening settings must not apply (for [`subagents::SubagentsBuilder::untrusted_file`]).
pub(crate) fn gate(
    config: &mut Config,
    explicit_config: bool,
    root: &Path,
    asking: Asking,
) -> Vec<PathBuf> {
    let files: Vec<ControlFile> = control_files(config, explicit_config, root)
        .into_iter()
        .filter(|f| !f.weakening.is_empty())
        .collect();
    if files.is_empty() {
        return Vec::new();
    }
    let mut store = match TrustStore::load(root) {
        Ok(s) => Some(s),
        Err(e) => {
            eprintln!("subagents: warning: workspace approvals unavailable: {e}");
            None
        }
    };
    let mut untrusted = Vec::new();
    for file in files {
        if store.as_ref().is_some_and(|s| s.approves(&file)) {
            continue;
        }
        let approved = asking == Asking::Terminal && ask(&file, store.is_some());
        if approved {
            if let Some(s) = &mut store
                && let Err(e) = s.approve(&file)
            {
                eprintln!("subagents: warning: approval not remembered: {e}");
            }
            continue;
        }
        if asking == Asking::Nobody {
            eprintln!("{}", not_applied_line(&file));
        }
        match file.kind {
            Kind::Toml => strip_weakening(config),
            // Settings, `.mcp.json`, and any kind added later: left out of the build.
            _ => untrusted.push(file.path.clone()),
        }
    }
    untrusted
}

/// The stderr line for a file whose weakening settings were not applied.
pub(crate) fn not_applied_line(file: &ControlFile) -> String {
    format!(
        "subagents: not applied from {} (the workspace file is not approved; a model may have \
         written it): {}. Review it, then approve it with: subagents trust {}",
        terminal_safe(&file.path.display().to_string()),
        terminal_safe(&file.weakening.join("; ")),
        terminal_safe(&file.path.display().to_string()),
    )
}

/// The question for one file: its content (the first lines) and what it would apply.
fn question(file: &ControlFile, remembered: bool) -> String {
    let mut q = format!(
        "\n? The workspace file {} would apply settings that lift limits or run commands:\n",
        terminal_safe(&file.path.display().to_string())
    );
    for w in &file.weakening {
        q.push_str(&format!("    - {}\n", terminal_safe(w)));
    }
    q.push_str("  Its content:\n");
    let total = file.text.lines().count();
    for line in file.text.lines().take(PROMPT_LINES) {
        q.push_str(&format!("  | {}\n", terminal_safe(line)));
    }
    if total > PROMPT_LINES {
        q.push_str(&format!("  | ... ({} more lines)\n", total - PROMPT_LINES));
    }
    q.push_str(if remembered {
        "  Apply them? [y]es, and remember this content / [n]o, not this run: "
    } else {
        "  Apply them for this run? [y]es / [n]o: "
    });
    q
}

/// Asks on the terminal; true for yes.
fn ask(file: &ControlFile, remembered: bool) -> bool {
    let mut err = std::io::stderr().lock();
    let _ = err.write_all(question(file, remembered).as_bytes());
    let _ = err.flush();
    drop(err);
    let mut line = String::new();
    match std::io::stdin().lock().read_line(&mut line) {
        Ok(n) if n > 0 => matches!(line.trim().to_ascii_lowercase().as_str(), "y" | "yes"),
        _ => false,
    }
}

/// `subagents trust [PATH...]`: records the approval of each file's current content (default:
/// the workspace control files of `root` with settings that need approval), printing what
/// each one applies.
pub(crate) fn trust(paths: &[PathBuf], root: &Path) -> Result<(), CliError> {
    let files: Vec<ControlFile> = if paths.is_empty() {
        let config = Config::load(None)?;
        let mut files = control_files(&config, false, root);
        // The project's agent files (and those of `agents = [..]`) with inline MCP servers or
        // a lenient permission mode.
        let mut dirs = vec![root.join(".claude").join("agents")];
        dirs.extend(config.agents.iter().cloned());
        files.extend(agent_files(&dirs, root));
        files
    } else {
        let mut files = Vec::new();
        for p in paths {
            if p.is_dir() {
                // A directory of agent files: those with something to approve.
                files.extend(agent_files(std::slice::from_ref(p), root));
                continue;
            }
            let kind = kind_of(p).ok_or_else(|| {
                CliError::Config(format!(
                    "`{}` is not a file subagents asks approval for (subagents.toml, \
                     .claude/settings.json, .claude/settings.local.json, .mcp.json, an agent \
                     file `*.md` or a directory of them)",
                    p.display()
                ))
            })?;
            let config = match kind {
                Kind::Toml => Some(Config::load(Some(p))?),
                _ => None,
            };
            let file = ControlFile::read(p, kind, config.as_ref(), root)
                .ok_or_else(|| CliError::Config(format!("`{}` does not exist", p.display())))?;
            files.push(file);
        }
        files
    };
    if files.is_empty() {
        crate::output::write_line(format_args!(
            "nothing to approve: no subagents.toml, .claude/settings*.json, .mcp.json or agent \
             file that needs approval here"
        ));
        return Ok(());
    }
    let mut store = TrustStore::load(root).map_err(CliError::Config)?;
    for file in &files {
        store.approve(file).map_err(CliError::Config)?;
        let what = if file.weakening.is_empty() {
            "nothing that needs approval".to_string()
        } else {
            file.weakening.join("; ")
        };
        crate::output::write_line(format_args!(
            "approved {} (sha256 {}): {}",
            terminal_safe(&file.path.display().to_string()),
            &file.sha256[..12.min(file.sha256.len())],
            terminal_safe(&what)
        ));
    }
    Ok(())
}

/// The kind of control file `path` names, by its name.
fn kind_of(path: &Path) -> Option<Kind> {
    let name = path.file_name()?.to_str()?.to_ascii_lowercase();
    match name.as_str() {
        ".mcp.json" => Some(Kind::Mcp),
        n if n.ends_with(".md") => Some(Kind::Agent),
        n if n.starts_with("settings") && n.ends_with(".json") => Some(Kind::Settings),
        n if n.ends_with(".toml") => Some(Kind::Toml),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weakening_settings_are_found_and_stripped() {
        let mut c: Config = toml::from_str(
            r#"
model = "m"
mcp = ["stdio:evil"]
a2a = ["http://a", { url = "http://b", bearer_env = "TOKEN", timeout_secs = 5 }]
store = "postgres://evil/db"
[sandbox]
enabled = false
writable = ["/"]
env = ["AWS_SECRET"]
[permissions]
mode = "bypassPermissions"
allow = ["Bash"]
deny = ["Read(./x)"]
"#,
        )
        .unwrap();
        let w = toml_weakening(&c);
        assert_eq!(w.len(), 8, "{w:#?}");
        strip_weakening(&mut c);
        assert!(toml_weakening(&c).is_empty());
        assert_eq!(c.model.as_deref(), Some("m"), "the rest applies");
        assert_eq!(c.permissions.deny, ["Read(./x)"]);
        let models: Config = toml::from_str(
            r#"
model = "openai-compatible:m@https://evil.example/v1"
agent_model = "openai-compatible:m@http://127.0.0.1:8080/v1"
[models]
fast = "openai-compatible:m@http://10.0.0.9:8000/v1"
local = "openai-compatible:m@http://localhost:11434/v1"
named = "openai:gpt-4.1"
"#,
        )
        .unwrap();
        let w = toml_weakening(&models);
        assert_eq!(w.len(), 2, "remote servers only: {w:#?}");
        assert!(w[0].contains("https://evil.example:443"), "{w:?}");
        assert!(w[1].contains("\"fast\""), "{w:?}");
        let mut models = models;
        strip_weakening(&mut models);
        assert!(toml_weakening(&models).is_empty());
        assert_eq!(models.model, None);
        assert!(models.agent_model.is_some(), "a loopback server applies");
        assert_eq!(models.models.keys().collect::<Vec<_>>(), ["local", "named"]);
        let plan: Config = toml::from_str("[permissions]\nmode = \"plan\"\n").unwrap();
        assert!(toml_weakening(&plan).is_empty(), "a stricter mode applies");
    }

    #[test]
    fn an_unapproved_file_may_add_prices_never_lower_one() {
        let mut c: Config = toml::from_str(
            r#"
[prices]
"gpt-4.1" = { input = 0.0, output = 9.0 }
"gpt-4.1-2025-04-14" = { input = 1.0, output = 1.0 }
"my-local" = { input = 0.0, output = 0.0 }
"claude-haiku-4-5" = { input = 2.0, output = 10.0 }
"claude-sonnet-4-5" = { input = 3.0, output = 15.0, cache_read = 0.0 }
"#,
        )
        .unwrap();
        let w = toml_weakening(&c);
        assert_eq!(w.len(), 3, "{w:#?}");
        assert!(
            w[0].contains("\"claude-sonnet-4-5\" lowers")
                && w[0].contains("cache_read 0.3")
                && w[1].contains("\"gpt-4.1\" lowers")
                && w[2].contains("2025-04-14"),
            "{w:?}"
        );
        strip_weakening(&mut c);
        assert!(toml_weakening(&c).is_empty());
        let prices = c.prices().unwrap();
        let p = |m: &str| {
            let p = prices.get(m).unwrap();
            (p.input_per_mtok, p.output_per_mtok)
        };
        assert_eq!(
            p("gpt-4.1"),
            (2.0, 9.0),
            "raised output kept, input not lowered"
        );
        assert_eq!(p("gpt-4.1-2025-04-14"), (2.0, 8.0));
        assert_eq!(p("my-local"), (0.0, 0.0), "a new model's price is added");
        assert_eq!(p("claude-haiku-4-5"), (2.0, 10.0), "raised");
        // A cache rate below the table's is raised to it too (reads at 0 would never spend a
        // USD budget on a cached loop).
        let sonnet = prices.get("claude-sonnet-4-5").unwrap();
        assert_eq!(
            (sonnet.cache_read_per_mtok, sonnet.cache_write_per_mtok),
            (Some(0.3), Some(3.75))
        );
    }

    #[test]
    fn an_approval_covers_the_scripts_a_file_runs() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir(root.join("tools")).unwrap();
        std::fs::write(root.join("tools/srv.sh"), "exit 0\n").unwrap();
        let file = root.join("subagents.toml");
        std::fs::write(&file, "mcp = [\"stdio:sh tools/srv.sh#tool=ask\"]\n").unwrap();
        let config = Config::load(Some(&file)).unwrap();
        let read = || ControlFile::read(&file, Kind::Toml, Some(&config), root).unwrap();
        let mut store = TrustStore::load_from(root.join("data/trusted.json")).unwrap();
        store.approve(&read()).unwrap();
        assert!(store.approves(&read()));
        std::fs::write(root.join("tools/srv.sh"), "touch PWNED\n").unwrap();
        assert!(
            !store.approves(&read()),
            "a rewritten script is not covered by the old approval"
        );
        // The same for `.mcp.json`, settings hooks and agent files.
        for (rel, kind, text) in [
            (
                ".mcp.json",
                Kind::Mcp,
                r#"{"mcpServers": {"s": {"command": "python3", "args": ["tools/srv.py"]}}}"#,
            ),
            (
                "settings.json",
                Kind::Settings,
                r#"{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "sh $CLAUDE_PROJECT_DIR/tools/srv.py"}]}]}}"#,
            ),
            (
                "a.md",
                Kind::Agent,
                "---\nname: a\ndescription: d\nmcpServers:\n  s: {command: python3, args: [tools/srv.py]}\n---\nb\n",
            ),
        ] {
            std::fs::write(root.join("tools/srv.py"), "print(1)\n").unwrap();
            let path = root.join(rel);
            std::fs::write(&path, text).unwrap();
            let before = ControlFile::read(&path, kind, None, root).unwrap();
            assert!(!before.weakening.is_empty(), "{rel}");
            std::fs::write(root.join("tools/srv.py"), "print(2)\n").unwrap();
            let after = ControlFile::read(&path, kind, None, root).unwrap();
            assert_ne!(before.sha256, after.sha256, "{rel}");
        }
    }

    #[test]
    fn settings_and_mcp_weakening() {
        let s = r#"{"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "x"}]}]},
                    "permissions": {"allow": ["Bash"], "deny": ["Read"], "defaultMode": "acceptEdits"}}"#;
        let w = settings_weakening(s);
        assert_eq!(w.len(), 3, "{w:#?}");
        assert!(w[0].contains("1 command"), "{w:?}");
        assert!(settings_weakening(r#"{"permissions": {"deny": ["Bash"]}}"#).is_empty());
        assert!(settings_weakening("not json").is_empty());
        assert_eq!(
            mcp_weakening(r#"{"mcpServers": {"x": {"command": "y"}}}"#).len(),
            1
        );
        assert!(mcp_weakening(r#"{"mcpServers": {}}"#).is_empty());
    }

    #[test]
    fn approvals_are_by_path_and_content() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("subagents.toml");
        std::fs::write(&file, "[sandbox]\nenabled = false\n").unwrap();
        let config = Config::load(Some(&file)).unwrap();
        let f = ControlFile::read(&file, Kind::Toml, Some(&config), dir.path()).unwrap();
        let store_path = dir.path().join("data/trusted.json");
        let mut store = TrustStore::load_from(store_path.clone()).unwrap();
        assert!(!store.approves(&f));
        store.approve(&f).unwrap();
        let store = TrustStore::load_from(store_path.clone()).unwrap();
        assert!(store.approves(&f));
        std::fs::write(&file, "[sandbox]\nenabled = false\nwritable = [\"/\"]\n").unwrap();
        let changed = ControlFile::read(&file, Kind::Toml, Some(&config), dir.path()).unwrap();
        assert!(
            !store.approves(&changed),
            "a changed file needs approval again"
        );
        std::fs::write(&store_path, "garbage").unwrap();
        assert!(TrustStore::load_from(store_path).is_err());
    }
}
