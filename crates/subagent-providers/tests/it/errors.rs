//! Retries, timeouts, error messages and model specs, over real HTTP.

use crate::common;

use std::time::{Duration, Instant};

use common::*;
use serde_json::json;
use subagent_providers::model_from_spec_with_env;
use subagent_spi::ModelError;
use subagent_spi::chat::ChatModel;
use subagent_testkit::{Reply, ScriptedModelServer};

#[tokio::test]
async fn retry_after_429_is_honoured() {
    let server = ScriptedModelServer::start().await;
    server.push(Reply::rate_limited(1));
    server.push(Reply::text("after the wait"));
    let model = openai(&server);
    let started = Instant::now();
    let reply = model.chat(user("q")).await.unwrap();
    let elapsed = started.elapsed();
    assert_eq!(reply.content, "after the wait");
    assert_eq!(server.request_count(), 2);
    // Lower bound only: the client waited for Retry-After: 1 rather than its 5 ms backoff.
    assert!(
        elapsed >= Duration::from_millis(900),
        "retried after {elapsed:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_429_pauses_every_client_of_the_endpoint() {
    let server = ScriptedModelServer::start().await;
    server.push(Reply::rate_limited(1));
    server.push(Reply::text("one"));
    server.push(Reply::text("two"));
    // Two clients of one endpoint, as two children of a tree each build their own.
    let (a, b) = (openai(&server), openai(&server));
    let first = tokio::spawn(async move { a.chat(user("a")).await });
    while server.request_count() == 0 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    tokio::time::sleep(Duration::from_millis(50)).await;
    let started = Instant::now();
    let second = b.chat(user("b")).await.expect("b answered");
    let waited = started.elapsed();
    first
        .await
        .expect("joins")
        .expect("a answered after its retry");
    assert!(!second.content.is_empty());
    // b never hit the rate limit itself: it waited out a's Retry-After before its first try.
    assert_eq!(server.request_count(), 3);
    assert!(
        waited >= Duration::from_millis(700),
        "the second client waited only {waited:?}"
    );
}

#[tokio::test]
async fn retry_after_429_is_honoured_when_streaming_anthropic() {
    let server = ScriptedModelServer::start().await;
    server.push(Reply::rate_limited(1));
    server.push(Reply::text("streamed after the wait"));
    let started = Instant::now();
    let (reply, _) = stream(&anthropic(&server), user("q")).await;
    assert_eq!(reply.unwrap().content, "streamed after the wait");
    assert_eq!(server.request_count(), 2);
    assert!(started.elapsed() >= Duration::from_millis(900));
}

#[tokio::test]
async fn server_errors_then_success_are_retried() {
    let server = ScriptedModelServer::start().await;
    server.push(Reply::error_message(500, "internal"));
    server.push(Reply::error_message(529, "Overloaded"));
    server.push(Reply::text("finally"));
    let reply = anthropic(&server).chat(user("q")).await.unwrap();
    assert_eq!(reply.content, "finally");
    assert_eq!(server.request_count(), 3);
    // Every attempt carried the same body.
    let reqs = server.requests();
    assert_eq!(reqs[0].body, reqs[2].body);
}

#[tokio::test]
async fn retries_give_up_after_max_retries_with_the_last_error() {
    let server = ScriptedModelServer::start().await;
    // A 500 (not a slow-down answer, which is waited out by time: see `ratelimit`).
    server.set_fallback(Some(Reply::error_message(500, "try later")));
    let model = openai_at(server.openai_base_url(), |b| {
        b.max_retries(2).base_delay(Duration::from_millis(1))
    });
    let err = model.chat(user("q")).await.unwrap_err();
    match &err {
        ModelError::Rejected {
            message, retryable, ..
        } => {
            assert!(*retryable);
            assert_eq!(message, "HTTP 500: try later");
        }
        other => panic!("unexpected {other:?}"),
    }
    assert_eq!(subagent_providers::http_status(&err), Some(500));
    assert_eq!(server.request_count(), 3);
    assert_eq!(
        err.to_string(),
        "openai refused the request: HTTP 500: try later"
    );
}

#[tokio::test]
async fn unauthorized_surfaces_the_provider_message_verbatim_and_is_not_retried() {
    let server = ScriptedModelServer::start().await;
    let openai_body = json!({"error": {
        "message": "Incorrect API key provided: sk-test-***123. You can find your API key at https://platform.openai.com/account/api-keys.",
        "type": "invalid_request_error", "param": null, "code": "invalid_api_key"
    }});
    server.push(Reply::error(401, openai_body.to_string()));
    let err = openai(&server).chat(user("q")).await.unwrap_err();
    assert_eq!(subagent_providers::http_status(&err), Some(401));
    assert!(err.is_setup_problem());
    match err {
        ModelError::Unauthorized {
            message, provider, ..
        } => {
            assert_eq!(provider, "openai");
            assert_eq!(
                message,
                "HTTP 401: Incorrect API key provided: sk-test-***123. You can find your API key at https://platform.openai.com/account/api-keys."
            );
        }
        other => panic!("unexpected {other:?}"),
    }
    assert_eq!(server.request_count(), 1);

    server.push(Reply::error_message(401, "invalid x-api-key"));
    let (reply, _) = stream(&anthropic(&server), user("q")).await;
    match reply.unwrap_err() {
        err @ ModelError::Unauthorized { .. } => {
            assert_eq!(subagent_providers::http_status(&err), Some(401));
            assert!(
                err.to_string().ends_with("HTTP 401: invalid x-api-key"),
                "{err}"
            );
        }
        other => panic!("unexpected {other:?}"),
    }
    assert_eq!(server.request_count(), 2);
}

#[tokio::test]
async fn bad_request_is_not_retried() {
    let server = ScriptedModelServer::start().await;
    server.push(Reply::error_message(400, "messages: field required"));
    let err = anthropic(&server).chat(user("q")).await.unwrap_err();
    assert!(!err.is_retryable());
    assert!(
        err.to_string().contains("messages: field required"),
        "{err}"
    );
    assert_eq!(server.request_count(), 1);
}

#[tokio::test]
async fn slow_server_times_out() {
    let server = ScriptedModelServer::start().await;
    server.push(Reply::text("too late").with_delay(Duration::from_secs(3)));
    let model = openai_at(server.openai_base_url(), |b| {
        b.timeout(Duration::from_millis(200))
    });
    let err = model.chat(user("q")).await.unwrap_err();
    match err {
        ModelError::Timeout { provider, after } => {
            assert_eq!(provider, "openai");
            assert_eq!(after, Duration::from_millis(200));
        }
        other => panic!("expected a timeout, got {other:?}"),
    }
    // Timeouts are not retried by default.
    assert_eq!(server.request_count(), 1);
}

#[tokio::test]
async fn stalled_stream_times_out() {
    let server = ScriptedModelServer::start().await;
    server.push(
        Reply::text("a b c d e f")
            .with_fragment_chars(1)
            .with_chunk_delay(Duration::from_secs(3)),
    );
    let model = anthropic_at(server.base_url(), |b| b.timeout(Duration::from_millis(300)));
    let (reply, _) = stream(&model, user("q")).await;
    assert!(
        matches!(reply, Err(ModelError::Timeout { .. })),
        "{reply:?}"
    );
}

#[tokio::test]
async fn timeouts_can_be_retried_when_asked() {
    let server = ScriptedModelServer::start().await;
    server.push(Reply::text("slow").with_delay(Duration::from_secs(3)));
    server.push(Reply::text("fast"));
    let mut policy = subagent_providers::RetryPolicy::default();
    policy.retry_on_timeout = true;
    policy.base_delay = Duration::from_millis(1);
    let model = openai_at(server.openai_base_url(), |b| {
        b.timeout(Duration::from_millis(300)).retry_policy(policy)
    });
    assert_eq!(model.chat(user("q")).await.unwrap().content, "fast");
    assert_eq!(server.request_count(), 2);
}

#[tokio::test]
async fn connection_refused_is_a_connection_error_after_retries() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let model = openai_at(format!("http://127.0.0.1:{port}/v1"), |b| {
        b.max_retries(1).base_delay(Duration::from_millis(1))
    });
    let err = model.chat(user("q")).await.unwrap_err();
    match &err {
        ModelError::Unreachable { message, .. } => {
            assert!(
                message.starts_with(&format!("http://127.0.0.1:{port}/v1/chat/completions")),
                "{message}"
            );
        }
        other => panic!("expected a connection error, got {other:?}"),
    }
    assert!(err.is_retryable());
}

