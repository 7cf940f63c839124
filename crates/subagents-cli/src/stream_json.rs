//! `--output-format stream-json` (as Claude Code's `claude -p --output-format stream-json`): the
//! run as it happens on stdout, one JSON object per line, for programs that watch a run.
//!
//! Every progress event of the whole tree (the main agent, its children at every depth,
//! remote children as their peers report them) is one line:
//!
//! ```json
//! {"type":"progress","task_id":"task_…","parent_task_id":"main","agent":"leaf","depth":2,"event":"text_delta","text":"…"}
//! ```
//!
//! `event` is one of `started`, `turn`, `tool_call`, `tool_result`, `text_delta`, `status`,
//! `usage`, `session`, `finished` (the SPI's `ProgressKind`, snake case; its fields follow).
//! The last line is the outcome, as `--json` prints it, with `"type":"result"`. Lines never
//! hold a raw control, bidi or invisible format character (they are JSON `\u` escapes, read
//! back exactly), so watching the stream on a terminal is safe too. Events are never allowed
//! to block a run: when the reader falls more than the progress queue behind, events are
//! dropped, and a `{"type":"dropped","count":N}` line before the result says how many.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use serde::Serialize;
use subagents::spi::{ProgressEvent, ProgressSink, TaskOutcome};
use tokio::sync::mpsc;

use crate::error::CliError;
use crate::output::{OutcomeJson, escape_json_hazards};

/// How `run` and `task` print their result.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum OutputFormat {
    /// The answer on stdout, live progress on stderr.
    #[default]
    Text,
    /// One JSON object: the outcome with its usage tree (the same as `--json`).
    Json,
    /// One JSON object per line: every progress event of the tree, then the outcome.
    StreamJson,
}

impl OutputFormat {
    /// The format `--json` / `--output-format` ask for.
    pub(crate) fn of(json: bool, format: Option<OutputFormat>) -> Self {
        if json {
            Self::Json
        } else {
            format.unwrap_or_default()
        }
    }

    /// True when model replies should be streamed, so text deltas reach the watcher.
    pub(crate) fn wants_text_deltas(self, live_tree: bool) -> bool {
        self == Self::StreamJson || (self == Self::Text && live_tree)
    }
}

/// One line of the stream: `type` and the object it tags.
#[derive(Serialize)]
struct Line<'a, T: Serialize> {
    #[serde(rename = "type")]
    kind: &'static str,
    #[serde(flatten)]
    body: &'a T,
}

/// `body` as one terminal-safe JSON line tagged `"type": kind`.
fn line<T: Serialize>(kind: &'static str, body: &T) -> Result<String, CliError> {
    let text = serde_json::to_string(&Line { kind, body })
        .map_err(|e| CliError::Failed(format!("cannot encode JSON: {e}")))?;
    Ok(escape_json_hazards(text))
}

/// The line of one progress event.
pub(crate) fn event_line(e: &ProgressEvent) -> Result<String, CliError> {
    line("progress", e)
}

/// The last line: the outcome (`--json`'s object) tagged `"type":"result"`.
pub(crate) fn result_line(view: &OutcomeJson<'_>) -> Result<String, CliError> {
    line("result", view)
}

/// Prints the outcome in `format` (stream-json: its `result` line; else as
/// [`finish`](crate::output::finish) does) and turns its status into the exit code.
pub(crate) fn finish(
    outcome: &TaskOutcome,
    view: &OutcomeJson<'_>,
    format: OutputFormat,
) -> Result<(), CliError> {
    match format {
        OutputFormat::StreamJson => {
            let l = result_line(view)?;
            crate::output::outln!("{l}");
            crate::output::exit_for(outcome)
        }
        f => crate::output::finish(outcome, view, f == OutputFormat::Json),
    }
}

/// A progress sink feeding the stdout writer, counting what a full queue dropped.
struct StreamSink {
    tx: mpsc::Sender<ProgressEvent>,
    dropped: Arc<AtomicU64>,
}

impl ProgressSink for StreamSink {
    fn emit(&self, event: ProgressEvent) {
        if self.tx.try_send(event).is_err() {
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// Starts the stdout writer; returns the sink and a handle that, awaited, has written every
/// event the sink took (and, when some were dropped, the `dropped` line).
pub(crate) fn start() -> (Arc<dyn ProgressSink>, tokio::task::JoinHandle<()>) {
    let (tx, mut rx) = mpsc::channel(crate::progress::QUEUE);
    let dropped = Arc::new(AtomicU64::new(0));
    let sink = StreamSink {
        tx,
        dropped: dropped.clone(),
    };
    let handle = tokio::spawn(async move {
        while let Some(e) = rx.recv().await {
            match event_line(&e) {
                Ok(l) => crate::output::outln!("{l}"),
                Err(err) => tracing::debug!("progress event not written: {err:?}"),
            }
        }
        let n = dropped.load(Ordering::Relaxed);
        if n > 0 {
            crate::output::outln!("{{\"type\":\"dropped\",\"count\":{n}}}");
        }
    });
    (Arc::new(sink), handle)
}

#[cfg(test)]
mod tests {
    use super::*;
    use subagents::spi::ProgressKind;

    #[test]
    fn an_event_is_one_tagged_line_with_its_tree_position() {
        let e = ProgressEvent::new(
            "leaf",
            2,
            ProgressKind::TextDelta {
                text: "a\nb\u{1b}[2J\u{202e}".into(),
            },
        )
        .with_task_id("task_2")
        .with_parent_task_id("task_1");
        let l = event_line(&e).expect("encodes");
        assert!(!l.contains('\n'), "one line: {l}");
        for c in l.chars() {
            assert!(
                !subagents::claude::is_terminal_hazard(c),
                "raw {c:?} in {l}"
            );
        }
        let v: serde_json::Value = serde_json::from_str(&l).expect("JSON");
        assert_eq!(v["type"], "progress");
        assert_eq!(v["event"], "text_delta");
        assert_eq!(v["task_id"], "task_2");
        assert_eq!(v["parent_task_id"], "task_1");
        assert_eq!(v["agent"], "leaf");
        assert_eq!(v["depth"], 2);
        assert_eq!(v["text"], "a\nb\u{1b}[2J\u{202e}", "read back exactly");
    }

    #[test]
    fn the_result_line_is_the_json_outcome_tagged_result() {
        let o = TaskOutcome::completed("done\n");
        let view = OutcomeJson::new("main", "MAIN", &o, None);
        let l = result_line(&view).expect("encodes");
        assert!(!l.contains('\n'), "{l}");
        let v: serde_json::Value = serde_json::from_str(&l).expect("JSON");
        assert_eq!(v["type"], "result");
        assert_eq!(v["status"], "completed");
        assert_eq!(v["text"], "done\n");
        assert_eq!(v["agent"], "main");
    }

    #[test]
    fn json_wins_and_deltas_are_streamed_only_when_someone_shows_them() {
        assert_eq!(
            OutputFormat::of(true, Some(OutputFormat::StreamJson)),
            OutputFormat::Json
        );
        assert_eq!(OutputFormat::of(false, None), OutputFormat::Text);
        assert!(OutputFormat::StreamJson.wants_text_deltas(false));
        assert!(OutputFormat::Text.wants_text_deltas(true));
        assert!(!OutputFormat::Text.wants_text_deltas(false));
        assert!(!OutputFormat::Json.wants_text_deltas(true));
    }
}
