use std::fmt;

use derive_setters::Setters;
use serde::{Deserialize, Serialize};

/// How a subagent run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum TaskStatus {
    /// Still running (only seen for background tasks).
    Running,
    /// Finished with a final answer.
    Completed,
    /// The agent asks a question; continue with `resume` and the answer.
    NeedsInput,
    /// The agent reported failure.
    Failed,
    /// Cancelled by the caller.
    Cancelled,
    /// A turn, token or time limit stopped the run; the text is the last partial answer.
    LimitReached,
    /// The process running the task ended before the task did (a crash, a kill, a restart):
    /// the text is the partial output recorded by a durable ledger, and the session, when
    /// there is one, can be resumed. Only seen for background tasks read back after a restart.
    Interrupted,
}

impl TaskStatus {
    /// The snake_case name used on the wire and in the text shown to models.
    pub fn as_str(self) -> &'static str {
        match self {
            TaskStatus::Running => "running",
            TaskStatus::Completed => "completed",
            TaskStatus::NeedsInput => "needs_input",
            TaskStatus::Failed => "failed",
            TaskStatus::Cancelled => "cancelled",
            TaskStatus::LimitReached => "limit_reached",
            TaskStatus::Interrupted => "interrupted",
        }
    }

    /// True for every status but [`Running`](Self::Running).
    pub fn is_terminal(self) -> bool {
        !matches!(self, TaskStatus::Running)
    }
}

impl fmt::Display for TaskStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Resource use of one run (not counting its children).
///
/// Start from [`Usage::new`] (or `default()`) and set what you know, with the `with_*`
/// methods or by assigning fields.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, Setters)]
#[setters(prefix = "with_", strip_option)]
#[non_exhaustive]
pub struct Usage {
    /// Prompt tokens not read from the provider's cache (those written to it included; see
    /// [`TokenUsage`](crate::chat::TokenUsage)).
    #[setters(skip)] // set with `with_tokens`
    pub input_tokens: u64,
    /// Completion tokens.
    #[setters(skip)]
    pub output_tokens: u64,
    /// Prompt tokens read from the provider's cache (not part of `input_tokens`).
    #[setters(skip)] // set with `with_cache_tokens`
    pub cache_read_tokens: u64,
    /// Of `input_tokens`, those written to the provider's cache.
    #[setters(skip)]
    pub cache_creation_tokens: u64,
    /// Model turns taken.
    pub turns: u32,
    /// Wall-clock duration in milliseconds.
    pub duration_ms: u64,
    /// The model that did the work, when there was one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[setters(into)]
    pub model: Option<String>,
    /// True when the token counts are an estimate, not what the run reported: a remote run
    /// whose usage report was refused or partly malformed counts as at least
    /// [`BudgetLimits::remote_unreported_tokens`](crate::BudgetLimits::remote_unreported_tokens).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub estimated: bool,
}

impl Usage {
    /// Empty usage.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the input and output token counts (builder style).
    #[must_use]
    pub fn with_tokens(mut self, input: u64, output: u64) -> Self {
        self.input_tokens = input;
        self.output_tokens = output;
        self
    }

    /// Sets the cache read and cache creation token counts (builder style).
    #[must_use]
    pub fn with_cache_tokens(mut self, read: u64, creation: u64) -> Self {
        self.cache_read_tokens = read;
        self.cache_creation_tokens = creation;
        self
    }

    /// Input + output tokens.
    pub fn total_tokens(&self) -> u64 {
        self.input_tokens.saturating_add(self.output_tokens)
    }

    /// Adds another usage's counters to this one (the model and duration are kept).
    pub fn add_tokens(&mut self, other: &Usage) {
        // Saturating: counts reported by a remote peer can be anything.
        self.input_tokens = self.input_tokens.saturating_add(other.input_tokens);
        self.output_tokens = self.output_tokens.saturating_add(other.output_tokens);
        self.cache_read_tokens = self
            .cache_read_tokens
            .saturating_add(other.cache_read_tokens);
        self.cache_creation_tokens = self
            .cache_creation_tokens
            .saturating_add(other.cache_creation_tokens);
        self.turns = self.turns.saturating_add(other.turns);
    }
}

/// One node of a usage tree: a run and the runs it delegated to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Setters)]
#[setters(prefix = "with_", strip_option)]
#[non_exhaustive]
pub struct UsageNode {
    /// Agent name.
    #[setters(skip)]
    pub agent: String,
    /// Agent kind (`CLAUDE`, `A2A`...).
    #[setters(skip)]
    pub kind: String,
    /// Task id, when the run had one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[setters(into)]
    pub task_id: Option<String>,
    /// How the run ended.
    #[setters(skip)]
    pub status: TaskStatus,
    /// The run's own usage.
    #[setters(skip)]
    pub usage: Usage,
    /// Runs this one delegated to.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub children: Vec<UsageNode>,
    /// Why the run failed, for a [`TaskStatus::Failed`] run when its host knows: the error it
    /// ended with (e.g. `agent `worker` failed: model call failed on turn 1: ...`), so a
    /// caller can say which children failed and why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[setters(into)]
    pub error: Option<String>,
    /// The run's final text as its caller received it, at most [`MAX_NODE_ANSWER_BYTES`]
    /// (a longer one is cut, saying so), when the host recorded it (the `Task` tool does, for
    /// each child it waited for). `None` for the root of a tree (its text is the outcome's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[setters(skip)]
    pub answer: Option<String>,
}

