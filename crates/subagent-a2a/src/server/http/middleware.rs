//! The per-request middleware, one plain tower service: [`Guard`] around an agent's calls.
//!
//! Not `axum::middleware::from_fn`: each `from_fn` layer clones the route it wraps into a
//! boxed service and boxes a future on every request, and three of them cost a served
//! `SendMessage` about a quarter of the server's own instructions (docs/perf). Not two layers
//! either: every layer on an axum route is one more boxed service cloned (allocated) and one
//! more boxed future per request, so what ran around the whole router (the shutdown watcher,
//! the peer) runs here too: only an agent's calls run handlers or streams, which is what
//! those two serve. The service calls the route it wraps in place and returns its future,
//! wrapped but not boxed.

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

/// An agent's call: starts the server's shutdown watcher (once, at the first call), makes the
/// peer known for the per-client stream cap when the router is served by another loop with
/// `ConnectInfo`, and runs in a server span continuing the caller's trace (W3C `traceparent`;
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
    type Future = Instrumented<
        Either<
            Ready<Result<Response, Infallible>>,
            Either<TaskLocalFuture<SocketAddr, S::Future>, S::Future>,
        >,
    >;

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
            _ => {
                start_watcher(&self.ctx.shared);
                // Our own accept loop sets the peer around the connection (seen here: `call`
                // runs inside its poll); another loop may hand it in as `ConnectInfo`.
                Either::Right(
                    if PEER.try_with(|_| ()).is_err()
                        && let Some(ConnectInfo(addr)) =
                            req.extensions().get::<ConnectInfo<SocketAddr>>().copied()
                    {
                        Either::Left(PEER.scope(addr, self.inner.call(req)))
                    } else {
                        Either::Right(self.inner.call(req))
                    },
                )
            }
        };
        call.instrument(span)
    }
}

/// Starts, once, the task that cancels every running handler when the server shuts down
/// (however the router is served).
fn start_watcher(shared: &Arc<Shared>) {
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

#[cfg(test)]
mod tests {
    use std::net::SocketAddr;

    use axum::body::Body;
    use axum::extract::ConnectInfo;
    use tower::ServiceExt as _;

    use crate::server::{A2aHandler, A2aServer, AgentInfo, AgentMount, handler_fn};

    /// Works, then waits until cancelled (its stream stays open).
    fn hold() -> impl A2aHandler {
        handler_fn(|_req, ev, cancel| async move {
            ev.working().await?;
            cancel.cancelled().await;
            Ok(())
        })
    }

    fn stream_request(peer: SocketAddr) -> http::Request<Body> {
        let mut req = http::Request::post("/message:stream")
            .header("content-type", "application/json")
            .body(Body::from(
                r#"{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"hold"}]}}"#,
            ))
            .expect("request");
        req.extensions_mut().insert(ConnectInfo(peer));
        req
    }

    /// A router served by another loop learns the client from `ConnectInfo` in the agent's
    /// call layer (there is no router-wide layer): the per-client stream cap holds.
    #[tokio::test]
    async fn the_per_client_stream_cap_reads_connect_info() {
        let router = A2aServer::builder()
            .max_streams_per_client(1)
            .mount(AgentMount::new("/", AgentInfo::new("h", "H"), hold()))
            .build()
            .expect("server")
            .router();
        let peer: SocketAddr = "192.0.2.7:4000".parse().expect("addr");
        let open = || router.clone().oneshot(stream_request(peer));
        let first = open().await.expect("infallible");
        assert_eq!(first.status(), 200);
        let second = open().await.expect("infallible");
        assert_eq!(second.status(), 503);
        let body = axum::body::to_bytes(second.into_body(), 1 << 16)
            .await
            .expect("body");
        let text = String::from_utf8_lossy(&body);
        assert!(
            text.contains("192.0.2.7") && text.contains("per client"),
            "{text}"
        );
        // Another client still gets its stream.
        let other: SocketAddr = "192.0.2.8:4000".parse().expect("addr");
        let third = router
            .oneshot(stream_request(other))
            .await
            .expect("infallible");
        assert_eq!(third.status(), 200);
        drop(first);
    }
}
