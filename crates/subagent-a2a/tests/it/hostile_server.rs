//! The A2A server against hostile clients, over real sockets on 127.0.0.1 (raw TCP where the
//! attack needs it): task memory bounded by bytes, head / body / idle timeouts, the connection
//! cap, per-client stream caps, overload and size statuses, the JSON-RPC envelope, and
//! stricter part parsing.
//!
//! Timing margins are generous (the machine may be loaded): limits of 1 s are asserted to act
//! within 10-15 s.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use subagent_a2a::server::{A2aServer, A2aServerBuilder};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::common;

use common::{Srv, assert_error, assert_error_says, send};

/// Serves `builder` with the test agent at `/a`.
async fn serve(builder: A2aServerBuilder) -> Srv {
    common::serve(builder.mount(common::agent_at("/a", "a", Default::default()))).await
}

/// Serves the test agent with at most `max` streams open, `per_client` of them per client.
async fn serve_streams(max: usize, per_client: usize) -> Srv {
    serve(
        A2aServer::builder()
            .max_streams(max)
            .max_streams_per_client(per_client),
    )
    .await
}

/// One HTTP answer read off a raw socket.
#[derive(Debug)]
struct Answer {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Answer {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| {
            panic!(
                "body is not JSON ({e}): {}",
                String::from_utf8_lossy(&self.body)
            )
        })
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// Reads more of an answer; 0 at EOF or when the deadline passed.
async fn more(sock: &mut TcpStream, rest: &mut Vec<u8>, deadline: Instant) -> usize {
    let left = deadline.saturating_duration_since(Instant::now());
    let mut chunk = vec![0u8; 65536];
    let n = tokio::time::timeout(left, sock.read(&mut chunk))
        .await
        .expect("answer body within 15 s")
        .unwrap_or(0);
    rest.extend_from_slice(&chunk[..n]);
    n
}

/// Reads one answer (Content-Length, chunked, or to EOF) from `sock`, within 15 s.
async fn read_answer(sock: &mut TcpStream) -> Answer {
    let deadline = Instant::now() + Duration::from_secs(15);
    let mut buf = Vec::new();
    let mut chunk = vec![0u8; 65536];
    let head_end = loop {
        if let Some(i) = find(&buf, b"\r\n\r\n") {
            break i;
        }
        let left = deadline.saturating_duration_since(Instant::now());
        let n = tokio::time::timeout(left, sock.read(&mut chunk))
            .await
            .expect("answer head within 15 s")
            .expect("read");
        assert!(
            n > 0,
            "connection closed before an answer: {:?}",
            String::from_utf8_lossy(&buf)
        );
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
    let mut lines = head.split("\r\n");
    let status: u16 = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|c| c.parse().ok())
        .expect("status line");
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect();
    let mut rest = buf[head_end + 4..].to_vec();
    let get = |k: &str| {
        headers
            .iter()
            .find(|(h, _)| h.eq_ignore_ascii_case(k))
            .map(|(_, v)| v.clone())
    };
    let body = if let Some(len) = get("content-length").and_then(|v| v.parse::<usize>().ok()) {
        while rest.len() < len {
            assert!(more(sock, &mut rest, deadline).await > 0, "body cut short");
        }
        rest.truncate(len);
        rest
    } else if get("transfer-encoding").is_some_and(|v| v.contains("chunked")) {
        let mut body = Vec::new();
        loop {
            let Some(eol) = find(&rest, b"\r\n") else {
                assert!(
                    more(sock, &mut rest, deadline).await > 0,
                    "chunked body cut short"
                );
                continue;
            };
            let size = usize::from_str_radix(
                String::from_utf8_lossy(&rest[..eol])
                    .split(';')
                    .next()
                    .unwrap_or("")
                    .trim(),
                16,
            )
            .expect("chunk size");
            while rest.len() < eol + 2 + size + 2 {
                assert!(more(sock, &mut rest, deadline).await > 0, "chunk cut short");
            }
            body.extend_from_slice(&rest[eol + 2..eol + 2 + size]);
            rest.drain(..eol + 2 + size + 2);
            if size == 0 {
                break body;
            }
        }
    } else if status == 204 || status == 304 {
        Vec::new()
    } else {
        while more(sock, &mut rest, deadline).await > 0 {}
        rest
    };
    Answer {
        status,
        headers,
        body,
    }
}

/// Sends one request on a fresh connection and reads the answer.
async fn raw(srv: &Srv, method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> Answer {
    let mut sock = TcpStream::connect(srv.addr).await.expect("connect");
    let mut req = format!(
        "{method} {path} HTTP/1.1\r\nHost: {}\r\nContent-Length: {}\r\n",
        srv.addr,
        body.len()
    );
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    sock.write_all(req.as_bytes()).await.expect("write head");
    sock.write_all(body).await.expect("write body");
    read_answer(&mut sock).await
}

const JSON_CT: (&str, &str) = ("Content-Type", "application/json");
const V1: (&str, &str) = ("A2A-Version", "1.0");

async fn rpc_raw(srv: &Srv, body: &str) -> Answer {
    raw(srv, "POST", "/a", &[JSON_CT, V1], body.as_bytes()).await
}

fn msg(text: &str) -> Value {
    json!({"messageId": format!("m-{}", text.len()), "role": "ROLE_USER", "parts": [{"text": text}]})
}

fn send_body(id: u64, message: Value, immediate: bool) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": "SendMessage",
           "params": {"message": message, "configuration": {"returnImmediately": immediate}}})
    .to_string()
}

