//! `a2a-auth-proxy`: a small reverse proxy that adds `Authorization: Bearer <token>` to every
//! request it forwards. Conformance tooling, not product: it lets a client that cannot send
//! credentials (the A2A TCK has no such option) act as an authenticated caller of a server
//! that requires them, e.g. to reach the extended agent card, which the specification says
//! MUST be served to authenticated callers only (A2A §3.1.11).
//!
//! ```text
//! A2A_PROXY_TOKEN=... cargo run -p subagent-a2a --example a2a-auth-proxy -- \
//!     --listen 127.0.0.1:9901 --to 127.0.0.1:9911 \
//!     --grpc-listen 127.0.0.1:9902 --grpc-to 127.0.0.1:9912
//! ```
//!
//! - `--listen ADDR --to HOST:PORT`: HTTP/1.1 (JSON-RPC, HTTP+JSON, cards, SSE streams),
//!   forwarded over HTTP/1.1. The `Host` header is passed on unchanged, so a server that
//!   builds its card's URLs from it points them at the proxy.
//! - `--grpc-listen ADDR --grpc-to HOST:PORT` (optional): HTTP/2 with prior knowledge (h2c,
//!   gRPC without TLS), forwarded over h2c; trailers (`grpc-status`) pass through.
//! - `--token-env NAME`: the environment variable holding the bearer token (default
//!   `A2A_PROXY_TOKEN`). The token is never printed.
//!
//! Bodies stream both ways, frame by frame. Hop-by-hop headers (RFC 9110 §7.6.1) are dropped,
//! except `te: trailers`, which gRPC needs; an `Authorization` the client sent is replaced. An
//! unreachable upstream gives HTTP 502. There is no TLS, no timeout and no limit: run it on
//! 127.0.0.1 for tests only.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;

use http::{HeaderMap, HeaderValue, Request, Response, StatusCode, Uri, Version, header};
use http_body_util::{BodyExt, Full, combinators::BoxBody};
use hyper::body::{Bytes, Incoming};
use hyper::service::service_fn;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use tokio::net::TcpListener;

type Body = BoxBody<Bytes, hyper::Error>;

/// One listener's upstream.
struct Route {
    /// `host:port` of the upstream.
    upstream: String,
    /// HTTP/1.1 or HTTP/2 (h2c), on both sides.
    version: Version,
    client: Client<HttpConnector, Incoming>,
    /// `Bearer <token>`, marked sensitive.
    auth: HeaderValue,
}

/// Headers that belong to one connection, never forwarded (RFC 9110 §7.6.1), plus those the
/// `Connection` header names.
fn strip_hop_by_hop(headers: &mut HeaderMap) {
    let named: Vec<String> = headers
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|n| n.trim().to_ascii_lowercase())
        .filter(|n| !n.is_empty())
        .collect();
    for n in named {
        headers.remove(n.as_str());
    }
    let trailers_only = headers
        .get(header::TE)
        .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"trailers"));
    for h in [
        header::CONNECTION,
        header::PROXY_AUTHENTICATE,
        header::PROXY_AUTHORIZATION,
        header::TE,
        header::TRAILER,
        header::TRANSFER_ENCODING,
        header::UPGRADE,
    ] {
        headers.remove(h);
    }
    headers.remove("keep-alive");
    headers.remove("proxy-connection");
    if trailers_only {
        headers.insert(header::TE, HeaderValue::from_static("trailers"));
    }
}

fn bad_gateway(why: String) -> Response<Body> {
    let mut r = Response::new(
        Full::new(Bytes::from(why))
            .map_err(|never| match never {})
            .boxed(),
    );
    *r.status_mut() = StatusCode::BAD_GATEWAY;
    r
}

async fn forward(
    route: Arc<Route>,
    mut req: Request<Incoming>,
) -> Result<Response<Body>, Infallible> {
    let pq = req.uri().path_and_query().map_or("/", |p| p.as_str());
    let uri: Uri = match format!("http://{}{pq}", route.upstream).parse() {
        Ok(u) => u,
        Err(e) => return Ok(bad_gateway(format!("bad request target: {e}"))),
    };
    *req.uri_mut() = uri;
    *req.version_mut() = route.version;
    let headers = req.headers_mut();
    strip_hop_by_hop(headers);
    headers.insert(header::AUTHORIZATION, route.auth.clone());
    match route.client.request(req).await {
        Ok(resp) => {
            let (mut parts, body) = resp.into_parts();
            strip_hop_by_hop(&mut parts.headers);
            Ok(Response::from_parts(parts, body.boxed()))
        }
        Err(e) => {
            eprintln!("a2a-auth-proxy: upstream {} failed: {e}", route.upstream);
            Ok(bad_gateway(format!(
                "upstream {} failed: {e}",
                route.upstream
            )))
        }
    }
}

