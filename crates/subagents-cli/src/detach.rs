//! `subagents task --background`: the task runs on in a process of its own and the command
//! returns at once with its id.
//!
//! The command starts itself again with the same arguments and `--background-worker`, in a
//! process group of its own (Ctrl-C and a closed terminal do not reach it), with no stdin and
//! its output in a temporary file. The worker starts the task in the background as `task` always
//! did, says `started AGENT in the background as TASK_ID` and keeps running until the task
//! ends; the result goes to the store, where `subagents tasks` shows, stops and resumes it from
//! any process. The command reads that line, prints the id and exits 0; when the worker ends
//! before saying it (an unknown agent, no model), its message and exit code are the command's.

use std::io::Read as _;
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::cli::TaskArgs;
use crate::error::CliError;
use crate::output::terminal_safe;

/// The hidden flag that makes a `task` process the worker of a `--background` command.
pub(crate) const WORKER_FLAG: &str = "--background-worker";

/// What the worker says once the task started (the line `task` prints for a background start).
pub(crate) const STARTED: &str = " in the background as ";

/// How long the command waits for the worker to start the task (building the agents, asking
/// a local model server for its window): past it, the worker is left running and the command
/// fails saying so.
const START_LIMIT: Duration = Duration::from_secs(120);

/// Most bytes of the worker's output read while waiting (its first lines).
const MAX_READ: u64 = 64 * 1024;

/// Whether `task --background` can return at once: on Unix, with a store that outlives the
/// process (the result must be somewhere), when this process is not the worker itself.
pub(crate) fn applies(args: &TaskArgs, durable_store: bool) -> bool {
    cfg!(unix) && args.background && !args.background_worker && durable_store
}

/// Starts the worker and returns once it has started the task: prints the id (stdout; with
/// `json`, an object) and how to follow it (stderr).
#[cfg(unix)]
pub(crate) async fn start(args: &TaskArgs, json: bool) -> Result<(), CliError> {
    use std::os::unix::process::CommandExt as _;
    let exe = std::env::current_exe()
        .map_err(|e| CliError::Config(format!("cannot find this program to start it: {e}")))?;
    let (path, log) = log_file()?;
    let out = log
        .try_clone()
        .map_err(|e| CliError::Config(format!("cannot use {}: {e}", path.display())))?;
    let mut child = std::process::Command::new(exe)
        .args(args.argv.iter().skip(1))
        .arg(WORKER_FLAG)
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(log)
        .process_group(0)
        .spawn()
        .map_err(|e| CliError::Config(format!("cannot start the background process: {e}")));
    let child = match child.as_mut() {
        Ok(c) => c,
        Err(_) => {
            let _ = std::fs::remove_file(&path);
            return child.map(|_| ());
        }
    };
    let pid = child.id();
    let started = Instant::now();
    let result = loop {
        let text = read_start(&path);
        if let Some((agent, task_id)) = started_line(&text) {
            break Ok((agent, task_id));
        }
        match child.try_wait() {
            Ok(Some(status)) => {
                // It ended before starting the task: its words are the command's.
                let text = read_start(&path);
                break Err(worker_failed(&text, status.code()));
            }
            Ok(None) if started.elapsed() < START_LIMIT => {}
            _ => {
                break Err(CliError::Failed(format!(
                    "the background process {pid} did not start the task within {} s; it is left \
                     running",
                    START_LIMIT.as_secs()
                )));
            }
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    // The worker keeps its open file; the name goes.
    let _ = std::fs::remove_file(&path);
    let (agent, task_id) = result?;
    if json {
        let view = serde_json::json!({
            "task_id": task_id,
            "agent": agent,
            "status": "running",
            "pid": pid,
        });
        crate::output::outln!("{}", crate::output::json_text(&view)?);
    } else {
        crate::output::outln!("{task_id}");
    }
    let approvals = if args.runner.permissions.yes {
        ""
    } else {
        " Nobody is asked while it runs: calls that need approval are denied (--yes allows them)."
    };
    eprintln!(
        "started {agent} in the background as {task_id} (process {pid}): `subagents tasks show \
         {task_id}` prints its result, `subagents tasks stop {task_id}` stops it.{approvals}"
    );
    Ok(())
}

/// Not on this platform: `task --background` waits for the result instead.
#[cfg(not(unix))]
pub(crate) async fn start(_args: &TaskArgs, _json: bool) -> Result<(), CliError> {
    Err(CliError::Config(
        "--background cannot return at once on this platform".into(),
    ))
}

/// A new temporary file for the worker's output, created here (never an existing one).
fn log_file() -> Result<(std::path::PathBuf, std::fs::File), CliError> {
    let dir = std::env::temp_dir();
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    for attempt in 0..16u32 {
        let path = dir.join(format!(
            "subagents-background-{}-{nanos}-{attempt}.log",
            std::process::id()
        ));
        match std::fs::File::create_new(&path) {
            Ok(f) => return Ok((path, f)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => {
                return Err(CliError::Config(format!(
                    "cannot create {}: {e}",
                    path.display()
                )));
            }
        }
    }
    Err(CliError::Config(format!(
        "cannot create a temporary file in {}",
        dir.display()
    )))
}

/// The start of the worker's output (at most [`MAX_READ`] bytes; empty when unreadable).
fn read_start(path: &std::path::Path) -> String {
    let mut text = Vec::new();
    if let Ok(f) = std::fs::File::open(path) {
        let _ = f.take(MAX_READ).read_to_end(&mut text);
    }
    String::from_utf8_lossy(&text).into_owned()
}

/// `(agent, task id)` from the worker's `started AGENT in the background as TASK_ID` line.
fn started_line(text: &str) -> Option<(String, String)> {
    text.lines().find_map(|l| {
        let rest = l.strip_prefix("started ")?;
        let (agent, id) = rest.rsplit_once(STARTED)?;
        let id = id.trim();
        id.starts_with("task_")
            .then(|| (agent.to_string(), id.to_string()))
    })
}

/// The command's error when the worker ended before starting the task: its last message (the
/// `subagents: ` prefix left to the command), with its exit code's kind.
fn worker_failed(text: &str, code: Option<i32>) -> CliError {
    let message = text
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .map(|l| l.strip_prefix("subagents: ").unwrap_or(l).to_string())
        .unwrap_or_else(|| "the background process ended without starting the task".into());
    let message = terminal_safe(&message).into_owned();
    match code {
        Some(2) => CliError::Config(message),
        Some(3) => CliError::Incomplete(message),
        _ => CliError::Failed(message),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_started_line_gives_agent_and_id() {
        let text = "notice\nstarted Product Manager in the background as task_0193abc\n";
        assert_eq!(
            started_line(text),
            Some(("Product Manager".into(), "task_0193abc".into()))
        );
        assert_eq!(started_line("started x in the background as nothing"), None);
        let e = worker_failed("subagents: unknown agent `x`\n", Some(2));
        assert!(
            matches!(e, CliError::Config(ref m) if m == "unknown agent `x`"),
            "{e:?}"
        );
    }
}
