//! The Anthropic Messages client.

use std::borrow::Cow;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use serde::Deserialize;
use serde_json::{Map, Value, json};
use subagent_spi::chat::{
    ChatDelta, ChatMessage, ChatModel, ChatRequest, ChatResponse, StopReason, TokenUsage, ToolCall,
    ToolChoice,
};
use subagent_spi::{Effort, ModelError, async_trait};

use subagent_sse::SseParser;

use crate::common::{StreamEvents, decode_events};
use crate::common::{encode_body, generated_call_id, parse_arguments};
use crate::options::{HttpOptions, http_option_setters};
use crate::prompt_cache::PromptCaching;
use crate::transport::{ContinueBody, StreamDecode, Transport, truncate_chars};

/// Anthropic's API base URL (requests go to `<base>/v1/messages`).
pub const ANTHROPIC_DEFAULT_BASE_URL: &str = "https://api.anthropic.com";
/// The `anthropic-version` header value sent.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";
/// `max_tokens` sent when a request has none (the Messages API requires it).
pub const ANTHROPIC_DEFAULT_MAX_TOKENS: u32 = 8192;

/// Replies whose thinking blocks are remembered to be sent back with their tool calls.
const THINKING_CACHE_ENTRIES: usize = 64;

/// The extended-thinking `budget_tokens` for an effort level: low 1,024 (the API's minimum),
/// medium 4,096, high 16,384, max 32,000.
pub fn thinking_budget(effort: Effort) -> u32 {
    match effort {
        Effort::Low => 1024,
        Effort::Medium => 4096,
        Effort::High => 16_384,
        _ => 32_000,
    }
}

/// Thinking blocks of recent replies that requested tools, keyed by their first tool call id:
/// the Messages API wants them back, unchanged, in front of those tool calls while the tool
/// loop lasts. Bounded (oldest forgotten first).
#[derive(Debug, Default)]
struct ThinkingCache {
    entries: VecDeque<(String, Vec<Value>)>,
}

impl ThinkingCache {
    fn insert(&mut self, first_call_id: String, blocks: Vec<Value>) {
        if blocks.is_empty() {
            return;
        }
        self.entries.retain(|(id, _)| *id != first_call_id);
        if self.entries.len() >= THINKING_CACHE_ENTRIES {
            self.entries.pop_front();
        }
        self.entries.push_back((first_call_id, blocks));
    }

    fn get(&self, first_call_id: &str) -> Option<&Vec<Value>> {
        self.entries
            .iter()
            .find(|(id, _)| id == first_call_id)
            .map(|(_, b)| b)
    }
}

/// Builds an [`AnthropicModel`]; see [`AnthropicModel::builder`]. The HTTP settings are an
/// [`HttpOptions`] (set whole with `http_options`, or one by one with the shortcuts).
#[derive(Debug, Clone)]
pub struct AnthropicModelBuilder {
    http: HttpOptions,
    default_max_tokens: u32,
    temperature: Option<f32>,
    caching: PromptCaching,
}

impl Default for AnthropicModelBuilder {
    fn default() -> Self {
        Self {
            http: HttpOptions::new(),
            default_max_tokens: ANTHROPIC_DEFAULT_MAX_TOKENS,
            temperature: None,
            caching: PromptCaching::default(),
        }
    }
}

impl AnthropicModelBuilder {
    http_option_setters! {
        base_url: " The API base URL without `/v1` (default [`ANTHROPIC_DEFAULT_BASE_URL`]).",
        api_key: " The API key, sent as `x-api-key`.",
        header: " An extra header sent with every request (e.g. `anthropic-beta`).",
    }

    /// `max_tokens` used when a request sets none (default 8192).
    pub fn default_max_tokens(mut self, n: u32) -> Self {
        self.default_max_tokens = n;
        self
    }

    /// The sampling temperature sent when a request sets none (default: none, the API's own
    /// default); a spec sets it with `?temperature=0` (see [`ModelSpec`](crate::ModelSpec)).
    /// Like a request's own, it is not sent with extended thinking.
    pub fn temperature(mut self, t: f32) -> Self {
        self.temperature = Some(t);
        self
    }

    /// Prompt caching (default [`PromptCaching::FiveMinutes`]): the cache breakpoints the
    /// requests carry and their TTL, or none with [`PromptCaching::Off`]; see
    /// [`AnthropicModel`].
    pub fn prompt_caching(mut self, caching: PromptCaching) -> Self {
        self.caching = caching;
        self
    }

    /// Check the settings and build the model.
    pub fn build(self) -> Result<AnthropicModel, ModelError> {
        let endpoint = self.http.endpoint(
            "anthropic".into(),
            ANTHROPIC_DEFAULT_BASE_URL,
            "/v1/messages",
            &[("anthropic-version", ANTHROPIC_VERSION)],
            |key| ("x-api-key", key.to_string()),
            &["x-api-key", "authorization"],
        )?;
        Ok(AnthropicModel {
            model: endpoint.model,
            base_url: endpoint.base_url,
            default_max_tokens: self.default_max_tokens,
            temperature: self.temperature,
            caching: self.caching,
            thinking: Arc::default(),
            transport: endpoint.transport,
        })
    }
}

/// A [`ChatModel`] speaking the Anthropic Messages API.
///
/// The system prompt goes top-level (SPI `System` messages are appended to it), assistant tool
/// calls become `tool_use` blocks, and consecutive SPI `Tool` results are grouped into one user
/// message of `tool_result` blocks (with `is_error`).
///
/// [`ChatRequest::effort`] turns on extended thinking with a `budget_tokens` of
/// [`thinking_budget`] (`max_tokens` is raised above the budget when needed, and
/// `temperature` is not sent, as the API requires). The thinking blocks of a reply that calls
/// tools are kept (the last 64 replies) and sent back in front of those calls, as the API
/// requires during a tool loop; a request continuing a tool loop whose thinking blocks are not
/// known (begun without effort, or forgotten) and a request forcing a tool are sent without
/// thinking, with a debug note.
///
/// **Prompt caching** (on unless [`PromptCaching::Off`]; the TTL is 5 minutes or one hour): a
/// request carries at most four `cache_control` breakpoints, on blocks whose content never
/// changes once sent:
/// - the end of the system prompt (or of the tool list, when there is no system prompt): the
///   tools and the system prompt are one cached prefix;
/// - the last block of the last message (a rolling breakpoint: the next request of the
///   conversation reads all of it and writes only what it adds);
/// - the last block of the message before the last assistant message: where the previous
///   request of a tool loop had its rolling breakpoint, so it is read back exactly even when
///   a turn adds more blocks than the API looks back over (20);
/// - for a request that repeats an earlier one of its conversation
///   ([`CacheScope::continues`](subagent_spi::CacheScope::continues): a fork's first request),
///   that request's breakpoints too, so the part they share is the same byte for byte.
///
/// Usage: `input_tokens` counts what was written to the cache too (as the SPI does; the API
/// counts it apart), `cache_read_tokens` what was read from it.
#[derive(Debug, Clone)]
pub struct AnthropicModel {
    model: String,
    base_url: String,
    default_max_tokens: u32,
    temperature: Option<f32>,
    caching: PromptCaching,
    thinking: Arc<Mutex<ThinkingCache>>,
    transport: Transport,
}

