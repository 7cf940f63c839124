//! The `Bash` tool.

use std::process::Stdio;
use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
use subagent_spi::{TaskContext, ToolEffect, ToolError, ToolOutput};
use tokio::io::AsyncReadExt;

use crate::Workspace;
use crate::sandbox::{ConfinedChild, ConfinedCommand, SandboxMode, SandboxPolicy};

/// The timeout when none is given.
pub const DEFAULT_BASH_TIMEOUT: Duration = Duration::from_secs(120);
/// The largest timeout accepted.
pub const MAX_BASH_TIMEOUT: Duration = Duration::from_secs(600);
/// Output beyond this many characters is cut.
pub const MAX_BASH_OUTPUT_CHARS: usize = 30_000;

/// Appended to a confined command's output that shows a refusal (`Permission denied`,
/// `Read-only file system`, a busy or cross-device rename, `Is a directory` for a reserved
/// name): what the sandbox refuses and what to do instead. With Landlock alone (the fallback),
/// [`FALLBACK_CONFINEMENT_NOTE`] instead.
pub const CONFINEMENT_NOTE: &str = "[sandbox: commands may write in the workspace and the temp \
directory ($TMPDIR), except the project's control files (subagents.toml, .mcp.json, .gitmodules, \
.vscode/, .idea/, .claude/settings*.json, .claude/agents/, .claude/skills/, .claude/commands/, \
and .git/hooks/ and .git/config of every repository in the workspace): those are read-only to \
commands, and the missing ones are reserved while a command runs (an empty read-only \
directory), because only a person can change them. Tell the user what change you would make \
and why. Only the user can widen this ([sandbox] writable in their subagents.toml, or \
--no-sandbox).]";

/// [`CONFINEMENT_NOTE`] for the Landlock-only fallback, where new entries directly in the
/// workspace root cannot be created either.
pub const FALLBACK_CONFINEMENT_NOTE: &str = "[sandbox: commands may write in the workspace and \
the temp directory ($TMPDIR), except the project's control files (subagents.toml, .mcp.json, \
.gitmodules, .vscode/, .idea/, .claude/settings*.json, .claude/agents/, .claude/skills/, \
.claude/commands/, .git/hooks/, .git/config): those only a person can change. A new file \
directly in the workspace root (or in .git/, so git add and git commit fail here) must be \
created with the Write tool; subdirectories work as usual. Only the user can widen this \
([sandbox] writable in their subagents.toml, or --no-sandbox).]";

/// How much of what the sandbox helper itself prints (on stderr) is kept.
const MAX_SETUP_MESSAGE_BYTES: usize = 4096;

/// How long to wait for the output pipe to close once the shell is gone.
const DRAIN_GRACE: Duration = Duration::from_secs(2);

/// Input of [`BashTool`].
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BashInput {
    /// The command.
    pub command: String,
    /// Milliseconds (default 120000, at most 600000).
    #[serde(default)]
    pub timeout: Option<u64>,
    /// What it does, in a few words (for the log).
    #[serde(default)]
    pub description: Option<String>,
}

/// Runs a shell command with `sh -c` in the workspace root.
///
/// The command starts through [`ConfinedCommand`]; stdout and stderr are captured together (in
/// the order written) and capped at 30,000 characters. On timeout (default 120 s, at most
/// 600 s), on cancellation, when the tool's future is dropped, and also when the shell exits,
/// everything it started is killed with `SIGKILL` (with namespaces the whole PID namespace,
/// `setsid` children included; with Landlock alone its process group), so no background
/// process outlives the call. A non-zero exit status makes an error result that includes the
/// output and the status.
///
/// Commands are confined by a [`SandboxPolicy`] (the default one unless
/// [`with_sandbox`](Self::with_sandbox) says otherwise): on Linux, they may write only in the
/// workspace (less its control files), the temp directory and a few devices (reads and
/// execution anywhere), optionally without TCP; they get only allow-listed environment
/// variables, so credentials such as `OPENAI_API_KEY` never reach them. With [`SandboxPolicy::unconfined`] the command can
/// write whatever the process can and gets the environment less credentials
/// ([`is_secret_env`]). Its effect is [`ToolEffect::Execute`], so permission modes decide
/// whether a call runs; they never lift the confinement.
#[derive(Debug, Clone)]
pub struct BashTool {
    workspace: Workspace,
    sandbox: SandboxPolicy,
}

impl BashTool {
    /// The tool's name.
    pub const NAME: &'static str = "Bash";

    /// A `Bash` tool running commands in `workspace`'s root, confined by the default
    /// [`SandboxPolicy`].
    pub fn new(workspace: Workspace) -> Self {
        Self::with_sandbox(workspace, SandboxPolicy::default())
    }

    /// A `Bash` tool confined by `sandbox`.
    pub fn with_sandbox(workspace: Workspace, sandbox: SandboxPolicy) -> Self {
        Self { workspace, sandbox }
    }

