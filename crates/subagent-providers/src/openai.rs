//! The OpenAI-compatible Chat Completions client (OpenAI, Ollama, vLLM, llama.cpp, LM Studio).

use std::borrow::Cow;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use bytes::Bytes;
use derive_setters::Setters;
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};
use subagent_spi::chat::{
    ChatDelta, ChatMessage, ChatModel, ChatRequest, ChatResponse, StopReason, TokenUsage,
    ToolChoice,
};
use subagent_spi::{Effort, ModelError, async_trait};

use subagent_sse::SseParser;

use crate::common::{StreamEvents, decode_events};
use crate::common::{encode_body, generated_call_id, parse_arguments};
use crate::options::{HttpOptions, http_option_setters};
use crate::prompt_cache::PromptCaching;
use crate::slots::SlotPool;
use crate::transport::{StreamDecode, Transport, truncate_chars};

/// OpenAI's API base URL.
pub const OPENAI_DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";
/// Which field carries the output token cap.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum MaxTokensField {
    /// `max_tokens`: understood by every OpenAI-compatible server (default).
    #[default]
    MaxTokens,
    /// `max_completion_tokens`: OpenAI's current name, required by its reasoning models.
    MaxCompletionTokens,
}

/// Builds an [`OpenAiModel`]; see [`OpenAiModel::builder`]. The HTTP settings are an
/// [`HttpOptions`] (set whole with `http_options`, or one by one with the shortcuts).
#[derive(Debug, Clone, Setters)]
pub struct OpenAiModelBuilder {
    /// The name used in errors and logs (default `openai`; e.g. `ollama`, `vllm`).
    #[setters(rename = "provider_name", into)]
    provider: String,
    #[setters(skip)] // set with `http_options` or the shortcuts
    http: HttpOptions,
    /// Which field carries [`ChatRequest::max_tokens`] (default `max_tokens`).
    max_tokens_field: MaxTokensField,
    /// Ask for usage in streams with `stream_options.include_usage` (default true; turn off
    /// for old servers that reject `stream_options`).
    #[setters(rename = "stream_usage")]
    include_usage: bool,
    /// Recover tool calls the model wrote as text (bare `{"name": .., "arguments": ..}`
    /// JSON, a fenced JSON block, or `<tool_call>` tags) when the server returned none
    /// (default false; [`ModelSpec`](crate::ModelSpec) turns it on for local servers). Only a
    /// reply that is nothing but such calls is recovered; see the crate docs.
    text_tool_calls: bool,
    /// The sampling temperature sent when a request sets none (default: none, the server's
    /// own default; llama.cpp's is 0.8). `Some(0.0)` makes a small local model's choices
    /// repeatable; a spec sets it with `?temperature=0` (see [`ModelSpec`](crate::ModelSpec)).
    #[setters(strip_option)]
    temperature: Option<f32>,
    /// Prompt caching (default [`PromptCaching::FiveMinutes`]; the TTL is the server's own):
    /// a `prompt_cache_key` per conversation, and what [`llama_cpp_cache`](Self::llama_cpp_cache)
    /// and [`keep_alive`](Self::keep_alive) add; [`PromptCaching::Off`] sends none of it.
    #[setters(rename = "prompt_caching")]
    caching: PromptCaching,
    /// The server may be llama.cpp's `llama-server` (default false; [`ModelSpec`](crate::ModelSpec)
    /// turns it on for local servers): send `cache_prompt: true`, and when the server has
    /// several slots (asked once, `GET /props`) keep each conversation on a slot of its own
    /// (`id_slot`; see the crate's docs on slots).
    #[setters(rename = "llama_cpp_cache")]
    llama_cpp: bool,
    /// Ollama's `keep_alive` (e.g. `30m`), sent with every request while caching is on, so the
    /// model and its cache stay loaded while a caller waits for its children (default: none;
    /// [`ModelSpec`](crate::ModelSpec) sends `30m` to `ollama:`).
    #[setters(strip_option, into)]
    keep_alive: Option<String>,
    /// The context window the server runs the model with, when known (e.g. read with
    /// [`probe_context_window`](crate::probe_context_window)); reported by
    /// [`ChatModel::context_window`] (default: unknown).
    #[setters(strip_option)]
    context_window: Option<u64>,
}

impl Default for OpenAiModelBuilder {
    fn default() -> Self {
        Self {
            provider: "openai".into(),
            http: HttpOptions::new(),
            max_tokens_field: MaxTokensField::default(),
            include_usage: true,
            text_tool_calls: false,
            temperature: None,
            caching: PromptCaching::default(),
            llama_cpp: false,
            keep_alive: None,
            context_window: None,
        }
    }
}

impl OpenAiModelBuilder {
    http_option_setters! {
        base_url: " The API base URL, up to and including `/v1` (default \
            [`OPENAI_DEFAULT_BASE_URL`]); requests go to `<base>/chat/completions`.",
        api_key: " The API key, sent as `Authorization: Bearer <key>` (none by default: local \
            servers).",
        header: " An extra header sent with every request (e.g. `OpenAI-Organization`).",
    }

