//! The errors of a workflow run.

use crate::journal::JournalError;

/// The file name scripts are reported under (`workflow.js:LINE: …`).
pub const SCRIPT_NAME: &str = "workflow.js";

/// Why a workflow run stopped without a result, or could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WorkflowError {
    /// The script threw (or failed to parse) and nothing caught it.
    #[error("{}{message}", line.map(|l| format!("{SCRIPT_NAME}:{l}: ")).unwrap_or_default())]
    Script {
        /// The exception, e.g. `ReferenceError: foo is not defined`.
        message: String,
        /// The script's line, when the engine says.
        line: Option<u32>,
    },
    /// A limit of [`WorkflowLimits`](crate::WorkflowLimits) was crossed.
    #[error("workflow limit reached: {limit} ({detail})")]
    Limit {
        /// The limit and its value, e.g. `max_steps=200000`.
        limit: String,
        /// What crossed it.
        detail: String,
    },
    /// On resume, the script made another call at a position the journal holds, or did not
    /// make a call the journal holds a result for: the journal cannot be reused from there.
    #[error("the resume stopped at call #{position} (agent `{agent}`): {reason}")]
    Diverged {
        /// The call's position (its order among the run's calls).
        position: u32,
        /// The agent the journal names at that position.
        agent: String,
        /// What differs.
        reason: String,
    },
    /// The journal could not be read or written; nothing more runs (a call is never started
    /// before its record is written).
    #[error("workflow journal: {0}")]
    Journal(#[source] JournalError),
    /// No run of that id in the journal.
    #[error("no workflow run `{0}` in the store")]
    UnknownRun(String),
    /// The run was cancelled (its context's token); calls in flight were cancelled and stay
    /// unfinished in the journal, so a resume runs them again.
    #[error("the workflow was cancelled")]
    Cancelled,
    /// The script or its arguments were refused before running (too large, not JSON).
    #[error("invalid workflow: {0}")]
    Invalid(String),
    /// The script engine could not be set up.
    #[error("the script engine failed: {0}")]
    Engine(String),
}

impl WorkflowError {
    /// A short machine name of the error's kind (`script`, `limit`, `diverged`, `journal`,
    /// `unknown_run`, `cancelled`, `invalid`, `engine`), for JSON output.
    pub fn kind(&self) -> &'static str {
        match self {
            WorkflowError::Script { .. } => "script",
            WorkflowError::Limit { .. } => "limit",
            WorkflowError::Diverged { .. } => "diverged",
            WorkflowError::Journal(_) => "journal",
            WorkflowError::UnknownRun(_) => "unknown_run",
            WorkflowError::Cancelled => "cancelled",
            WorkflowError::Invalid(_) => "invalid",
            WorkflowError::Engine(_) => "engine",
        }
    }

    pub(crate) fn limit(limit: impl Into<String>, detail: impl Into<String>) -> Self {
        WorkflowError::Limit {
            limit: limit.into(),
            detail: detail.into(),
        }
    }
}