impl AnthropicModel {
    /// A builder with Anthropic's defaults.
    pub fn builder() -> AnthropicModelBuilder {
        AnthropicModelBuilder::default()
    }

    /// The base URL in use.
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// The prompt caching in use (see [`AnthropicModelBuilder::prompt_caching`]).
    pub fn prompt_caching(&self) -> PromptCaching {
        self.caching
    }

    fn cache(&self) -> std::sync::MutexGuard<'_, ThinkingCache> {
        self.thinking
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The thinking budget for `request`, or `None` when it asks for no effort or thinking
    /// cannot be turned on for it (see the type's docs).
    fn thinking_for(&self, request: &ChatRequest) -> Option<u32> {
        let effort = request.effort?;
        if matches!(
            request.tool_choice,
            ToolChoice::Required | ToolChoice::Tool(_)
        ) {
            tracing::debug!(%effort, "effort ignored: thinking cannot be used with a forced tool choice");
            return None;
        }
        // In a tool loop (the conversation ends with tool results), the last assistant
        // message's thinking blocks must go back with it.
        if matches!(request.messages.last(), Some(ChatMessage::Tool { .. })) {
            let first_call = request.messages.iter().rev().find_map(|m| match m {
                ChatMessage::Assistant { tool_calls, .. } => tool_calls.first(),
                _ => None,
            });
            let known = first_call.is_some_and(|c| self.cache().get(&c.id).is_some());
            if !known {
                tracing::debug!(%effort, "effort ignored for this request: the tool loop it continues has no known thinking blocks");
                return None;
            }
        }
        Some(thinking_budget(effort))
    }

    /// The JSON body sent for `request` (`stream` selects SSE).
    pub(crate) fn request_body(&self, request: &ChatRequest, stream: bool) -> Value {
        let mut body = Map::new();
        body.insert(
            "model".into(),
            json!(request.model.as_deref().unwrap_or(&self.model)),
        );
        let thinking = self.thinking_for(request);
        let mut max_tokens = request.max_tokens.unwrap_or(self.default_max_tokens);
        if let Some(budget) = thinking {
            if max_tokens <= budget {
                max_tokens = budget.saturating_add(self.default_max_tokens);
            }
            body.insert(
                "thinking".into(),
                json!({"type": "enabled", "budget_tokens": budget}),
            );
        }
        body.insert("max_tokens".into(), json!(max_tokens));
        let (system, mut messages, continued) = {
            let cache = self.cache();
            let (system, messages) =
                wire_messages(request.system.as_deref(), &request.messages, Some(&cache));
            // A request repeating an earlier one keeps that one's breakpoints (see the docs).
            let continued = request
                .cache_scope
                .as_ref()
                .and_then(|s| s.continues)
                .filter(|n| *n > 0 && *n <= request.messages.len())
                .map(|n| {
                    wire_messages(
                        request.system.as_deref(),
                        &request.messages[..n],
                        Some(&cache),
                    )
                    .1
                    .len()
                });
            (system, messages, continued)
        };
        let cache_control = self.caching.cache_control();
        let mut marked_system = false;
        if let Some(s) = system {
            match &cache_control {
                Some(cc) if !s.is_empty() => {
                    body.insert(
                        "system".into(),
                        json!([{"type": "text", "text": s, "cache_control": cc}]),
                    );
                    marked_system = true;
                }
                _ => {
                    body.insert("system".into(), json!(s));
                }
            }
        }
        if let Some(cc) = &cache_control {
            mark_messages(&mut messages, continued, cc, MAX_BREAKPOINTS - 1);
        }
        body.insert("messages".into(), Value::Array(messages));
        if !request.tools.is_empty() {
            let mut tools: Vec<Value> = request
                .tools
                .iter()
                .map(|t| {
                    json!({
                        "name": t.name,
                        "description": t.description,
                        "input_schema": t.input_schema,
                    })
                })
                .collect();
            if let (Some(cc), false, Some(last)) = (&cache_control, marked_system, tools.last_mut())
            {
                last["cache_control"] = cc.clone();
            }
            body.insert("tools".into(), Value::Array(tools));
            let choice = match &request.tool_choice {
                ToolChoice::Auto => json!({"type": "auto"}),
                ToolChoice::None => json!({"type": "none"}),
                ToolChoice::Required => json!({"type": "any"}),
                ToolChoice::Tool(name) => json!({"type": "tool", "name": name}),
            };
            body.insert("tool_choice".into(), choice);
        }
        if let Some(t) = request
            .temperature
            .or(self.temperature)
            .filter(|t| t.is_finite())
        {
            if thinking.is_some() {
                tracing::debug!("temperature not sent: extended thinking does not allow it");
            } else {
                body.insert("temperature".into(), crate::common::temperature_json(t));
            }
        }
        if stream {
            body.insert("stream".into(), json!(true));
        }
        Value::Object(body)
    }

    /// Remembers a reply's thinking blocks when it calls tools.
    fn remember_thinking(&self, reply: &ChatResponse, blocks: Vec<Value>) {
        if let Some(first) = reply.tool_calls.first() {
            self.cache().insert(first.id.clone(), blocks);
        }
    }

    fn encode(&self, request: &ChatRequest, stream: bool) -> Result<Bytes, ModelError> {
        encode_body(&self.request_body(request, stream))
    }

