//! The chat-model contract: records for messages, tool calls and usage, and the [`ChatModel`]
//! trait LLM providers implement.

use async_trait::async_trait;
use derive_setters::Setters;
use serde::{Deserialize, Serialize};

use crate::{ModelError, ToolSpec};

/// One message of a conversation.
///
/// Deliberately exhaustive (unlike the records): every provider must encode every message, so
/// a new kind of message is a breaking change for providers, made only in a major release.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum ChatMessage {
    /// A system message (most providers take only one, first).
    System {
        /// Text.
        content: String,
    },
    /// A user message.
    User {
        /// Text.
        content: String,
    },
    /// A model reply, possibly requesting tool calls.
    Assistant {
        /// Text (may be empty when the reply is only tool calls).
        content: String,
        /// Tool calls requested, in order.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ToolCall>,
    },
    /// The result of one tool call.
    Tool {
        /// The id of the call this answers.
        call_id: String,
        /// The tool's name.
        name: String,
        /// The result text.
        content: String,
        /// True when the tool failed.
        #[serde(default)]
        is_error: bool,
    },
}

impl ChatMessage {
    /// A user message.
    pub fn user(content: impl Into<String>) -> Self {
        Self::User {
            content: content.into(),
        }
    }

    /// A system message.
    pub fn system(content: impl Into<String>) -> Self {
        Self::System {
            content: content.into(),
        }
    }

    /// An assistant message with text only.
    pub fn assistant(content: impl Into<String>) -> Self {
        Self::Assistant {
            content: content.into(),
            tool_calls: Vec::new(),
        }
    }

    /// An assistant message requesting tool calls.
    pub fn assistant_with_tools(content: impl Into<String>, tool_calls: Vec<ToolCall>) -> Self {
        Self::Assistant {
            content: content.into(),
            tool_calls,
        }
    }

    /// The result of one tool call.
    pub fn tool_result(
        call_id: impl Into<String>,
        name: impl Into<String>,
        content: impl Into<String>,
        is_error: bool,
    ) -> Self {
        Self::Tool {
            call_id: call_id.into(),
            name: name.into(),
            content: content.into(),
            is_error,
        }
    }
}

/// A tool call requested by the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ToolCall {
    /// Call id (providers that omit it get a generated one).
    pub id: String,
    /// Tool name.
    pub name: String,
    /// Parsed JSON arguments.
    pub arguments: serde_json::Value,
}

impl ToolCall {
    /// A tool call from its parts.
    pub fn new(
        id: impl Into<String>,
        name: impl Into<String>,
        arguments: serde_json::Value,
    ) -> Self {
        Self {
            id: id.into(),
            name: name.into(),
            arguments,
        }
    }
}

/// How the model may use tools. Exhaustive for the same reason as [`ChatMessage`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolChoice {
    /// The model decides.
    #[default]
    Auto,
    /// No tool calls.
    None,
    /// At least one tool call.
    Required,
    /// This tool must be called.
    Tool(String),
}

/// Why the model stopped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum StopReason {
    /// A natural end of turn.
    EndTurn,
    /// The model requested tool calls.
    ToolUse,
    /// The output token limit was hit.
    MaxTokens,
    /// A stop sequence was produced.
    StopSequence,
    /// The provider filtered the content.
    ContentFilter,
    /// Anything else, as the provider named it.
    Other(String),
}

/// Token counts of one model call.
///
/// The prompt's tokens are `input_tokens + cache_read_tokens`: those read from the provider's
/// prompt cache are counted apart, those written to it are part of `input_tokens` (a provider
/// whose wire counts them apart, as Anthropic's does, adds them in).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct TokenUsage {
    /// Prompt tokens not read from cache (those written to it included).
    pub input_tokens: u64,
    /// Completion tokens.
    pub output_tokens: u64,
    /// Prompt tokens read from cache.
    pub cache_read_tokens: u64,
    /// Of `input_tokens`, those written to the provider's cache.
    pub cache_creation_tokens: u64,
}

impl TokenUsage {
    /// Input and output counts, no cache.
    pub fn new(input_tokens: u64, output_tokens: u64) -> Self {
        Self {
            input_tokens,
            output_tokens,
            ..Self::default()
        }
    }