    /// Check the settings and build the model.
    pub fn build(self) -> Result<OpenAiModel, ModelError> {
        let endpoint = self.http.endpoint(
            self.provider,
            OPENAI_DEFAULT_BASE_URL,
            "/chat/completions",
            &[],
            |key| ("authorization", format!("Bearer {key}")),
            &["authorization", "api-key"],
        )?;
        let slots = (self.llama_cpp && self.caching.is_on()).then(|| {
            let base = endpoint.base_url.trim_end_matches('/');
            let root = base.strip_suffix("/v1").unwrap_or(base);
            let props = format!("{root}/props");
            (SlotPool::for_server(&props), props)
        });
        Ok(OpenAiModel {
            model: endpoint.model,
            base_url: endpoint.base_url,
            max_tokens_field: self.max_tokens_field,
            include_usage: self.include_usage,
            text_tool_calls: self.text_tool_calls,
            temperature: self.temperature,
            caching: self.caching,
            llama_cpp: self.llama_cpp,
            keep_alive: self.keep_alive,
            slots,
            cache_key_refused: Arc::new(AtomicBool::new(false)),
            context_window: self.context_window,
            transport: endpoint.transport,
        })
    }
}

/// A [`ChatModel`] speaking OpenAI Chat Completions to any compatible server.
///
/// Tolerates what real servers do: tool calls without ids (given `call_<n>`), `null` or empty
/// `content` next to tool calls, extra fields (`reasoning_content`, `timings`, ...), every
/// `finish_reason` (unknown ones become [`StopReason::Other`]), arguments as a JSON string or
/// an object, and an empty arguments string meaning `{}`.
///
/// **Prompt caching** (on unless [`PromptCaching::Off`]): a request of a conversation
/// ([`ChatRequest::cache_scope`]) carries its key as `prompt_cache_key`, so OpenAI serves a
/// tool loop from one warm cache (a server that refuses the field gets it no more, after one
/// retry without it); what the provider read from its cache comes back as
/// `usage.prompt_tokens_details.cached_tokens` (the SPI's `cache_read_tokens`). The tool list
/// is sent in the request's order, which the agent loop keeps the same for every request of an
/// agent. llama.cpp and Ollama get their own hints (see
/// [`OpenAiModelBuilder::llama_cpp_cache`], [`OpenAiModelBuilder::keep_alive`]).
#[derive(Debug, Clone)]
pub struct OpenAiModel {
    model: String,
    base_url: String,
    max_tokens_field: MaxTokensField,
    include_usage: bool,
    text_tool_calls: bool,
    temperature: Option<f32>,
    caching: PromptCaching,
    llama_cpp: bool,
    keep_alive: Option<String>,
    /// The llama.cpp slots and the URL of the server's properties.
    slots: Option<(Arc<SlotPool>, String)>,
    /// The server refused `prompt_cache_key` once: it is sent no more.
    cache_key_refused: Arc<AtomicBool>,
    context_window: Option<u64>,
    transport: Transport,
}

impl OpenAiModel {
    /// A builder with OpenAI's defaults.
    pub fn builder() -> OpenAiModelBuilder {
        OpenAiModelBuilder::default()
    }

    /// The base URL in use.
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// The provider name used in errors.
    pub fn provider_name(&self) -> &str {
        &self.transport.provider
    }

    /// True when tool calls written as text are recovered (see
    /// [`OpenAiModelBuilder::text_tool_calls`]).
    pub fn recovers_text_tool_calls(&self) -> bool {
        self.text_tool_calls
    }

    /// The sampling temperature sent when a request sets none (see
    /// [`OpenAiModelBuilder::temperature`]).
    pub fn default_temperature(&self) -> Option<f32> {
        self.temperature
    }

    /// Whether a reply to `request` may have its text turned into tool calls: the setting is
    /// on and the request offered tools it did not forbid.
    fn recovers_for(&self, request: &ChatRequest) -> bool {
        self.text_tool_calls && !request.tools.is_empty() && request.tool_choice != ToolChoice::None
    }

    /// Applies the text tool-call recovery to a reply when `recover` says so.
    fn finish_reply(
        &self,
        recover: bool,
        reply: Result<ChatResponse, ModelError>,
    ) -> Result<ChatResponse, ModelError> {
        let mut reply = reply?;
        if recover {
            crate::text_calls::recover_into(&self.transport.provider, &mut reply);
        }
        Ok(reply)
    }

    /// The prompt caching in use (see [`OpenAiModelBuilder::prompt_caching`]).
    pub fn prompt_caching(&self) -> PromptCaching {
        self.caching
    }

    /// The JSON body sent for `request` (`stream` selects SSE), sent to no particular slot.
    #[cfg(test)]
    pub(crate) fn request_body(&self, request: &ChatRequest, stream: bool) -> Value {
        self.request_body_on(request, stream, None)
    }

    /// The slot of a llama.cpp server `request`'s conversation goes to, when it has several.
    async fn slot(&self, request: &ChatRequest) -> Option<usize> {
        let (pool, props) = self.slots.as_ref()?;
        let scope = request.cache_scope.as_ref()?;
        pool.slot_for(scope, &self.transport, props).await
    }

    /// The cache hints of a request (see the type's docs).
    fn cache_hints(
        &self,
        request: &ChatRequest,
        slot: Option<usize>,
        body: &mut Map<String, Value>,
    ) {
        if !self.caching.is_on() {
            return;
        }
        if let Some(scope) = &request.cache_scope
            && !self.cache_key_refused.load(Ordering::Relaxed)
        {
            body.insert("prompt_cache_key".into(), json!(scope.key));
        }
        if self.llama_cpp {
            body.insert("cache_prompt".into(), json!(true));
            if let Some(slot) = slot {
                body.insert("id_slot".into(), json!(slot));
            }
        }
        if let Some(k) = &self.keep_alive {
            body.insert("keep_alive".into(), json!(k));
        }
    }

