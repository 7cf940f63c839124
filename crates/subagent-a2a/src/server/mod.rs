//! The A2A **server**: host subagents (or hand-written handlers) as A2A agents speaking 1.0 and
//! 0.3 on the same endpoint, over JSON-RPC and HTTP+JSON.
//!
//! ```no_run
//! # use std::sync::Arc;
//! # async fn demo(definition: Arc<dyn subagent_spi::SubagentDefinition>,
//! #               executor: Arc<dyn subagent_spi::SubagentExecutor>) -> Result<(), Box<dyn std::error::Error>> {
//! use subagent_a2a::server::{A2aServer, AgentMount};
//!
//! let server = A2aServer::builder()
//!     .mount(AgentMount::subagent("/reviewer", definition, executor))
//!     .build()?;
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
//! server.serve(listener, std::future::pending::<()>()).await?;
//! # Ok(()) }
//! ```
//!
//! ## Routes (per mounted agent at `{path}`)
//!
//! | route | what |
//! |---|---|
//! | `GET {path}/.well-known/agent-card.json` | the 1.0 card (or the 0.3 card with [`ServerConfig::agent_card_version`] = 0.3; with [`ServerConfig::legacy_card_discovery`], the 0.3 card with the 1.0 interfaces embedded unless `A2A-Version` names 1.x) |
//! | `GET {path}/.well-known/agent.json` | the same agent as a 0.3 card (`url`, `protocolVersion`, `preferredTransport`) |
//! | `POST {path}` | JSON-RPC 2.0: the 1.0 methods (`SendMessage`, `SendStreamingMessage`, `GetTask`, `ListTasks`, `CancelTask`, `SubscribeToTask`, push-config methods, `GetExtendedAgentCard`) and the 0.3 methods (`message/send`, `message/stream`, `tasks/get`, `tasks/cancel`, `tasks/resubscribe`, `tasks/pushNotificationConfig/*`), each answered in its own version's shapes |
//! | `POST {path}/message:send`, `POST {path}/message:stream` | HTTP+JSON (1.0) |
//! | `GET {path}/tasks/{id}`, `GET {path}/tasks`, `POST {path}/tasks/{id}:cancel`, `GET`/`POST {path}/tasks/{id}:subscribe` | HTTP+JSON (1.0) |
//! | `POST`/`GET {path}/tasks/{id}/pushNotificationConfigs`, `GET`/`DELETE {path}/tasks/{id}/pushNotificationConfigs/{config}` | HTTP+JSON push configs (1.0) |
//! | `{path}/v1/message:send`, `…/v1/message:stream`, `…/v1/tasks[/{id}[:cancel\|:subscribe]]`, `…/v1/tasks/{id}/pushNotificationConfigs[/{config}]`, `GET …/v1/card` | HTTP+JSON (0.3): the 0.3 ProtoJSON shapes of [`crate::types::v03_rest`], errors `{"code", "message"}` with the 0.3 SDKs' statuses |
//!
//! Card URLs are absolute: [`ServerConfig::public_url`] + path, else scheme and host from
//! `X-Forwarded-Proto` / `X-Forwarded-Host` / `X-Forwarded-Prefix` / `Host`. Cards carry
//! `Cache-Control: max-age`, an `ETag` (`If-None-Match` gives 304) and `Last-Modified`
//! (`If-Modified-Since` gives 304).
//!
//! ## Versions
//!
//! On JSON-RPC the method name decides the shapes (PascalCase = 1.0 ProtoJSON, slash names =
//! 0.3 kind-tagged JSON); an `A2A-Version` header (or query parameter) naming a version other
//! than 1.x / 0.3 is refused with `VersionNotSupportedError` (-32009). A missing header means
//! 0.3 per the spec; a 1.0 method name without the header is still answered as 1.0. The
//! HTTP+JSON binding speaks 1.0 only (the header may be absent or `1.0`).
//!
//! ## Tasks
//!
//! A handler's first event decides: a direct [`reply`](TaskEventSink::reply) answers with a
//! Message and stores nothing; any status or artifact event creates the task (`submitted`, the
//! user's message in its history), stored in the agent's [`TaskStore`] (bounded
//! [`InMemoryTaskStore`] by default: at most 10,000 tasks and about 256 MiB of payload,
//! finished ones evicted first, terminal ones expire after an hour; while running tasks fill
//! the budget new messages get ServerBusy). Blocking sends answer when the task is terminal or interrupted (`input-required`,
//! `auth-required`); `returnImmediately` (0.3: `blocking: false`) answers with the first task
//! snapshot. A message with a `taskId` continues that task (its `contextId` must match; a
//! terminal task refuses with UnsupportedOperation, -32004; of messages racing to continue one
//! `input-required` task, also through several servers sharing a store, exactly one does and
//! the others get -32004: every task write is a compare-and-set on its version, see
//! [`TaskStore`]). `CancelTask` cancels the
//! handler's token and waits up to [`ServerConfig::cancel_grace`] before forcing `canceled`;
//! a terminal task is not cancelable (-32002).
//!
//! Streams (`SendStreamingMessage`, `SubscribeToTask`) send the task first, then status and
//! artifact updates in order, and end at a terminal or interrupted state; idle streams get
//! keep-alive comments. At most [`ServerConfig::max_streams`] streams run at once.
//!
//! ## Errors and limits
//!
//! JSON-RPC errors use the spec's codes (-32700 … -32009); 1.0 answers carry a
//! `google.rpc.ErrorInfo` in `data`. HTTP+JSON errors are AIP-193 objects with the spec's HTTP
//! statuses (404, 409, 415, 400...), their `code` equal to the HTTP status. Bodies over
//! [`ServerConfig::max_body_bytes`] (10 MiB) get HTTP 413 (`RESOURCE_EXHAUSTED`), bodies slower
//! than [`ServerConfig::body_read_timeout`] HTTP 408. At a capacity limit (streams, task memory)
//! the answer is HTTP 503 with `Retry-After` (JSON-RPC ServerBusy, -32000). A wrong
//! `Content-Type` gets ContentTypeNotSupported (-32005 / 415), as do message parts whose media
//! type is not among the agent's input modes. JSON-RPC batches get one InvalidRequest error;
//! notifications (no `id`) run and get HTTP 204. [`A2aServer::serve`] also bounds connections
//! (count, head / idle time, head size); `serve_grpc` shares the same accept loop and cap. `docs/SECURITY.md` lists every limit.
//!
//! Push notifications are off by default (the card says `pushNotifications: false`, the config
//! methods answer PushNotificationNotSupported, -32003). With
//! [`ServerConfig::push_notifications`] (feature `push`) clients register webhooks (1.0
//! `CreateTaskPushNotificationConfig` and friends, 0.3 `tasks/pushNotificationConfig/*`,
//! HTTP+JSON `{path}/tasks/{id}/pushNotificationConfigs[/{config}]`, or inline in the send
//! configuration); configs live in the agent's [`TaskStore`] (at most
//! [`ServerConfig::push_max_configs_per_task`] per task, counted in the default store's byte
//! budget); every task update is POSTed to them (1.0: the `StreamResponse`; tasks created over
//! 0.3: the task) from a bounded queue per task, with retries and backoff, the config's
//! `authentication` as `Authorization` and its `token` as `X-A2A-Notification-Token`. Over the
//! whole server at most [`ServerConfig::push_max_deliveries`] POSTs are in flight (one
//! connection each, no proxy from the environment) and [`ServerConfig::push_max_queued`]
//! updates wait; more are dropped and logged. Webhooks at loopback, private, link-local and
//! other non-public addresses (also embedded in IPv6: mapped, compatible, NAT64, 6to4,
//! Teredo; and `localhost.` names) are refused unless [`ServerConfig::push_allow_private`]. An extended card
//! ([`AgentMount::with_extended_card`], which needs credentials) goes to authenticated callers
//! only; without one the extended-card methods answer ExtendedAgentCardNotConfigured (-32007).
//! An optional bearer token or API key ([`ServerAuth`]) is checked on every
//! JSON-RPC and HTTP+JSON request (not on the public card) and declared in the card.
//!
//! [`A2aServer::serve`] shuts down gracefully: when its signal fires, handlers are cancelled,
//! open streams end, and in-flight requests finish.