    /// Sets the cache read and cache creation counts (builder style).
    #[must_use]
    pub fn with_cache(mut self, read: u64, creation: u64) -> Self {
        self.cache_read_tokens = read;
        self.cache_creation_tokens = creation;
        self
    }
}

/// A request to a chat model.
///
/// Built with [`new`](Self::new) and the `with_*` setters (one per field, builder style).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, Setters)]
#[setters(prefix = "with_", strip_option)]
#[non_exhaustive]
pub struct ChatRequest {
    /// The model id to use; `None` = the provider's configured model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[setters(into)]
    pub model: Option<String>,
    /// The system prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[setters(into)]
    pub system: Option<String>,
    /// The conversation so far.
    #[setters(skip)]
    pub messages: Vec<ChatMessage>,
    /// Tools the model may call.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<ToolSpec>,
    /// How the model may use the tools.
    #[serde(default)]
    pub tool_choice: ToolChoice,
    /// Output token cap.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    /// Sampling temperature.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f32>,
    /// How hard the model should reason before answering; `None` leaves it to the provider.
    /// Providers map it to their own control (OpenAI `reasoning_effort`, Anthropic extended
    /// thinking) and ignore it, with a debug note, where they have none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effort: Option<Effort>,
    /// The conversation this request belongs to, for the provider's prompt cache (see
    /// [`CacheScope`]); `None`: not known (a one-off call).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_scope: Option<CacheScope>,
}

/// Which conversation a request belongs to, so a provider can keep its prompt cache warm for
/// it: OpenAI routes requests with the same `prompt_cache_key` to the same cache, llama.cpp
/// keeps a conversation on one slot of its KV cache, Anthropic's cache breakpoints can be
/// placed where an earlier request of the conversation put them.
///
/// Set by the agent loop on each request of a run: [`key`](Self::key) is the same for every
/// request of one run (and of its forks, which continue its conversation) and different for
/// every other run; [`parent`](Self::parent) is the key of the run that started this one.
/// Neither is a secret (no session id: a key only names a conversation to a provider).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[non_exhaustive]
pub struct CacheScope {
    /// The conversation's key.
    pub key: String,
    /// The key of the conversation that started this one (the caller of a subagent), if any:
    /// a provider choosing where conversations stay (llama.cpp's slots) keeps the callers'.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<String>,
    /// This request starts with the first `n` messages of an earlier request of the same
    /// conversation, sent as they were (a fork's first request repeats its caller's last one):
    /// a provider that marks cache breakpoints marks that request's too, so the shared part
    /// is the same, byte for byte.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub continues: Option<usize>,
}

impl CacheScope {
    /// A conversation with this key, started by no other.
    pub fn new(key: impl Into<String>) -> Self {
        Self {
            key: key.into(),
            parent: None,
            continues: None,
        }
    }

    /// Names the conversation that started this one (builder style).
    #[must_use]
    pub fn with_parent(mut self, parent: impl Into<String>) -> Self {
        self.parent = Some(parent.into());
        self
    }

    /// Says that the request repeats the first `messages` messages of an earlier request of
    /// this conversation (builder style; see [`continues`](Self::continues)).
    #[must_use]
    pub fn with_continues(mut self, messages: usize) -> Self {
        self.continues = Some(messages);
        self
    }
}

impl ChatRequest {
    /// A request with these messages and nothing else set.
    pub fn new(messages: Vec<ChatMessage>) -> Self {
        Self {
            messages,
            ..Self::default()
        }
    }
}

/// How hard a model should reason before it answers: Claude Code's `effort` levels.
///
/// A request carries it in [`ChatRequest::effort`]; each provider maps it to its own control
/// and documents how (levels it lacks fold into the nearest one it has).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Effort {
    /// Quick answers, little or no reasoning.
    Low,
    /// Balanced.
    Medium,
    /// Thorough reasoning.
    High,
    /// The most reasoning the model offers.
    Max,
}

impl Effort {
    /// Parses a level name, ignoring case and surrounding space: `low`, `medium`, `high`,
    /// `max`; `None` for anything else.
    pub fn parse(text: &str) -> Option<Self> {
        Some(match text.trim().to_ascii_lowercase().as_str() {
            "low" => Effort::Low,
            "medium" => Effort::Medium,
            "high" => Effort::High,
            "max" => Effort::Max,
            _ => return None,
        })
    }

