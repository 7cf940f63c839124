//! Client-side costs of the A2A kind: decoding stream events, converting 0.3 <-> 1.0, and one
//! `SendMessage` round trip through [`A2aClient`] against an in-process axum peer on 127.0.0.1,
//! next to a bare reqwest POST of the same request to the same peer (the transport floor).
//!
//! Run: `cargo bench -p subagent-a2a --bench client`.

use std::hint::black_box;

use axum::Router;
use axum::routing::post;
use criterion::{Criterion, criterion_group, criterion_main};
use http::HeaderMap;
use subagent_a2a::client::{A2aClient, Binding, Endpoint};
use subagent_a2a::types::jsonrpc::Response;
use subagent_a2a::types::{ProtocolVersion, v1, v03};

const EVENT: &str = r#"{"jsonrpc":"2.0","id":1,"result":{"statusUpdate":{"taskId":"e94300c4-0fac-40b0-a017-796365f89804","contextId":"087120bf-ea53-462c-929a-9ebee01d9563","status":{"state":"TASK_STATE_WORKING","message":{"messageId":"7da390d4-682c-4ff4-9af9-b7f956651033","contextId":"087120bf-ea53-462c-929a-9ebee01d9563","taskId":"e94300c4-0fac-40b0-a017-796365f89804","role":"ROLE_AGENT","parts":[{"text":"step 1"}]},"timestamp":"2026-11-22T05:43:49.827999Z"}}}}"#;

const TASK_03: &str = r#"{"kind":"task","id":"t","contextId":"c","status":{"state":"completed","timestamp":"2025-04-02T16:59:35.331844"},"artifacts":[{"artifactId":"a","name":"result","parts":[{"kind":"text","text":"Today will be sunny with a high of 75F"},{"kind":"data","data":{"temp":75,"unit":"F"}}]}],"history":[{"kind":"message","messageId":"m","role":"user","parts":[{"kind":"text","text":"weather?"}],"contextId":"c","taskId":"t"}]}"#;

const REPLY: &str = r#"{"jsonrpc":"2.0","id":1,"result":{"message":{"messageId":"r","role":"ROLE_AGENT","parts":[{"text":"echo"}]}}}"#;

fn codec(c: &mut Criterion) {
    c.bench_function("decode JSON-RPC v1 statusUpdate event", |b| {
        b.iter(|| {
            let r: Response<v1::StreamResponse> = serde_json::from_str(black_box(EVENT)).unwrap();
            black_box(r)
        })
    });
    let task: v03::Task = serde_json::from_str(TASK_03).unwrap();
    c.bench_function("convert v0.3 task -> v1 -> v0.3", |b| {
        b.iter(|| {
            let t: v1::Task = black_box(task.clone()).into();
            let back: v03::Task = t.into();
            black_box(back)
        })
    });
}

fn round_trip(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let url = rt.block_on(async {
        let app = Router::new().route(
            "/",
            post(|| async { ([("content-type", "application/json")], REPLY) }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        url
    });
    let http = reqwest::Client::new();
    let client = A2aClient::new(
        http.clone(),
        Endpoint {
            url: url.clone(),
            binding: Binding::JsonRpc,
            version: ProtocolVersion::V1,
            tenant: None,
        },
        HeaderMap::new(),
    );
    let req = v1::SendMessageRequest::new(v1::Message::new(
        v1::Role::User,
        "m-1",
        vec![v1::Part::text("hello")],
    ));
    let body = serde_json::to_vec(&subagent_a2a::types::jsonrpc::Request::new(
        1,
        "SendMessage",
        &req,
    ))
    .unwrap();

    let mut g = c.benchmark_group("SendMessage over 127.0.0.1");
    g.bench_function("bare reqwest POST (floor)", |b| {
        b.to_async(&rt).iter(|| async {
            let r = http
                .post(&url)
                .header("content-type", "application/json")
                .body(body.clone())
                .send()
                .await
                .unwrap();
            black_box(r.bytes().await.unwrap())
        })
    });
    g.bench_function("A2aClient::send_message", |b| {
        b.to_async(&rt)
            .iter(|| async { black_box(client.send_message(req.clone()).await.unwrap()) })
    });
    g.finish();
}

criterion_group!(benches, codec, round_trip);
criterion_main!(benches);
