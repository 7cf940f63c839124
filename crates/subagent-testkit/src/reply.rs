//! Scripted replies: what the server answers to one request.

use std::time::Duration;

use derive_setters::Setters;
use serde_json::Value;

/// Token counts a scripted reply reports, as the Anthropic API counts them: `input_tokens`
/// are the prompt tokens neither read from nor written to the cache.
///
/// On the OpenAI wire, `prompt_tokens` is sent as `input_tokens + cache_read_tokens` and
/// `prompt_tokens_details.cached_tokens` as `cache_read_tokens`, as OpenAI counts them (it
/// reports no writes). A client following the SPI counts written tokens as input.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ScriptedUsage {
    /// Prompt tokens not read from cache.
    pub input_tokens: u64,
    /// Completion tokens.
    pub output_tokens: u64,
    /// Prompt tokens read from cache.
    pub cache_read_tokens: u64,
    /// Prompt tokens written to cache (Anthropic only).
    pub cache_creation_tokens: u64,
}

/// One tool call a scripted reply requests.
#[derive(Debug, Clone, PartialEq)]
pub struct ScriptedToolCall {
    /// The call id; `None` lets the server generate one (`call_<req>_<i>` / `toolu_<req>_<i>`).
    pub id: Option<String>,
    /// Tool name.
    pub name: String,
    /// JSON arguments (sent as a JSON string on the OpenAI wire, an object on Anthropic's).
    pub arguments: Value,
}

impl ScriptedToolCall {
    /// A call with a generated id.
    pub fn new(name: impl Into<String>, arguments: Value) -> Self {
        Self {
            id: None,
            name: name.into(),
            arguments,
        }
    }

    /// The same call with a fixed id.
    pub fn with_id(mut self, id: impl Into<String>) -> Self {
        self.id = Some(id.into());
        self
    }
}

#[derive(Debug, Clone)]
pub(crate) enum ErrorBody {
    /// Sent verbatim.
    Raw(String),
    /// Shaped as the provider's own error JSON for the endpoint hit.
    Message(String),
}

#[derive(Debug, Clone)]
pub(crate) enum ReplyBody {
    Message {
        text: String,
        tool_calls: Vec<ScriptedToolCall>,
    },
    Error {
        status: u16,
        body: ErrorBody,
    },
    Raw {
        status: u16,
        content_type: String,
        body: Vec<u8>,
    },
}

/// What the server answers to one request: a message (text and/or tool calls), an error, or raw
/// bytes, plus timing and framing knobs.
///
/// The same reply renders as OpenAI Chat Completions or Anthropic Messages JSON depending on
/// the endpoint hit, streamed (SSE) when the request says `"stream": true`.
#[derive(Debug, Clone, Setters)]
#[setters(prefix = "with_", strip_option, into)]
pub struct Reply {
    #[setters(skip)]
    pub(crate) body: ReplyBody,
    /// Wait this long before answering (headers included).
    pub(crate) delay: Duration,
    /// Wait this long between streamed pieces.
    pub(crate) chunk_delay: Duration,
    #[setters(skip)] // `with_usage` and `with_cache_tokens`
    pub(crate) usage: ScriptedUsage,
    /// Send this wire stop reason (`finish_reason` / `stop_reason`) instead of the natural one.
    pub(crate) stop_reason: Option<String>,
    /// Name this model in the reply instead of echoing the request's.
    pub(crate) model: Option<String>,
    #[setters(skip)]
    pub(crate) omit_tool_call_ids: bool,
    #[setters(skip)] // at least 1
    pub(crate) fragment_chars: usize,
    #[setters(skip)] // at least 1
    pub(crate) write_size: Option<usize>,
    #[setters(skip)]
    pub(crate) headers: Vec<(String, String)>,
    #[setters(skip)] // `with_hang_after` and `with_cut_after`
    pub(crate) stop_after: Option<(usize, StreamEnd)>,
}

/// How a reply stopped early by [`Reply::with_hang_after`] or [`Reply::with_cut_after`] ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StreamEnd {
    /// Nothing more is ever sent; the connection stays open.
    Hang,
    /// The connection is broken off.
    Cut,
}

impl Reply {
    fn with_body(body: ReplyBody) -> Self {
        Self {
            body,
            delay: Duration::ZERO,
            chunk_delay: Duration::ZERO,
            usage: ScriptedUsage {
                input_tokens: 10,
                output_tokens: 5,
                ..ScriptedUsage::default()
            },
            stop_reason: None,
            model: None,
            omit_tool_call_ids: false,
            fragment_chars: 5,
            write_size: None,
            headers: Vec::new(),
            stop_after: None,
        }
    }

    /// A plain text answer.
    pub fn text(text: impl Into<String>) -> Self {
        Self::message(text, Vec::new())
    }