mod api;
mod approval;
mod card;
mod directory;
mod engine;
mod handler;
mod http;
#[cfg(feature = "push")]
mod push;
mod subagent;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use derive_setters::Setters;
use subagent_spi::{CancellationToken, SubagentDefinition, SubagentExecutor, TaskContext};

pub use approval::DEFAULT_APPROVAL_TIMEOUT;
pub use card::{AgentInfo, ServerAuth};
pub use handler::{
    A2aHandler, FnHandler, HandlerError, HandlerRequest, SinkError, TaskEventSink, TaskInbox,
    handler_fn,
};
#[cfg(feature = "push")]
pub use push::PushStats;
// The storage contract lives in `crate::task_store` (feature `task-store`, which a store crate
// depends on without the HTTP server); re-exported here, where the server's users find it.
use crate::task_store as store;
pub use crate::task_store::{
    ContextSessionStore, InMemoryTaskStore, MAX_PUSH_CONFIGS_PER_TASK, PushConfigStore,
    RemoteSignal, ReplicaBus, StoreError, TaskFilter, TaskPage, TaskStore, UNVERSIONED,
    VersionedTask, message_bytes, task_bytes,
};
use crate::util;
pub use crate::util::now_rfc3339;
pub use subagent::SubagentHandler;

use crate::types::ProtocolVersion;

