//! # subagent-workflow
//!
//! Workflows (work in progress).

mod caller;
mod engine;
mod error;
mod journal;
mod limits;
mod runner;

pub use caller::{AgentCaller, CallDone};
pub use error::{SCRIPT_NAME, WorkflowError};
pub use journal::{
    CallKind, CallRecord, CallState, Journal, JournalError, MEMORY_JOURNAL_RUNS, MemoryJournal,
    RunRecord, RunStatus, RunSummary,
};
pub use limits::WorkflowLimits;
pub use runner::{
    CONTINUE_PROMPT, CallCounts, PreparedRun, WORKFLOW_AGENT, WORKFLOW_KIND, WorkflowOutcome,
    Workflows,
};
