//! The per-request middleware, written as plain tower services: [`Enter`] around the whole
//! router, [`Guard`] around an agent's calls.
//!
//! Not `axum::middleware::from_fn`: each `from_fn` layer clones the route it wraps into a
//! boxed service and boxes a future on every request, and three of them cost a served
//! `SendMessage` about a quarter of the server's own instructions (docs/perf). These services
//! call the route they wrap in place and return its future, wrapped but not boxed.

use std::convert::Infallible;
use std::future::{Ready, ready};
use std::net::SocketAddr;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::extract::{ConnectInfo, Request};
use axum::response::Response;
use futures::future::Either;
use http::{HeaderValue, StatusCode, header};
use tokio::task::futures::TaskLocalFuture;
use tower_layer::Layer;
use tower_service::Service;
use tracing::Instrument as _;
use tracing::instrument::Instrumented;

use super::reply::{json_bytes, respond};
use super::{AgentCtx, Hosted, PEER, Shared};
use crate::server::card::ServerAuth;

/// Wraps the router: see [`Enter`].
#[derive(Clone)]
pub(super) struct EnterLayer(pub(super) Arc<Shared>);

impl<S> Layer<S> for EnterLayer {
    type Service = Enter<S>;

    fn layer(&self, inner: S) -> Enter<S> {
        Enter {
            inner,
            shared: self.0.clone(),
        }
    }
}

/// Runs before every request: starts the shutdown watcher once, and makes the peer known for
/// the per-client stream cap when the router is served by another loop with `ConnectInfo`.
#[derive(Clone)]
pub(super) struct Enter<S> {
    inner: S,
    shared: Arc<Shared>,
}

impl<S> Service<Request> for Enter<S>
where
    S: Service<Request, Response = Response, Error = Infallible>,
{
    type Response = Response;
    type Error = Infallible;
    type Future = Either<TaskLocalFuture<SocketAddr, S::Future>, S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request) -> Self::Future {
        let shared = &self.shared;
        shared.watcher.call_once(|| {
            let weak = Arc::downgrade(shared);
            let token = shared.shutdown.clone();
            tokio::spawn(async move {
                token.cancelled().await;
                if let Some(s) = weak.upgrade() {
                    s.cancel_all();
                }
            });
        });
        // Our own accept loop sets the peer around the connection (seen here: `call` runs
        // inside its poll); another loop may hand it in as `ConnectInfo`.
        if PEER.try_with(|_| ()).is_err()
            && let Some(ConnectInfo(addr)) =
                req.extensions().get::<ConnectInfo<SocketAddr>>().copied()
        {
            return Either::Left(PEER.scope(addr, self.inner.call(req)));
        }
        Either::Right(self.inner.call(req))
    }
}

/// Wraps an agent's calls (not its public card): see [`Guard`].
#[derive(Clone)]
pub(super) struct GuardLayer(pub(super) AgentCtx);

impl<S> Layer<S> for GuardLayer {
    type Service = Guard<S>;

    fn layer(&self, inner: S) -> Guard<S> {
        Guard {
            inner,
            ctx: self.0.clone(),
        }
    }
}

/// An agent's call: runs in a server span continuing the caller's trace (W3C `traceparent`;
/// the handler it starts runs in it, see `Engine::send`), and only with the agent's
/// credentials: else 401, with `WWW-Authenticate: Bearer` where a bearer token is accepted.
#[derive(Clone)]
pub(super) struct Guard<S> {
    inner: S,
    ctx: AgentCtx,
}

impl<S> Service<Request> for Guard<S>
where
    S: Service<Request, Response = Response, Error = Infallible>,
{
    type Response = Response;
    type Error = Infallible;
    type Future = Instrumented<Either<Ready<Result<Response, Infallible>>, S::Future>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request) -> Self::Future {
        let span = tracing::info_span!(
            "a2a.request",
            otel.name = %format_args!("{} {}", req.method(), req.uri().path()),
            otel.kind = "server",
            http.request.method = %req.method(),
            url.path = req.uri().path(),
            rpc.system = "a2a",
        );
        crate::trace_context::continue_trace(req.headers(), &span);
        let agent = self.ctx.agent();
        let call = match &agent.auth {
            Some(auth) if !auth.check(req.headers()) => {
                Either::Left(ready(Ok(unauthorized(agent, auth))))
            }
            _ => Either::Right(self.inner.call(req)),
        };
        call.instrument(span)
    }
}

/// The 401 answer of a call without the agent's credentials.
fn unauthorized(agent: &Hosted, auth: &ServerAuth) -> Response {
    let mut r = respond(
        StatusCode::UNAUTHORIZED,
        json_bytes(&serde_json::json!({
            "error": {
                "code": 401,
                "status": "UNAUTHENTICATED",
                "message": format!("agent `{}` requires credentials (see securitySchemes in its card)", agent.info.name),
            }
        })),
    );
    if auth.takes_bearer() {
        r.headers_mut()
            .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    }
    r
}