    /// The level's name, as Claude Code spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Effort::Low => "low",
            Effort::Medium => "medium",
            Effort::High => "high",
            Effort::Max => "max",
        }
    }
}

impl std::fmt::Display for Effort {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A model's reply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ChatResponse {
    /// Reply text.
    pub content: String,
    /// Requested tool calls, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// Why the model stopped.
    pub stop_reason: StopReason,
    /// Token counts.
    pub usage: TokenUsage,
    /// The model that answered, as the provider named it.
    pub model: String,
}

impl ChatResponse {
    /// A reply with text and no tool calls.
    pub fn new(
        content: impl Into<String>,
        stop_reason: StopReason,
        usage: TokenUsage,
        model: impl Into<String>,
    ) -> Self {
        Self {
            content: content.into(),
            tool_calls: Vec::new(),
            stop_reason,
            usage,
            model: model.into(),
        }
    }

    /// Sets the tool calls (builder style).
    #[must_use]
    pub fn with_tool_calls(mut self, calls: Vec<ToolCall>) -> Self {
        self.tool_calls = calls;
        self
    }

    /// The reply as an assistant message for the transcript.
    pub fn to_message(&self) -> ChatMessage {
        ChatMessage::Assistant {
            content: self.content.clone(),
            tool_calls: self.tool_calls.clone(),
        }
    }
}

/// A streamed piece of a reply.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ChatDelta {
    /// New reply text.
    Text(String),
    /// A tool call has started.
    ToolCallStart {
        /// Index of the call in the reply.
        index: usize,
        /// Call id.
        id: String,
        /// Tool name.
        name: String,
    },
    /// More JSON text of a tool call's arguments.
    ToolCallArguments {
        /// Index of the call in the reply.
        index: usize,
        /// JSON fragment.
        fragment: String,
    },
    /// Not part of the reply: the call waits before its next attempt, because the provider
    /// asked it to slow down (a rate limit, an overload), the endpoint has as many requests in
    /// flight as it takes now, or an attempt failed and is retried. A host shows `reason` as
    /// the run's status; a stalled-run watchdog counts it as progress.
    Waiting {
        /// Why, for a person: e.g. `rate limited (HTTP 429): retry in 3.2 s`.
        reason: String,
        /// How long until the next attempt, when known.
        retry_in: Option<std::time::Duration>,
    },
}

/// An LLM provider.
#[async_trait]
pub trait ChatModel: Send + Sync {
    /// The model id used when a request does not name one.
    fn model_name(&self) -> &str;

    /// One non-streamed call.
    async fn chat(&self, request: ChatRequest) -> Result<ChatResponse, ModelError>;

    /// The context window (prompt and reply, in tokens) the server runs this model with, when
    /// the provider knows it: a local server that said so (llama.cpp's `/props`, Ollama's
    /// `/api/show`). The default is `None` (unknown): a runner then takes a configured window,
    /// its table of known models, or its default.
    fn context_window(&self) -> Option<u64> {
        None
    }

    /// One streamed call: `on_delta` sees pieces as they arrive, the full reply is returned at
    /// the end. The default calls [`chat`](Self::chat) and reports the whole text as one delta.
    async fn chat_stream(
        &self,
        request: ChatRequest,
        on_delta: &(dyn Fn(ChatDelta) + Send + Sync),
    ) -> Result<ChatResponse, ModelError> {
        let resp = self.chat(request).await?;
        if !resp.content.is_empty() {
            on_delta(ChatDelta::Text(resp.content.clone()));
        }
        Ok(resp)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn effort_parses_and_round_trips() {
        assert_eq!(Effort::parse(" High "), Some(Effort::High));
        assert_eq!(Effort::parse("max"), Some(Effort::Max));
        assert_eq!(Effort::parse("extreme"), None);
        let req = ChatRequest::new(vec![ChatMessage::user("hi")]).with_effort(Effort::Low);
        let json = serde_json::to_value(&req).unwrap();
        assert_eq!(json["effort"], "low");
        let back: ChatRequest = serde_json::from_value(json).unwrap();
        assert_eq!(back.effort, Some(Effort::Low));
        let plain = serde_json::to_value(ChatRequest::new(Vec::new())).unwrap();
        assert!(
            plain.get("effort").is_none(),
            "absent effort is not serialized"
        );
    }
}
