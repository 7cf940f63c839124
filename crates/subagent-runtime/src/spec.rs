//! What one run of the agent loop needs.

use std::fmt;
use std::sync::Arc;
use std::time::Instant;

use subagent_spi::{ChatModel, Effort, Tool};

/// Everything one [`AgentRuntime::run`](crate::AgentRuntime::run) needs besides the
/// [`TaskContext`](subagent_spi::TaskContext).
///
/// Build it with [`RunSpec::new`] (a fresh prompt) or [`RunSpec::resume`] and the `with_*`
/// methods, or as a struct literal.
#[derive(Clone)]
pub struct RunSpec {
    /// The system prompt. On resume, `None` keeps the stored transcript's system prompt.
    pub system: Option<String>,
    /// A fresh prompt, or a stored session to continue.
    pub input: RunInput,
    /// The tools the model may call (already filtered for this agent). Names must be unique;
    /// when two share a name the first wins.
    pub tools: Vec<Arc<dyn Tool>>,
    /// The model to call.
    pub model: Arc<dyn ChatModel>,
    /// Sent as [`ChatRequest::model`](subagent_spi::chat::ChatRequest::model); `None` lets the
    /// provider use its configured model.
    pub model_name: Option<String>,
    /// Turn, token, time and output-size limits.
    pub limits: Limits,
    /// Call the model with `chat_stream` and report text deltas as progress events.
    pub stream: bool,
    /// Sent as [`ChatRequest::effort`](subagent_spi::chat::ChatRequest::effort) with each
    /// request; `None` leaves reasoning to the provider's default.
    pub effort: Option<Effort>,
}

impl fmt::Debug for RunSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RunSpec")
            .field("system", &self.system)
            .field("input", &self.input)
            .field(
                "tools",
                &self.tools.iter().map(|t| t.name()).collect::<Vec<_>>(),
            )
            .field("model", &self.model.model_name())
            .field("model_name", &self.model_name)
            .field("limits", &self.limits)
            .field("stream", &self.stream)
            .field("effort", &self.effort)
            .finish()
    }
}

impl RunSpec {
    /// A run of `prompt` on a fresh message list, with no system prompt, no tools, default
    /// limits and no streaming.
    pub fn new(model: Arc<dyn ChatModel>, prompt: impl Into<String>) -> Self {
        Self {
            system: None,
            input: RunInput::Prompt(prompt.into()),
            tools: Vec::new(),
            model,
            model_name: None,
            limits: Limits::default(),
            stream: false,
            effort: None,
        }
    }

    /// A run that continues the stored session `session_id` with `prompt` as the next user
    /// message.
    pub fn resume(
        model: Arc<dyn ChatModel>,
        session_id: impl Into<String>,
        prompt: impl Into<String>,
    ) -> Self {
        Self {
            input: RunInput::Resume {
                session_id: session_id.into(),
                prompt: prompt.into(),
            },
            ..Self::new(model, String::new())
        }
    }

    /// Sets the system prompt (builder style).
    #[must_use]
    pub fn with_system(mut self, system: impl Into<String>) -> Self {
        self.system = Some(system.into());
        self
    }

    /// Sets the tools (builder style).
    #[must_use]
    pub fn with_tools(mut self, tools: Vec<Arc<dyn Tool>>) -> Self {
        self.tools = tools;
        self
    }

    /// Sets the model id sent with each request (builder style).
    #[must_use]
    pub fn with_model_name(mut self, name: impl Into<String>) -> Self {
        self.model_name = Some(name.into());
        self
    }

    /// Sets the limits (builder style).
    #[must_use]
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Turns streaming on or off (builder style).
    #[must_use]
    pub fn streaming(mut self, stream: bool) -> Self {
        self.stream = stream;
        self
    }

    /// Sets (or clears) the reasoning effort sent with each request (builder style).
    #[must_use]
    pub fn with_effort(mut self, effort: Option<Effort>) -> Self {
        self.effort = effort;
        self
    }
}

/// Where a run starts from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunInput {
    /// A fresh message list holding this one user message.
    Prompt(String),
    /// The transcript stored under `session_id`, plus `prompt` as a new user message. The
    /// continued transcript is saved back under the same id.
    Resume {
        /// The id from an earlier [`TaskOutcome::session_id`](subagent_spi::TaskOutcome::session_id).
        session_id: String,
        /// The next user message.
        prompt: String,
    },
}

impl RunInput {
    /// The user message this run adds.
    pub fn prompt(&self) -> &str {
        match self {
            RunInput::Prompt(p) => p,
            RunInput::Resume { prompt, .. } => prompt,
        }
    }
}

/// Bounds on one run. The context's own limits
/// ([`TaskContext::max_turns`](subagent_spi::TaskContext::max_turns), `max_tokens`, `deadline`)
/// also apply: the smaller (earlier) of the two wins.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// Maximum model calls in this run (default 30). A run that would need one more stops
    /// with [`TaskStatus::LimitReached`](subagent_spi::TaskStatus::LimitReached) and
    /// `limit = "max_turns=N"`. `0` stops before the first call.
    pub max_turns: u32,
    /// Token budget (input + output tokens summed over the run's turns); checked after each
    /// model call, reported as `max_tokens=N`.
    pub max_tokens: Option<u64>,
    /// A point in time after which the run stops (in-flight model calls and tools are
    /// interrupted), reported as `deadline`.
    pub deadline: Option<Instant>,
    /// Tool output longer than this many characters is cut, with a marker saying how many
    /// characters were cut (default 30,000).
    pub max_tool_output_chars: usize,
}

impl Limits {
    /// The default number of turns.
    pub const DEFAULT_MAX_TURNS: u32 = 30;
    /// The default cap on one tool result, in characters.
    pub const DEFAULT_MAX_TOOL_OUTPUT_CHARS: usize = 30_000;

    /// Sets `max_turns` (builder style).
    #[must_use]
    pub fn with_max_turns(mut self, n: u32) -> Self {
        self.max_turns = n;
        self
    }

    /// Sets the token budget (builder style).
    #[must_use]
    pub fn with_max_tokens(mut self, n: u64) -> Self {
        self.max_tokens = Some(n);
        self
    }

    /// Sets the deadline (builder style).
    #[must_use]
    pub fn with_deadline(mut self, deadline: Instant) -> Self {
        self.deadline = Some(deadline);
        self
    }

    /// Sets the tool output cap (builder style).
    #[must_use]
    pub fn with_max_tool_output_chars(mut self, n: usize) -> Self {
        self.max_tool_output_chars = n;
        self
    }
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_turns: Self::DEFAULT_MAX_TURNS,
            max_tokens: None,
            deadline: None,
            max_tool_output_chars: Self::DEFAULT_MAX_TOOL_OUTPUT_CHARS,
        }
    }
}
