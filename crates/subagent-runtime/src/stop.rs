//! How a run's turn ends: waiting on the model or a tool under the run's cancellation and
//! deadline ([`guarded`]), and the reasons a run stops without failing ([`Stop`]).

use std::future::Future;
use std::time::Instant;

use subagent_spi::{CancellationToken, Limit, TaskStatus};

/// The text that starts a run's outcome when the model ended it without an answer (its final
/// reply had neither text nor tool calls); the outcome's status is then
/// [`TaskStatus::Failed`].
pub const NO_ANSWER_PREFIX: &str = "no answer:";

pub(crate) enum Guarded<T> {
    Done(T),
    Cancelled,
    Deadline,
}

/// Runs `fut` until it finishes, the token is cancelled or the deadline passes.
pub(crate) async fn guarded<F: Future>(
    fut: F,
    cancel: &CancellationToken,
    deadline: Option<Instant>,
) -> Guarded<F::Output> {
    let expiry = async {
        match deadline {
            Some(d) => tokio::time::sleep_until(tokio::time::Instant::from_std(d)).await,
            None => std::future::pending::<()>().await,
        }
    };
    // Cancellation first; then the work itself, so a result that is ready (or a first batch of
    // streamed text) is not lost to a deadline that passed while it was being produced.
    tokio::select! {
        biased;
        () = cancel.cancelled() => Guarded::Cancelled,
        out = fut => Guarded::Done(out),
        () = expiry => Guarded::Deadline,
    }
}

/// How the loop ended (when it did not fail).
pub(crate) struct Stop {
    pub(crate) status: TaskStatus,
    pub(crate) limit: Option<Limit>,
    /// Streamed text of an interrupted reply, preferred over the last complete text.
    pub(crate) partial: Option<String>,
    /// Why unanswered tool calls were not run.
    pub(crate) reason: &'static str,
}

impl Stop {
    pub(crate) fn completed() -> Self {
        Self {
            status: TaskStatus::Completed,
            limit: None,
            partial: None,
            reason: "",
        }
    }

    pub(crate) fn cancelled(partial: Option<String>) -> Self {
        Self {
            status: TaskStatus::Cancelled,
            limit: None,
            partial,
            reason: "the run was cancelled",
        }
    }

    /// The model ended the run with a reply that has neither text nor tool calls.
    pub(crate) fn no_answer(turn: u32, reason: &subagent_spi::chat::StopReason) -> Self {
        use subagent_spi::chat::StopReason;
        let reason = match reason {
            StopReason::EndTurn => "end_turn",
            StopReason::ToolUse => "tool_use",
            StopReason::MaxTokens => "max_tokens",
            StopReason::StopSequence => "stop_sequence",
            StopReason::ContentFilter => "content_filter",
            StopReason::Other(other) => other.as_str(),
            _ => "other",
        };
        Self {
            status: TaskStatus::Failed,
            limit: None,
            partial: Some(format!(
                "{NO_ANSWER_PREFIX} the model's final reply (turn {turn}, stop reason `{reason}`) \
                 was empty: no text and no tool call"
            )),
            reason: "the run ended without an answer",
        }
    }

    /// A typed run that never produced a valid result (see `crate::structured`).
    pub(crate) fn invalid_output(text: String) -> Self {
        Self {
            status: TaskStatus::Failed,
            limit: None,
            partial: Some(text),
            reason: "the run ended without a valid result",
        }
    }

    pub(crate) fn limit(limit: Limit, partial: Option<String>) -> Self {
        Self {
            status: TaskStatus::LimitReached,
            limit: Some(limit),
            partial,
            reason: "the run stopped at a limit",
        }
    }
}