async fn serve(listener: TcpListener, route: Arc<Route>) -> std::io::Result<()> {
    loop {
        let (stream, _) = listener.accept().await?;
        let _ = stream.set_nodelay(true);
        let route = route.clone();
        tokio::spawn(async move {
            let h2 = route.version == Version::HTTP_2;
            let svc = service_fn(move |req| forward(route.clone(), req));
            let builder = auto::Builder::new(TokioExecutor::new());
            let builder = if h2 {
                builder.http2_only()
            } else {
                builder.http1_only()
            };
            // A client closing its connection mid-request is not the proxy's concern.
            let _ = builder.serve_connection(TokioIo::new(stream), svc).await;
        });
    }
}

async fn bind(
    listen: &str,
    upstream: String,
    version: Version,
    auth: HeaderValue,
) -> Result<(TcpListener, Arc<Route>), Box<dyn std::error::Error>> {
    let addr: SocketAddr = listen
        .parse()
        .map_err(|_| format!("invalid listen address `{listen}` (want IP:PORT)"))?;
    let listener = TcpListener::bind(addr).await?;
    let mut client = Client::builder(TokioExecutor::new());
    client.http2_only(version == Version::HTTP_2);
    let kind = if version == Version::HTTP_2 {
        "h2c"
    } else {
        "HTTP/1.1"
    };
    // The bound address (`:0` picks a free port): scripts read it from this line.
    eprintln!(
        "a2a-auth-proxy: {kind} on {} -> {upstream}",
        listener.local_addr()?
    );
    let route = Route {
        upstream,
        version,
        client: client.build_http(),
        auth,
    };
    Ok((listener, Arc::new(route)))
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let usage = "usage: a2a-auth-proxy --listen IP:PORT --to HOST:PORT \
                 [--grpc-listen IP:PORT --grpc-to HOST:PORT] [--token-env NAME]";
    let (mut listen, mut to, mut grpc_listen, mut grpc_to) = (None, None, None, None);
    let mut token_env = "A2A_PROXY_TOKEN".to_string();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let slot = match a.as_str() {
            "--listen" => &mut listen,
            "--to" => &mut to,
            "--grpc-listen" => &mut grpc_listen,
            "--grpc-to" => &mut grpc_to,
            "--token-env" => {
                token_env = args
                    .next()
                    .ok_or(format!("--token-env needs a name; {usage}"))?;
                continue;
            }
            other => return Err(format!("unknown argument `{other}`; {usage}").into()),
        };
        *slot = Some(args.next().ok_or(format!("{a} needs a value; {usage}"))?);
    }
    let (Some(listen), Some(to)) = (listen, to) else {
        return Err(format!("--listen and --to are required; {usage}").into());
    };
    if grpc_listen.is_some() != grpc_to.is_some() {
        return Err(format!("--grpc-listen and --grpc-to go together; {usage}").into());
    }
    let token = std::env::var(&token_env)
        .map_err(|_| format!("set the bearer token in the environment variable `{token_env}`"))?;
    let mut auth = HeaderValue::try_from(format!("Bearer {token}"))
        .map_err(|_| format!("the token in `{token_env}` is not a valid header value"))?;
    auth.set_sensitive(true);

    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    rt.block_on(async move {
        let (http, route) = bind(&listen, to, Version::HTTP_11, auth.clone()).await?;
        let mut tasks = vec![tokio::spawn(serve(http, route))];
        if let (Some(l), Some(t)) = (grpc_listen, grpc_to) {
            let (grpc, route) = bind(&l, t, Version::HTTP_2, auth).await?;
            tasks.push(tokio::spawn(serve(grpc, route)));
        }
        for t in tasks {
            t.await??;
        }
        Ok(())
    })
}
