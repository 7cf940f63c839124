//! Commands under the sandbox: in namespaces (`namespaces`) and with Landlock alone, the
//! fallback (`landlock`). Where the machine offers neither, the confinement tests say so on
//! stderr ("SKIPPED: ...") instead of passing silently; `.ci/run` reports it.

use std::io::Write as _;

use serde_json::json;
use subagent_spi::{TaskContext, Tool, ToolOutput};
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
