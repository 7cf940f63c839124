//! What one run of the agent loop needs.

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use derive_setters::Setters;
use subagent_schema::OutputSchema;
use subagent_spi::chat::ChatMessage;
use subagent_spi::{ChatModel, Effort, Tool};

/// Everything one [`AgentRuntime::run`](crate::AgentRuntime::run) needs besides the
/// [`TaskContext`](subagent_spi::TaskContext).
///
/// Build it with [`RunSpec::new`] (a fresh prompt) or [`RunSpec::resume`] and the `with_*`
/// methods, or as a struct literal.
#[derive(Clone, Setters)]
#[setters(prefix = "with_")]
pub struct RunSpec {
    /// The system prompt. On resume, `None` keeps the stored transcript's system prompt.
    #[setters(strip_option, into)]
    pub system: Option<String>,
    /// A fresh prompt, or a stored session to continue.
    #[setters(skip)]
    pub input: RunInput,
    /// The tools the model may call (already filtered for this agent). Names must be unique;
    /// when two share a name the first wins.
    pub tools: Vec<Arc<dyn Tool>>,
    /// The model to call.
    #[setters(skip)]
    pub model: Arc<dyn ChatModel>,
    /// Sent as [`ChatRequest::model`](subagent_spi::chat::ChatRequest::model); `None` lets the
    /// provider use its configured model.
    #[setters(strip_option, into)]
    pub model_name: Option<String>,
    /// Turn, token, time and output-size limits.
    pub limits: Limits,
    /// Call the model with `chat_stream` and report text deltas as progress events.
    #[setters(rename = "streaming")]
    pub stream: bool,
    /// Sent as [`ChatRequest::effort`](subagent_spi::chat::ChatRequest::effort) with each
    /// request; `None` leaves reasoning to the provider's default.
    pub effort: Option<Effort>,
    /// A typed result: the run ends with a JSON value valid under this schema, given to the
    /// final `StructuredOutput` tool (or as JSON text), and returns it as
    /// [`TaskOutcome::structured`](subagent_spi::TaskOutcome::structured). Invalid values are
    /// sent back to the model, at most the schema's retries times; then the run fails.
    #[setters(strip_option)]
    pub output_schema: Option<OutputSchema>,
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
            .field("output_schema", &self.output_schema)
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
            output_schema: None,
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
}

/// Where a run starts from.
#[derive(Debug, Clone, PartialEq)]
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
    /// A new session starting from these messages, sent as they are (a fork: the caller's
    /// conversation, answers to its pending calls, and the fork's task as the last user
    /// message). The transcript is saved under a fresh session id.
    Messages(Vec<ChatMessage>),
}

// Message equality is reflexive (JSON numbers are never NaN), as the derive assumed before
// `Messages` came.
impl Eq for RunInput {}

impl RunInput {
    /// The user message this run adds.
    pub fn prompt(&self) -> &str {
        match self {
            RunInput::Prompt(p) => p,
            RunInput::Resume { prompt, .. } => prompt,
            RunInput::Messages(messages) => messages
                .iter()
                .rev()
                .find_map(|m| match m {
                    ChatMessage::User { content } => Some(content.as_str()),
                    _ => None,
                })
                .unwrap_or(""),
        }
    }
}

/// Bounds on one run. The context's own limits
/// ([`TaskContext::max_turns`](subagent_spi::TaskContext::max_turns), `max_tokens`, `deadline`)
/// also apply: the smaller (earlier) of the two wins.
#[derive(Debug, Clone, PartialEq, Eq, Setters)]
#[setters(prefix = "with_", strip_option)]
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
    /// The model's context window in tokens, which requests are compacted to stay below (see
    /// [`AgentRuntime`](crate::AgentRuntime), "Long runs compact"). `None` (the default): the
    /// window of the model's name in [`MODEL_WINDOWS`](crate::MODEL_WINDOWS), else
    /// [`DEFAULT_CONTEXT_WINDOW`](crate::DEFAULT_CONTEXT_WINDOW).
    pub context_window: Option<u64>,
    /// A run whose model stream and tools make no progress this long stops with
    /// [`TaskStatus::LimitReached`](subagent_spi::TaskStatus::LimitReached) and a limit starting
    /// `stalled` that says where (default 10 minutes; `None`: never).
    pub stall_timeout: Option<Duration>,
}

impl Limits {
    /// The default number of turns.
    pub const DEFAULT_MAX_TURNS: u32 = 30;
    /// The default cap on one tool result, in characters.
    pub const DEFAULT_MAX_TOOL_OUTPUT_CHARS: usize = 30_000;
    /// The default stall time: 10 minutes.
    pub const DEFAULT_STALL_TIMEOUT: Duration = Duration::from_secs(600);
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_turns: Self::DEFAULT_MAX_TURNS,
            max_tokens: None,
            deadline: None,
            max_tool_output_chars: Self::DEFAULT_MAX_TOOL_OUTPUT_CHARS,
            context_window: None,
            stall_timeout: Some(Self::DEFAULT_STALL_TIMEOUT),
        }
    }
}