/// The most bytes of a child's answer a [`UsageNode`] keeps ([`UsageNode::with_answer`]).
pub const MAX_NODE_ANSWER_BYTES: usize = 16 * 1024;

impl UsageNode {
    /// Records the run's final `text`, cut at [`MAX_NODE_ANSWER_BYTES`] (at a character
    /// boundary) with a note of the full size.
    ///
    /// ```
    /// use subagent_spi::{MAX_NODE_ANSWER_BYTES, TaskStatus, Usage, UsageNode};
    /// let node = |t: &str| UsageNode::new("a", "K", TaskStatus::Completed, Usage::new()).with_answer(t);
    /// assert_eq!(node("42").answer.as_deref(), Some("42"));
    /// let long = node(&"é".repeat(MAX_NODE_ANSWER_BYTES));
    /// let cut = long.answer.unwrap();
    /// assert!(cut.len() < MAX_NODE_ANSWER_BYTES + 64);
    /// assert!(cut.ends_with(&format!("[cut: the answer has {} bytes]", 2 * MAX_NODE_ANSWER_BYTES)));
    /// ```
    #[must_use]
    pub fn with_answer(mut self, text: &str) -> Self {
        self.answer = Some(if text.len() <= MAX_NODE_ANSWER_BYTES {
            text.to_string()
        } else {
            let mut end = MAX_NODE_ANSWER_BYTES;
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            format!(
                "{}… [cut: the answer has {} bytes]",
                &text[..end],
                text.len()
            )
        });
        self
    }

    /// A node with no task id and no children.
    pub fn new(
        agent: impl Into<String>,
        kind: impl Into<String>,
        status: TaskStatus,
        usage: Usage,
    ) -> Self {
        Self {
            agent: agent.into(),
            kind: kind.into(),
            task_id: None,
            status,
            usage,
            children: Vec::new(),
            error: None,
            answer: None,
        }
    }

    /// This node's usage plus every descendant's token counters.
    pub fn total(&self) -> Usage {
        let mut u = self.usage.clone();
        for c in &self.children {
            u.add_tokens(&c.total());
        }
        u
    }
}

/// What a subagent run returns to its caller: only the final text, never the transcript.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Setters)]
#[setters(prefix = "with_", strip_option)]
#[non_exhaustive]
pub struct TaskOutcome {
    /// The final answer (or the question, for [`TaskStatus::NeedsInput`], or the last partial
    /// text when a limit stopped the run).
    #[setters(skip)]
    pub text: String,
    /// How the run ended.
    #[setters(skip)] // `with_status` is a constructor
    pub status: TaskStatus,
    /// An id that `TaskCall::resume` accepts to continue this run, when the executor can resume.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[setters(rename = "with_session", into)]
    pub session_id: Option<String>,
    /// Which limit stopped the run, for [`TaskStatus::LimitReached`] (e.g. `max_turns=30`,
    /// on the wire as that text).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<crate::Limit>,
    /// This run's own usage. The caller's budget is charged what this and
    /// [`children`](Self::children) report when the run ends, less what the kind charged to it
    /// as it went (`subagent-core`'s `Budget`): a kind may charge as it goes or not at all, and
    /// every reported token and turn counts once either way.
    pub usage: Usage,
    /// Usage of the runs this one delegated to, so a parent can show a usage tree.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub children: Vec<UsageNode>,
    /// The structured result of a run asked for one
    /// ([`TaskCall::output_schema`](crate::TaskCall::output_schema)): the JSON value the agent
    /// ended with, valid under that schema ([`text`](Self::text) is then its compact JSON
    /// text). `None` for a run asked for text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured: Option<serde_json::Value>,
}

impl TaskOutcome {
    /// A completed outcome with the given text and empty usage.
    pub fn completed(text: impl Into<String>) -> Self {
        Self::with_status(text, TaskStatus::Completed)
    }

    /// An outcome with the given text and status and empty usage.
    pub fn with_status(text: impl Into<String>, status: TaskStatus) -> Self {
        Self {
            text: text.into(),
            status,
            session_id: None,
            limit: None,
            usage: Usage::default(),
            children: Vec::new(),
            structured: None,
        }
    }

    /// The usage tree rooted at this run.
    pub fn usage_tree(&self, agent: &str, kind: &str, task_id: Option<&str>) -> UsageNode {
        UsageNode {
            agent: agent.to_string(),
            kind: kind.to_string(),
            task_id: task_id.map(str::to_string),
            status: self.status,
            usage: self.usage.clone(),
            children: self.children.clone(),
            error: None,
            answer: None,
        }
    }
}
