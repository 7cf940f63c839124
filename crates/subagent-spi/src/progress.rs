use derive_setters::Setters;
use serde::{Deserialize, Serialize};

use crate::{TaskStatus, Usage};

/// One progress report from a running subagent. Every kind reports in this one shape, so a UI
/// can show a tree of local, remote and MCP agents alike.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Setters)]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct ProgressEvent {
    /// The task id of the run reporting, when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    /// The parent task id, so events can be placed in a tree.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_task_id: Option<String>,
    /// Agent name.
    #[setters(skip)]
    pub agent: String,
    /// Nesting depth (the main agent's children are at depth 1).
    #[setters(skip)]
    pub depth: u32,
    /// What happened.
    #[serde(flatten)]
    #[setters(skip)]
    pub kind: ProgressKind,
}

impl ProgressEvent {
    /// An event with no task ids (see [`TaskContext::emit`](crate::TaskContext::emit), which
    /// stamps them).
    pub fn new(agent: impl Into<String>, depth: u32, kind: ProgressKind) -> Self {
        Self {
            task_id: None,
            parent_task_id: None,
            agent: agent.into(),
            depth,
            kind,
        }
    }
}

/// What a [`ProgressEvent`] reports.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
#[non_exhaustive]
pub enum ProgressKind {
    /// The run started.
    Started {
        /// The task's short description.
        description: String,
    },
    /// A model turn started.
    Turn {
        /// 1-based turn number.
        turn: u32,
    },
    /// The agent called a tool.
    ToolCall {
        /// Tool call id.
        id: String,
        /// Tool name.
        name: String,
        /// Tool input.
        input: serde_json::Value,
    },
    /// A tool returned.
    ToolResult {
        /// Tool call id.
        id: String,
        /// Tool name.
        name: String,
        /// True when the tool failed.
        is_error: bool,
        /// The start of the output (at most a few hundred characters).
        preview: String,
    },
    /// A piece of the agent's answer as it is generated.
    TextDelta {
        /// The new text.
        text: String,
    },
    /// A free-form status line (e.g. a remote agent's status message).
    Status {
        /// The status text.
        message: String,
    },
    /// Token usage so far.
    Usage {
        /// Usage so far.
        usage: Usage,
    },
    /// The run ended.
    Finished {
        /// How it ended.
        status: TaskStatus,
        /// Its usage.
        usage: Usage,
    },
    // New variants go below this line, so the ones released keep their places (the semver
    // gate checks discriminants).
    /// The run's session id, announced when the run starts (before it ends), so a durable
    /// ledger can point at the transcript of a run that never finishes. Emitted by runtimes that
    /// keep transcripts; the outcome's `session_id` is the same id.
    Session {
        /// The id `TaskCall::resume` accepts.
        session_id: String,
    },
    /// The run's context neared its model's window and was compacted: old large tool outputs
    /// trimmed and/or older turns summarised into one message, for the requests that follow
    /// (the stored transcript keeps everything). Token counts are the runtime's estimates of
    /// the next request before and after.
    Compacted {
        /// Estimated tokens of the request before compaction.
        tokens_before: u64,
        /// Estimated tokens after compaction.
        tokens_after: u64,
        /// Tool outputs replaced by a short placeholder.
        trimmed_outputs: u32,
        /// Messages folded into the summary (0 when trimming was enough).
        summarized_messages: u32,
    },
}
