//! # subagent-providers
//!
//! LLM providers for the `subagents` framework: implementations of the SPI's
//! [`ChatModel`](subagent_spi::ChatModel) over HTTP.
//!
//! - [`OpenAiModel`]: OpenAI Chat Completions and every server that speaks it (Ollama, vLLM,
//!   llama.cpp's `llama-server`, LM Studio, ...).
//! - [`AnthropicModel`]: the Anthropic Messages API.
//!
//! Both stream over SSE (text and tool-call pieces reach the `on_delta` callback as they
//! arrive), report token usage (incl. cache tokens), retry 429 / 5xx / connection failures with
//! exponential backoff and jitter while honouring `Retry-After` (see [`RetryPolicy`]), apply a
//! per-request timeout (default 300 s) and surface the provider's own error message. API keys are
//! never logged nor shown by `Debug`.
//!
//! ## Model specs
//!
//! [`model_from_spec`] turns a string into a model, reading keys from the environment:
//!
//! | spec | talks to | key |
//! |---|---|---|
//! | `openai:gpt-4.1` | `OPENAI_BASE_URL` or `https://api.openai.com/v1` | `OPENAI_API_KEY` |
//! | `anthropic:claude-sonnet-4-5` | `ANTHROPIC_BASE_URL` or `https://api.anthropic.com` | `ANTHROPIC_API_KEY` |
//! | `ollama:qwen2.5` | `http://127.0.0.1:11434/v1` | none |
//! | `openai-compatible:<model>@<base-url>` | that URL | `OPENAI_COMPATIBLE_API_KEY` (optional) |
//! | `sonnet`, `opus`, `haiku` | Anthropic, see [`default_aliases`] | `ANTHROPIC_API_KEY` |
//! | `claude-sonnet-4-20250514` (any Claude model id) | Anthropic, see [`anthropic_model_id`] | `ANTHROPIC_API_KEY` |
//!
//! Any spec may end with `?temperature=<t>` (0 to 2): the sampling temperature of every request
//! that sets none, e.g. `openai-compatible:local@http://127.0.0.1:8080/v1?temperature=0` for
//! repeatable tool choices from a small local model. Without it the server's default applies.
//! `?cache=off|5m|1h` sets prompt caching ([`PromptCaching`]; default 5 minutes, or
//! [`PROMPT_CACHE_VAR`]), e.g. `anthropic:claude-sonnet-4-5?cache=1h`; options join with `&`.
//!
//! ## Prompt caching
//!
//! On by default: Anthropic requests carry `cache_control` breakpoints (the tools and system
//! prompt, a rolling one on the conversation; see [`AnthropicModel`]), OpenAI-compatible ones a
//! `prompt_cache_key` per conversation ([`ChatRequest::cache_scope`](subagent_spi::ChatRequest::cache_scope)),
//! and a local llama.cpp server gets `cache_prompt` and each conversation on a slot of its own
//! when it has several (see [`OpenAiModel`]). What a reply read from (and, on Anthropic,
//! wrote to) the cache comes back in its [`TokenUsage`](subagent_spi::chat::TokenUsage).
//!
//! ```no_run
//! # fn demo() -> Result<(), subagent_spi::ModelError> {
//! use subagent_providers::model_from_spec;
//!
//! let local = model_from_spec("ollama:qwen2.5")?;
//! let llama_cpp = model_from_spec("openai-compatible:local@http://127.0.0.1:8080/v1")?;
//! let gpt = model_from_spec("openai:gpt-4.1")?; // needs OPENAI_API_KEY
//! let claude = model_from_spec("anthropic:claude-sonnet-4-5")?; // needs ANTHROPIC_API_KEY
//! # let _ = (local, llama_cpp, gpt, claude);
//! # Ok(()) }
//! ```
//!
//! ## Builders
//!
//! ```no_run
//! # async fn demo() -> Result<(), subagent_spi::ModelError> {
//! use std::time::Duration;
//! use subagent_providers::{AnthropicModel, OpenAiModel};
//! use subagent_spi::chat::{ChatMessage, ChatModel, ChatRequest};
//!
//! // Ollama (OpenAI-compatible endpoint, no key).
//! let ollama = OpenAiModel::builder()
//!     .provider_name("ollama")
//!     .base_url("http://127.0.0.1:11434/v1")
//!     .model("qwen2.5")
//!     .build()?;
//!
//! // llama.cpp's llama-server (`llama-server -m model.gguf --port 8080 --jinja`).
//! let llama_cpp = OpenAiModel::builder()
//!     .provider_name("llama.cpp")
//!     .base_url("http://127.0.0.1:8080/v1")
//!     .model("local")
//!     .timeout(Duration::from_secs(600))
//!     .build()?;
//!
//! // OpenAI.
//! let openai = OpenAiModel::builder()
//!     .api_key(std::env::var("OPENAI_API_KEY").unwrap_or_default())
//!     .model("gpt-4.1")
//!     .max_retries(5)
//!     .build()?;
//!
//! // Anthropic.
//! let claude = AnthropicModel::builder()
//!     .api_key(std::env::var("ANTHROPIC_API_KEY").unwrap_or_default())
//!     .model("claude-sonnet-4-5")
//!     .build()?;
//!
//! let request = ChatRequest::new(vec![ChatMessage::user("Say hi")]);
//! let reply = ollama
//!     .chat_stream(request, &|delta| println!("{delta:?}"))
//!     .await?;
//! println!("{} ({} output tokens)", reply.content, reply.usage.output_tokens);
//! # let _ = (llama_cpp, openai, claude);
//! # Ok(()) }
//! ```