#[tokio::test]
async fn exhausted_script_is_reported_clearly() {
    let server = ScriptedModelServer::start().await;
    let model = openai_at(server.openai_base_url(), |b| b.max_retries(0));
    let err = model.chat(user("q")).await.unwrap_err().to_string();
    assert!(err.contains("script exhausted"), "{err}");
}

#[tokio::test]
async fn specs_point_at_configured_base_urls_with_keys() {
    let server = ScriptedModelServer::start().await;
    server.push(Reply::text("from openai spec"));
    server.push(Reply::text("from anthropic spec"));
    server.push(Reply::text("from compatible spec"));
    let openai_base = server.openai_base_url();
    let base = server.base_url();
    let env = move |k: &str| match k {
        "OPENAI_BASE_URL" => Some(openai_base.clone()),
        "OPENAI_API_KEY" => Some("sk-env".to_string()),
        "ANTHROPIC_BASE_URL" => Some(base.clone()),
        "ANTHROPIC_API_KEY" => Some("sk-ant-env".to_string()),
        _ => None,
    };
    let m = model_from_spec_with_env("openai:gpt-4.1", &env).unwrap();
    assert_eq!(m.chat(user("q")).await.unwrap().content, "from openai spec");
    let m = model_from_spec_with_env("sonnet", &env).unwrap();
    assert_eq!(m.model_name(), "claude-sonnet-4-5");
    assert_eq!(
        m.chat(user("q")).await.unwrap().content,
        "from anthropic spec"
    );
    let spec = format!("openai-compatible:local-model@{}", server.openai_base_url());
    let m = model_from_spec_with_env(&spec, &env).unwrap();
    assert_eq!(
        m.chat(user("q")).await.unwrap().content,
        "from compatible spec"
    );

    let reqs = server.requests();
    assert_eq!(reqs[0].header("authorization"), Some("Bearer sk-env"));
    assert_eq!(reqs[0].model(), Some("gpt-4.1"));
    assert_eq!(reqs[1].header("x-api-key"), Some("sk-ant-env"));
    assert_eq!(reqs[1].model(), Some("claude-sonnet-4-5"));
    // The OpenAI key is never sent to an arbitrary compatible server.
    assert_eq!(reqs[2].header("authorization"), None);
    assert_eq!(reqs[2].model(), Some("local-model"));
}

