//! Printing outcomes (text or JSON) and mapping their status to exit codes.

use serde::Serialize;
use subagents::spi::{TaskOutcome, TaskStatus, UsageNode};

use crate::error::CliError;

/// The machine-readable outcome printed by `--json`.
#[derive(Debug, Serialize)]
pub(crate) struct OutcomeJson<'a> {
    /// The agent that answered.
    pub agent: &'a str,
    /// Its kind.
    pub kind: &'a str,
    /// How it ended.
    pub status: TaskStatus,
    /// The final text.
    pub text: &'a str,
    /// The id `resume` accepts.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_id: Option<&'a str>,
    /// The limit that stopped the run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limit: Option<&'a str>,
    /// The task id, for background runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task_id: Option<&'a str>,
    /// Usage of this run and every subagent it delegated to.
    pub usage: UsageNode,
}

impl<'a> OutcomeJson<'a> {
    /// Builds the JSON view of an outcome.
    pub(crate) fn new(
        agent: &'a str,
        kind: &'a str,
        o: &'a TaskOutcome,
        task_id: Option<&'a str>,
    ) -> Self {
        Self {
            agent,
            kind,
            status: o.status,
            text: &o.text,
            session_id: o.session_id.as_deref(),
            limit: o.limit.as_deref(),
            task_id,
            usage: o.usage_tree(agent, kind, task_id),
        }
    }
}

/// Prints the outcome (its text, or the JSON) and turns its status into the exit code.
pub(crate) fn finish(
    outcome: &TaskOutcome,
    json: Option<&OutcomeJson<'_>>,
) -> Result<(), CliError> {
    match json {
        Some(j) => {
            let text = serde_json::to_string_pretty(j)
                .map_err(|e| CliError::Failed(format!("cannot encode JSON: {e}")))?;
            crate::output::outln!("{text}");
        }
        None => crate::output::outln!("{}", outcome.text),
    }
    match outcome.status {
        TaskStatus::Completed => Ok(()),
        TaskStatus::Failed => Err(CliError::Failed("the agent failed".into())),
        TaskStatus::NeedsInput => Err(CliError::Incomplete(format!(
            "the agent needs input{}",
            outcome
                .session_id
                .as_deref()
                .map(|s| format!(" (session {s})"))
                .unwrap_or_default()
        ))),
        other => Err(CliError::Incomplete(format!(
            "the agent ended {other}{}",
            outcome
                .limit
                .as_deref()
                .map(|l| format!(" ({l})"))
                .unwrap_or_default()
        ))),
    }
}

/// Text safe to print on a terminal: control characters (ESC, BEL, newlines...) and bidi
/// controls are shown as `\u{..}` escapes instead of acting on the terminal (one
/// implementation, the Markdown kind's).
pub(crate) use subagents::claude::escape_for_terminal as terminal_safe;

/// Writes one line to stdout. A closed pipe (`subagents agents list | head -1`) ends the
/// process quietly with status 0 instead of a panic: the reader has what it wanted.
pub(crate) fn write_line(args: std::fmt::Arguments<'_>) {
    use std::io::Write as _;
    let mut out = std::io::stdout().lock();
    if let Err(e) = out.write_fmt(args).and_then(|()| out.write_all(b"\n")) {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        eprintln!("subagents: cannot write to stdout: {e}");
        std::process::exit(1);
    }
}

/// `println!` through [`write_line`]: no panic on a closed pipe.
macro_rules! outln {
    ($($arg:tt)*) => {
        $crate::output::write_line(format_args!($($arg)*))
    };
}
pub(crate) use outln;

#[cfg(test)]
mod tests {
    use super::terminal_safe;

    #[test]
    fn control_and_bidi_characters_are_escaped() {
        assert_eq!(terminal_safe("plain-name"), "plain-name");
        assert_eq!(terminal_safe("a\u{1b}[31mb"), "a\\u{1b}[31mb");
        assert_eq!(terminal_safe("x\u{7}\ny"), "x\\u{7}\\u{a}y");
        assert_eq!(terminal_safe("ab\u{202e}cd"), "ab\\u{202e}cd");
    }
}