/// Server-wide settings.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ServerConfig {
    /// The public base URL (e.g. `https://agents.example.com`) used in cards; when unset, the
    /// request's `X-Forwarded-*` / `Host` headers decide.
    pub public_url: Option<String>,
    /// The largest request body accepted (default 10 MiB); larger bodies get HTTP 413.
    pub max_body_bytes: usize,
    /// The most SSE streams open at once, over all agents (default 1,024).
    pub max_streams: usize,
    /// The interval of keep-alive comments on idle streams (default 15 s).
    pub keep_alive: Duration,
    /// The card served at `agent-card.json`: 1.0 (default) or 0.3, for fleets of 0.3 clients.
    /// `agent.json` always serves the 0.3 card. Ignored with
    /// [`legacy_card_discovery`](Self::legacy_card_discovery).
    pub agent_card_version: ProtocolVersion,
    /// Lets stock 0.3 clients discover the agent at `agent-card.json` (default off): a card
    /// request whose `A2A-Version` names 1.x gets the 1.0 card; one without the header (or
    /// naming 0.3) gets the 0.3 card with the 1.0 `supportedInterfaces` embedded, as the
    /// official JavaScript SDK's `legacyCompat` serves it; answers carry `Vary: A2A-Version`.
    /// Off by default because 1.0 clients that fetch the card without the header (the A2A
    /// TCK 1.0, the Python SDK 1.x) then get the embedded form, which strict 1.0 schema
    /// validation refuses (see `docs/a2a-conformance.md`).
    pub legacy_card_discovery: bool,
    /// `Cache-Control: max-age` of cards (default 300 s).
    pub card_max_age: Duration,
    /// Events buffered per stream subscriber before the handler waits (default 256).
    pub subscriber_buffer: usize,
    /// How long a handler waits for a stalled subscriber before dropping it (default 10 s).
    pub slow_subscriber_timeout: Duration,
    /// How long `CancelTask` waits for the handler before forcing `canceled` (default 5 s).
    pub cancel_grace: Duration,
    /// Serve a JSON directory of the hosted agents at `GET /` (name, description, URL and card
    /// URLs of each) when no agent is mounted at the root (default off).
    pub directory: bool,
    /// The approximate bytes each agent's default [`InMemoryTaskStore`] may hold (default
    /// 256 MiB, see [`InMemoryTaskStore::DEFAULT_MAX_BYTES`]). Finished tasks are evicted
    /// first; when running tasks alone fill it, new messages are refused with ServerBusy
    /// (HTTP 503 + `Retry-After`, JSON-RPC -32000). Stores given with
    /// [`AgentMount::with_store`] bring their own bounds.
    pub task_store_max_bytes: usize,
    /// How long a client may take to send a request's head (request line and headers),
    /// counted from the connection's accept or from the first byte of a later request on a
    /// kept-alive connection (default 10 s). Applies to [`A2aServer::serve`] /
    /// [`A2aServer::serve_router`], and to `serve_grpc` (the HTTP/2 preface and first call).
    /// Zero: no limit.
    pub header_read_timeout: Duration,
    /// How long a client may take to send a request body, in total (default 30 s; a body
    /// over it gets HTTP 408 and the connection is closed). Zero: no limit.
    pub body_read_timeout: Duration,
    /// How long a kept-alive connection may wait for its next request, once the previous
    /// answer is sent (default 30 s; gRPC: once no call is open). Applies to
    /// [`A2aServer::serve`] / [`A2aServer::serve_router`] and `serve_grpc`. Zero: no limit.
    pub idle_timeout: Duration,
    /// The most connections open at once (default 1,024, lowered at serve time to three
    /// quarters of the process's open-file limit where that is smaller). At the cap, a new
    /// connection makes the one that has waited longest for a request close; when every
    /// connection is answering a request, new ones wait in the listen backlog. One cap for
    /// every listener of the server: [`A2aServer::serve`] / [`A2aServer::serve_router`] and
    /// `serve_grpc` together.
    pub max_connections: usize,
    /// The largest request head (request line and headers) accepted, in bytes (default
    /// 64 KiB, at least 8 KiB; hyper's read buffer). Larger heads get HTTP 431. Applies to
    /// [`A2aServer::serve`] / [`A2aServer::serve_router`].
    pub max_header_bytes: usize,
    /// The most SSE streams one client (peer IP address; IPv6: its /64) may hold open at once
    /// (default 128). Needs the peer address: always known under [`A2aServer::serve`], and
    /// when the router is served with axum's `ConnectInfo<SocketAddr>`. Zero: no per-client
    /// limit (e.g. behind a reverse proxy, where every client has the proxy's address).
    pub max_streams_per_client: usize,
    /// Offer push notifications (default off; needs the `push` feature): the card says
    /// `pushNotifications: true`, the push-config methods work, and task updates are POSTed
    /// to the webhooks clients register (bounded queue per task, retries with backoff, the
    /// config's authentication). Configs live in the agent's [`TaskStore`].
    pub push_notifications: bool,
    /// Deliver push notifications to loopback, private, link-local and other non-public
    /// addresses too (default off: such webhooks are refused at registration, and host names
    /// resolving only to them fail at delivery). For tests and trusted networks.
    pub push_allow_private: bool,
    /// The most webhook POSTs in flight at once, over all tasks and agents (default 64). Each
    /// uses its own outbound connection (connections are not kept for reuse), so this also
    /// caps the server's outbound connections; further attempts wait for a place.
    pub push_max_deliveries: usize,
    /// The most task updates waiting for webhook delivery, over all tasks and agents (default
    /// 1,024; each task's own queue holds at most 64). Updates beyond it are dropped, with a
    /// warning naming the reason, and counted in [`PushStats::dropped`].
    pub push_max_queued: usize,
    /// The approximate bytes those waiting updates may hold (default 64 MiB); beyond it,
    /// updates are dropped as at [`push_max_queued`](Self::push_max_queued).
    pub push_max_queued_bytes: usize,
    /// The most push-notification configs one task may have (default
    /// [`MAX_PUSH_CONFIGS_PER_TASK`], 16). Registering one more is refused with
    /// InvalidParams (-32602 / HTTP 400) naming the limit; configs also count in the task
    /// store's byte budget ([`task_store_max_bytes`](Self::task_store_max_bytes)).
    pub push_max_configs_per_task: usize,
    /// The address of the gRPC binding (`host:port`) the cards list as the `GRPC` interface
    /// (feature `grpc-server`; serve it with [`A2aServer::serve_grpc`]). Unset (default): the
    /// cards list no gRPC interface.
    pub grpc_url: Option<String>,
    /// Whether a 0.3 `message/send` that does not say `blocking` waits for the task to end or
    /// be interrupted (default `true`, as the official 0.3 SDKs' servers do). `false` answers
    /// at once with the task as it is (0.3 says only "if true, the client will wait"); a 0.3
    /// HTTP+JSON request whose `configuration` leaves `blocking` out is non-blocking either
    /// way (ProtoJSON omits a `false` bool).
    pub v03_blocking_by_default: bool,
    /// Sign every card served (the 1.0 and 0.3 cards and the extended card) with this key
    /// (default none): JWS over the card's RFC 8785 form, as A2A §8.4 describes (see
    /// [`crate::signing`]). Signing is deterministic, so a card's `ETag` stays the same.
    pub card_signer: Option<crate::signing::CardSigner>,
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            public_url: None,
            max_body_bytes: 10 * 1024 * 1024,
            max_streams: 1024,
            keep_alive: Duration::from_secs(15),
            agent_card_version: ProtocolVersion::V1,
            legacy_card_discovery: false,
            card_max_age: Duration::from_secs(300),
            subscriber_buffer: 256,
            slow_subscriber_timeout: Duration::from_secs(10),
            cancel_grace: Duration::from_secs(5),
            directory: false,
            task_store_max_bytes: InMemoryTaskStore::DEFAULT_MAX_BYTES,
            header_read_timeout: Duration::from_secs(10),
            body_read_timeout: Duration::from_secs(30),
            idle_timeout: Duration::from_secs(30),
            max_connections: 1024,
            max_header_bytes: 64 * 1024,
            max_streams_per_client: 128,
            push_notifications: false,
            push_allow_private: false,
            push_max_deliveries: 64,
            push_max_queued: 1024,
            push_max_queued_bytes: 64 * 1024 * 1024,
            push_max_configs_per_task: MAX_PUSH_CONFIGS_PER_TASK,
            grpc_url: None,
            v03_blocking_by_default: true,
            card_signer: None,
        }
    }
}

