//! Commands under the sandbox: in namespaces (`namespaces`) and with Landlock alone, the
//! fallback (`landlock`). Where the machine offers neither, the confinement tests say so on
//! stderr ("SKIPPED: ...") instead of passing silently; `.ci/run` reports it.

use std::io::Write as _;

use serde_json::json;
use subagent_spi::{TaskContext, Tool, ToolOutput};
use subagent_testkit::files::write_tree;
use subagent_tools::{BashTool, LandlockSupport, landlock_support};

mod landlock;
mod namespaces;

/// Prints past the test harness's capture, so a skip is visible in every run.
fn skipped(why: &str) {
    let _ = writeln!(std::io::stderr(), "SKIPPED: {why}");
}

fn landlock_or_skip(test: &str) -> bool {
    match landlock_support() {
        LandlockSupport::Unavailable(why) => {
            skipped(&format!("{test}: Landlock is unavailable ({why})"));
            false
        }
        _ => true,
    }
}

async fn run(tool: &BashTool, cmd: &str) -> ToolOutput {
    tool.call(json!({"command": cmd}), &TaskContext::new())
        .await
        .expect("the tool runs")
}

/// The project's control files as a checked-out repository has them, plus ordinary files.
fn project(ws: &std::path::Path) {
    write_tree(
        ws,
        &[
            "src",
            ".claude/memory",
            ".git/hooks",
            ".git/objects",
            "vendor/lib/.git/hooks",
        ],
        &[
            ("subagents.toml", "model = \"m\"\n"),
            (".gitmodules", "[submodule]\n"),
            (".vscode/settings.json", "{}"),
            ("vendor/lib/.git/config", "[core]\n"),
            (".claude/settings.json", "{}"),
            (".claude/agents/a.md", "agent"),
            (".claude/notes.md", "notes"),
            (".git/config", "[core]\n"),
            (".git/index", "index"),
            ("README.md", "readme"),
        ],
    );
}

/// Asserts that each file below `root` holds exactly its text.
fn assert_contents(root: &std::path::Path, files: &[(&str, &str)]) {
    for (file, text) in files {
        assert_eq!(
            std::fs::read_to_string(root.join(file)).unwrap(),
            *text,
            "{file}"
        );
    }
}

/// Runs `cmd`, which must get to its end (its output holds `last`, what its last command
/// echoes); its output.
async fn ran_to(tool: &BashTool, cmd: &str, last: &str) -> ToolOutput {
    let out = run(tool, cmd).await;
    assert!(out.content.contains(last), "{}", out.content);
    out
}

/// Runs `cmd`, which must fail; its output.
async fn refused(tool: &BashTool, cmd: &str) -> ToolOutput {
    let out = run(tool, cmd).await;
    assert!(out.is_error, "`{cmd}` must fail: {}", out.content);
    out
}

fn which(name: &str) -> Option<std::path::PathBuf> {
    std::env::var_os("PATH")
        .map(|p| {
            std::env::split_paths(&p)
                .map(|d| d.join(name))
                .collect::<Vec<_>>()
        })
        .unwrap_or_default()
        .into_iter()
        .find(|p| p.is_file())
}