mod anthropic;
mod base_url;
mod common;
mod error;
mod limiter;
mod openai;
mod options;
mod probe;
mod prompt_cache;
mod rate_headers;
mod slots;
mod spec;
mod text_calls;
mod transport;

pub use anthropic::{
    ANTHROPIC_DEFAULT_BASE_URL, ANTHROPIC_DEFAULT_MAX_TOKENS, ANTHROPIC_VERSION, AnthropicModel,
    AnthropicModelBuilder, thinking_budget,
};
pub use base_url::BaseUrl;
pub use error::{ProviderError, http_status, redact_url};
pub use openai::{
    MaxTokensField, OPENAI_DEFAULT_BASE_URL, OpenAiModel, OpenAiModelBuilder, reasoning_effort,
};

/// Ollama's OpenAI-compatible base URL on its default port (the `ollama:` spec's default; the
/// probe of its context window asks there too).
pub const OLLAMA_DEFAULT_BASE_URL: &str = "http://127.0.0.1:11434/v1";
pub use options::{DEFAULT_STREAM_IDLE_TIMEOUT, DEFAULT_TIMEOUT, HttpOptions};
pub use probe::{OLLAMA_DEFAULT_WINDOW, ServerWindow, probe_context_window, probe_ollama};
pub use prompt_cache::{PROMPT_CACHE_VAR, PromptCaching};
pub use spec::{
    ACCEPTED_FORMS, MAX_SPEC_TEMPERATURE, ModelSpec, OLLAMA_KEEP_ALIVE, Provider,
    RATE_LIMIT_WAIT_VAR, TEXT_TOOL_CALLS_VAR, Temperature, anthropic_model_id, default_aliases,
    is_local_url, model_from_spec, model_from_spec_with_env, spec_server, suggest_spec,
};
pub use text_calls::MAX_TEXT_TOOL_CALLS;
pub use transport::{DEFAULT_MAX_RATE_LIMIT_WAIT, RetryPolicy};

#[cfg(test)]
mod stream_tests;

/// Internals exposed to this crate's benches only (`--features bench-internals`); not part of
/// the API, may change in any release.
#[cfg(feature = "bench-internals")]
#[doc(hidden)]
pub mod bench_internals {
    pub use crate::anthropic::AnthropicStreamDecoder;
    pub use crate::openai::OpenAiStreamDecoder;
}