    fn requested_model(&self, request: &ChatRequest) -> String {
        request.model.clone().unwrap_or_else(|| self.model.clone())
    }
}

/// The most `cache_control` breakpoints a request may carry.
const MAX_BREAKPOINTS: usize = 4;

/// Puts the message breakpoints (see [`AnthropicModel`]) on `messages`, at most `budget`: the
/// last message, the one before the last assistant message, and, when the request repeats the
/// first `continued` messages of an earlier one, that request's two. The earliest are left out
/// when there are more than `budget`.
fn mark_messages(messages: &mut [Value], continued: Option<usize>, cc: &Value, budget: usize) {
    let mut at: Vec<usize> = Vec::with_capacity(4);
    let mut add = |end: usize| {
        if end == 0 {
            return;
        }
        let last = end - 1;
        let before_reply = messages[..end]
            .iter()
            .rposition(|m| m["role"] == "assistant")
            .and_then(|a| a.checked_sub(1));
        at.extend(before_reply);
        at.push(last);
    };
    if let Some(n) = continued {
        add(n.min(messages.len()));
    }
    add(messages.len());
    at.sort_unstable();
    at.dedup();
    let mut placed = 0;
    for i in at.into_iter().rev() {
        if placed < budget && mark_last_block(&mut messages[i], cc) {
            placed += 1;
        }
    }
}

/// Puts `cc` on the last content block of `message` (a string content becomes one text
/// block). False when that block cannot carry one (an empty text, a thinking block).
fn mark_last_block(message: &mut Value, cc: &Value) -> bool {
    let content = &mut message["content"];
    if let Value::String(text) = content {
        if text.is_empty() {
            return false;
        }
        *content = json!([{"type": "text", "text": std::mem::take(text)}]);
    }
    let Some(block) = content.as_array_mut().and_then(|b| b.last_mut()) else {
        return false;
    };
    let markable = match block["type"].as_str() {
        Some("text") => block["text"].as_str().is_some_and(|t| !t.is_empty()),
        Some("tool_use" | "tool_result") => true,
        _ => false,
    };
    if markable {
        block["cache_control"] = cc.clone();
    }
    markable
}

/// The top-level system text and the `messages` array of `system` and `messages`; assistant
/// tool calls get the thinking blocks `thinking` remembers for them in front.
fn wire_messages(
    system: Option<&str>,
    messages: &[ChatMessage],
    thinking: Option<&ThinkingCache>,
) -> (Option<String>, Vec<Value>) {
    let mut system: Vec<&str> = system.into_iter().collect();
    let mut out: Vec<Value> = Vec::with_capacity(messages.len());
    // Tool results waiting to be sent as one user message.
    let mut results: Vec<Value> = Vec::new();
    let flush = |results: &mut Vec<Value>, out: &mut Vec<Value>| {
        if !results.is_empty() {
            out.push(json!({"role": "user", "content": std::mem::take(results)}));
        }
    };
    for m in messages {
        match m {
            ChatMessage::System { content } => system.push(content),
            ChatMessage::Tool {
                call_id,
                content,
                is_error,
                ..
            } => {
                let mut block = json!({
                    "type": "tool_result",
                    "tool_use_id": call_id,
                    "content": content,
                });
                if *is_error {
                    block["is_error"] = json!(true);
                }
                results.push(block);
            }
            ChatMessage::User { content } => {
                if results.is_empty() {
                    out.push(json!({"role": "user", "content": content}));
                } else {
                    // Text after tool results joins their user turn (results first).
                    results.push(json!({"type": "text", "text": content}));
                    flush(&mut results, &mut out);
                }
            }
            ChatMessage::Assistant {
                content,
                tool_calls,
            } => {
                flush(&mut results, &mut out);
                if tool_calls.is_empty() {
                    out.push(json!({"role": "assistant", "content": content}));
                } else {
                    let mut blocks = Vec::with_capacity(tool_calls.len() + 1);
                    if let Some(kept) = thinking
                        .zip(tool_calls.first())
                        .and_then(|(t, c)| t.get(&c.id))
                    {
                        blocks.extend(kept.iter().cloned());
                    }
                    if !content.is_empty() {
                        blocks.push(json!({"type": "text", "text": content}));
                    }
                    for c in tool_calls {
                        let input = match &c.arguments {
                            Value::Object(_) => c.arguments.clone(),
                            Value::String(s) => match serde_json::from_str::<Value>(s) {
                                Ok(v @ Value::Object(_)) => v,
                                _ => json!({}),
                            },
                            _ => json!({}),
                        };
                        blocks.push(json!({
                            "type": "tool_use",
                            "id": c.id,
                            "name": c.name,
                            "input": input,
                        }));
                    }
                    out.push(json!({"role": "assistant", "content": blocks}));
                }
            }
        }
    }
    flush(&mut results, &mut out);
    let system = (!system.is_empty()).then(|| system.join("\n\n"));
    (system, out)
}

/// Map an Anthropic `stop_reason` to a [`StopReason`].
pub(crate) fn stop_reason_from_anthropic(reason: Option<&str>, has_tool_calls: bool) -> StopReason {
    match reason {
        Some("end_turn") => StopReason::EndTurn,
        Some("tool_use") => StopReason::ToolUse,
        Some("max_tokens" | "model_context_window_exceeded") => StopReason::MaxTokens,
        Some("stop_sequence") => StopReason::StopSequence,
        Some("refusal") => StopReason::ContentFilter,
        None if has_tool_calls => StopReason::ToolUse,
        None => StopReason::EndTurn,
        Some(other) => StopReason::Other(other.to_string()),
    }
}

#[derive(Deserialize, Default, Clone, Copy)]
struct UsageWire {
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default)]
    output_tokens: Option<u64>,
    #[serde(default)]
    cache_read_input_tokens: Option<u64>,
    #[serde(default)]
    cache_creation_input_tokens: Option<u64>,
}

impl UsageWire {
    /// Overwrite the counts this one carries.
    fn apply(&self, u: &mut TokenUsage) {
        if let Some(v) = self.input_tokens {
            u.input_tokens = v;
        }
        if let Some(v) = self.output_tokens {
            u.output_tokens = v;
        }
        if let Some(v) = self.cache_read_input_tokens {
            u.cache_read_tokens = v;
        }
        if let Some(v) = self.cache_creation_input_tokens {
            u.cache_creation_tokens = v;
        }
    }
}

