//! # subagent-http
//!
//! An `HTTP` subagent kind for the [`subagents`](https://crates.io/crates/subagents) framework:
//! a `Task` call to one of its agents sends the prompt to a JSON-over-HTTP endpoint and answers
//! with one value of the JSON reply. It is written against
//! [`subagent-spi`](subagent_spi) alone (one [`SubagentKind`]
//! impl, no downcast), as a third-party kind crate would be.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use subagent_spi::SubagentReference;
//!
//! // The kind, in one line: a `SubagentType` for any host's registration (`.kind(...)`).
//! let kind = subagent_http::kind();
//! // One agent: the endpoint's URL is the reference's URI, the rest is metadata.
//! let agent = SubagentReference::new("https://api.example.com/v1/summarize", "HTTP")
//!     .with_metadata("name", "summarizer")
//!     .with_metadata("description", "Summarizes a text given in the prompt.")
//!     .with_metadata("body", r#"{"text": "{{prompt}}", "words": 50}"#)
//!     .with_metadata("answer", "/summary")
//!     .with_metadata("auth_header", "Authorization")
//!     .with_metadata("auth_prefix", "Bearer ")
//!     .with_metadata("auth_env", "SUMMARIZER_TOKEN");
//! # let _ = (kind, agent);
//! # Ok(()) }
//! ```
//!
//! ## The reference
//!
//! The URI is the endpoint (`https://`; `http://` only for a loopback host: `127.0.0.0/8`,
//! `::1`, `localhost`). Metadata, all optional but `name`:
//!
//! | key | meaning | default |
//! |---|---|---|
//! | `name` | the agent's name, as the model passes it in `subagent_type` | required |
//! | `description` | what the agent does, shown to the model | "Answers through the HTTP endpoint at ORIGIN." |
//! | `method` | `POST`, `PUT`, `PATCH` (a JSON body) or `GET` (the prompt in the query) | `POST` |
//! | `body` | the request body: JSON in which the text `{{prompt}}` inside any string is replaced by the prompt (the value is built as JSON, so the prompt is escaped and cannot change the body's shape) | `{"prompt": "{{prompt}}"}` |
//! | `query` | for `GET`: the query parameter that carries the prompt (URL-encoded) | `prompt` |
//! | `answer` | a JSON Pointer (RFC 6901) to the answer in the reply: a string is the answer, any other value its JSON text; `""` is the whole reply | `""` |
//! | `auth_header` | a header to send a credential in, e.g. `Authorization`, `X-Api-Key` | none |
//! | `auth_env` | the environment variable holding the credential (read at resolve time; never logged or shown) | none |
//! | `auth_prefix` | text put before the credential, e.g. `Bearer ` | none |
//! | `timeout_secs` | time limit of one call, in seconds; the caller's deadline also applies | 60 |
//! | `max_response_bytes` | the largest reply read (at most [`MAX_RESPONSE_BYTES_CAP`]) | [`DEFAULT_MAX_RESPONSE_BYTES`] (1 MiB) |
//! | `usage_input` | a JSON Pointer to the input (prompt) tokens the reply reports, e.g. `/usage/prompt_tokens` (OpenAI) or `/usage/input_tokens` (Anthropic) | none |
//! | `usage_output` | a JSON Pointer to the output (completion) tokens, e.g. `/usage/completion_tokens` or `/usage/output_tokens` | none |
//! | `usage_model` | a JSON Pointer to the model's name in the reply, which prices the tokens for a cost budget | none |
//! | `usage_unreported_tokens` | what a call counts as at least when its reply's usage is missing or malformed (0 to [`UNREPORTED_TOKENS_CAP`]) | [`DEFAULT_UNREPORTED_TOKENS`] (100,000) |
//!
//! An unknown key, a body that is not JSON or has no `{{prompt}}`, a bad pointer or an unset
//! variable fail at resolve time with an error naming the URI and the key.
//! [`reference_from_json`] reads the same settings from one JSON object (the URL under `url`,
//! the body as a JSON value), e.g. a file beside the agent's other configuration.
//!
//! ## Usage and budgets
//!
//! Without `usage_input` or `usage_output` a call reports no tokens, only its duration, and a
//! caller's token budget does not count it. With either, the tokens the reply reports at the
//! pointers are the run's [`Usage`](subagent_spi::Usage) (input and output; a pointer left out
//! counts 0), read from the one parsed reply; the Task tool charges them to the caller's budget
//! when the run ends, once: a call past the budget ends `limit_reached` naming it (its answer
//! kept) and the caller's next delegation is refused. With `usage_model`, the model named in
//! the reply prices them for a cost (USD) budget.
//!
//! The endpoint cannot make a call free by breaking its report: a count that is missing, or
//! not a JSON integer from 0 to 2^64-1 (a string, a negative number, a fraction, a number past
//! `u64`), makes the call count as at least `usage_unreported_tokens` tokens (what is
//! well-formed counts, the estimate is a floor), marked
//! [`estimated`](subagent_spi::Usage::estimated), with a warning naming the agent and the
//! pointer; the answer is kept. Counts saturate (`u64::MAX` spends any token limit, never
//! wraps). A model name that is missing, not a string, empty, longer than
//! [`MAX_MODEL_NAME_BYTES`] or holding control characters is not used (a warning): the tokens
//! still count, without a price. A call that fails (an error status, a reply that is not JSON
//! or has no answer) reports no usage.
//!
//! The counts are the endpoint's word: a well-formed report is believed, as a remote A2A
//! peer's is.
//!
//! ## Limits
//!
//! Every limit ends the call with an error that names the agent and the limit: replies larger
//! than `max_response_bytes` ([`SubagentError::LimitReached`](subagent_spi::SubagentError)),
//! calls longer than `timeout_secs` (`TimedOut`), replies that are not JSON or have nothing at
//! the pointer (`Protocol`), non-2xx statuses (`Execution`, with the start of the reply).
//! Redirects are followed only within the endpoint's origin (scheme, host and port), at most
//! [`MAX_REDIRECTS`] times, so the credential never leaves it. Cancelling the task drops the
//! request at once.