/// Errors building or running a server.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServerError {
    /// An agent path is invalid.
    #[error("invalid agent path `{path}`: {reason}")]
    InvalidPath {
        /// The path given.
        path: String,
        /// Why it is invalid.
        reason: &'static str,
    },
    /// Two agents were mounted at the same path.
    #[error("two agents are mounted at `{path}`")]
    DuplicatePath {
        /// The path.
        path: String,
    },
    /// No agent was mounted.
    #[error("no agent mounted; add one with A2aServerBuilder::mount")]
    NoAgents,
    /// An extended card was given to an agent without credentials: it would be public.
    #[error(
        "agent at `{path}` has an extended card but no credentials; add AgentMount::with_auth \
         (the extended card is for authenticated callers only)"
    )]
    ExtendedCardWithoutAuth {
        /// The agent's path.
        path: String,
    },
    /// The listener failed.
    #[error("A2A server I/O error: {0}")]
    Io(#[from] std::io::Error),
}

/// One agent to host: its path, card information, handler, and optional auth and store.
#[derive(Setters)]
#[setters(prefix = "with_")]
pub struct AgentMount {
    #[setters(skip)]
    path: String,
    /// Replaces the card information (builder style).
    info: AgentInfo,
    /// Offers an extended card (e.g. with skills kept from the public card) to callers that
    /// pass the credential check: `GetExtendedAgentCard`, 0.3
    /// `agent/getAuthenticatedExtendedCard`, `GET {path}/extendedAgentCard`. Needs
    /// [`with_auth`](Self::with_auth) ([`A2aServerBuilder::build`] refuses it otherwise); the
    /// public card then says `extendedAgentCard: true`.
    #[setters(rename = "with_extended_card", strip_option)]
    extended: Option<AgentInfo>,
    #[setters(skip)]
    handler: Arc<dyn A2aHandler>,
    /// Requires a credential (builder style).
    #[setters(strip_option)]
    auth: Option<ServerAuth>,
    /// Uses another task store (builder style).
    #[setters(strip_option)]
    store: Option<Arc<dyn TaskStore>>,
}

