//! The A2A client against a frozen server, over real sockets on 127.0.0.1: a server that
//! accepts and then goes silent (after the stream's first event, or before any answer) makes a
//! streaming call fail with a protocol error naming the URL and the stream idle limit, instead of waiting for
//! the task's whole time limit.

use std::time::{Duration, Instant};

use futures::StreamExt;
use http::HeaderMap;
use subagent_a2a::A2aError;
use subagent_a2a::client::{A2aClient, Binding, Endpoint};
use subagent_a2a::types::{ProtocolVersion, v1};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// A server that reads each request's head and answers per `reply` (raw bytes, possibly
/// nothing), then keeps the connection open in silence for a minute.
async fn frozen_server(reply: &'static [u8]) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut sock, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buf = vec![0u8; 65536];
                let mut seen = Vec::new();
                while !seen.windows(4).any(|w| w == b"\r\n\r\n") {
                    match sock.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => seen.extend_from_slice(&buf[..n]),
                    }
                }
                let _ = sock.write_all(reply).await;
                tokio::time::sleep(Duration::from_secs(60)).await;
            });
        }
    });
    format!("http://{addr}/agent")
}

const FIRST_EVENT: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n\r\n\
data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"task\":{\"id\":\"t1\",\"contextId\":\"c1\",\"status\":{\"state\":\"TASK_STATE_WORKING\"}}}}\n\n";

fn client(url: &str, binding: Binding) -> A2aClient {
    A2aClient::new(
        reqwest::Client::new(),
        Endpoint {
            url: url.to_string(),
            binding,
            version: ProtocolVersion::V1,
            tenant: None,
        },
        HeaderMap::new(),
    )
    .with_stream_idle_timeout(Duration::from_secs(1))
}

fn request() -> v1::SendMessageRequest {
    serde_json::from_value(serde_json::json!({
        "message": {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "hi"}]}
    }))
    .unwrap()
}

fn assert_idle(e: &A2aError, url: &str) {
    assert!(matches!(e, A2aError::Protocol { .. }), "{e:?}");
    let m = e.to_string();
    assert!(
        m.contains(url) && m.contains("for 1 s") && m.contains("stream idle limit"),
        "{m}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_that_goes_silent_fails_with_the_idle_limit() {
    let url = frozen_server(FIRST_EVENT).await;
    let c = client(&url, Binding::JsonRpc);
    let started = Instant::now();
    let mut events = c.send_streaming_message(request()).await.expect("stream");
    let first = tokio::time::timeout(Duration::from_secs(10), events.next())
        .await
        .expect("first event")
        .expect("an event")
        .expect("ok");
    assert!(matches!(first, v1::StreamResponse::Task(_)));
    let next = tokio::time::timeout(Duration::from_secs(10), events.next())
        .await
        .expect("the idle limit ends the silent stream within 10 s")
        .expect("an item");
    assert_idle(&next.unwrap_err(), &url);
    assert!(started.elapsed() >= Duration::from_millis(900));
    assert!(
        tokio::time::timeout(Duration::from_secs(5), events.next())
            .await
            .expect("the stream ends")
            .is_none()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_never_answers_a_stream_request_fails_with_the_idle_limit() {
    let url = frozen_server(b"").await;
    for binding in [Binding::JsonRpc, Binding::HttpJson] {
        let c = client(&url, binding);
        let r = tokio::time::timeout(Duration::from_secs(10), c.send_streaming_message(request()))
            .await
            .expect("the idle limit ends the wait within 10 s");
        let Err(e) = r else {
            panic!("a silent server gave a stream")
        };
        assert_idle(&e, &url);
        let r = tokio::time::timeout(Duration::from_secs(10), c.subscribe_to_task("t1"))
            .await
            .expect("the idle limit ends the wait within 10 s");
        let Err(e) = r else {
            panic!("a silent server gave a stream")
        };
        assert_idle(&e, &url);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keep_alive_comments_keep_a_quiet_stream_open() {
    // A server sending only keep-alive comments (every 300 ms) for 2.5 s, then an event.
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let (mut sock, _) = listener.accept().await.unwrap();
        let mut buf = vec![0u8; 65536];
        let _ = sock.read(&mut buf).await;
        let _ = sock.write_all(&FIRST_EVENT[..FIRST_EVENT.len()]).await;
        for _ in 0..8 {
            tokio::time::sleep(Duration::from_millis(300)).await;
            let _ = sock.write_all(b":\n\n").await;
        }
        let _ = sock
            .write_all(b"data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"statusUpdate\":{\"taskId\":\"t1\",\"contextId\":\"c1\",\"status\":{\"state\":\"TASK_STATE_COMPLETED\"}}}}\n\n")
            .await;
    });
    let url = format!("http://{addr}/agent");
    let c = client(&url, Binding::JsonRpc);
    let mut events = c.send_streaming_message(request()).await.expect("stream");
    let mut got = Vec::new();
    while let Ok(Some(ev)) = tokio::time::timeout(Duration::from_secs(10), events.next()).await {
        got.push(ev.expect("no idle error while keep-alives flow"));
        if got.len() == 2 {
            break;
        }
    }
    assert_eq!(got.len(), 2);
    assert!(matches!(got[1], v1::StreamResponse::StatusUpdate(_)));
}