/// Waits until `sock` is closed by the server (EOF or reset), within `within`.
async fn closed_within(sock: &mut TcpStream, within: Duration) -> bool {
    let mut b = [0u8; 1024];
    let deadline = Instant::now() + within;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match tokio::time::timeout(left, sock.read(&mut b)).await {
            Err(_) => return false,
            Ok(Ok(0)) | Ok(Err(_)) => return true,
            // An answer (e.g. a 408) before the close: keep reading.
            Ok(Ok(_)) => continue,
        }
    }
}

// ---------------------------------------------------------------------------------------------
// 1. Task memory
// ---------------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn task_store_is_bounded_by_bytes_and_evicts_finished_tasks_first() {
    // Each finished task holds its 400 KB message and a 400 KB echo artifact (~800 KB).
    let srv = serve(A2aServer::builder().task_store_max_bytes(3 << 20)).await;
    let text = "x".repeat(400_000);
    let mut ids = Vec::new();
    for i in 0..12 {
        let a = rpc_raw(&srv, &send_body(i, msg(&format!("{text}{i}")), false)).await;
        assert_eq!(a.status, 200);
        let v = a.json();
        let id = v["result"]["task"]["id"]
            .as_str()
            .expect("a task")
            .to_string();
        assert_eq!(
            v["result"]["task"]["status"]["state"],
            "TASK_STATE_COMPLETED"
        );
        ids.push(id);
    }
    let list = rpc_raw(
        &srv,
        r#"{"jsonrpc":"2.0","id":1,"method":"ListTasks","params":{"pageSize":100}}"#,
    )
    .await
    .json();
    let kept = list["result"]["totalSize"].as_i64().expect("totalSize");
    // 3 MiB / ~800 KB: at most 3 tasks; before byte accounting all 12 stayed.
    assert!((1..=3).contains(&kept), "kept {kept} tasks: {list}");
    // The oldest are gone, the newest stays.
    let get = |id: &str| {
        format!(r#"{{"jsonrpc":"2.0","id":2,"method":"GetTask","params":{{"id":"{id}"}}}}"#)
    };
    let first = rpc_raw(&srv, &get(&ids[0])).await.json();
    assert_eq!(first["error"]["code"], -32001, "{first}");
    let last = rpc_raw(&srv, &get(&ids[11])).await.json();
    assert_eq!(last["result"]["id"], ids[11].as_str(), "{last}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn running_tasks_over_the_budget_refuse_new_work_with_503() {
    let srv = serve(A2aServer::builder().task_store_max_bytes(3 << 20)).await;
    let big = format!("hold {}", "y".repeat(1 << 20));
    let mut held = Vec::new();
    for i in 0..2 {
        let v = rpc_raw(&srv, &send_body(i, msg(&format!("{big}{i}")), true))
            .await
            .json();
        held.push(
            v["result"]["task"]["id"]
                .as_str()
                .expect("task")
                .to_string(),
        );
    }
    // ~2 MiB running + 1.5 MiB new > 3 MiB.
    let third = format!("hold {}", "z".repeat(3 << 19));
    let a = rpc_raw(&srv, &send_body(9, msg(&third), true)).await;
    assert_eq!(a.status, 503, "{:?}", String::from_utf8_lossy(&a.body));
    assert_eq!(a.header("retry-after"), Some("5"));
    let v = a.json();
    assert_eq!(v["id"], 9);
    assert_eq!(v["error"]["code"], -32000);
    let m = v["error"]["message"].as_str().unwrap_or_default();
    assert!(
        m.contains("task store is full") && m.contains("3145728"),
        "{m}"
    );
    // The HTTP+JSON binding says the same with an AIP-193 body.
    let body = json!({"message": msg(&third)}).to_string();
    let a = raw(&srv, "POST", "/a/message:send", &[JSON_CT], body.as_bytes()).await;
    assert_eq!(a.status, 503);
    assert_eq!(a.header("retry-after"), Some("5"));
    let v = a.json();
    assert_eq!(v["error"]["code"], 503);
    assert_eq!(v["error"]["status"], "UNAVAILABLE");
    // Once the running tasks end, work is admitted again.
    for id in &held {
        let c = rpc_raw(
            &srv,
            &format!(
                r#"{{"jsonrpc":"2.0","id":3,"method":"CancelTask","params":{{"id":"{id}"}}}}"#
            ),
        )
        .await
        .json();
        assert_eq!(c["result"]["status"]["state"], "TASK_STATE_CANCELED", "{c}");
    }
    let a = rpc_raw(&srv, &send_body(10, msg(&third), true)).await;
    assert_eq!(a.status, 200);
    assert!(a.json()["result"]["task"]["id"].is_string());
}

// ---------------------------------------------------------------------------------------------
// 2. Timeouts and caps
// ---------------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_loris_heads_are_closed_after_the_header_timeout() {
    let srv = serve(A2aServer::builder().header_read_timeout(Duration::from_secs(1))).await;
    // A connection that never sends anything, and one that sends half a head.
    let mut silent = TcpStream::connect(srv.addr).await.unwrap();
    let mut half = TcpStream::connect(srv.addr).await.unwrap();
    half.write_all(b"POST /a HTTP/1.1\r\nHost: x\r\nX-Slow: ")
        .await
        .unwrap();
    // Dribbling bytes does not extend the head's time.
    let mut dribble = TcpStream::connect(srv.addr).await.unwrap();
    dribble.write_all(b"POST /a HTTP/1.1\r\n").await.unwrap();
    let started = Instant::now();
    let drip = tokio::spawn(async move {
        for _ in 0..30 {
            if dribble.write_all(b"X").await.is_err() {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
        false
    });
    assert!(closed_within(&mut silent, Duration::from_secs(10)).await);
    assert!(closed_within(&mut half, Duration::from_secs(10)).await);
    assert!(drip.await.unwrap(), "dribbling connection still open");
    assert!(started.elapsed() < Duration::from_secs(10));
    // The server still answers.
    let a = raw(&srv, "GET", "/a/.well-known/agent-card.json", &[], b"").await;
    assert_eq!(a.status, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_bodies_get_408_and_the_connection_closes() {
    let srv = serve(A2aServer::builder().body_read_timeout(Duration::from_secs(1))).await;
    for (path, rest) in [("/a", false), ("/a/message:send", true)] {
        let mut sock = TcpStream::connect(srv.addr).await.unwrap();
        sock.write_all(
            format!(
                "POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{{\"jsonrpc\""
            )
            .as_bytes(),
        )
        .await
        .unwrap();
        let a = read_answer(&mut sock).await;
        assert_eq!(a.status, 408, "{path}");
        assert_eq!(a.header("connection"), Some("close"));
        let v = a.json();
        if rest {
            assert_eq!(v["error"]["code"], 408);
            assert_eq!(v["error"]["status"], "DEADLINE_EXCEEDED");
        } else {
            assert_eq!(v["error"]["code"], -32600);
        }
        assert_error_says(&v, "body read timeout");
        assert!(closed_within(&mut sock, Duration::from_secs(10)).await);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_keep_alive_connections_are_closed() {
    let srv = serve(
        A2aServer::builder()
            .idle_timeout(Duration::from_secs(1))
            .header_read_timeout(Duration::from_secs(30)),
    )
    .await;
    let mut sock = TcpStream::connect(srv.addr).await.unwrap();
    for _ in 0..2 {
        sock.write_all(b"GET /a/.well-known/agent-card.json HTTP/1.1\r\nHost: x\r\n\r\n")
            .await
            .unwrap();
        assert_eq!(read_answer(&mut sock).await.status, 200);
    }
    // Kept alive between requests, then closed once idle for the limit (well before the
    // 30 s head timeout).
    let t = Instant::now();
    assert!(closed_within(&mut sock, Duration::from_secs(10)).await);
    assert!(t.elapsed() < Duration::from_secs(10));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_the_connection_cap_idle_connections_make_room_for_a_normal_client() {
    // A long head timeout: only the cap's eviction can explain closes within the test.
    let srv = serve(
        A2aServer::builder()
            .max_connections(16)
            .header_read_timeout(Duration::from_secs(60)),
    )
    .await;
    let mut idle = Vec::new();
    for _ in 0..60 {
        idle.push(TcpStream::connect(srv.addr).await.unwrap());
    }
    // A normal client gets through while idle connections are open.
    let t = Instant::now();
    let r = tokio::time::timeout(
        Duration::from_secs(15),
        reqwest::Client::new()
            .post(srv.url("/a"))
            .header("A2A-Version", "1.0")
            .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage",
                          "params": {"message": msg("direct")}}))
            .send(),
    )
    .await
    .expect("a normal request gets through")
    .expect("request");
    assert_eq!(r.status(), 200);
    assert!(t.elapsed() < Duration::from_secs(15));
    // At most 16 connections are held: the others were closed to make room.
    let mut closed = 0;
    for s in &mut idle {
        if closed_within(s, Duration::from_millis(300)).await {
            closed += 1;
        }
    }
    assert!(
        closed >= 60 - 16,
        "only {closed} of 60 idle connections were closed"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_connection_cap_holds_when_every_connection_is_busy() {
    let srv = serve(A2aServer::builder().max_connections(2)).await;
    // Two connections answering long requests (returnImmediately: false, the task holds).
    let mut busy = Vec::new();
    for i in 0..2 {
        let mut sock = TcpStream::connect(srv.addr).await.unwrap();
        let body = send_body(i, msg("hold"), false);
        sock.write_all(
            format!(
                "POST /a HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nA2A-Version: 1.0\r\nContent-Length: {}\r\n\r\n{body}",
                body.len()
            )
            .as_bytes(),
        )
        .await
        .unwrap();
        busy.push(sock);
    }
    // Give both requests time to arrive and start (no slot is free to ask the server).
    tokio::time::sleep(Duration::from_millis(500)).await;
    // A third connection is not served while both are busy.
    let third = tokio::spawn({
        let url = srv.url("/a/.well-known/agent-card.json");
        async move { reqwest::get(url).await.map(|r| r.status().as_u16()) }
    });
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(
        !third.is_finished(),
        "a third connection was served over the cap of 2"
    );
    // Ending one busy connection frees a slot.
    drop(busy.pop());
    let status = tokio::time::timeout(Duration::from_secs(15), third)
        .await
        .expect("served once a slot is free")
        .unwrap()
        .expect("request");
    assert_eq!(status, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_client_cannot_take_every_stream_slot() {
    let srv = serve_streams(8, 2).await;
    let open = || {
        let url = srv.url("/a/message:stream");
        async move {
            reqwest::Client::new()
                .post(url)
                .json(&json!({"message": msg("hold")}))
                .send()
                .await
                .expect("request")
        }
    };
    let s1 = open().await;
    let s2 = open().await;
    assert_eq!(s1.status(), 200);
    assert_eq!(s2.status(), 200);
    let third = open().await;
    assert_eq!(third.status(), 503);
    assert_eq!(third.headers()["retry-after"], "5");
    let v: Value = third.json().await.unwrap();
    assert_eq!(v["error"]["status"], "UNAVAILABLE");
    let m = v["error"]["message"].as_str().unwrap_or_default();
    assert!(
        m.contains("127.0.0.1") && m.contains("limit 2 per client"),
        "{m}"
    );
    // JSON-RPC says it with 503 and ServerBusy too.
    let r = send(
        reqwest::Client::new()
            .post(srv.url("/a"))
            .header("A2A-Version", "1.0")
            .json(
                &json!({"jsonrpc": "2.0", "id": 4, "method": "SendStreamingMessage",
                      "params": {"message": msg("hold")}}),
            ),
    )
    .await;
    assert_eq!(r.status(), 503);
    assert_eq!(r.headers()["retry-after"], "5");
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["id"], 4);
    assert_eq!(v["error"]["code"], -32000);
    // Closing a stream gives the slot back.
    drop(s1);
    let mut ok = false;
    for _ in 0..200 {
        let s = open().await;
        if s.status() == 200 {
            ok = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(ok, "the closed stream's slot never came back");
    drop(s2);
}

// ---------------------------------------------------------------------------------------------
// 5. Overload and size statuses
// ---------------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_global_stream_cap_answers_503_with_retry_after() {
    let srv = serve_streams(1, 0).await;
    let first = send(
        reqwest::Client::new()
            .post(srv.url("/a/message:stream"))
            .json(&json!({"message": msg("hold")})),
    )
    .await;
    assert_eq!(first.status(), 200);
    let body = json!({"message": msg("hold")}).to_string();
    let a = raw(
        &srv,
        "POST",
        "/a/message:stream",
        &[JSON_CT],
        body.as_bytes(),
    )
    .await;
    assert_eq!(a.status, 503);
    assert_eq!(a.header("retry-after"), Some("5"));
    let v = a.json();
    assert_eq!(v["error"]["code"], 503);
    assert_eq!(v["error"]["status"], "UNAVAILABLE");
    assert_error_says(&v, "limit 1");
    let a = rpc_raw(
        &srv,
        &json!({"jsonrpc": "2.0", "id": "s", "method": "SendStreamingMessage",
                "params": {"message": msg("hold")}})
        .to_string(),
    )
    .await;
    assert_eq!(a.status, 503);
    assert_eq!(a.header("retry-after"), Some("5"));
    let v = a.json();
    assert_eq!(v["id"], "s");
    assert_eq!(v["error"]["code"], -32000);
    drop(first);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversized_bodies_get_413_whose_body_agrees() {
    let srv = serve(A2aServer::builder().max_body_bytes(1024)).await;
    let big = json!({"message": msg(&"x".repeat(4096))}).to_string();
    let a = raw(&srv, "POST", "/a/message:send", &[JSON_CT], big.as_bytes()).await;
    assert_eq!(a.status, 413);
    let v = a.json();
    assert_eq!(v["error"]["code"], 413);
    assert_eq!(v["error"]["status"], "RESOURCE_EXHAUSTED");
    assert_error_says(&v, "1024");
    let a = rpc_raw(&srv, &send_body(1, msg(&"x".repeat(4096)), false)).await;
    assert_eq!(a.status, 413);
    assert_eq!(a.json()["error"]["code"], -32600);
}

// ---------------------------------------------------------------------------------------------
// 4. The JSON-RPC envelope
// ---------------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batches_and_positional_arrays_get_one_invalid_request_error() {
    let srv = serve(A2aServer::builder()).await;
    let get = r#"{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"nope"}}"#;
    let bodies = [
        r#"["2.0",1,"GetTask",{"id":"nope"}]"#.to_string(),
        format!("[{get},{get}]"),
        format!("[{}]", [get; 5].join(",")),
        format!(" \n[{}]", [get; 7].join(",")),
        "[]".to_string(),
    ];
    for body in &bodies {
        let a = rpc_raw(&srv, body).await;
        assert_eq!(a.status, 200, "{body}");
        let v = a.json();
        assert!(v.is_object(), "one error object, not a batch answer: {v}");
        assert_eq!(v["id"], Value::Null, "{body}: {v}");
        assert_eq!(v["error"]["code"], -32600, "{body}: {v}");
        let m = v["error"]["message"].as_str().unwrap_or_default();
        assert!(m.contains("batch") && m.contains("not supported"), "{m}");
    }
    // An array that is not even JSON is a parse error, as is a value with trailing garbage.
    for garbage in ["[1, ", "3 garbage", "{\"jsonrpc\":\"2.0\"} x"] {
        let v = rpc_raw(&srv, garbage).await.json();
        assert_eq!(v["error"]["code"], -32700, "{garbage}: {v}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn notifications_are_executed_but_never_answered() {
    let srv = serve(A2aServer::builder()).await;
    // A SendMessage notification runs (the task appears) and gets 204 with no body.
    let a = rpc_raw(
        &srv,
        &json!({"jsonrpc": "2.0", "method": "SendMessage",
                "params": {"message": msg("notified")}})
        .to_string(),
    )
    .await;
    assert_eq!(a.status, 204);
    assert!(a.body.is_empty());
    let list = rpc_raw(&srv, r#"{"jsonrpc":"2.0","id":1,"method":"ListTasks"}"#)
        .await
        .json();
    assert_eq!(list["result"]["totalSize"], 1, "{list}");
    // Even a failing notification is not answered.
    let a = rpc_raw(&srv, r#"{"jsonrpc":"2.0","method":"NoSuchMethod"}"#).await;
    assert_eq!(a.status, 204);
    assert!(a.body.is_empty());
    // Except in the 0.3 namespace, which has no notifications (its schema requires `id`):
    // a failing id-less 0.3 call gets its error with `"id": null`, a succeeding one 204.
    let v = rpc_raw(
        &srv,
        r#"{"jsonrpc":"2.0","method":"message/ssend","params":{}}"#,
    )
    .await
    .json();
    assert_eq!(v["error"]["code"], -32601, "{v}");
    assert_eq!(v["id"], Value::Null);
    let v = rpc_raw(
        &srv,
        r#"{"jsonrpc":"2.0","method":"message/send","params":{"":"not_a_dict"}}"#,
    )
    .await
    .json();
    assert_eq!(v["error"]["code"], -32602, "{v}");
    let a = rpc_raw(
        &srv,
        &json!({"jsonrpc": "2.0", "method": "message/send",
                "params": {"message": {"kind": "message", "messageId": "n03", "role": "user",
                    "parts": [{"kind": "text", "text": "notified"}]}}})
        .to_string(),
    )
    .await;
    assert_eq!(a.status, 204);
    // `"id": null` is a request: answered, with `"id": null`.
    let a = rpc_raw(
        &srv,
        r#"{"jsonrpc":"2.0","id":null,"method":"GetTask","params":{"id":"nope"}}"#,
    )
    .await;
    assert_eq!(a.status, 200);
    let v = a.json();
    assert!(v.as_object().unwrap().contains_key("id"));
    assert_eq!(v["id"], Value::Null);
    assert_eq!(v["error"]["code"], -32001);
    // An invalid request without `id` is not a notification: it is answered.
    let v = rpc_raw(&srv, r#"{"jsonrpc":"1.0","method":"GetTask"}"#)
        .await
        .json();
    assert_eq!(v["error"]["code"], -32600);
}

// ---------------------------------------------------------------------------------------------
// 6. Parts and strings
// ---------------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_parts_are_refused_naming_the_part() {
    let srv = serve(A2aServer::builder()).await;
    let cases = [
        (json!({"raw": "!!!notbase64"}), "`raw` is not valid base64"),
        (json!({"url": ""}), "`url` must not be empty"),
        (
            json!({"data": null}),
            "`data` must be a JSON value other than null",
        ),
    ];
    for (bad, want) in cases {
        let message = json!({"messageId": "m", "role": "ROLE_USER",
                             "parts": [{"text": "ok"}, bad.clone()]});
        let v = rpc_raw(&srv, &send_body(1, message.clone(), false))
            .await
            .json();
        assert_eq!(v["error"]["code"], -32602, "{bad}: {v}");
        let m = v["error"]["message"].as_str().unwrap_or_default();
        assert!(m.contains("part 1") && m.contains(want), "{bad}: {m}");
        let body = json!({"message": message}).to_string();
        let a = raw(&srv, "POST", "/a/message:send", &[JSON_CT], body.as_bytes()).await;
        assert_eq!(a.status, 400, "{bad}");
        let m = a.json()["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        assert!(m.contains("part 1") && m.contains(want), "{bad}: {m}");
    }
    // Valid base64 (standard, URL-safe, unpadded) is accepted.
    for ok in ["QUJD", "QUI=", "QUI", "-_-_"] {
        let message = json!({"messageId": "m", "role": "ROLE_USER",
                             "parts": [{"raw": ok, "mediaType": "text/plain"}]});
        let v = rpc_raw(&srv, &send_body(1, message, false)).await.json();
        assert!(v["result"].is_object(), "{ok}: {v}");
    }
    // 0.3 file parts are checked the same way.
    let v = raw(
        &srv,
        "POST",
        "/a",
        &[JSON_CT],
        json!({"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {"message": {
            "kind": "message", "messageId": "m", "role": "user",
            "parts": [{"kind": "file", "file": {"bytes": "!!!notbase64"}}]}}})
        .to_string()
        .as_bytes(),
    )
    .await
    .json();
    assert_error(&v, -32602, "`file.bytes` is not valid base64");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unpaired_surrogates_are_reported_as_such() {
    let srv = serve(A2aServer::builder()).await;
    for text in [r"\ud800", r"\ud800x", r"\udc00", r"\ud800\u0041"] {
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{{"message":{{"messageId":"m","role":"ROLE_USER","parts":[{{"text":"{text}"}}]}}}}}}"#
        );
        let v = rpc_raw(&srv, &body).await.json();
        let m = v["error"]["message"].as_str().unwrap_or_default();
        assert!(
            m.contains("unpaired UTF-16 surrogate") && !m.contains("end of hex escape"),
            "{text}: {m}"
        );
        let rest = format!(
            r#"{{"message":{{"messageId":"m","role":"ROLE_USER","parts":[{{"text":"{text}"}}]}}}}"#
        );
        let a = raw(&srv, "POST", "/a/message:send", &[JSON_CT], rest.as_bytes()).await;
        assert_eq!(a.status, 400);
        let m = a.json()["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        assert!(m.contains("unpaired UTF-16 surrogate"), "{text}: {m}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_json_bodies_must_be_objects() {
    let srv = serve(A2aServer::builder()).await;
    let a = raw(
        &srv,
        "POST",
        "/a/message:send",
        &[JSON_CT],
        br#"[{"messageId":"m","role":"ROLE_USER","parts":[{"text":"hi"}]}]"#,
    )
    .await;
    assert_eq!(a.status, 400);
    let v = a.json();
    assert_error_says(&v, "must be a JSON object");
    let a = raw(
        &srv,
        "POST",
        "/a/message:send",
        &[JSON_CT],
        b"{\"message\": ",
    )
    .await;
    assert_eq!(a.status, 400);
    assert!(
        a.json()["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("invalid JSON")
    );
}