impl std::fmt::Debug for AgentMount {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentMount")
            .field("path", &self.path)
            .field("name", &self.info.name)
            .field("auth", &self.auth)
            .finish_non_exhaustive()
    }
}

impl AgentMount {
    /// A hand-written handler at `path` (`/` or empty for the root).
    pub fn new(path: impl Into<String>, info: AgentInfo, handler: impl A2aHandler) -> Self {
        Self::from_arc(path, info, Arc::new(handler))
    }

    /// A shared handler at `path`.
    pub fn from_arc(
        path: impl Into<String>,
        info: AgentInfo,
        handler: Arc<dyn A2aHandler>,
    ) -> Self {
        Self {
            path: path.into(),
            info,
            handler,
            auth: None,
            store: None,
            extended: None,
        }
    }

    /// An SPI subagent at `path`: the card comes from the definition (see
    /// [`SubagentHandler::agent_info`]), the work from the executor.
    pub fn subagent(
        path: impl Into<String>,
        definition: Arc<dyn SubagentDefinition>,
        executor: Arc<dyn SubagentExecutor>,
    ) -> Self {
        Self::subagent_with_context(path, definition, executor, TaskContext::new())
    }

    /// Like [`subagent`](Self::subagent), every run starting from `base` (e.g. a context
    /// holding a host's delegation handle, so the served agent can delegate in turn).
    pub fn subagent_with_context(
        path: impl Into<String>,
        definition: Arc<dyn SubagentDefinition>,
        executor: Arc<dyn SubagentExecutor>,
        base: TaskContext,
    ) -> Self {
        let h = SubagentHandler::new(definition, executor).with_context(base);
        let info = h.agent_info();
        Self::new(path, info, h)
    }
}