    /// The confinement in force.
    pub fn sandbox(&self) -> &SandboxPolicy {
        &self.sandbox
    }
}

/// True for environment variables that hold credentials the model must not see: names ending
/// in `_API_KEY`, `_AUTH_TOKEN`, `_SECRET_KEY` or `_ACCESS_KEY` (case-insensitive), such as
/// `OPENAI_API_KEY` and `ANTHROPIC_API_KEY`. They are removed from the command's environment.
pub fn is_secret_env(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    ["_API_KEY", "_AUTH_TOKEN", "_SECRET_KEY", "_ACCESS_KEY"]
        .iter()
        .any(|s| upper.ends_with(s))
        || upper == "API_KEY"
}

/// The process group of a child spawned with `process_group(0)` (its leader's pid is the
/// group id), killed with SIGKILL when dropped or by [`kill`](Self::kill): nothing the child
/// started outlives a timeout or a cancellation. The Bash tool uses it, and so do the hooks of
/// `subagent-claude`.
#[derive(Debug)]
pub struct ProcessGroupGuard(Option<rustix::process::Pid>);

impl ProcessGroupGuard {
    /// The group `child` leads (none when it has already been reaped).
    pub fn of(child: &tokio::process::Child) -> Self {
        Self(
            child
                .id()
                .and_then(|id| i32::try_from(id).ok())
                .and_then(rustix::process::Pid::from_raw),
        )
    }

    /// Kills the group now (once; later calls and the drop do nothing).
    pub fn kill(&mut self) {
        if let Some(pgid) = self.0.take() {
            // ESRCH (the group is already gone) is fine.
            let _ = rustix::process::kill_process_group(pgid, rustix::process::Signal::KILL);
        }
    }
}

impl Drop for ProcessGroupGuard {
    fn drop(&mut self) {
        self.kill();
    }
}

enum Ending {
    Exited(std::process::ExitStatus),
    TimedOut,
    Cancelled,
}

/// Reads everything from `pipe`, keeping at most `keep_bytes` and counting the characters of the
/// rest (UTF-8 lead bytes).
async fn read_capped(
    mut pipe: impl tokio::io::AsyncRead + Unpin,
    keep_bytes: usize,
) -> (Vec<u8>, u64) {
    let mut kept = Vec::new();
    let mut dropped_chars: u64 = 0;
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        let n = match pipe.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let room = keep_bytes.saturating_sub(kept.len());
        let take = room.min(n);
        kept.extend_from_slice(&buf[..take]);
        dropped_chars += buf[take..n].iter().filter(|b| (**b & 0xC0) != 0x80).count() as u64;
    }
    (kept, dropped_chars)
}

/// The note explaining a refusal, when the output shows one and the command was confined.
fn confinement_note(child: &ConfinedChild, out: &str) -> Option<&'static str> {
    let refused = |signs: &[&str]| signs.iter().any(|s| out.contains(s));
    match child.mode() {
        // Landlock refuses with EACCES, a rename across its rules with EXDEV; the read-only
        // mounts with EROFS, a rename or removal of one with EBUSY (or EXDEV), and a reserved
        // name is an empty directory.
        SandboxMode::Namespaces => refused(&[
            "Permission denied",
            "Read-only file system",
            "Device or resource busy",
            "cross-device link",
            "Is a directory",
        ])
        .then_some(CONFINEMENT_NOTE),
        SandboxMode::Landlock => refused(&["Permission denied", "cross-device link"])
            .then_some(FALLBACK_CONFINEMENT_NOTE),
        _ => None,
    }
}

#[subagent_spi::async_trait]
impl subagent_spi::TypedTool for BashTool {
    type Input = BashInput;

    fn name(&self) -> &str {
        Self::NAME
    }

    fn description(&self) -> String {
        "Runs a shell command (sh -c) in the workspace root; returns its stdout and stderr (at \
         most 30000 characters); background processes end with it. Prefer Read, Glob and Grep for \
         files. Usually sandboxed: it may write in the workspace and $TMPDIR, not the project's \
         control files (subagents.toml, .mcp.json, .gitmodules, .vscode/, .idea/, \
         .claude/settings*.json, .claude/agents/, .claude/skills/, .claude/commands/, .git/hooks/, \
         .git/config); the output says when something was refused and why."
            .into()
    }

    fn effect(&self) -> ToolEffect {
        ToolEffect::Execute
    }

