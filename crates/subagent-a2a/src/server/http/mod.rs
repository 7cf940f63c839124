//! The HTTP layer of the server, one module per job:
//!
//! - this module: the hosted agents and the router, built per agent from axum routes (cards
//!   public; JSON-RPC and HTTP+JSON behind the agent's credential check);
//! - [`cards`]: the card routes (version negotiation, caching headers);
//! - [`middleware`]: what runs around an agent's calls (the shutdown watcher, the peer, its
//!   trace span, its credential check);
//! - [`jsonrpc`]: the JSON-RPC 2.0 envelope and its 1.0 / 0.3 methods;
//! - [`one_pass`]: the usual request (a 1.0 send) read in one pass;
//! - [`rest`]: the HTTP+JSON routes (1.0);
//! - [`rest_v03`]: the HTTP+JSON routes of 0.3 (`/v1/…`, beside the 1.0 ones);
//! - [`calls`]: the operations both bindings share, on the agent's [`Engine`];
//! - [`sse`]: SSE encoding and the stream caps;
//! - [`request`] / [`reply`]: reading requests (bodies, versions, content types) and
//!   encoding answers and errors per binding and version.

mod calls;
mod cards;
pub(crate) mod conn;
#[cfg(feature = "grpc-server")]
pub(crate) mod grpc;
mod jsonrpc;
mod middleware;
mod reply;
mod request;
mod rest;
mod rest_v03;
mod sse;

use std::sync::Arc;

use axum::Router;
use axum::routing::{MethodRouter, any, get, post};
use subagent_spi::CancellationToken;

pub(crate) use cards::agent_url;
pub(crate) use sse::{PEER, StreamLimits};

use super::ServerConfig;
use super::card::{AgentInfo, ServerAuth};
use super::engine::Engine;

/// One hosted agent.
pub(crate) struct Hosted {
    /// `""` for the root, else `/a/b` (no trailing slash).
    pub path: String,
    pub engine: Arc<Engine>,
    pub info: AgentInfo,
    pub auth: Option<ServerAuth>,
    /// The extended card's information (served to authenticated callers only).
    pub extended: Option<AgentInfo>,
}

impl Hosted {
    /// True when the agent has an extended card and credentials to guard it.
    pub(crate) fn offers_extended_card(&self) -> bool {
        self.extended.is_some() && self.auth.is_some()
    }
}

/// Everything the router needs.
pub(crate) struct Shared {
    pub agents: Vec<Hosted>,
    pub cfg: ServerConfig,
    pub streams: StreamLimits,
    pub shutdown: CancellationToken,
    /// Starts (once, from an agent's first call) the task that cancels every running handler
    /// when `shutdown` fires, however the router is served.
    pub watcher: std::sync::Once,
    /// When the server was built: the cards' `Last-Modified`.
    pub started: std::time::SystemTime,
    /// The connections of every listener (HTTP and gRPC), made at the first serve (the cap
    /// depends on the open-file limit then).
    pub conns: std::sync::OnceLock<Arc<conn::ConnPool>>,
    /// Push delivery's shared client and bounds, when push notifications are on.
    #[cfg(feature = "push")]
    pub push: Option<Arc<super::push::PushHub>>,
}

impl Shared {
    /// The server's connection pool (see [`conn::ConnPool`]).
    pub(crate) fn conn_pool(&self) -> Arc<conn::ConnPool> {
        self.conns
            .get_or_init(|| Arc::new(conn::ConnPool::new(self.cfg.max_connections)))
            .clone()
    }

    /// Cancels every running handler of every agent.
    pub(super) fn cancel_all(&self) {
        for a in &self.agents {
            a.engine.cancel_all();
        }
    }
}

/// The state of one agent's routes: the server and which of its agents.
#[derive(Clone)]
pub(super) struct AgentCtx {
    shared: Arc<Shared>,
    index: usize,
}

impl AgentCtx {
    fn agent(&self) -> &Hosted {
        &self.shared.agents[self.index]
    }
}

/// The router of every hosted agent: each agent's routes under its path, a
/// METHOD_NOT_FOUND answer (404) for anything else.
pub(crate) fn router(shared: Arc<Shared>) -> Router {
    let mut router = Router::new();
    for index in 0..shared.agents.len() {
        // The 0.3 HTTP+JSON routes sit under `{path}/v1`: left out where another agent is
        // mounted at exactly that path (its 1.0 routes would be the same).
        let p = &shared.agents[index].path;
        let v03_rest = !shared.agents.iter().any(|a| a.path == format!("{p}/v1"));
        router = router.merge(agent_routes(
            AgentCtx {
                shared: shared.clone(),
                index,
            },
            v03_rest,
        ));
    }
    // No layer around the whole router: each would be one more boxed service cloned per
    // request (see `middleware`).
    router.fallback(rest::unrouted)
}

/// One agent's routes (with `v03_rest`, the 0.3 HTTP+JSON ones under `/v1` too).
fn agent_routes(ctx: AgentCtx, v03_rest: bool) -> Router {
    let p = ctx.agent().path.clone();
    let public = Router::new()
        .route(
            &format!("{p}/.well-known/agent-card.json"),
            get(cards::agent_card).fallback(rest::unrouted),
        )
        .route(
            &format!("{p}/.well-known/agent.json"),
            get(cards::agent_json).fallback(rest::unrouted),
        );
    let rpc = || post(jsonrpc::endpoint).fallback(rest::unrouted);
    let mut protected = Router::new().route(if p.is_empty() { "/" } else { &p }, rpc());
    if !p.is_empty() {
        protected = protected.route(&format!("{p}/"), rpc());
    }
    // The HTTP+JSON routes, each with its 1.0 handler and its 0.3 one (under `/v1`, where
    // `v03_rest`): a method a route does not serve (`only`) is METHOD_NOT_FOUND; `any` routes
    // tell methods apart themselves.
    use rest::{V1, message_send, message_stream, push_config, push_configs, task};
    use rest_v03::V03;
    let only = |route: MethodRouter<AgentCtx>| route.fallback(rest::unrouted);
    let rest_routes = [
        (
            "/message:send",
            only(post(message_send::<V1>)),
            only(post(message_send::<V03>)),
        ),
        (
            "/message:stream",
            only(post(message_stream::<V1>)),
            only(post(message_stream::<V03>)),
        ),
        (
            "/tasks",
            only(get(rest::list_tasks)),
            only(get(rest_v03::list_tasks)),
        ),
        ("/tasks/{id}", any(task::<V1>), any(task::<V03>)),
        (
            "/tasks/{id}/pushNotificationConfigs",
            any(push_configs::<V1>),
            any(push_configs::<V03>),
        ),
        (
            "/tasks/{id}/pushNotificationConfigs/{config}",
            any(push_config::<V1>),
            any(push_config::<V03>),
        ),
        // The extended card (1.0); 0.3 serves its card at `/v1/card`.
        (
            "/extendedAgentCard",
            only(get(rest::extended_card)),
            only(get(rest_v03::card)),
        ),
    ];
    for (route, v1, v03) in rest_routes {
        protected = protected.route(&format!("{p}{route}"), v1);
        if v03_rest {
            let route = if route == "/extendedAgentCard" {
                "/card"
            } else {
                route
            };
            protected = protected.route(&format!("{p}/v1{route}"), v03);
        }
    }
    let protected = protected.route_layer(middleware::GuardLayer(ctx.clone()));
    public.merge(protected).with_state(ctx)
}