/// Builder methods that each set the [`ServerConfig`] field of their name to the value given.
macro_rules! config_setters {
    ($($(#[$doc:meta])* $field:ident: $ty:ty;)*) => {$(
        $(#[$doc])*
        #[must_use]
        pub fn $field(mut self, value: $ty) -> Self {
            self.config.$field = value;
            self
        }
    )*};
}

/// Builds an [`A2aServer`].
#[derive(Debug, Default)]
pub struct A2aServerBuilder {
    config: ServerConfig,
    agents: Vec<AgentMount>,
}

impl A2aServerBuilder {
    /// Replaces the whole configuration.
    #[must_use]
    pub fn config(mut self, config: ServerConfig) -> Self {
        self.config = config;
        self
    }

    /// Sets the public base URL used in cards.
    #[must_use]
    pub fn public_url(mut self, url: impl Into<String>) -> Self {
        self.config.public_url = Some(url.into());
        self
    }

    config_setters! {
        /// Serves the 0.3 card (instead of the 1.0 one) at `agent-card.json`.
        agent_card_version: ProtocolVersion;
        /// Serves the 0.3 card (1.0 interfaces embedded) at `agent-card.json` to requests without
        /// an `A2A-Version` header (see [`ServerConfig::legacy_card_discovery`]).
        legacy_card_discovery: bool;
        /// Serves a JSON directory of the hosted agents at `GET /` (see
        /// [`ServerConfig::directory`]).
        directory: bool;
        /// Sets the body size limit.
        max_body_bytes: usize;
        /// Sets the limit of concurrent streams.
        max_streams: usize;
        /// Sets the limit of concurrent streams per client (peer IP; 0: none).
        max_streams_per_client: usize;
        /// Sets the byte budget of each agent's default task store.
        task_store_max_bytes: usize;
        /// Sets the request head read timeout (zero: none).
        header_read_timeout: Duration;
        /// Sets the request body read timeout (zero: none).
        body_read_timeout: Duration;
        /// Sets the keep-alive idle timeout (zero: none).
        idle_timeout: Duration;
        /// Sets the limit of open connections.
        max_connections: usize;
        /// Sets the largest request head accepted.
        max_header_bytes: usize;
        /// Offers push notifications (see [`ServerConfig::push_notifications`]).
        push_notifications: bool;
        /// Allows webhooks at private and loopback addresses (see
        /// [`ServerConfig::push_allow_private`]).
        push_allow_private: bool;
        /// Sets the most webhook POSTs in flight (see [`ServerConfig::push_max_deliveries`]).
        push_max_deliveries: usize;
        /// Sets the most updates waiting for delivery (see [`ServerConfig::push_max_queued`]).
        push_max_queued: usize;
        /// Sets the bytes of updates waiting for delivery (see
        /// [`ServerConfig::push_max_queued_bytes`]).
        push_max_queued_bytes: usize;
        /// Sets the most push configs per task (see
        /// [`ServerConfig::push_max_configs_per_task`]).
        push_max_configs_per_task: usize;
        /// Sets whether 0.3 sends without `blocking` wait (see
        /// [`ServerConfig::v03_blocking_by_default`]).
        v03_blocking_by_default: bool;
    }

    /// Lists the gRPC binding at `host:port` on the cards (see [`ServerConfig::grpc_url`];
    /// serve it with [`A2aServer::serve_grpc`]).
    #[must_use]
    pub fn grpc_url(mut self, address: impl Into<String>) -> Self {
        self.config.grpc_url = Some(address.into());
        self
    }

    /// Signs every card served with this key (see [`ServerConfig::card_signer`]).
    #[must_use]
    pub fn card_signer(mut self, signer: crate::signing::CardSigner) -> Self {
        self.config.card_signer = Some(signer);
        self
    }

    /// Adds an agent.
    #[must_use]
    pub fn mount(mut self, agent: AgentMount) -> Self {
        self.agents.push(agent);
        self
    }

    /// Checks the paths and builds the server.
    pub fn build(self) -> Result<A2aServer, ServerError> {
        if self.agents.is_empty() {
            return Err(ServerError::NoAgents);
        }
        let shutdown = CancellationToken::new();
        let limits = engine::EngineLimits {
            subscriber_buffer: self.config.subscriber_buffer.max(1),
            slow_subscriber_timeout: self.config.slow_subscriber_timeout,
            cancel_grace: self.config.cancel_grace,
        };
        #[cfg(feature = "push")]
        let push_hub = self.config.push_notifications.then(|| {
            Arc::new(push::PushHub::new(push::PushLimits {
                allow_private: self.config.push_allow_private,
                max_deliveries: self.config.push_max_deliveries,
                max_queued: self.config.push_max_queued,
                max_queued_bytes: self.config.push_max_queued_bytes,
            }))
        });
        let mut hosted: Vec<http::Hosted> = Vec::new();
        for a in self.agents {
            let path = normalize_path(&a.path)?;
            if hosted.iter().any(|h| h.path == path) {
                return Err(ServerError::DuplicatePath { path });
            }
            if a.extended.is_some() && a.auth.is_none() {
                return Err(ServerError::ExtendedCardWithoutAuth { path });
            }
            let store = a.store.unwrap_or_else(|| {
                Arc::new(
                    InMemoryTaskStore::default()
                        .with_max_bytes(self.config.task_store_max_bytes)
                        .with_max_push_configs(self.config.push_max_configs_per_task),
                )
            });
            #[allow(unused_mut)]
            let mut engine = engine::Engine::new(
                a.handler,
                store,
                limits.clone(),
                path.clone(),
                shutdown.clone(),
            );
            #[cfg(feature = "push")]
            // Push notifications need a store keeping their configs; without one the agent
            // offers none (its card says so).
            if let (Some(hub), Some(configs)) = (&push_hub, engine.push_configs.clone()) {
                engine.pusher = Some(Arc::new(push::Pusher::new(
                    hub.clone(),
                    configs,
                    self.config.push_max_configs_per_task,
                )));
            }
            let engine = Arc::new(engine);
            hosted.push(http::Hosted {
                path,
                engine,
                info: a.info,
                auth: a.auth,
                extended: a.extended,
            });
        }
        hosted.sort_by_key(|h| std::cmp::Reverse(h.path.len()));
        let streams = http::StreamLimits::new(
            self.config.max_streams.max(1),
            self.config.max_streams_per_client,
        );
        Ok(A2aServer {
            shared: Arc::new(http::Shared {
                agents: hosted,
                cfg: self.config,
                streams,
                shutdown,
                watcher: std::sync::Once::new(),
                started: std::time::SystemTime::now(),
                conns: std::sync::OnceLock::new(),
                #[cfg(feature = "push")]
                push: push_hub,
            }),
        })
    }
}

fn normalize_path(p: &str) -> Result<String, ServerError> {
    let trimmed = p.trim().trim_end_matches('/');
    if trimmed.is_empty() {
        return Ok(String::new());
    }
    let path = if trimmed.starts_with('/') {
        trimmed.to_string()
    } else {
        format!("/{trimmed}")
    };
    let bad = |reason| ServerError::InvalidPath {
        path: p.to_string(),
        reason,
    };
    if !path
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"/-._~".contains(&b))
    {
        return Err(bad("use letters, digits and / - . _ ~ only"));
    }
    if path.contains("//") || path.split('/').any(|s| s == "." || s == "..") {
        return Err(bad("empty, `.` or `..` segment"));
    }
    if path.contains("/.well-known") || path.ends_with("/tasks") || path.contains("/tasks/") {
        return Err(bad("clashes with a protocol route"));
    }
    Ok(path)
}

/// An A2A server hosting one or more agents. Cheap to clone.
#[derive(Clone)]
pub struct A2aServer {
    shared: Arc<http::Shared>,
}

impl std::fmt::Debug for A2aServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("A2aServer")
            .field(
                "agents",
                &self
                    .shared
                    .agents
                    .iter()
                    .map(|a| a.path.as_str())
                    .collect::<Vec<_>>(),
            )
            .field("config", &self.shared.cfg)
            .finish()
    }
}