    /// True (once) when `err` is the server refusing `prompt_cache_key`, which is then sent
    /// no more: the call is worth one retry without it.
    fn refused_cache_key(&self, request: &ChatRequest, err: &ModelError) -> bool {
        let refused = self.caching.is_on()
            && request.cache_scope.is_some()
            && crate::error::http_status(err) == Some(400)
            && err.to_string().contains("prompt_cache_key");
        refused && !self.cache_key_refused.swap(true, Ordering::Relaxed)
    }

    /// The JSON body sent for `request` (`stream` selects SSE; `slot`: the llama.cpp slot).
    pub(crate) fn request_body_on(
        &self,
        request: &ChatRequest,
        stream: bool,
        slot: Option<usize>,
    ) -> Value {
        let mut body = Map::new();
        let model = request.model.as_deref().unwrap_or(&self.model);
        body.insert("model".into(), json!(model));
        body.insert("messages".into(), Value::Array(wire_messages(request)));
        if !request.tools.is_empty() {
            let tools: Vec<Value> = request
                .tools
                .iter()
                .map(|t| {
                    json!({
                        "type": "function",
                        "function": {
                            "name": t.name,
                            "description": t.description,
                            "parameters": t.input_schema,
                        }
                    })
                })
                .collect();
            body.insert("tools".into(), Value::Array(tools));
            let choice = match &request.tool_choice {
                ToolChoice::Auto => json!("auto"),
                ToolChoice::None => json!("none"),
                ToolChoice::Required => json!("required"),
                ToolChoice::Tool(name) => json!({"type": "function", "function": {"name": name}}),
            };
            body.insert("tool_choice".into(), choice);
        }
        if let Some(max) = request.max_tokens {
            let field = match self.max_tokens_field {
                MaxTokensField::MaxTokens => "max_tokens",
                MaxTokensField::MaxCompletionTokens => "max_completion_tokens",
            };
            body.insert(field.into(), json!(max));
        }
        if let Some(t) = request
            .temperature
            .or(self.temperature)
            .filter(|t| t.is_finite())
        {
            body.insert("temperature".into(), crate::common::temperature_json(t));
        }
        if let Some(effort) = request.effort {
            body.insert("reasoning_effort".into(), json!(reasoning_effort(effort)));
        }
        if stream {
            body.insert("stream".into(), json!(true));
            if self.include_usage {
                body.insert("stream_options".into(), json!({"include_usage": true}));
            }
        }
        self.cache_hints(request, slot, &mut body);
        Value::Object(body)
    }

    fn encode(
        &self,
        request: &ChatRequest,
        stream: bool,
        slot: Option<usize>,
    ) -> Result<Bytes, ModelError> {
        if let Some(effort) = request.effort {
            tracing::debug!(
                effort = %effort,
                sent = reasoning_effort(effort),
                "reasoning effort sent as `reasoning_effort` (servers without reasoning ignore it)"
            );
        }
        encode_body(&self.request_body_on(request, stream, slot))
    }

    fn requested_model(&self, request: &ChatRequest) -> String {
        request.model.clone().unwrap_or_else(|| self.model.clone())
    }
}

/// OpenAI's `reasoning_effort` for an effort level: `low`, `medium`, `high` (`max` is sent as
/// `high`, the highest level every reasoning model accepts).
pub fn reasoning_effort(effort: Effort) -> &'static str {
    match effort {
        Effort::Low => "low",
        Effort::Medium => "medium",
        _ => "high",
    }
}

fn wire_messages(request: &ChatRequest) -> Vec<Value> {
    let mut out = Vec::with_capacity(request.messages.len() + 1);
    if let Some(system) = &request.system {
        out.push(json!({"role": "system", "content": system}));
    }
    for m in &request.messages {
        out.push(match m {
            ChatMessage::System { content } => json!({"role": "system", "content": content}),
            ChatMessage::User { content } => json!({"role": "user", "content": content}),
            ChatMessage::Assistant {
                content,
                tool_calls,
            } => {
                let mut msg = json!({"role": "assistant"});
                msg["content"] = if content.is_empty() && !tool_calls.is_empty() {
                    Value::Null
                } else {
                    json!(content)
                };
                if !tool_calls.is_empty() {
                    msg["tool_calls"] = tool_calls
                        .iter()
                        .map(|c| {
                            let args = match &c.arguments {
                                Value::String(s) => s.clone(),
                                other => other.to_string(),
                            };
                            json!({
                                "id": c.id,
                                "type": "function",
                                "function": {"name": c.name, "arguments": args}
                            })
                        })
                        .collect();
                }
                msg
            }
            ChatMessage::Tool {
                call_id,
                content,
                is_error,
                ..
            } => {
                let content = if *is_error {
                    format!("Error: {content}")
                } else {
                    content.clone()
                };
                json!({"role": "tool", "tool_call_id": call_id, "content": content})
            }
        });
    }
    out
}

/// Map an OpenAI `finish_reason` (absent = `None`) to a [`StopReason`].
pub(crate) fn stop_reason_from_finish(reason: Option<&str>, has_tool_calls: bool) -> StopReason {
    match reason {
        Some("tool_calls" | "function_call") => StopReason::ToolUse,
        // Some servers say `stop` (or nothing) even when they return tool calls.
        Some("stop") | None if has_tool_calls => StopReason::ToolUse,
        Some("stop" | "eos" | "end_turn") | None => StopReason::EndTurn,
        Some("length" | "max_tokens") => StopReason::MaxTokens,
        Some("content_filter") => StopReason::ContentFilter,
        Some("stop_sequence") => StopReason::StopSequence,
        Some(other) => StopReason::Other(other.to_string()),
    }
}