    /// An answer that only requests tool calls: `(name, json_args)` pairs.
    pub fn tool_calls<N: Into<String>>(calls: Vec<(N, Value)>) -> Self {
        Self::text_and_tool_calls("", calls)
    }

    /// A call of the delegation tool: `Task` with a short description, `prompt` and the agent.
    pub fn task_call(agent: &str, prompt: &str) -> Self {
        Self::tool_calls(vec![(
            "Task",
            serde_json::json!({"description": "delegate", "prompt": prompt, "subagent_type": agent}),
        )])
    }

    /// Text followed by tool calls.
    pub fn text_and_tool_calls<N: Into<String>>(
        text: impl Into<String>,
        calls: Vec<(N, Value)>,
    ) -> Self {
        let calls = calls
            .into_iter()
            .map(|(name, args)| ScriptedToolCall::new(name, args))
            .collect();
        Self::message(text, calls)
    }

    /// Text and fully specified tool calls (fixed ids).
    pub fn message(text: impl Into<String>, tool_calls: Vec<ScriptedToolCall>) -> Self {
        Self::with_body(ReplyBody::Message {
            text: text.into(),
            tool_calls,
        })
    }

    /// An HTTP error with a verbatim body (e.g. a provider's JSON error).
    pub fn error(status: u16, body: impl Into<String>) -> Self {
        Self::with_body(ReplyBody::Error {
            status,
            body: ErrorBody::Raw(body.into()),
        })
    }

    /// An HTTP error whose body is the provider's own error JSON carrying `message`:
    /// `{"error":{"message":..,"type":..}}` on the OpenAI endpoints,
    /// `{"type":"error","error":{"type":..,"message":..}}` on Anthropic's.
    pub fn error_message(status: u16, message: impl Into<String>) -> Self {
        Self::with_body(ReplyBody::Error {
            status,
            body: ErrorBody::Message(message.into()),
        })
    }

    /// A 429 with a `Retry-After: <seconds>` header and a provider-shaped error body.
    pub fn rate_limited(retry_after_secs: u64) -> Self {
        Self::error_message(429, "Rate limit reached; please retry later.")
            .with_header("retry-after", retry_after_secs.to_string())
    }

    /// Raw bytes with a status and content type, sent as one piece (use
    /// [`with_write_size`](Self::with_write_size) to split them).
    pub fn raw(status: u16, content_type: impl Into<String>, body: impl Into<Vec<u8>>) -> Self {
        Self::with_body(ReplyBody::Raw {
            status,
            content_type: content_type.into(),
            body: body.into(),
        })
    }

    /// A raw `text/event-stream` body with status 200, for hand-written SSE.
    pub fn raw_sse(body: impl Into<Vec<u8>>) -> Self {
        Self::raw(200, "text/event-stream", body)
    }

    /// Report these input and output token counts.
    pub fn with_usage(mut self, input_tokens: u64, output_tokens: u64) -> Self {
        self.usage.input_tokens = input_tokens;
        self.usage.output_tokens = output_tokens;
        self
    }

    /// Report these cache read / cache creation token counts.
    pub fn with_cache_tokens(mut self, read: u64, creation: u64) -> Self {
        self.usage.cache_read_tokens = read;
        self.usage.cache_creation_tokens = creation;
        self
    }

    /// Leave tool-call ids out of the reply, as some OpenAI-compatible servers do.
    pub fn without_tool_call_ids(mut self) -> Self {
        self.omit_tool_call_ids = true;
        self
    }

    /// Split streamed text and tool-call arguments into fragments of this many characters
    /// (default 5; at least 1).
    pub fn with_fragment_chars(mut self, chars: usize) -> Self {
        self.fragment_chars = chars.max(1);
        self
    }

    /// Re-split the whole response body into writes of this many bytes (at least 1), so SSE
    /// lines and even UTF-8 sequences straddle chunk boundaries. Combine with
    /// [`with_chunk_delay`](Self::with_chunk_delay) to keep the client from coalescing them.
    pub fn with_write_size(mut self, bytes: usize) -> Self {
        self.write_size = Some(bytes.max(1));
        self
    }

    /// Send the first `pieces` writes of the response (SSE events when streamed; see
    /// [`with_write_size`](Self::with_write_size)) and then nothing more, keeping the
    /// connection open: a model stream that stalls. `0` hangs before the first byte of the
    /// body.
    pub fn with_hang_after(mut self, pieces: usize) -> Self {
        self.stop_after = Some((pieces, StreamEnd::Hang));
        self
    }

    /// Send the first `pieces` writes of the response and then break the connection off: a
    /// stream cut mid-answer.
    pub fn with_cut_after(mut self, pieces: usize) -> Self {
        self.stop_after = Some((pieces, StreamEnd::Cut));
        self
    }

    /// Add a response header.
    pub fn with_header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Add a `Retry-After: <seconds>` header.
    pub fn with_retry_after(self, secs: u64) -> Self {
        self.with_header("retry-after", secs.to_string())
    }
}
