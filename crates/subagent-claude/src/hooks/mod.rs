//! Claude Code hooks: shell commands that run at points of an agent's life, configured in an
//! agent's frontmatter (`hooks:`) and in `.claude/settings.json` (`"hooks"`).
//!
//! Supported events (Claude Code's names and semantics):
//!
//! | event | when | matcher on | may |
//! |---|---|---|---|
//! | `PreToolUse` | before a tool call | tool name | block it (exit 2, or `permissionDecision: "deny"`), rewrite its input (`updatedInput`), add context |
//! | `PostToolUse` | after a successful call | tool name | feed text back to the model (exit 2 stderr, `decision: "block"` + `reason`, `additionalContext`) |
//! | `PostToolUseFailure` | after a failed call | tool name | add context |
//! | `SubagentStart` | before a subagent runs | agent name | add context to its system prompt |
//! | `SubagentStop` | when a subagent is about to finish | agent name | make it continue (exit 2 stderr, or `decision: "block"` + `reason`) |
//!
//! In an agent's frontmatter, `PreToolUse`/`PostToolUse`/`PostToolUseFailure` apply to that
//! agent's own tool calls, `Stop` (and a matcher-less `SubagentStop` written as `Stop`) runs
//! when that agent finishes, and `SubagentStart`/`SubagentStop` apply to the subagents it
//! starts. Settings hooks apply to every Markdown agent (and to the main agent's tool calls).
//!
//! Each command gets the event as JSON on stdin (`session_id`, `hook_event_name`, `cwd`,
//! `permission_mode`, `tool_name`, `tool_input`, `tool_response`, `agent_id`, `agent_type`,
//! `last_assistant_message`, `stop_hook_active`...), runs under `sh -c` in the run's workspace
//! with a scrubbed environment (`PATH`, `HOME`, `LANG`, `TERM`, `USER`, `TMPDIR` and
//! `CLAUDE_PROJECT_DIR` only, so API keys never reach it) in a process group of its own (a PID
//! namespace of its own under the namespace sandbox), and is killed, with everything it
//! started, after its `timeout` (seconds, default 60, at most 600). Exit code 0 reads JSON from
//! stdout; 2 is a blocking error whose stderr goes to the model; anything else is a
//! non-blocking error logged as a warning. Matching hooks of one event run concurrently;
//! identical commands run once.
//!
//! Hooks from agent files and from the workspace's settings files run confined like the `Bash`
//! tool of the run (see [`HookRunner::with_sandbox`]): their input is model-controlled and
//! their files can be in reach of a model. Only the user's own settings file
//! ([`Hooks::from_settings_files_with_user`]) gives unconfined hooks, as in Claude Code, and
//! only while the workspace files such a hook names are as they were when the session started
//! ([`Hooks::pin_workspace_scripts`]): a hook running `.claude/hooks/fmt.sh` that a model
//! rewrote runs confined.

use std::fmt;
use std::time::Duration;

mod config;
mod runner;
mod tool;

pub use config::*;
pub use runner::*;
pub(crate) use tool::*;

/// The timeout of a hook that sets none: 60 seconds, as in Claude Code.
pub const DEFAULT_HOOK_TIMEOUT: Duration = Duration::from_secs(60);
/// The longest timeout a hook may set (longer ones are cut to it, with a warning).
pub const MAX_HOOK_TIMEOUT: Duration = Duration::from_secs(600);
/// Command hooks kept from one configuration (an agent file or a settings file); the rest are
/// dropped with a warning.
pub const MAX_HOOKS: usize = 64;
/// Bytes of a hook's stdout, and of its stderr, that are read; the rest is discarded.
pub const MAX_HOOK_OUTPUT_BYTES: usize = 32 * 1024;
/// The longest hook command accepted, in bytes.
pub const MAX_HOOK_COMMAND_BYTES: usize = 16 * 1024;
/// The longest matcher accepted, in bytes (regular expressions are also size-limited).
pub const MAX_MATCHER_BYTES: usize = 1024;
/// How many times `SubagentStop` hooks may send an agent back to work before it stops anyway.
pub const MAX_STOP_CONTINUATIONS: u32 = 3;
/// The largest settings file read, in bytes.
pub const MAX_SETTINGS_BYTES: u64 = 1024 * 1024;

/// The environment variables a hook command inherits (plus `CLAUDE_PROJECT_DIR`).
const KEPT_ENV: [&str; 6] = ["PATH", "HOME", "LANG", "TERM", "USER", "TMPDIR"];

/// After a hook exits, how long its output pipes may stay open (a leftover background process)
/// before they are abandoned.
const DRAIN_GRACE: Duration = Duration::from_secs(2);

/// The hook events this crate runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum HookEvent {
    /// Before a tool call; may block it.
    PreToolUse,
    /// After a successful tool call.
    PostToolUse,
    /// After a failed tool call.
    PostToolUseFailure,
    /// Before a subagent runs.
    SubagentStart,
    /// When a subagent is about to finish; may make it continue.
    SubagentStop,
}

impl HookEvent {
    /// Every supported event.
    pub const ALL: [HookEvent; 5] = [
        HookEvent::PreToolUse,
        HookEvent::PostToolUse,
        HookEvent::PostToolUseFailure,
        HookEvent::SubagentStart,
        HookEvent::SubagentStop,
    ];

    /// Claude Code's name of the event.
    pub fn as_str(self) -> &'static str {
        match self {
            HookEvent::PreToolUse => "PreToolUse",
            HookEvent::PostToolUse => "PostToolUse",
            HookEvent::PostToolUseFailure => "PostToolUseFailure",
            HookEvent::SubagentStart => "SubagentStart",
            HookEvent::SubagentStop => "SubagentStop",
        }
    }

    /// The event of that name (exact, as Claude Code spells it).
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|e| e.as_str() == name)
    }
}

impl fmt::Display for HookEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests;