#[derive(Debug, Deserialize, Default, Clone, Copy)]
struct UsageWire {
    #[serde(default)]
    prompt_tokens: Option<u64>,
    #[serde(default)]
    completion_tokens: Option<u64>,
    #[serde(default)]
    prompt_tokens_details: Option<PromptDetailsWire>,
}

#[derive(Debug, Deserialize, Default, Clone, Copy)]
struct PromptDetailsWire {
    #[serde(default)]
    cached_tokens: Option<u64>,
}

/// llama.cpp's `timings` next to the usage: `prompt_n` prompt tokens evaluated, `cache_n`
/// (newer servers) reused from the slot's cache.
#[derive(Debug, Deserialize, Default, Clone, Copy)]
struct TimingsWire {
    #[serde(default)]
    prompt_n: Option<u64>,
    #[serde(default)]
    cache_n: Option<u64>,
}

impl UsageWire {
    /// The counts; what was read from cache is `prompt_tokens_details.cached_tokens`, else
    /// what llama.cpp's `timings` say it reused (`cache_n`, or the prompt tokens it did not
    /// evaluate).
    fn to_usage(self, timings: Option<TimingsWire>) -> TokenUsage {
        let prompt = self.prompt_tokens.unwrap_or(0);
        let cached = self
            .prompt_tokens_details
            .and_then(|d| d.cached_tokens)
            .or_else(|| {
                let t = timings?;
                t.cache_n
                    .or_else(|| t.prompt_n.map(|n| prompt.saturating_sub(n)))
            })
            .unwrap_or(0)
            .min(prompt);
        TokenUsage::new(prompt - cached, self.completion_tokens.unwrap_or(0)).with_cache(cached, 0)
    }
}

#[derive(Deserialize)]
struct CompletionWire {
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    choices: Option<Vec<ChoiceWire>>,
    #[serde(default)]
    usage: Option<UsageWire>,
    #[serde(default)]
    timings: Option<TimingsWire>,
}

#[derive(Deserialize)]
struct ChoiceWire {
    #[serde(default)]
    message: Option<MessageWire>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct MessageWire {
    #[serde(default)]
    content: Option<Value>,
    #[serde(default)]
    tool_calls: Option<Vec<ToolCallWire>>,
    #[serde(default)]
    function_call: Option<FunctionWire>,
}

#[derive(Deserialize)]
struct ToolCallWire {
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    function: Option<FunctionWire>,
}

#[derive(Deserialize)]
struct FunctionWire {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<Value>,
}

/// Text of a `content` that is a string, null, or an array of `{type:"text",text}` parts.
fn content_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect(),
        _ => String::new(),
    }
}

fn arguments_value(provider: &str, tool: &str, args: Option<&Value>) -> Value {
    match args {
        None | Some(Value::Null) => Value::Object(Map::new()),
        Some(Value::String(s)) => parse_arguments(provider, tool, s),
        Some(other) => other.clone(),
    }
}

/// Parse a non-streamed Chat Completions reply.
pub(crate) fn parse_completion(
    provider: &str,
    body: &[u8],
    requested_model: &str,
) -> Result<ChatResponse, ModelError> {
    let bad = |m: String| ModelError::BadResponse {
        provider: provider.to_string(),
        message: m,
    };
    let wire: CompletionWire = serde_json::from_slice(body).map_err(|e| {
        bad(format!(
            "reply is not a chat completion ({e}): {}",
            truncate_chars(&String::from_utf8_lossy(body), 300)
        ))
    })?;
    let choice = wire
        .choices
        .and_then(|c| c.into_iter().next())
        .ok_or_else(|| bad("reply has no choices".into()))?;
    let message = choice
        .message
        .ok_or_else(|| bad("reply's first choice has no message".into()))?;
    let content = message
        .content
        .as_ref()
        .map(content_text)
        .unwrap_or_default();
    let mut tool_calls = Vec::new();
    for call in message.tool_calls.unwrap_or_default() {
        let Some(f) = call.function else { continue };
        let name = f.name.unwrap_or_default();
        let arguments = arguments_value(provider, &name, f.arguments.as_ref());
        tool_calls.push(subagent_spi::chat::ToolCall::new(
            call.id
                .filter(|s| !s.is_empty())
                .unwrap_or_else(generated_call_id),
            name,
            arguments,
        ));
    }
    if tool_calls.is_empty()
        && let Some(f) = message.function_call
    {
        let name = f.name.unwrap_or_default();
        let arguments = arguments_value(provider, &name, f.arguments.as_ref());
        tool_calls.push(subagent_spi::chat::ToolCall::new(
            generated_call_id(),
            name,
            arguments,
        ));
    }
    Ok(ChatResponse::new(
        content,
        stop_reason_from_finish(choice.finish_reason.as_deref(), !tool_calls.is_empty()),
        wire.usage
            .map(|u| u.to_usage(wire.timings))
            .unwrap_or_default(),
        wire.model
            .filter(|m| !m.is_empty())
            .unwrap_or_else(|| requested_model.to_string()),
    )
    .with_tool_calls(tool_calls))
}

// ----- streaming -----