#[derive(Deserialize)]
struct MessageWire {
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    content: Option<Vec<BlockWire>>,
    #[serde(default)]
    stop_reason: Option<String>,
    #[serde(default)]
    usage: Option<UsageWire>,
}

#[derive(Deserialize)]
struct BlockWire {
    #[serde(rename = "type", default)]
    kind: String,
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    thinking: Option<String>,
    #[serde(default)]
    signature: Option<String>,
    #[serde(default)]
    data: Option<String>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    input: Option<Value>,
}

fn block_input(input: Option<Value>) -> Value {
    match input {
        None | Some(Value::Null) => json!({}),
        Some(v) => v,
    }
}

/// A thinking or redacted-thinking block as the API wants it back.
fn thinking_block(b: &BlockWire) -> Option<Value> {
    match b.kind.as_str() {
        "thinking" => Some(json!({
            "type": "thinking",
            "thinking": b.thinking.clone().unwrap_or_default(),
            "signature": b.signature.clone().unwrap_or_default(),
        })),
        "redacted_thinking" => Some(json!({
            "type": "redacted_thinking",
            "data": b.data.clone().unwrap_or_default(),
        })),
        _ => None,
    }
}

/// Parses a non-streamed reply and its thinking blocks.
pub(crate) fn parse_message(
    provider: &str,
    body: &[u8],
    requested_model: &str,
) -> Result<(ChatResponse, Vec<Value>), ModelError> {
    let wire: MessageWire = serde_json::from_slice(body).map_err(|e| ModelError::BadResponse {
        provider: provider.into(),
        message: format!(
            "reply is not a message ({e}): {}",
            truncate_chars(&String::from_utf8_lossy(body), 300)
        ),
    })?;
    let mut content = String::new();
    let mut tool_calls = Vec::new();
    let mut thinking = Vec::new();
    for block in wire.content.unwrap_or_default() {
        if let Some(t) = thinking_block(&block) {
            thinking.push(t);
            continue;
        }
        match block.kind.as_str() {
            "text" => content.push_str(block.text.as_deref().unwrap_or("")),
            "tool_use" => tool_calls.push(ToolCall::new(
                block
                    .id
                    .filter(|s| !s.is_empty())
                    .unwrap_or_else(generated_call_id),
                block.name.unwrap_or_default(),
                block_input(block.input),
            )),
            _ => {} // server tool blocks...
        }
    }
    let mut usage = TokenUsage::default();
    if let Some(u) = wire.usage {
        u.apply(&mut usage);
    }
    let usage = spi_usage(usage);
    let reply = ChatResponse::new(
        content,
        stop_reason_from_anthropic(wire.stop_reason.as_deref(), !tool_calls.is_empty()),
        usage,
        wire.model
            .filter(|m| !m.is_empty())
            .unwrap_or_else(|| requested_model.into()),
    )
    .with_tool_calls(tool_calls);
    Ok((reply, thinking))
}

// ----- streaming -----

#[derive(Deserialize)]
struct EventWire<'a> {
    #[serde(rename = "type", default, borrow)]
    kind: Cow<'a, str>,
    #[serde(default)]
    message: Option<StartMessageWire>,
    #[serde(default)]
    index: Option<u64>,
    #[serde(default)]
    content_block: Option<BlockWire>,
    #[serde(default, borrow)]
    delta: Option<DeltaWire<'a>>,
    #[serde(default)]
    usage: Option<UsageWire>,
    #[serde(default)]
    error: Option<ErrorWire>,
}

#[derive(Deserialize)]
struct StartMessageWire {
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    usage: Option<UsageWire>,
}

#[derive(Deserialize)]
struct DeltaWire<'a> {
    #[serde(rename = "type", default, borrow)]
    kind: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    text: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    partial_json: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    thinking: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    signature: Option<Cow<'a, str>>,
    #[serde(default)]
    stop_reason: Option<String>,
}

#[derive(Deserialize)]
struct ErrorWire {
    #[serde(rename = "type", default)]
    kind: String,
    #[serde(default)]
    message: String,
}

#[derive(Debug)]
enum Block {
    Text,
    Tool {
        call: usize,
        start_input: Option<Value>,
    },
    /// A thinking block: its index in `StreamState::thinking`.
    Thinking(usize),
    Other,
}

#[derive(Debug, Default)]
struct StreamState {
    provider: String,
    model: Option<String>,
    content: String,
    calls: Vec<(ToolCall, String)>,
    blocks: Vec<(u64, Block)>,
    thinking: Vec<Value>,
    stop_reason: Option<String>,
    usage: TokenUsage,
    started: bool,
    stopped: bool,
}

/// Decodes an Anthropic Messages SSE byte stream (`message_start`, `content_block_start` /
/// `_delta` / `_stop` with `text_delta` and `input_json_delta`, `message_delta`, `ping`,
/// `message_stop`, `error`): feed chunks as they arrive, [`finish`](Self::finish) returns the
/// assembled reply.
///
/// Internal (the model's `chat_stream` uses it); public only to benches, through the hidden
/// `bench-internals` feature.
#[cfg_attr(not(feature = "bench-internals"), allow(unreachable_pub))] // public to the bench only
#[derive(Debug)]
pub struct AnthropicStreamDecoder {
    parser: SseParser,
    state: StreamState,
    default_model: String,
    /// Usage of the attempts before a continuation (see `continue_after_cut`).
    carried: TokenUsage,
}

#[cfg_attr(not(feature = "bench-internals"), allow(unreachable_pub))] // public to the bench only
impl AnthropicStreamDecoder {
    /// A decoder; `model` is reported when the stream names none.
    pub fn new(model: impl Into<String>) -> Self {
        Self {
            parser: SseParser::new(),
            state: StreamState {
                provider: "anthropic".into(),
                ..StreamState::default()
            },
            default_model: model.into(),
            carried: TokenUsage::default(),
        }
    }

