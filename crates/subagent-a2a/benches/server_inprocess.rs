//! The server's own cost per `SendMessage`, without sockets: the same request driven through
//! our router and through a bare axum handler answering the very same bytes (reading the body,
//! as any real handler must), with `tower::ServiceExt::oneshot` on a current-thread runtime.
//! The difference is what our server adds per request (JSON-RPC envelope and params, validation,
//! the run machinery, the reply's encoding). See `docs/perf/subagent-a2a-server.md`.
//!
//! ```text
//! cargo bench -p subagent-a2a --bench server_inprocess
//! ```
//!
//! Wall-clock figures on a shared 2-core machine are noisy, so the bench also has a counting
//! mode for `valgrind --tool=callgrind`: with `INPROC_ONLY=ours|bare` and `INPROC_COUNT=N` it
//! sends N requests to one side and exits. `guarded` is our server as the load bench runs it
//! (a bearer token required and sent, a `traceparent` on every request). `parsing` is a
//! second ceiling: a bare handler doing the least any A2A server must (compare the bearer
//! token, parse the JSON-RPC envelope and the typed `SendMessageRequest`, build the reply
//! `Message`, serialize the response: the same 141 bytes), to tell our overhead from the
//! protocol's JSON work. Instructions per request are then
//! `(total(N) - total(0)) / N`, the same on every run (see the perf doc for the script).

use axum::body::Body;
use criterion::{Criterion, criterion_group, criterion_main};
use http::{Request, header};
use subagent_a2a::server::{A2aServer, AgentInfo, AgentMount, ServerAuth};
use tower::ServiceExt;

mod common;
use common::{BODY, Echo, parsing_ceiling};

fn request() -> Request<Body> {
    Request::post("/")
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::CONTENT_LENGTH, BODY.len())
        .header("A2A-Version", "1.0")
        .header(header::AUTHORIZATION, "Bearer bench-token")
        .header(
            "traceparent",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        )
        .body(Body::from(BODY))
        .unwrap_or_default()
}

async fn call(app: &axum::Router) -> usize {
    match app.clone().oneshot(request()).await {
        Ok(resp) => axum::body::to_bytes(resp.into_body(), 1 << 20)
            .await
            .map(|b| b.len())
            .unwrap_or(0),
        Err(never) => match never {},
    }
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let server = A2aServer::builder()
        .mount(AgentMount::new("/", AgentInfo::new("echo", "Echo"), Echo))
        .build()
        .expect("server");
    let ours = server.router();
    let guarded = A2aServer::builder()
        .mount(
            AgentMount::new("/", AgentInfo::new("echo", "Echo"), Echo)
                .with_auth(ServerAuth::bearer("bench-token")),
        )
        .build()
        .expect("server")
        .router();
    let reply = rt.block_on(async {
        let resp = ours.clone().oneshot(request()).await.expect("infallible");
        axum::body::to_bytes(resp.into_body(), 1 << 20)
            .await
            .expect("reply")
    });
    assert!(
        String::from_utf8_lossy(&reply).contains("hello, agent"),
        "unexpected reply: {}",
        String::from_utf8_lossy(&reply)
    );
    let bare = axum::Router::new().route(
        "/",
        axum::routing::post(move |body: axum::body::Bytes| {
            let reply = reply.clone();
            async move {
                std::hint::black_box(body);
                ([(header::CONTENT_TYPE, "application/json")], reply)
            }
        }),
    );
    let parsing = parsing_ceiling("bench-token");
    if let (Ok(only), Ok(count)) = (std::env::var("INPROC_ONLY"), std::env::var("INPROC_COUNT")) {
        let n: usize = count.parse().expect("INPROC_COUNT is a number");
        let app = match only.as_str() {
            "bare" => &bare,
            "guarded" => &guarded,
            "parsing" => &parsing,
            _ => &ours,
        };
        let mut bytes = 0;
        for _ in 0..n {
            bytes += rt.block_on(call(app));
        }
        println!("{only}: {n} requests, {bytes} reply bytes");
        std::process::exit(0);
    }
    let mut g = c.benchmark_group("a2a_server_inprocess");
    g.bench_function("bare_axum_reading_body", |b| {
        b.iter(|| rt.block_on(call(&bare)))
    });
    g.bench_function("ours_send_message", |b| b.iter(|| rt.block_on(call(&ours))));
    g.bench_function("ours_send_message_guarded", |b| {
        b.iter(|| rt.block_on(call(&guarded)))
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