    async fn run(&self, input: BashInput, ctx: &TaskContext) -> Result<ToolOutput, ToolError> {
        if input.command.trim().is_empty() {
            return Err(ToolError::invalid(Self::NAME, "`command` is empty"));
        }
        let timeout = match input.timeout {
            None => DEFAULT_BASH_TIMEOUT,
            Some(0) => {
                return Err(ToolError::invalid(
                    Self::NAME,
                    "`timeout` must be at least 1 ms",
                ));
            }
            Some(ms) if Duration::from_millis(ms) > MAX_BASH_TIMEOUT => {
                return Err(ToolError::invalid(
                    Self::NAME,
                    format!(
                        "`timeout` {ms} ms is above the maximum of {} ms",
                        MAX_BASH_TIMEOUT.as_millis()
                    ),
                ));
            }
            Some(ms) => Duration::from_millis(ms),
        };

        // `exec 2>&1` first, so stderr shares the stdout pipe and the two stay in order.
        // The command's stderr pipe then carries only what the sandbox itself reports.
        let script = format!("exec 2>&1\n{}", input.command);
        let mut command = ConfinedCommand::new("sh");
        if self.sandbox.clean_env {
            command = command
                .env_clear()
                .envs(self.sandbox.environment(self.workspace.root()));
        } else {
            for (name, _) in std::env::vars_os() {
                if name.to_str().is_some_and(is_secret_env) {
                    command = command.env_remove(&name);
                }
            }
        }
        let mut child = command
            .arg("-c")
            .arg(script)
            .current_dir(self.workspace.root())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn(&self.sandbox, self.workspace.root())
            .await
            .map_err(|e| ToolError::failed(Self::NAME, e.to_string()))?;
        let (Some(stdout), Some(stderr)) =
            (child.child().stdout.take(), child.child().stderr.take())
        else {
            return Err(ToolError::failed(
                Self::NAME,
                "the command's output pipes are missing",
            ));
        };
        let reader = tokio::spawn(read_capped(stdout, MAX_BASH_OUTPUT_CHARS * 4));
        let setup_reader = tokio::spawn(read_capped(stderr, MAX_SETUP_MESSAGE_BYTES));
        let abort_reader = reader.abort_handle();
        let abort_setup = setup_reader.abort_handle();

        let ending = tokio::select! {
            status = child.wait() => match status {
                Ok(s) => Ending::Exited(s),
                Err(e) => {
                    abort_reader.abort();
                    abort_setup.abort();
                    return Err(ToolError::failed(Self::NAME, format!("waiting for the command failed: {e}")));
                }
            },
            () = tokio::time::sleep(timeout) => Ending::TimedOut,
            () = ctx.cancel().cancelled() => Ending::Cancelled,
        };
        // `wait` killed whatever was left (background jobs); on timeout or cancellation kill
        // everything now.
        if !matches!(ending, Ending::Exited(_)) {
            child.kill();
            let _ = child.wait().await;
        }
        if matches!(ending, Ending::Cancelled) {
            abort_reader.abort();
            abort_setup.abort();
            return Err(ToolError::Cancelled {
                tool: Self::NAME.to_string(),
            });
        }
        let drain = |h: tokio::task::JoinHandle<(Vec<u8>, u64)>| async move {
            let abort = h.abort_handle();
            match tokio::time::timeout(DRAIN_GRACE, h).await {
                Ok(Ok(r)) => r,
                // A process that left the group still holds the pipe, or the reader failed.
                _ => {
                    abort.abort();
                    (Vec::new(), 0)
                }
            }
        };
        let ((bytes, dropped), (setup, _)) = tokio::join!(drain(reader), drain(setup_reader));
        let text = String::from_utf8_lossy(&bytes);
        let (mut out, cut_in_kept) = crate::util::cut_chars(&text, MAX_BASH_OUTPUT_CHARS);
        let cut = cut_in_kept as u64 + dropped;
        if cut > 0 {
            out.push_str(&format!("\n[output truncated: {cut} characters cut]"));
        }
        let setup = String::from_utf8_lossy(&setup);
        let setup = setup.trim();
        if !setup.is_empty() {
            if !out.is_empty() && !out.ends_with('\n') {
                out.push('\n');
            }
            out.push_str(setup);
        }
        for note in child.notes() {
            out.push('\n');
            out.push_str(note);
        }
        if let Some(note) = confinement_note(&child, &out) {
            out.push('\n');
            out.push_str(note);
        }
        match ending {
            Ending::Exited(status) if status.success() => {
                if out.is_empty() {
                    out.push_str("(no output)");
                }
                Ok(ToolOutput::text(out))
            }
            Ending::Exited(status) => {
                if !out.is_empty() && !out.ends_with('\n') {
                    out.push('\n');
                }
                match status.code() {
                    Some(code) => out.push_str(&format!("[exit code {code}]")),
                    None => out.push_str("[the command was killed by a signal]"),
                }
                Ok(ToolOutput::error(out))
            }
            _ => {
                if !out.is_empty() && !out.ends_with('\n') {
                    out.push('\n');
                }
                out.push_str(&format!(
                    "[timed out after {} ms; the command and its child processes were killed]",
                    timeout.as_millis()
                ));
                Ok(ToolOutput::error(out))
            }
        }
    }
}