mod agent;
mod call;
mod error;
mod from_json;
mod usage;

use subagent_spi::{
    Kind, SubagentError, SubagentKind, SubagentReference, SubagentType, TaskCall, TaskContext,
    TaskOutcome, async_trait,
};

pub use agent::HttpAgent;
pub use error::HttpKindError;
pub use from_json::{MAX_REFERENCE_JSON_BYTES, reference_from_json};
pub use usage::{DEFAULT_UNREPORTED_TOKENS, MAX_MODEL_NAME_BYTES, UNREPORTED_TOKENS_CAP};

/// The kind's name, as references write it.
pub const KIND: Kind = Kind::from_static("HTTP");

/// The default of `max_response_bytes`: 1 MiB.
pub const DEFAULT_MAX_RESPONSE_BYTES: u64 = 1024 * 1024;

/// The largest `max_response_bytes` a reference may set: 64 MiB.
pub const MAX_RESPONSE_BYTES_CAP: u64 = 64 * 1024 * 1024;

/// The default of `timeout_secs`: one minute.
pub const DEFAULT_TIMEOUT_SECS: u64 = 60;

/// Redirects followed (within the endpoint's origin) before the call fails.
pub const MAX_REDIRECTS: usize = 5;

/// The metadata keys a reference may carry (see the crate docs).
pub const KEYS: [&str; 15] = [
    "name",
    "description",
    "method",
    "body",
    "query",
    "answer",
    "auth_header",
    "auth_env",
    "auth_prefix",
    "timeout_secs",
    "max_response_bytes",
    "usage_input",
    "usage_output",
    "usage_model",
    "usage_unreported_tokens",
];

/// The `HTTP` kind: resolves references into [`HttpAgent`]s and runs a task as one HTTP call.
///
/// Its HTTP client follows redirects within the endpoint's origin only; build one with
/// [`HttpKind::new`] or take the registered type from [`kind`].
#[derive(Debug, Clone)]
pub struct HttpKind {
    client: reqwest::Client,
}

impl HttpKind {
    /// The kind with its own HTTP client.
    ///
    /// # Panics
    ///
    /// Never in practice: building a client fails only when no TLS backend can be set up,
    /// which the `rustls` feature rules out. Use [`HttpKind::try_new`] to get the error instead.
    pub fn new() -> Self {
        match Self::try_new() {
            Ok(kind) => kind,
            Err(e) => panic!("subagent-http: {e}"),
        }
    }

    /// The kind with its own HTTP client, or why the client could not be built.
    pub fn try_new() -> Result<Self, HttpKindError> {
        Ok(Self {
            client: call::client()?,
        })
    }
}

impl Default for HttpKind {
    fn default() -> Self {
        Self::new()
    }
}

/// The `HTTP` kind as a [`SubagentType`], ready to register (`.kind(subagent_http::kind())`).
pub fn kind() -> SubagentType {
    SubagentType::from(HttpKind::new())
}

#[async_trait]
impl SubagentKind for HttpKind {
    type Agent = HttpAgent;

    fn kind(&self) -> Kind {
        KIND
    }

    fn can_resolve(&self, reference: &SubagentReference) -> bool {
        let uri = reference.uri.trim_start();
        uri.starts_with("https://") || uri.starts_with("http://")
    }

    async fn resolve(&self, reference: &SubagentReference) -> Result<HttpAgent, SubagentError> {
        HttpAgent::from_reference(reference, |var| std::env::var(var).ok())
            .map_err(|e| SubagentError::resolution(reference.uri.clone(), e))
    }

    async fn run(
        &self,
        agent: &HttpAgent,
        call: TaskCall,
        ctx: TaskContext,
    ) -> Result<TaskOutcome, SubagentError> {
        call::run(&self.client, agent, call, &ctx).await
    }
}