    /// The stream was cut off mid-answer: when the reply so far is text only (no tool call or
    /// thinking block started, which a prefill cannot carry), get ready to decode the stream
    /// of a request that continues it (the text as a prefill: a last assistant message) into
    /// the same reply, and return the text to send (without trailing whitespace, which the API
    /// refuses in a prefill). `None` when the reply cannot be continued.
    pub(crate) fn continue_after_cut(&mut self) -> Option<String> {
        let s = &mut self.state;
        if !s.started
            || s.stopped
            || !s.calls.is_empty()
            || !s.thinking.is_empty()
            || s.content.trim().is_empty()
        {
            return None;
        }
        let u = std::mem::take(&mut s.usage);
        self.carried = sum_usage(&self.carried, &u);
        s.blocks.clear();
        s.started = false;
        s.stop_reason = None;
        self.parser = SseParser::new();
        Some(s.content.trim_end().to_string())
    }

    /// True once `message_stop` was seen.
    pub fn is_done(&self) -> bool {
        self.state.stopped
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
    #[cfg(any(test, feature = "bench-internals"))]
    pub fn finish(self) -> Result<ChatResponse, ModelError> {
        self.finish_with_thinking().map(|(reply, _)| reply)
    }

    /// [`finish`](Self::finish), with the reply's thinking blocks.
    pub(crate) fn finish_with_thinking(mut self) -> Result<(ChatResponse, Vec<Value>), ModelError> {
        let Self { parser, state, .. } = &mut self;
        decode_events(parser, state, None, &|_| {})?;
        let state = std::mem::take(&mut self.state);
        if !state.started {
            return Err(state.bad("the stream ended without a message_start event"));
        }
        if !state.stopped && state.stop_reason.is_none() {
            return Err(state.bad("the stream closed before message_stop"));
        }
        let provider = state.provider;
        let tool_calls: Vec<ToolCall> = state
            .calls
            .into_iter()
            .map(|(mut call, json)| {
                if !json.trim().is_empty() {
                    call.arguments = parse_arguments(&provider, &call.name, &json);
                }
                call
            })
            .collect();
        let usage = spi_usage(sum_usage(&state.usage, &self.carried));
        let reply = ChatResponse::new(
            state.content,
            stop_reason_from_anthropic(state.stop_reason.as_deref(), !tool_calls.is_empty()),
            usage,
            state.model.unwrap_or(self.default_model),
        )
        .with_tool_calls(tool_calls);
        Ok((reply, state.thinking))
    }
}

impl StreamState {
    fn block(&self, index: Option<u64>) -> Option<&Block> {
        let i = index?;
        self.blocks
            .iter()
            .rev()
            .find(|(n, _)| *n == i)
            .map(|(_, b)| b)
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
        let ev: EventWire<'_> = serde_json::from_str(data).map_err(|e| {
            self.bad(format!(
                "stream event is not valid JSON ({e}): {}",
                truncate_chars(data, 300)
            ))
        })?;
        match ev.kind.as_ref() {
            "message_start" => {
                self.started = true;
                if let Some(m) = ev.message {
                    self.model = m.model.filter(|s| !s.is_empty());
                    if let Some(u) = m.usage {
                        u.apply(&mut self.usage);
                    }
                }
            }
            "content_block_start" => {
                let index = ev.index.unwrap_or(self.blocks.len() as u64);
                let block = match ev.content_block {
                    Some(b) if b.kind == "text" => {
                        if let Some(t) = b.text.filter(|t| !t.is_empty()) {
                            self.content.push_str(&t);
                            on_delta(ChatDelta::Text(t));
                        }
                        Block::Text
                    }
                    Some(b) if b.kind == "tool_use" => {
                        let call = ToolCall::new(
                            b.id.filter(|s| !s.is_empty())
                                .unwrap_or_else(generated_call_id),
                            b.name.unwrap_or_default(),
                            json!({}),
                        );
                        let n = self.calls.len();
                        on_delta(ChatDelta::ToolCallStart {
                            index: n,
                            id: call.id.clone(),
                            name: call.name.clone(),
                        });
                        self.calls.push((call, String::new()));
                        let start_input = b
                            .input
                            .filter(|v| v.as_object().is_some_and(|o| !o.is_empty()));
                        Block::Tool {
                            call: n,
                            start_input,
                        }
                    }
                    Some(b) => match thinking_block(&b) {
                        Some(t) => {
                            self.thinking.push(t);
                            Block::Thinking(self.thinking.len() - 1)
                        }
                        None => Block::Other,
                    },
                    None => Block::Other,
                };
                self.blocks.push((index, block));
            }
            "content_block_delta" => {
                let Some(delta) = ev.delta else {
                    return Ok(());
                };
                let kind = delta.kind.as_deref().unwrap_or("");
                match (self.block(ev.index), kind) {
                    (Some(Block::Text) | None, "text_delta") => {
                        if let Some(t) = delta.text.filter(|t| !t.is_empty()) {
                            self.content.push_str(&t);
                            on_delta(ChatDelta::Text(t.into_owned()));
                        }
                    }
                    (Some(Block::Tool { call, .. }), "input_json_delta") => {
                        let call = *call;
                        if let Some(j) = delta.partial_json.filter(|j| !j.is_empty()) {
                            if let Some((_, buf)) = self.calls.get_mut(call) {
                                buf.push_str(&j);
                            }
                            on_delta(ChatDelta::ToolCallArguments {
                                index: call,
                                fragment: j.into_owned(),
                            });
                        }
                    }
                    (Some(Block::Thinking(t)), "thinking_delta" | "signature_delta") => {
                        let t = *t;
                        let (field, piece) = if kind == "thinking_delta" {
                            ("thinking", delta.thinking)
                        } else {
                            ("signature", delta.signature)
                        };
                        if let Some(piece) = piece
                            && let Some(Value::String(s)) =
                                self.thinking.get_mut(t).and_then(|b| b.get_mut(field))
                        {
                            s.push_str(&piece);
                        }
                    }
                    _ => {} // citations...
                }
            }
            "content_block_stop" => {
                if let Some(Block::Tool { call, start_input }) = self.block(ev.index) {
                    let call = *call;
                    let start = start_input.clone();
                    if let Some((c, buf)) = self.calls.get_mut(call)
                        && buf.trim().is_empty()
                        && let Some(v) = start
                    {
                        c.arguments = v;
                    }
                }
            }
            "message_delta" => {
                if let Some(d) = ev.delta
                    && d.stop_reason.is_some()
                {
                    self.stop_reason = d.stop_reason;
                }
                if let Some(u) = ev.usage {
                    u.apply(&mut self.usage);
                }
            }
            "message_stop" => self.stopped = true,
            "error" => {
                let (kind, message) = ev
                    .error
                    .map(|e| (e.kind, e.message))
                    .unwrap_or_else(|| ("error".into(), data.to_string()));
                let status = match kind.as_str() {
                    "overloaded_error" => Some(529),
                    "rate_limit_error" => Some(429),
                    "api_error" => Some(500),
                    _ => None,
                };
                return Err(match status {
                    Some(status) => {
                        crate::error::stream_error(&self.provider, status, kind, message)
                    }
                    None => self.bad(format!("the stream reported {kind}: {message}")),
                });
            }
            _ => {} // ping and future event types
        }
        Ok(())
    }
}