impl A2aServer {
    /// A builder with the default [`ServerConfig`].
    pub fn builder() -> A2aServerBuilder {
        A2aServerBuilder::default()
    }

    /// The axum router serving every mounted agent (merge it into a bigger app, or serve it).
    pub fn router(&self) -> axum::Router {
        let root_free = self.shared.agents.iter().all(|a| !a.path.is_empty());
        let router = http::router(self.shared.clone());
        if self.shared.cfg.directory && root_free {
            router.route(
                "/",
                axum::routing::get(directory::list).with_state(self.shared.clone()),
            )
        } else {
            router
        }
    }

    /// The shutdown token: cancelling it (or calling [`shutdown`](Self::shutdown)) ends every
    /// stream and cancels every running handler, also when [`router`](Self::router) is served
    /// another way; it also makes [`serve`](Self::serve) return gracefully.
    pub fn shutdown_token(&self) -> CancellationToken {
        self.shared.shutdown.clone()
    }

    /// Completes when `shutdown` does or the server is shut down, after starting the shutdown
    /// ([`shutdown`](Self::shutdown)): the signal a serving loop stops on.
    fn stop_signal(
        &self,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> impl Future<Output = ()> + Send + 'static {
        let me = self.clone();
        async move {
            tokio::select! {
                _ = shutdown => {}
                _ = me.shared.shutdown.cancelled() => {}
            }
            me.shutdown();
        }
    }

    /// Starts shutting down: open streams end and every running handler is cancelled.
    /// [`serve`](Self::serve) calls this when its signal fires (or when the
    /// [`shutdown_token`](Self::shutdown_token) is cancelled).
    pub fn shutdown(&self) {
        self.shared.shutdown.cancel();
        self.shared.cancel_all();
    }

    /// The number of tasks whose handler is running, over all agents.
    pub fn running_tasks(&self) -> usize {
        self.shared
            .agents
            .iter()
            .map(|a| a.engine.live_count())
            .sum()
    }

    /// The connections open now, over every listener ([`serve`](Self::serve),
    /// [`serve_router`](Self::serve_router), `serve_grpc`): at most
    /// [`ServerConfig::max_connections`] (as lowered to the open-file limit).
    pub fn open_connections(&self) -> usize {
        self.shared.conns.get().map_or(0, |p| p.open())
    }

    /// Push delivery's counters over all agents (feature `push`); `None` when push
    /// notifications are off.
    #[cfg(feature = "push")]
    pub fn push_stats(&self) -> Option<PushStats> {
        self.shared.push.as_ref().map(|h| h.stats())
    }

