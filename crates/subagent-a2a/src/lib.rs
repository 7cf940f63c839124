//! # subagent-a2a
//!
//! The A2A (Agent2Agent) protocol for the `subagents` framework: delegate a `Task` to a remote
//! agent that speaks A2A **1.0** or **0.3**.
//!
//! - [`types`]: the wire types of both versions ([`types::v1`]: ProtoJSON of `a2a.proto`;
//!   [`types::v03`]: the kind-tagged JSON of 0.3), `From` conversions both ways
//!   ([`types::convert`]), and the JSON-RPC envelope and A2A error codes
//!   ([`types::jsonrpc`]). The server side reuses them.
//! - [`client`] (feature `client`): the `A2A` subagent kind ([`client::KIND`],
//!   [`client::a2a_subagent_type`]): [`client::A2aResolver`] reads the agent card,
//!   [`client::A2aExecutor`] runs tasks, and [`client::A2aClient`] is the typed client they use
//!   (usable on its own), speaking the card's dialect (one implementation per binding and
//!   version, chosen once).
//! - `server` (feature `server`): hosting agents over A2A; the handler contract
//!   (`A2aHandler`, `TaskEventSink`), the engine running tasks, the bindings.
//! - `task_store` (feature `task-store`, on with `server`): the server's storage contract, one
//!   trait per concern (tasks, push configs, replica bus, conversation sessions) and the
//!   bounded in-memory store; what a store crate implements, without the HTTP server.
//! - `grpc` (features `grpc-server` / `grpc-client`): the code generated from `a2a.proto`
//!   and its conversions; `signing` (feature `card-signing`): agent card signatures.
//!
//! `docs/a2a-architecture.md` maps the modules, their dependency direction and the features.
//!
//! ## Transport
//!
//! JSON-RPC 2.0 envelopes and error objects build on `jsonrpsee-types`, but the transport is
//! **axum on the server and reqwest on the client**, because jsonrpsee's HTTP server cannot
//! answer a call with Server-Sent Events, which `SendStreamingMessage` (0.3: `message/stream`)
//! needs. From `jsonrpsee-types` we take what fits: `TwoPointZero` (the `"jsonrpc": "2.0"`
//! marker, checked on every envelope) and `ErrorObject` / `ErrorObjectOwned` (converted to and
//! from our [`RpcError`](types::jsonrpc::RpcError)). Its request, response and id types are not
//! used: they borrow from the input (our envelopes are generic over owned, typed params and
//! results, parsed in one step) and its error object rejects unknown fields, while a client
//! must accept what any peer sends. Event streams are read with the workspace's one SSE decoder,
//! `subagent-sse` (`client` feature). Client and server speak JSON-RPC and HTTP+JSON, each in
//! 1.0 and 0.3 (0.3 HTTP+JSON: the `/v1/…` routes with the ProtoJSON shapes of
//! [`types::v03_rest`], served beside the 1.0 routes at the same mount), and gRPC 1.0 (tonic,
//! HTTP/2 without TLS): the server with feature `grpc-server` (`A2aServer::serve_grpc`, on its
//! own port), the client with `grpc-client` (when the card's chosen interface is `GRPC`).
//!
//! ## Resolving
//!
//! A reference's `uri` is the agent's base URL; the card is read from
//! `{uri}/.well-known/agent-card.json`, falling back to `{uri}/.well-known/agent.json` (a `uri`
//! ending in `.json` is used as the card URL itself). A card with `supportedInterfaces` is 1.0;
//! one with `url` / `protocolVersion` is 0.3. Among the card's JSON-RPC and HTTP+JSON
//! interfaces the client prefers 1.0 over 0.3 and JSON-RPC over HTTP+JSON, speaks the version
//! the chosen interface declares, and sends `A2A-Version` with it. When the card offers
//! another version too and the peer answers the first message with `VersionNotSupported`
//! (-32009), the client retries once in that version. The definition's
//! description is the card's description followed by its skills (names, descriptions,
//! examples), so a model knows when to delegate.
//!
//! ## Executing
//!
//! One call sends one user message (`SendMessage`; `SendStreamingMessage` over SSE when the
//! card declares streaming, each event becoming a progress event: status messages as `Status`,
//! artifact text as `TextDelta`). A task that is still running is followed (`SubscribeToTask`,
//! else `GetTask` polling) to a terminal or interrupted state. The result is the reply
//! message's text, else the task's artifacts (text parts; data parts as JSON), else its final
//! status message. `failed` / `rejected` become [`subagent_spi::SubagentError::Execution`] with
//! the agent's message; `input-required` / `auth-required` become a `needs_input` outcome whose
//! text is the agent's question and whose `session_id` (`a2a:...`, see
//! [`client::encode_session`]) continues the same task (same contextId and taskId) when passed
//! as `TaskCall::resume`. Other outcomes carry a session id holding the contextId, so a resume
//! continues the conversation with a new task. A run announces `a2a:...` with its taskId as
//! soon as the peer names the task (a `Session` progress event, which a host's journal keeps),
//! and resuming a session whose task the peer still works on (`submitted`, `working`) follows
//! that task to its end and sends nothing: a caller that died re-attaches. Cancelling the context sends `CancelTask` and
//! returns a `cancelled` outcome. The reference's time limit (`timeout_secs`) also sends
//! `CancelTask` and returns [`subagent_spi::SubagentError::TimedOut`]; when the caller's
//! deadline (`TaskContext::deadline`) comes first, the run ends with a `limit_reached` outcome
//! holding the artifacts received so far. A stream that breaks once the task is known is
//! followed with `SubscribeToTask` / `GetTask` instead of failing. Artifact content kept per
//! task is bounded ([`client::MAX_ARTIFACT_BYTES`]), as are response bodies and SSE events.
//!
//! ## Reference metadata
//!
//! | key | meaning |
//! |---|---|
//! | `bearer` | bearer token, sent as `Authorization: Bearer <token>` |
//! | `bearer_env` | name of an environment variable holding the bearer token |
//! | `api_key_header` | header carrying an API key (e.g. `X-API-Key`); default: the header of the card's API-key security scheme |
//! | `api_key` | the API key |
//! | `api_key_env` | name of an environment variable holding the API key |
//! | `timeout_secs` | time limit of one task in seconds (default 300); the context's deadline also applies |
//! | `streaming` | `true` / `false`: force streaming on or off (default: the card's `capabilities.streaming`) |
//! | `binding` | preferred binding: `JSONRPC` (default) or `HTTP+JSON` |
//! | `protocol_version` | preferred version when the card offers both: `1.0` (default) or `0.3` |
//! | `name` | the agent's name as shown to the model (default: the card's `name`) |
//! | `poll_interval_ms` | `GetTask` polling interval when following a task without streaming (default 500) |
//!
//! The auth keys are also accepted with an `auth.` prefix (`auth.bearer_env`). Environment
//! variables are read when the reference is resolved; a named variable that is unset is a
//! resolution error naming the variable. Credentials are sent on every request (card included)
//! and never logged or printed.
//!
//! A host may share its HTTP client by putting a `reqwest::Client` in the
//! [`subagent_spi::TaskContext::extensions`].
//!
//! ## Tracing
//!
//! With the `otel` feature (the OpenTelemetry API and `tracing-opentelemetry`, never the SDK),
//! the client sends the current `tracing` span's W3C `traceparent`/`tracestate` on every
//! request (HTTP headers, or gRPC metadata), and the server runs each request in an
//! `a2a.request` server span that continues the caller's trace (the handler's run nests in
//! it; over gRPC the span is named after the RPC, e.g. `lf.a2a.v1.A2AService/SendMessage`). Both go through the global text-map
//! propagator, which the host installs when it exports traces (the `subagents` facade does);
//! without it nothing is sent or read.

#[cfg(feature = "client")]
pub mod client;
#[cfg(feature = "client")]
pub mod error;
#[cfg(any(feature = "grpc-server", feature = "grpc-client"))]
pub mod grpc;
#[cfg(feature = "server")]
pub mod server;
#[cfg(feature = "card-signing")]
pub mod signing;
#[cfg(feature = "task-store")]
pub mod task_store;
#[cfg(any(feature = "client", feature = "server"))]
mod trace_context;
pub mod typed;
pub mod types;
// The crate's one id generator (server and client) and its clock.
#[cfg(any(feature = "task-store", feature = "client"))]
mod util;

#[cfg(feature = "client")]
pub use client::{
    A2aClient, A2aExecutor, A2aResolver, A2aSubagentDefinition, KIND, a2a_subagent_type,
};
#[cfg(feature = "client")]
pub use error::A2aError;