#[tokio::test]
async fn debug_output_never_shows_the_key() {
    let server = ScriptedModelServer::start().await;
    let shown = format!("{:?} {:?}", openai(&server), anthropic(&server));
    assert!(!shown.contains("sk-test-123"), "{shown}");
    assert!(!shown.contains("sk-ant-test"), "{shown}");
}

#[tokio::test]
async fn concurrent_calls_share_one_model() {
    let server = ScriptedModelServer::start().await;
    server.set_fallback(Some(
        Reply::text("same").with_delay(Duration::from_millis(300)),
    ));
    let model = std::sync::Arc::new(openai(&server));
    let mut tasks = Vec::new();
    for i in 0..4 {
        let m = model.clone();
        tasks.push(tokio::spawn(
            async move { m.chat(user(&format!("q{i}"))).await },
        ));
    }
    for t in tasks {
        assert_eq!(t.await.unwrap().unwrap().content, "same");
    }
    assert_eq!(server.request_count(), 4);
    assert!(server.max_concurrent_requests() >= 2);
}

/// A server that answers a streamed call with headers and one event, then goes silent.
async fn frozen_stream_server() -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move {
        while let Ok((mut sock, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buf = vec![0u8; 65536];
                let _ = sock.read(&mut buf).await;
                let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n";
                let event =
                    "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hel\"}}]}\n\n";
                let chunk = format!("{:x}\r\n{event}\r\n", event.len());
                let _ = sock.write_all(head.as_bytes()).await;
                let _ = sock.write_all(chunk.as_bytes()).await;
                // Silence, but keep the connection open.
                tokio::time::sleep(Duration::from_secs(600)).await;
            });
        }
    });
    format!("http://{addr}/v1")
}

#[tokio::test]
async fn a_silent_stream_fails_with_the_idle_limit() {
    let base = frozen_stream_server().await;
    let model = openai_at(base, |b| {
        b.max_retries(0).stream_idle_timeout(Duration::from_secs(1))
    });
    let started = Instant::now();
    let (reply, deltas) = stream(&model, user("q")).await;
    let err = reply.unwrap_err();
    assert!(
        matches!(err, ModelError::Timeout { after, .. } if after == Duration::from_secs(1)),
        "{err:?}"
    );
    assert!(err.to_string().contains("1000 ms"), "{err}");
    assert!(
        !deltas.is_empty(),
        "the text before the silence was streamed"
    );
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "the default request timeout did not apply"
    );
}