    /// Serves until `shutdown` completes, then shuts down gracefully: handlers are cancelled,
    /// streams end, in-flight requests finish. Enforces the connection limits of
    /// [`ServerConfig`] (connection cap, head / body / idle timeouts, head size, per-client
    /// stream cap); HTTP/1.1 only.
    pub async fn serve(
        self,
        listener: tokio::net::TcpListener,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> Result<(), ServerError> {
        let router = self.router();
        self.serve_router(listener, router, shutdown).await
    }

    /// Like [`serve`](Self::serve), for a bigger app built on [`router`](Self::router) (e.g.
    /// `server.router().route("/", ...)`): serves `router` with this server's connection limits
    /// and shutdown. Prefer this to `axum::serve`, which has no head or idle timeouts and no
    /// connection cap.
    pub async fn serve_router(
        self,
        listener: tokio::net::TcpListener,
        router: axum::Router,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> Result<(), ServerError> {
        let signal = self.stop_signal(shutdown);
        http::conn::serve_loop(
            self.shared.clone(),
            listener,
            router,
            http::conn::Protocol::Http1,
            signal,
        )
        .await?;
        Ok(())
    }
}

#[cfg(feature = "grpc-server")]
impl A2aServer {
    /// The gRPC binding (1.0) of every mounted agent as a tonic service (`lf.a2a.v1.A2AService`),
    /// to add to a tonic server of your own; [`serve_grpc`](Self::serve_grpc) serves it with this
    /// server's bounds. Agents are told apart by the requests' `tenant` (an agent's path without
    /// its leading `/`; empty for the root agent, or the only agent).
    pub fn grpc_service(
        &self,
    ) -> crate::grpc::proto::a2a_service_server::A2aServiceServer<
        impl crate::grpc::proto::a2a_service_server::A2aService,
    > {
        http::grpc::service(self.shared.clone())
    }

    /// The span serving one gRPC call, continuing the caller's trace from its W3C
    /// `traceparent` / `tracestate` metadata (feature `otel`; the host installs the propagator).
    /// [`serve_grpc`](Self::serve_grpc) uses it; with [`grpc_service`](Self::grpc_service) in a
    /// tonic server of your own, pass it to that server's `trace_fn` for the same spans.
    pub fn grpc_request_span(request: &::http::Request<()>) -> tracing::Span {
        http::grpc::request_span(request)
    }

    /// Serves the gRPC binding (1.0, HTTP/2 without TLS: put TLS in front) on `listener` until
    /// `shutdown` completes or the server shuts down, on the same agents, engine, credential
    /// check and stream caps as the HTTP bindings, and through the same accept loop as
    /// [`serve`](Self::serve): its connections count towards the one
    /// [`ServerConfig::max_connections`] cap with the HTTP ones (at the cap, the connection
    /// idle longest, of either binding, is closed), a connection must send its preface and
    /// first call within [`ServerConfig::header_read_timeout`], and one without calls is
    /// closed after [`ServerConfig::idle_timeout`]. Bounds: messages up to
    /// [`ServerConfig::max_body_bytes`], received within [`ServerConfig::body_read_timeout`],
    /// answers up to the larger of that and 10 MiB (a `SendMessage` whose answer could not
    /// fit is refused before its task starts, RESOURCE_EXHAUSTED),
    /// [`ServerConfig::max_header_bytes`] of metadata, at most
    /// [`ServerConfig::max_streams_per_client`] concurrent calls per connection (h2
    /// `MAX_CONCURRENT_STREAMS`, 128 when that is 0), HTTP/2 keep-alive pings every 30 s
    /// (a peer silent for 10 s more is dropped), and the shared stream caps
    /// ([`ServerConfig::max_streams`], [`ServerConfig::max_streams_per_client`] counted per
    /// peer IP with the SSE streams). A unary call lasts as long as the agent's reply, as on
    /// the HTTP bindings (a client sets its own deadline); streams end with their task or at
    /// shutdown. List the binding on the cards with [`A2aServerBuilder::grpc_url`].
    pub async fn serve_grpc(
        self,
        listener: tokio::net::TcpListener,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> Result<(), ServerError> {
        let cfg = &self.shared.cfg;
        let per_conn = match cfg.max_streams_per_client {
            0 => 128,
            n => u32::try_from(n).unwrap_or(u32::MAX),
        };
        let protocol = http::conn::Protocol::Http2(http::conn::Http2Settings {
            max_concurrent_streams: per_conn,
            max_header_list_size: u32::try_from(cfg.max_header_bytes).unwrap_or(u32::MAX),
            keep_alive_interval: Duration::from_secs(30),
            keep_alive_timeout: Duration::from_secs(10),
        });
        let router = http::grpc::router(self.shared.clone());
        let signal = self.stop_signal(shutdown);
        http::conn::serve_loop(self.shared.clone(), listener, router, protocol, signal).await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_normalized_and_checked() {
        assert_eq!(normalize_path("/").unwrap(), "");
        assert_eq!(normalize_path("echo/").unwrap(), "/echo");
        assert_eq!(normalize_path("/a/b").unwrap(), "/a/b");
        assert!(normalize_path("/a b").is_err());
        assert!(normalize_path("/a/../b").is_err());
        assert!(normalize_path("/x/tasks").is_err());
    }

    /// The `use` paths of a source file (its `use` lines and `crate::`/`super::` paths).
    fn imports(source: &str) -> Vec<&str> {
        source
            .lines()
            .map(str::trim)
            .filter(|l| !l.starts_with("//"))
            .filter(|l| l.contains("super::") || l.contains("crate::"))
            .collect()
    }

    #[test]
    fn the_handler_contract_imports_no_engine_internals() {
        // The contract (handler.rs) and the storage contract (task_store) name neither the
        // engine nor push delivery nor the bindings: the engine depends on them, never back.
        let handler = include_str!("handler.rs");
        for line in imports(handler) {
            for banned in ["engine", "push", "http", "sink::", "subagent::"] {
                assert!(
                    !line.contains(&format!("super::{banned}"))
                        && !line.contains(&format!("crate::server::{banned}")),
                    "handler.rs imports `{banned}`: {line}"
                );
            }
        }
        for (file, source) in [
            ("task_store/mod.rs", include_str!("../task_store/mod.rs")),
            (
                "task_store/memory.rs",
                include_str!("../task_store/memory.rs"),
            ),
            (
                "task_store/sizes.rs",
                include_str!("../task_store/sizes.rs"),
            ),
        ] {
            for line in imports(source) {
                assert!(
                    !line.contains("crate::server::"),
                    "{file} imports the server: {line}"
                );
            }
        }
        // Push delivery reads what it answers with from `api`, not from the engine.
        #[cfg(feature = "push")]
        for line in imports(include_str!("push.rs")) {
            assert!(
                !line.contains("super::engine"),
                "push.rs imports the engine: {line}"
            );
        }
    }
}