#[derive(Deserialize)]
struct ChunkWire<'a> {
    #[serde(default, borrow)]
    model: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    choices: Option<Vec<ChunkChoiceWire<'a>>>,
    #[serde(default)]
    usage: Option<UsageWire>,
    #[serde(default)]
    timings: Option<TimingsWire>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
struct ChunkChoiceWire<'a> {
    #[serde(default)]
    index: Option<u64>,
    #[serde(default, borrow)]
    delta: Option<DeltaWire<'a>>,
    #[serde(default, borrow)]
    finish_reason: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct DeltaWire<'a> {
    #[serde(default, borrow)]
    content: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    tool_calls: Option<Vec<ToolCallDeltaWire<'a>>>,
    #[serde(default, borrow)]
    function_call: Option<FunctionDeltaWire<'a>>,
}

#[derive(Deserialize)]
struct ToolCallDeltaWire<'a> {
    #[serde(default)]
    index: Option<u64>,
    #[serde(default, borrow)]
    id: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    function: Option<FunctionDeltaWire<'a>>,
}

#[derive(Deserialize)]
struct FunctionDeltaWire<'a> {
    #[serde(default, borrow)]
    name: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    arguments: Option<&'a RawValue>,
}

#[derive(Debug, Default)]
struct PartialCall {
    wire_index: u64,
    id: Option<String>,
    name: String,
    args: String,
    started: bool,
}

#[derive(Debug, Default)]
struct StreamState {
    provider: String,
    model: Option<String>,
    content: String,
    calls: Vec<PartialCall>,
    finish: Option<String>,
    usage: Option<UsageWire>,
    timings: Option<TimingsWire>,
    done: bool,
    saw_data: bool,
}

/// Decodes an OpenAI Chat Completions SSE byte stream: feed it chunks as they arrive, it calls
/// `on_delta` with text and tool-call pieces, and [`finish`](Self::finish) returns the
/// assembled reply. Tool-call fragments are joined by their `index`.
///
///
/// Internal (the model's `chat_stream` uses it); public only to the `sse_parse` bench, through
/// the hidden `bench-internals` feature.
#[cfg_attr(not(feature = "bench-internals"), allow(unreachable_pub))] // public to the bench only
#[derive(Debug)]
pub struct OpenAiStreamDecoder {
    parser: SseParser,
    state: StreamState,
    default_model: String,
}

#[cfg_attr(not(feature = "bench-internals"), allow(unreachable_pub))] // public to the bench only
impl OpenAiStreamDecoder {
    /// A decoder; `provider` names errors, `model` is reported when the stream names none.
    pub fn new(provider: impl Into<String>, model: impl Into<String>) -> Self {
        Self {
            parser: SseParser::new(),
            state: StreamState {
                provider: provider.into(),
                ..StreamState::default()
            },
            default_model: model.into(),
        }
    }

    /// True once `data: [DONE]` was seen.
    pub fn is_done(&self) -> bool {
        self.state.done
    }

    /// Decode the next chunk of bytes.
    pub fn feed(
        &mut self,
        bytes: &[u8],
        on_delta: &(dyn Fn(ChatDelta) + Send + Sync),
    ) -> Result<(), ModelError> {
        let Self { parser, state, .. } = self;
        decode_events(parser, state, Some(bytes), on_delta)
    }

    /// The stream ended: return the assembled reply, or an error if it was cut short.
    pub fn finish(mut self) -> Result<ChatResponse, ModelError> {
        let Self { parser, state, .. } = &mut self;
        decode_events(parser, state, None, &|_| {})?;
        let state = std::mem::take(&mut self.state);
        if !state.saw_data {
            return Err(state.bad("the stream ended without any event"));
        }
        if !state.done && state.finish.is_none() {
            return Err(state.bad(
                "the stream closed before the reply finished (no finish_reason and no [DONE])",
            ));
        }
        let provider = state.provider;
        let tool_calls: Vec<_> = state
            .calls
            .into_iter()
            .map(|c| {
                let arguments = parse_arguments(&provider, &c.name, &c.args);
                subagent_spi::chat::ToolCall::new(
                    c.id.unwrap_or_else(generated_call_id),
                    c.name,
                    arguments,
                )
            })
            .collect();
        Ok(ChatResponse::new(
            state.content,
            stop_reason_from_finish(state.finish.as_deref(), !tool_calls.is_empty()),
            state
                .usage
                .map(|u| u.to_usage(state.timings))
                .unwrap_or_default(),
            state
                .model
                .filter(|m| !m.is_empty())
                .unwrap_or(self.default_model),
        )
        .with_tool_calls(tool_calls))
    }
}