#[async_trait]
impl ChatModel for AnthropicModel {
    fn model_name(&self) -> &str {
        &self.model
    }

    async fn chat(&self, request: ChatRequest) -> Result<ChatResponse, ModelError> {
        let body = self.encode(&request, false)?;
        let bytes = self.transport.post_for_body(body).await?;
        let (reply, thinking) = parse_message(
            &self.transport.provider,
            &bytes,
            &self.requested_model(&request),
        )?;
        self.remember_thinking(&reply, thinking);
        Ok(reply)
    }

    async fn chat_stream(
        &self,
        request: ChatRequest,
        on_delta: &(dyn Fn(ChatDelta) + Send + Sync),
    ) -> Result<ChatResponse, ModelError> {
        let body = self.encode(&request, true)?;
        let model = self.requested_model(&request);
        let provider = &self.transport.provider;
        // A stream cut off mid-answer continues from its text as a prefill (not with extended
        // thinking, which refuses prefills).
        let continue_body = |text: &str| {
            let mut more = request.clone();
            more.messages.push(ChatMessage::assistant(text));
            self.encode(&more, true)
        };
        let continuable = self.thinking_for(&request).is_none();
        let (reply, thinking) = self
            .transport
            .stream_reply(
                body,
                AnthropicStreamDecoder::new(model.clone()),
                |buf| parse_message(provider, buf, &model),
                on_delta,
                continuable.then_some(&continue_body as ContinueBody<'_>),
            )
            .await?;
        self.remember_thinking(&reply, thinking);
        Ok(reply)
    }
}

impl StreamDecode for AnthropicStreamDecoder {
    /// The reply and its thinking blocks.
    type Reply = (ChatResponse, Vec<Value>);

    fn response(reply: &Self::Reply) -> &ChatResponse {
        &reply.0
    }

    fn feed(
        &mut self,
        bytes: &[u8],
        on_delta: &(dyn Fn(ChatDelta) + Send + Sync),
    ) -> Result<(), ModelError> {
        AnthropicStreamDecoder::feed(self, bytes, on_delta)
    }

    fn is_done(&self) -> bool {
        AnthropicStreamDecoder::is_done(self)
    }

    fn finish(self) -> Result<Self::Reply, ModelError> {
        self.finish_with_thinking()
    }

