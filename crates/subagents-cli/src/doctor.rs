//! `subagents doctor`: what this machine offers the sandbox that confines Bash commands,
//! hooks and stdio MCP servers, one line each.

use serde_json::json;
use subagents::tools::{LandlockSupport, NamespaceSupport, SandboxMode, SandboxPolicy};

use crate::error::CliError;
use crate::output::terminal_safe;

/// The sandbox line at the start of a run (`--log info`) and doctor's first line.
pub(crate) fn sandbox_line(report: &subagents::tools::SandboxReport) -> String {
    let what = match report.mode {
        SandboxMode::Namespaces => {
            "commands run in user, mount and PID namespaces: the workspace is writable, its \
             control files read-only (content and metadata) and the missing ones reserved, \
             Landlock after; everything a command starts dies with it"
        }
        SandboxMode::Landlock => {
            "Landlock alone (the fallback): the workspace is granted entry by entry around its \
             control files, so commands cannot create new entries directly in its root, chmod \
             is not covered, and a setsid child can outlive its command"
        }
        _ => "commands can write wherever you can",
    };
    format!(
        "sandbox: {} ({}): {what}",
        report.mode,
        terminal_safe(&report.reason)
    )
}

/// Prints the report for the default sandbox (what `run` uses unless `--no-sandbox` or
/// `[sandbox] enabled = false` turn it off).
pub(crate) async fn doctor(json: bool) -> Result<(), CliError> {
    let report =
        tokio::task::spawn_blocking(|| subagents::tools::sandbox_report(&SandboxPolicy::default()))
            .await
            .map_err(|e| CliError::Config(format!("the sandbox probe failed: {e}")))?;
    let (landlock_ok, landlock_note) = match &report.landlock {
        LandlockSupport::Full => (true, "writes confined; TCP can be denied".to_string()),
        LandlockSupport::Partial(why) => (true, why.clone()),
        LandlockSupport::Unavailable(why) => (false, why.clone()),
        _ => (false, "unknown".to_string()),
    };
    let (userns_ok, helper, userns_note) = match &report.namespaces {
        NamespaceSupport::Available { helper } => {
            (true, Some(helper.display().to_string()), String::new())
        }
        NamespaceSupport::Unavailable(why) => (false, None, why.clone()),
        _ => (false, None, "unknown".to_string()),
    };
    if json {
        let v = json!({
            "sandbox": report.mode.as_str(),
            "reason": report.reason,
            "landlock": {"available": landlock_ok, "abi": report.landlock_abi, "note": landlock_note},
            "user_namespaces": {"available": userns_ok, "helper": helper, "note": userns_note},
        });
        println!("{v}");
        return Ok(());
    }
    println!("{}", sandbox_line(&report));
    let abi = report
        .landlock_abi
        .map(|v| format!("ABI {v}"))
        .unwrap_or_else(|| "unavailable".to_string());
    println!("landlock: {abi} ({})", terminal_safe(&landlock_note));
    match helper {
        Some(h) => println!("user namespaces: available (helper: {})", terminal_safe(&h)),
        None => println!(
            "user namespaces: unavailable: {}",
            terminal_safe(&userns_note)
        ),
    }
    Ok(())
}