impl StreamState {
    fn on_tool_delta(
        &mut self,
        index: Option<u64>,
        id: Option<Cow<'_, str>>,
        function: Option<FunctionDeltaWire<'_>>,
        on_delta: &(dyn Fn(ChatDelta) + Send + Sync),
    ) -> Result<(), ModelError> {
        let id = id.filter(|s| !s.is_empty());
        let slot = match index {
            Some(i) => self.calls.iter().position(|c| c.wire_index == i),
            // No index: a new id starts a new call, anything else continues the last one.
            None => match &id {
                Some(new) if !self.calls.iter().any(|c| c.id.as_deref() == Some(new)) => None,
                _ => self.calls.len().checked_sub(1),
            },
        };
        let slot = match slot {
            Some(s) => s,
            None => {
                let wire_index = index.unwrap_or(self.calls.len() as u64);
                self.calls.push(PartialCall {
                    wire_index,
                    ..PartialCall::default()
                });
                self.calls.len() - 1
            }
        };
        let call = &mut self.calls[slot];
        if call.id.is_none()
            && let Some(id) = id
            && !call.started
        {
            call.id = Some(id.into_owned());
        }
        let mut fragment: Option<Cow<'_, str>> = None;
        if let Some(f) = function {
            if let Some(name) = f.name
                && !name.is_empty()
                && name != call.name
            {
                call.name.push_str(&name);
            }
            if let Some(raw) = f.arguments {
                let text = raw.get();
                if text.starts_with('"') {
                    let s: Cow<'_, str> =
                        serde_json::from_str(text).map_err(|e| ModelError::BadResponse {
                            provider: self.provider.clone(),
                            message: format!("bad tool-call arguments fragment: {e}"),
                        })?;
                    fragment = Some(s);
                } else if text != "null" {
                    // Arguments given whole as an object.
                    call.args.clear();
                    fragment = Some(Cow::Borrowed(text));
                }
            }
        }
        let call = &mut self.calls[slot];
        if !call.started && !call.name.is_empty() {
            call.started = true;
            if call.id.is_none() {
                call.id = Some(generated_call_id());
            }
            on_delta(ChatDelta::ToolCallStart {
                index: slot,
                id: call.id.clone().unwrap_or_default(),
                name: call.name.clone(),
            });
            if !call.args.is_empty() {
                on_delta(ChatDelta::ToolCallArguments {
                    index: slot,
                    fragment: call.args.clone(),
                });
            }
        }
        if let Some(frag) = fragment
            && !frag.is_empty()
        {
            call.args.push_str(&frag);
            if call.started {
                on_delta(ChatDelta::ToolCallArguments {
                    index: slot,
                    fragment: frag.into_owned(),
                });
            }
        }
        Ok(())
    }
}

impl StreamEvents for StreamState {
    fn provider(&self) -> &str {
        &self.provider
    }

    fn on_data(
        &mut self,
        data: &str,
        on_delta: &(dyn Fn(ChatDelta) + Send + Sync),
    ) -> Result<(), ModelError> {
        self.saw_data = true;
        let trimmed = data.trim();
        if trimmed == "[DONE]" {
            self.done = true;
            return Ok(());
        }
        if trimmed.is_empty() {
            return Ok(());
        }
        let chunk: ChunkWire<'_> = serde_json::from_str(data).map_err(|e| {
            self.bad(format!(
                "stream chunk is not valid JSON ({e}): {}",
                truncate_chars(data, 300)
            ))
        })?;
        if let Some(err) = chunk.error {
            let msg = err
                .get("message")
                .and_then(Value::as_str)
                .map(str::to_string)
                .unwrap_or_else(|| err.to_string());
            return Err(self.bad(format!("the server reported an error mid-stream: {msg}")));
        }
        if self.model.is_none()
            && let Some(m) = chunk.model
        {
            self.model = Some(m.into_owned());
        }
        if let Some(u) = chunk.usage {
            self.usage = Some(u);
        }
        if let Some(t) = chunk.timings {
            self.timings = Some(t);
        }
        for choice in chunk.choices.unwrap_or_default() {
            if choice.index.unwrap_or(0) != 0 {
                continue;
            }
            if let Some(delta) = choice.delta {
                if let Some(text) = delta.content
                    && !text.is_empty()
                {
                    self.content.push_str(&text);
                    on_delta(ChatDelta::Text(text.into_owned()));
                }
                for tc in delta.tool_calls.unwrap_or_default() {
                    self.on_tool_delta(tc.index, tc.id, tc.function, on_delta)?;
                }
                if let Some(f) = delta.function_call {
                    self.on_tool_delta(Some(0), None, Some(f), on_delta)?;
                }
            }
            if let Some(reason) = choice.finish_reason {
                self.finish = Some(reason.into_owned());
            }
        }
        Ok(())
    }
}

#[async_trait]
impl ChatModel for OpenAiModel {
    fn model_name(&self) -> &str {
        &self.model
    }

    fn context_window(&self) -> Option<u64> {
        self.context_window
    }

    async fn chat(&self, request: ChatRequest) -> Result<ChatResponse, ModelError> {
        let slot = self.slot(&request).await;
        match self.chat_once(&request, slot).await {
            Err(e) if self.refused_cache_key(&request, &e) => self.chat_once(&request, slot).await,
            other => other,
        }
    }

    async fn chat_stream(
        &self,
        request: ChatRequest,
        on_delta: &(dyn Fn(ChatDelta) + Send + Sync),
    ) -> Result<ChatResponse, ModelError> {
        let slot = self.slot(&request).await;
        match self.chat_stream_once(&request, slot, on_delta).await {
            Err(e) if self.refused_cache_key(&request, &e) => {
                self.chat_stream_once(&request, slot, on_delta).await
            }
            other => other,
        }
    }
}

impl OpenAiModel {
    async fn chat_once(
        &self,
        request: &ChatRequest,
        slot: Option<usize>,
    ) -> Result<ChatResponse, ModelError> {
        let recover = self.recovers_for(request);
        let body = self.encode(request, false, slot)?;
        let bytes = self.transport.post_for_body(body).await?;
        let reply = parse_completion(
            &self.transport.provider,
            &bytes,
            &self.requested_model(request),
        );
        self.finish_reply(recover, reply)
    }