    fn continue_after_cut(&mut self) -> Option<String> {
        AnthropicStreamDecoder::continue_after_cut(self)
    }
}

/// The SPI's counts of the API's: its `input_tokens` leave out what was written to the cache,
/// the SPI's count it in.
fn spi_usage(wire: TokenUsage) -> TokenUsage {
    let mut u = wire;
    u.input_tokens = wire.input_tokens.saturating_add(wire.cache_creation_tokens);
    u
}

/// `a + b`, count by count, saturating: the counts are what the server reported.
fn sum_usage(a: &TokenUsage, b: &TokenUsage) -> TokenUsage {
    TokenUsage::new(
        a.input_tokens.saturating_add(b.input_tokens),
        a.output_tokens.saturating_add(b.output_tokens),
    )
    .with_cache(
        a.cache_read_tokens.saturating_add(b.cache_read_tokens),
        a.cache_creation_tokens
            .saturating_add(b.cache_creation_tokens),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use subagent_spi::ToolSpec;

    fn model() -> AnthropicModel {
        AnthropicModel::builder()
            .model("claude-test")
            .build()
            .unwrap()
    }

    #[test]
    fn effort_turns_on_thinking_and_thinking_blocks_go_back_with_their_tool_calls() {
        let m = model();
        let ask = ChatRequest::new(vec![ChatMessage::user("hi")])
            .with_effort(Effort::High)
            .with_temperature(0.2);
        let body = m.request_body(&ask, false);
        assert_eq!(body["thinking"]["budget_tokens"], 16_384);
        assert!(body["max_tokens"].as_u64().unwrap() > 16_384);
        assert!(body.get("temperature").is_none());
        assert!(
            m.request_body(&ChatRequest::new(vec![ChatMessage::user("hi")]), false)
                .get("thinking")
                .is_none()
        );

        // A reply that thinks, then calls a tool.
        let reply = br#"{"model": "claude-test", "stop_reason": "tool_use", "content": [
            {"type": "thinking", "thinking": "let me look", "signature": "sig=="},
            {"type": "redacted_thinking", "data": "opaque"},
            {"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {"file_path": "a"}}]}"#;
        let (parsed, thinking) = parse_message("anthropic", reply, "claude-test").unwrap();
        assert_eq!(thinking.len(), 2);
        m.remember_thinking(&parsed, thinking);
        let next = ChatRequest::new(vec![
            ChatMessage::user("hi"),
            parsed.to_message(),
            ChatMessage::tool_result("toolu_1", "Read", "contents", false),
        ])
        .with_effort(Effort::High);
        let body = m.request_body(&next, false);
        assert!(
            body.get("thinking").is_some(),
            "the loop's thinking is known"
        );
        let assistant = &body["messages"][1]["content"];
        assert_eq!(assistant[0]["type"], "thinking");
        assert_eq!(assistant[0]["signature"], "sig==");
        assert_eq!(assistant[1]["type"], "redacted_thinking");
        assert_eq!(assistant[2]["type"], "tool_use");

        // A tool loop begun without thinking continues without it.
        let other = ChatRequest::new(vec![
            ChatMessage::user("hi"),
            ChatMessage::assistant_with_tools(
                "",
                vec![ToolCall::new("toolu_9", "Read", json!({}))],
            ),
            ChatMessage::tool_result("toolu_9", "Read", "x", false),
        ])
        .with_effort(Effort::Low);
        assert!(m.request_body(&other, false).get("thinking").is_none());
        let forced = ChatRequest::new(vec![ChatMessage::user("hi")])
            .with_effort(Effort::Low)
            .with_tool_choice(ToolChoice::Required)
            .with_tools(vec![ToolSpec::new("Read", "r", json!({"type": "object"}))]);
        assert!(m.request_body(&forced, false).get("thinking").is_none());
    }

    #[test]
    fn streamed_thinking_is_kept_too() {
        let mut dec = AnthropicStreamDecoder::new("claude-test");
        let events = [
            r#"{"type":"message_start","message":{"model":"claude-test"}}"#,
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"hmm "}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"ok"}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"abc"}}"#,
            r#"{"type":"content_block_stop","index":0}"#,
            r#"{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_2","name":"Read","input":{}}}"#,
            r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{}"}}"#,
            r#"{"type":"content_block_stop","index":1}"#,
            r#"{"type":"message_delta","delta":{"stop_reason":"tool_use"}}"#,
            r#"{"type":"message_stop"}"#,
        ];
        let sse: String = events.iter().map(|e| format!("data: {e}\n\n")).collect();
        dec.feed(sse.as_bytes(), &|_| {}).unwrap();
        let (reply, thinking) = dec.finish_with_thinking().unwrap();
        assert_eq!(reply.tool_calls.len(), 1);
        assert_eq!(
            thinking,
            vec![json!({"type": "thinking", "thinking": "hmm ok", "signature": "abc"})]
        );
    }

    /// Every `cache_control` of a body, as (where, the block's type).
    fn breakpoints(body: &Value) -> Vec<String> {
        let mut out = Vec::new();
        for (i, t) in body["tools"].as_array().into_iter().flatten().enumerate() {
            if t.get("cache_control").is_some() {
                out.push(format!("tool {i}"));
            }
        }
        for b in body["system"].as_array().into_iter().flatten() {
            if b.get("cache_control").is_some() {
                out.push("system".into());
            }
        }
        for (i, m) in body["messages"]
            .as_array()
            .into_iter()
            .flatten()
            .enumerate()
        {
            for b in m["content"].as_array().into_iter().flatten() {
                if b.get("cache_control").is_some() {
                    out.push(format!("message {i} {}", b["type"].as_str().unwrap_or("?")));
                }
            }
        }
        out
    }

    #[test]
    fn cache_breakpoints_mark_the_stable_prefix_and_roll_with_the_conversation() {
        let tools = vec![
            ToolSpec::new("Read", "r", json!({"type": "object"})),
            ToolSpec::new("Task", "t", json!({"type": "object"})),
        ];
        let call = |id: &str| ToolCall::new(id, "Read", json!({"file_path": id}));
        let mut messages = vec![ChatMessage::user("read a, then b")];
        let ask = |messages: &[ChatMessage]| {
            ChatRequest::new(messages.to_vec())
                .with_system("You are careful.")
                .with_tools(tools.clone())
                .with_cache_scope(subagent_spi::CacheScope::new("k1"))
        };
        let m = model();
        // Turn 1: the system prompt (so tools + system) and the prompt.
        let body = m.request_body(&ask(&messages), false);
        assert_eq!(breakpoints(&body), ["system", "message 0 text"]);
        assert_eq!(
            body["system"][0]["cache_control"],
            json!({"type": "ephemeral"})
        );
        // Turn 2 of a tool loop: the previous turn's last message and this one's.
        messages.push(ChatMessage::assistant_with_tools("", vec![call("a")]));
        messages.push(ChatMessage::tool_result("a", "Read", "A", false));
        let turn2 = ask(&messages);
        let body2 = m.request_body(&turn2, false);
        assert_eq!(
            breakpoints(&body2),
            ["system", "message 0 text", "message 2 tool_result"]
        );
        // Turn 3: the marks roll on.
        messages.push(ChatMessage::assistant_with_tools("", vec![call("b")]));
        messages.push(ChatMessage::tool_result("b", "Read", "B", false));
        let body3 = m.request_body(&ask(&messages), false);
        assert_eq!(
            breakpoints(&body3),
            ["system", "message 2 tool_result", "message 4 tool_result"]
        );

        // A fork of turn 2: its first request repeats turn 2's, breakpoints and all, and marks
        // its own end: four in all.
        let mut forked = turn2.messages.clone();
        forked.push(ChatMessage::assistant_with_tools(
            "",
            vec![ToolCall::new("f", "Task", json!({"subagent_type": "fork"}))],
        ));
        forked.push(ChatMessage::tool_result(
            "f",
            "Task",
            "[forked here]",
            false,
        ));
        forked.push(ChatMessage::user("You are a fork. Count."));
        let fork = ChatRequest::new(forked)
            .with_system("You are careful.")
            .with_tools(tools.clone())
            .with_cache_scope(
                subagent_spi::CacheScope::new("k1").with_continues(turn2.messages.len()),
            );
        let fork_body = m.request_body(&fork, false);
        assert_eq!(
            breakpoints(&fork_body),
            [
                "system",
                "message 0 text",
                "message 2 tool_result",
                "message 4 text"
            ]
        );
        let n = body2["messages"].as_array().unwrap().len();
        assert_eq!(
            fork_body["messages"].as_array().unwrap()[..n],
            body2["messages"].as_array().unwrap()[..],
            "the caller's messages, byte for byte"
        );
        assert_eq!(
            (&fork_body["system"], &fork_body["tools"]),
            (&body2["system"], &body2["tools"])
        );
        assert_eq!(
            encode_body(&json!({"m": fork_body["messages"].as_array().unwrap()[..n]})).unwrap(),
            encode_body(&json!({"m": body2["messages"]})).unwrap()
        );

        // Without a system prompt the tool list ends the stable prefix.
        let no_system = ChatRequest::new(vec![ChatMessage::user("hi")]).with_tools(tools.clone());
        assert_eq!(
            breakpoints(&m.request_body(&no_system, false)),
            ["tool 1", "message 0 text"]
        );
        // An empty text block carries no breakpoint (the API refuses one).
        let empty = ChatRequest::new(vec![ChatMessage::user("")]).with_system("s");
        assert_eq!(breakpoints(&m.request_body(&empty, false)), ["system"]);
        // One hour, and off.
        let body_with = |caching| {
            AnthropicModel::builder()
                .model("claude-test")
                .prompt_caching(caching)
                .build()
                .unwrap()
                .request_body(&ask(&messages), false)
        };
        let body = body_with(PromptCaching::OneHour);
        assert_eq!(body["system"][0]["cache_control"]["ttl"], "1h");
        let body = body_with(PromptCaching::Off);
        assert!(breakpoints(&body).is_empty());
        assert_eq!(body["system"], "You are careful.");
        assert!(!body.to_string().contains("cache_control"));
    }

    #[test]
    fn written_cache_tokens_count_as_input() {
        let reply = br#"{"model": "m", "stop_reason": "end_turn", "content": [{"type": "text", "text": "ok"}],
            "usage": {"input_tokens": 10, "output_tokens": 5, "cache_creation_input_tokens": 300,
                      "cache_read_input_tokens": 2000}}"#;
        let (parsed, _) = parse_message("anthropic", reply, "m").unwrap();
        assert_eq!(
            parsed.usage,
            TokenUsage::new(310, 5).with_cache(2000, 300),
            "input = not read from cache, written included"
        );
    }

    #[test]
    fn tool_results_are_grouped_and_system_is_top_level() {
        let req = {
            let mut v = ChatRequest::default();
            v.system = Some("sys".into());
            v.messages = vec![
                ChatMessage::system("more sys"),
                ChatMessage::user("hi"),
                ChatMessage::Assistant {
                    content: "calling".into(),
                    tool_calls: vec![
                        ToolCall::new("t1", "a", json!({"x": 1})),
                        ToolCall::new("t2", "b", json!("{\"y\":2}")),
                    ],
                },
                ChatMessage::Tool {
                    call_id: "t1".into(),
                    name: "a".into(),
                    content: "ok".into(),
                    is_error: false,
                },
                ChatMessage::Tool {
                    call_id: "t2".into(),
                    name: "b".into(),
                    content: "bad".into(),
                    is_error: true,
                },
                ChatMessage::user("and now?"),
            ];
            v.tools = vec![ToolSpec::new("a", "d", json!({"type": "object"}))];
            v.tool_choice = ToolChoice::Required;
            v
        };
        let off = AnthropicModel::builder()
            .model("claude-test")
            .prompt_caching(PromptCaching::Off)
            .build()
            .unwrap();
        let body = off.request_body(&req, false);
        assert_eq!(body["system"], "sys\n\nmore sys");
        assert_eq!(body["max_tokens"], 8192);
        assert_eq!(body["tool_choice"], json!({"type": "any"}));
        let msgs = body["messages"].as_array().unwrap();
        assert_eq!(msgs.len(), 3);
        assert_eq!(msgs[1]["content"][1]["input"], json!({"x": 1}));
        assert_eq!(msgs[1]["content"][2]["input"], json!({"y": 2}));
        let results = msgs[2]["content"].as_array().unwrap();
        assert_eq!(results.len(), 3);
        assert_eq!(results[0]["tool_use_id"], "t1");
        assert!(results[0].get("is_error").is_none());
        assert_eq!(results[1]["is_error"], true);
        assert_eq!(results[2], json!({"type": "text", "text": "and now?"}));
    }

    #[test]
    fn stop_reasons_map() {
        for (reason, has_tool_calls, want) in [
            (Some("end_turn"), false, StopReason::EndTurn),
            (Some("tool_use"), true, StopReason::ToolUse),
            (Some("max_tokens"), false, StopReason::MaxTokens),
            (Some("stop_sequence"), false, StopReason::StopSequence),
            (
                Some("pause_turn"),
                false,
                StopReason::Other("pause_turn".into()),
            ),
        ] {
            assert_eq!(
                stop_reason_from_anthropic(reason, has_tool_calls),
                want,
                "{reason:?}, tool calls: {has_tool_calls}"
            );
        }
    }

    #[test]
    fn error_event_maps_to_http_529() {
        let mut dec = AnthropicStreamDecoder::new("m");
        let err = dec
            .feed(
                b"event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n",
                &|_| {},
            )
            .unwrap_err();
        assert!(
            crate::error::http_status(&err) == Some(529)
                && matches!(err, ModelError::Rejected { ref message, retryable: true, .. } if message == "Overloaded")
        );
    }

    #[test]
    fn truncated_stream_is_an_error() {
        let mut dec = AnthropicStreamDecoder::new("m");
        dec.feed(
            b"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"model\":\"m\"}}\n\n",
            &|_| {},
        )
        .unwrap();
        assert!(
            dec.finish()
                .unwrap_err()
                .to_string()
                .contains("message_stop")
        );
    }

    /// A stream cut and continued sums both attempts' usage: saturating, whatever the server
    /// reported (`u64::MAX` twice neither panics nor wraps).
    #[test]
    fn a_continued_stream_sums_absurd_usage_saturating() {
        let max = u64::MAX;
        let start = format!(
            "event: message_start\ndata: {{\"type\":\"message_start\",\"message\":{{\"model\":\"m\",\
             \"usage\":{{\"input_tokens\":{max},\"output_tokens\":{max},\
             \"cache_read_input_tokens\":{max},\"cache_creation_input_tokens\":{max}}}}}}}\n\n\
             event: content_block_start\ndata: {{\"type\":\"content_block_start\",\"index\":0,\
             \"content_block\":{{\"type\":\"text\",\"text\":\"\"}}}}\n\n\
             event: content_block_delta\ndata: {{\"type\":\"content_block_delta\",\"index\":0,\
             \"delta\":{{\"type\":\"text_delta\",\"text\":\"part \"}}}}\n\n"
        );
        let mut dec = AnthropicStreamDecoder::new("m");
        dec.feed(start.as_bytes(), &|_| {}).unwrap();
        assert_eq!(dec.continue_after_cut().as_deref(), Some("part"));
        dec.feed(start.as_bytes(), &|_| {}).unwrap();
        dec.feed(
            b"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"}}\n\n\
              event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
            &|_| {},
        )
        .unwrap();
        let usage = dec.finish().unwrap().usage;
        assert_eq!(usage, TokenUsage::new(max, max).with_cache(max, max));
    }
}