    async fn chat_stream_once(
        &self,
        request: &ChatRequest,
        slot: Option<usize>,
        on_delta: &(dyn Fn(ChatDelta) + Send + Sync),
    ) -> Result<ChatResponse, ModelError> {
        let recover = self.recovers_for(request);
        let body = self.encode(request, true, slot)?;
        let model = self.requested_model(request);
        let provider = &self.transport.provider;
        let decoder = OpenAiStreamDecoder::new(provider.clone(), model.clone());
        let reply = self
            .transport
            .stream_reply(
                body,
                decoder,
                |buf| parse_completion(provider, buf, &model),
                on_delta,
                // Chat Completions has no assistant prefill: a cut stream cannot be continued.
                None,
            )
            .await;
        self.finish_reply(recover, reply)
    }
}

impl StreamDecode for OpenAiStreamDecoder {
    type Reply = ChatResponse;

    fn response(reply: &ChatResponse) -> &ChatResponse {
        reply
    }

    fn feed(
        &mut self,
        bytes: &[u8],
        on_delta: &(dyn Fn(ChatDelta) + Send + Sync),
    ) -> Result<(), ModelError> {
        OpenAiStreamDecoder::feed(self, bytes, on_delta)
    }

    fn is_done(&self) -> bool {
        OpenAiStreamDecoder::is_done(self)
    }

    fn finish(self) -> Result<ChatResponse, ModelError> {
        OpenAiStreamDecoder::finish(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cache_hints_follow_the_settings() {
        let scoped = ChatRequest::new(vec![ChatMessage::user("hi")])
            .with_cache_scope(subagent_spi::CacheScope::new("sa-1"));
        let hosted = OpenAiModel::builder().model("m").build().unwrap();
        let body = hosted.request_body(&scoped, false);
        assert_eq!(body["prompt_cache_key"], "sa-1");
        assert!(body.get("cache_prompt").is_none() && body.get("keep_alive").is_none());
        // A request of no conversation has no key.
        let one_off = ChatRequest::new(vec![ChatMessage::user("hi")]);
        assert!(
            hosted
                .request_body(&one_off, false)
                .get("prompt_cache_key")
                .is_none()
        );
        // llama.cpp: cache_prompt, and the slot when there is one.
        let local = OpenAiModel::builder()
            .model("m")
            .base_url("http://127.0.0.1:9/v1")
            .llama_cpp_cache(true)
            .keep_alive("30m")
            .build()
            .unwrap();
        let body = local.request_body_on(&scoped, true, Some(1));
        assert_eq!(
            (&body["cache_prompt"], &body["id_slot"], &body["keep_alive"]),
            (&json!(true), &json!(1), &json!("30m"))
        );
        assert_eq!(
            local.slots.as_ref().map(|(_, url)| url.as_str()),
            Some("http://127.0.0.1:9/props")
        );
        // Off: none of it.
        let off = OpenAiModel::builder()
            .model("m")
            .llama_cpp_cache(true)
            .keep_alive("30m")
            .prompt_caching(PromptCaching::Off)
            .build()
            .unwrap();
        let body = off.request_body_on(&scoped, false, Some(1));
        for field in ["prompt_cache_key", "cache_prompt", "id_slot", "keep_alive"] {
            assert!(body.get(field).is_none(), "{field}");
        }
        assert!(off.slots.is_none());
    }

    #[test]
    fn effort_is_sent_as_reasoning_effort() {
        let m = OpenAiModel::builder().model("m").build().unwrap();
        let req = ChatRequest::new(vec![ChatMessage::user("hi")]);
        assert!(
            m.request_body(&req, false)
                .get("reasoning_effort")
                .is_none()
        );
        for (effort, sent) in [
            (Effort::Low, "low"),
            (Effort::Medium, "medium"),
            (Effort::High, "high"),
            (Effort::Max, "high"),
        ] {
            let body = m.request_body(&req.clone().with_effort(effort), false);
            assert_eq!(body["reasoning_effort"], sent);
        }
    }
    use std::sync::Mutex;

    fn decode(chunks: &[&str]) -> (Result<ChatResponse, ModelError>, Vec<ChatDelta>) {
        let deltas = Mutex::new(Vec::new());
        let mut dec = OpenAiStreamDecoder::new("test", "m");
        let cb = |d: ChatDelta| deltas.lock().unwrap().push(d);
        for c in chunks {
            if let Err(e) = dec.feed(c.as_bytes(), &cb) {
                return (Err(e), deltas.into_inner().unwrap());
            }
        }
        (dec.finish(), deltas.into_inner().unwrap())
    }

    #[test]
    fn finish_reasons_map() {
        for (reason, has_tool_calls, want) in [
            (Some("stop"), false, StopReason::EndTurn),
            (Some("stop"), true, StopReason::ToolUse),
            (None, false, StopReason::EndTurn),
            (None, true, StopReason::ToolUse),
            (Some("length"), false, StopReason::MaxTokens),
            (Some("tool_calls"), true, StopReason::ToolUse),
            (Some("function_call"), true, StopReason::ToolUse),
            (Some("content_filter"), false, StopReason::ContentFilter),
            (Some("weird"), false, StopReason::Other("weird".into())),
        ] {
            assert_eq!(
                stop_reason_from_finish(reason, has_tool_calls),
                want,
                "{reason:?}, tool calls: {has_tool_calls}"
            );
        }
    }

    #[test]
    fn stream_without_index_or_ids_and_object_arguments() {
        let (r, deltas) = decode(&[
            r#"data: {"choices":[{"delta":{"role":"assistant","content":null,"reasoning_content":"hmm"}}],"timings":{"x":1}}"#,
            "\n\n",
            r#"data: {"choices":[{"delta":{"tool_calls":[{"function":{"name":"a","arguments":{"x":1}}}]}}]}"#,
            "\n\n",
            r#"data: {"choices":[{"delta":{"tool_calls":[{"id":"zz","function":{"name":"b","arguments":""}}]}}]}"#,
            "\n\n",
            r#"data: {"choices":[{"delta":{"tool_calls":[{"function":{"arguments":"{\"y\":"}}]}}]}"#,
            "\n\n",
            r#"data: {"choices":[{"delta":{"tool_calls":[{"function":{"arguments":"2}"}}]},"finish_reason":"tool_calls"}]}"#,
            "\n\ndata: [DONE]\n\n",
        ]);
        let r = r.unwrap();
        assert_eq!(r.content, "");
        assert_eq!(r.tool_calls.len(), 2);
        assert_eq!(r.tool_calls[0].name, "a");
        assert_eq!(r.tool_calls[0].arguments, json!({"x": 1}));
        assert!(r.tool_calls[0].id.starts_with("call_"));
        assert_eq!(r.tool_calls[1].id, "zz");
        assert_eq!(r.tool_calls[1].arguments, json!({"y": 2}));
        assert_eq!(r.stop_reason, StopReason::ToolUse);
        assert!(deltas.contains(&ChatDelta::ToolCallStart {
            index: 1,
            id: "zz".into(),
            name: "b".into()
        }));
    }

    #[test]
    fn truncated_stream_is_an_error() {
        let (r, _) = decode(&["data: {\"choices\":[{\"delta\":{\"content\":\"x\"}}]}\n\n"]);
        let err = r.unwrap_err().to_string();
        assert!(err.contains("closed before"), "{err}");
        let (r, _) = decode(&[""]);
        assert!(r.unwrap_err().to_string().contains("without any event"));
    }

    #[test]
    fn mid_stream_error_and_garbage_are_reported() {
        let (r, _) = decode(&["data: {\"error\":{\"message\":\"boom\"}}\n\n"]);
        assert!(r.unwrap_err().to_string().contains("boom"));
        let (r, _) = decode(&["data: {not json\n\n"]);
        assert!(r.unwrap_err().to_string().contains("not valid JSON"));
    }

    #[test]
    fn llama_cpp_timings_say_what_was_read_from_cache() {
        let reply = |usage: &str, timings: &str| {
            let body = format!(
                r#"{{"choices":[{{"message":{{"content":"ok"}},"finish_reason":"stop"}}],"usage":{usage},"timings":{timings}}}"#
            );
            parse_completion("llama.cpp", body.as_bytes(), "m")
                .unwrap()
                .usage
        };
        // This llama.cpp: the prompt's tokens in all, and those it evaluated.
        assert_eq!(
            reply(
                r#"{"prompt_tokens":1300,"completion_tokens":9}"#,
                r#"{"prompt_n":40}"#
            ),
            TokenUsage::new(40, 9).with_cache(1260, 0)
        );
        // Newer ones say what they reused; OpenAI's own field wins over both.
        assert_eq!(
            reply(
                r#"{"prompt_tokens":1300,"completion_tokens":9}"#,
                r#"{"prompt_n":40,"cache_n":1200}"#
            ),
            TokenUsage::new(100, 9).with_cache(1200, 0)
        );
        assert_eq!(
            reply(
                r#"{"prompt_tokens":1300,"completion_tokens":9,"prompt_tokens_details":{"cached_tokens":1000}}"#,
                r#"{"prompt_n":40}"#
            ),
            TokenUsage::new(300, 9).with_cache(1000, 0)
        );
        // Absurd timings cannot make more cached than the prompt.
        assert_eq!(
            reply(
                r#"{"prompt_tokens":10,"completion_tokens":1}"#,
                r#"{"cache_n":99999}"#
            ),
            TokenUsage::new(0, 1).with_cache(10, 0)
        );
        // Streamed: the usage and the timings of the last chunk.
        let mut dec = OpenAiStreamDecoder::new("llama.cpp", "m");
        dec.feed(
            b"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"ok\"}}]}\n\n\
              data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}],\
              \"usage\":{\"prompt_tokens\":500,\"completion_tokens\":2},\"timings\":{\"prompt_n\":20}}\n\n\
              data: [DONE]\n\n",
            &|_| {},
        )
        .unwrap();
        assert_eq!(
            dec.finish().unwrap().usage,
            TokenUsage::new(20, 2).with_cache(480, 0)
        );
    }

    #[test]
    fn non_streamed_tolerance() {
        let body = br#"{"choices":[{"message":{"content":null,"tool_calls":[{"type":"function","function":{"name":"t","arguments":""}}]},"finish_reason":null}],"timings":{}}"#;
        let r = parse_completion("p", body, "req-model").unwrap();
        assert_eq!(r.model, "req-model");
        assert_eq!(r.tool_calls[0].arguments, json!({}));
        assert!(r.tool_calls[0].id.starts_with("call_"));
        assert_eq!(r.stop_reason, StopReason::ToolUse);
        let err = parse_completion("p", b"{\"choices\":[]}", "m").unwrap_err();
        assert!(err.to_string().contains("no choices"));
        let err = parse_completion("p", b"<html>", "m").unwrap_err();
        assert!(err.to_string().contains("<html>"));
    }
}
