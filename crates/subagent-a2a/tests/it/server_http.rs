//! Our A2A server over real sockets (reqwest on 127.0.0.1): cards, JSON-RPC 1.0 and 0.3,
//! HTTP+JSON, SSE streams, task lifecycle, errors, limits, auth, shutdown, and hosting an SPI
//! subagent.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use futures::StreamExt;
use serde_json::{Value, json};
use subagent_a2a::server::{A2aServer, AgentInfo, AgentMount, ServerAuth};
use subagent_a2a::types::ProtocolVersion;
use subagent_spi::{
    SubagentDefinition, SubagentError, SubagentExecutor, SubagentKind, TaskOutcome, TaskStatus,
};
use subagent_testkit::{FnKind, fn_ref};

use crate::common;

use common::{
    BINDINGS, Srv, TestAgent, assert_error, assert_error_says, assert_status, client, header,
    json_of, msg, send,
};

fn agent(path: &str, saw_cancel: Arc<AtomicBool>) -> AgentMount {
    common::agent_at(path, "echo", saw_cancel)
}

/// The echo agent at `/echo`, its cancellations unobserved.
fn echo_agent() -> AgentMount {
    agent("/echo", Arc::default())
}

async fn start() -> Srv {
    common::serve(A2aServer::builder().mount(echo_agent())).await
}

async fn rpc(base: &str, method: &str, params: Value, version: Option<&str>) -> Value {
    let mut r = reqwest::Client::new()
        .post(format!("{base}/echo"))
        .json(&json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params}));
    if let Some(v) = version {
        r = r.header("A2A-Version", v);
    }
    let resp = r.send().await.expect("request");
    assert_eq!(resp.status(), 200);
    resp.json().await.expect("json")
}

async fn rpc1(base: &str, method: &str, params: Value) -> Value {
    rpc(base, method, params, Some("1.0")).await
}

/// Reads an SSE response to its end: the JSON of every `data:` line.
async fn sse_events(resp: reqwest::Response) -> Vec<Value> {
    assert_eq!(resp.status(), 200);
    let ct = header(&resp, "content-type").to_string();
    assert!(ct.starts_with("text/event-stream"), "content type {ct}");
    let mut buf = String::new();
    let mut body = resp.bytes_stream();
    while let Some(chunk) = tokio::time::timeout(Duration::from_secs(20), body.next())
        .await
        .expect("stream made progress")
    {
        buf.push_str(&String::from_utf8_lossy(&chunk.expect("chunk")));
    }
    buf.lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .map(|d| serde_json::from_str(d.trim()).expect("event json"))
        .collect()
}

fn state_of(ev: &Value) -> Option<&str> {
    ev.pointer("/result/task/status/state")
        .or_else(|| ev.pointer("/result/statusUpdate/status/state"))
        .or_else(|| ev.pointer("/task/status/state"))
        .or_else(|| ev.pointer("/statusUpdate/status/state"))
        .and_then(Value::as_str)
}

// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn cards_of_both_versions_use_host_and_forwarded_headers() {
    let s = start().await;
    let c = reqwest::Client::new();
    let r = send(c.get(format!("{}/echo/.well-known/agent-card.json", s.base))).await;
    assert_eq!(r.status(), 200);
    assert!(header(&r, "cache-control").contains("max-age="));
    let etag = header(&r, "etag").to_string();
    let card: Value = r.json().await.unwrap();
    assert_eq!(card["name"], "echo");
    let ifaces = card["supportedInterfaces"].as_array().unwrap();
    assert_eq!(ifaces[0]["url"], format!("{}/echo", s.base));
    assert_eq!(ifaces[0]["protocolBinding"], "JSONRPC");
    assert_eq!(ifaces[0]["protocolVersion"], "1.0");
    assert_eq!(ifaces[1]["protocolBinding"], "HTTP+JSON");
    assert!(card.get("url").is_none(), "no 0.3 fields in the 1.0 card");
    assert_status(
        c.get(format!("{}/echo/.well-known/agent-card.json", s.base))
            .header("If-None-Match", &etag),
        304,
    )
    .await;

    let card03: Value = json_of(
        c.get(format!("{}/echo/.well-known/agent.json", s.base))
            .header("X-Forwarded-Proto", "https")
            .header("X-Forwarded-Host", "agents.example.com"),
    )
    .await;
    assert_eq!(card03["url"], "https://agents.example.com/echo");
    assert_eq!(card03["preferredTransport"], "JSONRPC");
    assert!(
        card03["protocolVersion"]
            .as_str()
            .unwrap()
            .starts_with("0.3")
    );
    assert!(card03.get("supportedInterfaces").is_none());
}

#[tokio::test]
async fn card_caching_last_modified_and_if_modified_since() {
    let s = start().await;
    let c = reqwest::Client::new();
    let url = format!("{}/echo/.well-known/agent-card.json", s.base);
    let r = c.get(&url).send().await.unwrap();
    let lm = header(&r, "last-modified").to_string();
    assert!(lm.ends_with(" GMT"), "an HTTP-date: {lm}");
    assert!(
        r.headers().get("vary").is_none(),
        "one card for every version"
    );
    let etag = header(&r, "etag").to_string();
    // Not modified since then; a weak validator of the same tag also matches.
    let r = send(c.get(&url).header("If-Modified-Since", &lm)).await;
    assert_eq!(r.status(), 304);
    assert_eq!(header(&r, "etag"), etag);
    assert_status(
        c.get(&url).header("If-None-Match", format!("W/{etag}")),
        304,
    )
    .await;
    // If-None-Match decides when both are present.
    assert_status(
        c.get(&url)
            .header("If-None-Match", "\"other\"")
            .header("If-Modified-Since", &lm),
        200,
    )
    .await;
    assert_status(
        c.get(&url)
            .header("If-Modified-Since", "Thu, 01 Jan 1970 00:00:00 GMT"),
        200,
    )
    .await;
}

#[tokio::test]
async fn legacy_card_discovery_serves_03_card_without_version_header() {
    let s = common::serve(
        A2aServer::builder()
            .legacy_card_discovery(true)
            .mount(echo_agent()),
    )
    .await;
    let c = reqwest::Client::new();
    let url = format!("{}/echo/.well-known/agent-card.json", s.base);
    // No header: the 0.3 card with the 1.0 interfaces beside its own fields.
    let r = c.get(&url).send().await.unwrap();
    assert_eq!(r.headers()["vary"], "A2A-Version");
    let legacy_tag = header(&r, "etag").to_string();
    let card: Value = r.json().await.unwrap();
    assert_eq!(card["url"], format!("{}/echo", s.base));
    assert!(card["protocolVersion"].as_str().unwrap().starts_with("0.3"));
    assert_eq!(card["preferredTransport"], "JSONRPC");
    let ifaces = card["supportedInterfaces"].as_array().unwrap();
    assert_eq!(ifaces[0]["protocolVersion"], "1.0");
    // Asking for 0.3 explicitly: the same.
    let r = send(c.get(&url).header("A2A-Version", "0.3")).await;
    assert_eq!(header(&r, "etag"), legacy_tag);
    // Asking for 1.0: the plain 1.0 card, its own tag.
    let r = send(c.get(&url).header("A2A-Version", "1.0")).await;
    assert_eq!(r.headers()["vary"], "A2A-Version");
    assert_ne!(header(&r, "etag"), legacy_tag);
    let card: Value = r.json().await.unwrap();
    assert!(card.get("url").is_none());
    assert!(card["supportedInterfaces"].is_array());
    // The 0.3 tag does not validate the 1.0 card.
    assert_status(
        c.get(&url)
            .header("A2A-Version", "1.0")
            .header("If-None-Match", &legacy_tag),
        200,
    )
    .await;
    // Our own client sends A2A-Version: 1.0 and resolves the 1.0 card.
    let reference = subagent_spi::SubagentReference::new(
        format!("{}/echo", s.base),
        subagent_a2a::client::KIND,
    );
    let def = subagent_a2a::client::A2aResolver::new()
        .resolve_a2a(&reference)
        .await
        .expect("resolves");
    assert!(matches!(def.card(), subagent_a2a::client::AgentCard::V1(_)));
}

#[tokio::test]
async fn option_serves_03_card_at_agent_card_json_and_public_url_wins() {
    let s = common::serve(
        A2aServer::builder()
            .agent_card_version(ProtocolVersion::V03)
            .public_url("https://public.example/")
            .mount(echo_agent()),
    )
    .await;
    let card: Value =
        json_of(reqwest::Client::new().get(format!("{}/echo/.well-known/agent-card.json", s.base)))
            .await;
    assert_eq!(card["url"], "https://public.example/echo");
    assert!(card["protocolVersion"].as_str().unwrap().starts_with("0.3"));
}

#[tokio::test]
async fn v1_send_get_list_and_history_length() {
    let s = start().await;
    let r = rpc1(&s.base, "SendMessage", json!({"message": msg("hi")})).await;
    let task = &r["result"]["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED");
    assert_eq!(task["artifacts"][0]["parts"][0]["text"], "echo: hi");
    assert_eq!(task["history"][0]["messageId"], "m-hi");
    let id = task["id"].as_str().unwrap().to_string();
    let ctx = task["contextId"].as_str().unwrap().to_string();

    let got = rpc1(&s.base, "GetTask", json!({"id": id, "historyLength": 0})).await;
    assert_eq!(got["result"]["id"], id.as_str());
    assert!(got["result"].get("history").is_none());

    let r = rpc1(
        &s.base,
        "SendMessage",
        json!({"message": msg("again"), "configuration": {"historyLength": 0}}),
    )
    .await;
    assert!(r["result"]["task"].get("history").is_none());

    let list = rpc1(&s.base, "ListTasks", json!({"contextId": ctx})).await;
    let tasks = list["result"]["tasks"].as_array().unwrap();
    assert_eq!(tasks.len(), 1);
    assert_eq!(list["result"]["nextPageToken"], "");
    assert!(
        tasks[0].get("artifacts").is_none(),
        "artifacts only on request"
    );
    let all = rpc1(&s.base, "ListTasks", json!({"pageSize": 1})).await;
    assert_eq!(all["result"]["totalSize"], 2);
    assert_ne!(all["result"]["nextPageToken"], "");
}

#[tokio::test]
async fn direct_reply_is_a_message_and_stores_no_task() {
    let s = start().await;
    let r = rpc1(&s.base, "SendMessage", json!({"message": msg("direct")})).await;
    let m = &r["result"]["message"];
    assert_eq!(m["role"], "ROLE_AGENT");
    assert_eq!(m["parts"][0]["text"], "direct answer");
    assert!(m.get("taskId").is_none());
    let list = rpc1(&s.base, "ListTasks", json!({})).await;
    assert_eq!(list["result"]["totalSize"], 0);
}

#[tokio::test]
async fn v03_methods_answer_in_03_shapes() {
    let s = start().await;
    let m = json!({"kind": "message", "messageId": "m1", "role": "user", "parts": [{"kind": "text", "text": "hey"}]});
    let r = rpc(&s.base, "message/send", json!({"message": m}), None).await;
    let t = &r["result"];
    assert_eq!(t["kind"], "task");
    assert_eq!(t["status"]["state"], "completed");
    assert_eq!(t["artifacts"][0]["parts"][0]["kind"], "text");
    let id = t["id"].as_str().unwrap();
    let got = rpc(&s.base, "tasks/get", json!({"id": id}), Some("0.3")).await;
    assert_eq!(got["result"]["status"]["state"], "completed");
    let c = rpc(&s.base, "tasks/cancel", json!({"id": id}), None).await;
    assert_eq!(c["error"]["code"], -32002);
    assert!(
        c["error"].get("data").is_none(),
        "0.3 errors carry no ErrorInfo"
    );
    let d = rpc(&s.base, "message/send", json!({"message": {"kind": "message", "messageId": "m2", "role": "user", "parts": [{"kind": "text", "text": "direct"}]}}), None).await;
    assert_eq!(d["result"]["kind"], "message");
}

#[tokio::test]
async fn jsonrpc_errors_use_spec_codes() {
    let s = start().await;
    let c = reqwest::Client::new();
    let raw = |body: &'static str| {
        let req = c
            .post(format!("{}/echo", s.base))
            .header("content-type", "application/json")
            .body(body);
        async move { req.send().await.unwrap().json::<Value>().await.unwrap() }
    };
    let v = raw("{nope").await;
    assert_eq!(v["error"]["code"], -32700);
    assert_eq!(v["id"], Value::Null);
    let v = raw(r#"{"jsonrpc":"1.0","id":1,"method":"GetTask"}"#).await;
    assert_eq!(v["error"]["code"], -32600);
    let v = raw("[1,2]").await;
    assert_eq!(v["error"]["code"], -32600);
    let v = raw(r#"{"jsonrpc":"2.0","id":1,"method":7}"#).await;
    assert_eq!(v["error"]["code"], -32600);
    assert_eq!(v["id"], 1);
    // Any key order, escapes in the method name, a string id: the envelope is read in one pass
    // and the params once the method is known.
    let v =
        raw(r#"{"params":{"id":"missing"},"method":"Get\u0054ask","id":"req-7","jsonrpc":"2.0"}"#)
            .await;
    assert_eq!(v["error"]["code"], -32001, "{v}");
    assert_eq!(v["id"], "req-7");
    for body in [
        r#"{"jsonrpc":"2.0","id":2,"method":"GetTask"}"#,
        r#"{"jsonrpc":"2.0","id":2,"method":"GetTask","params":null}"#,
    ] {
        let v = raw(body).await;
        assert_error(&v, -32602, "requires `params`");
    }
    let v = rpc1(
        &s.base,
        "SendMessage",
        json!({"message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"mediaType": "text/plain"}]}}),
    )
    .await;
    assert_error(&v, -32602, "`text`, `raw`, `url` or `data`");

    let v = rpc1(&s.base, "NoSuchMethod", json!({})).await;
    assert_eq!(v["error"]["code"], -32601);
    let v = rpc1(&s.base, "GetTask", json!({"nope": 1})).await;
    assert_eq!(v["error"]["code"], -32602);
    let v = rpc1(&s.base, "GetTask", json!({"id": "missing"})).await;
    assert_eq!(v["error"]["code"], -32001);
    assert_eq!(v["error"]["data"][0]["reason"], "TASK_NOT_FOUND");
    assert_eq!(v["error"]["data"][0]["domain"], "a2a-protocol.org");
    let v = rpc(
        &s.base,
        "SendMessage",
        json!({"message": msg("x")}),
        Some("99.0"),
    )
    .await;
    assert_eq!(v["error"]["code"], -32009);
    let v = rpc1(
        &s.base,
        "CreateTaskPushNotificationConfig",
        json!({"taskId": "t", "url": "http://x"}),
    )
    .await;
    assert_eq!(v["error"]["code"], -32003);
    let v = rpc1(&s.base, "GetExtendedAgentCard", json!({})).await;
    assert_eq!(v["error"]["code"], -32007);
    let bad_part = json!({"message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"raw": "AA==", "mediaType": "application/x-odd"}]}});
    let v = rpc1(&s.base, "SendMessage", bad_part).await;
    assert_eq!(v["error"]["code"], -32005);
    let v: Value = json_of(
        c.post(format!("{}/echo", s.base))
            .header("content-type", "text/plain")
            .body(r#"{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"x"}}"#),
    )
    .await;
    assert_eq!(v["error"]["code"], -32005);
    let v = rpc1(
        &s.base,
        "SendMessage",
        json!({"message": {"messageId": "m", "role": "ROLE_USER", "parts": []}}),
    )
    .await;
    assert_eq!(v["error"]["code"], -32602);
}

#[tokio::test]
async fn lifecycle_input_required_continuation_and_terminal_refusal() {
    let s = start().await;
    let r = rpc1(&s.base, "SendMessage", json!({"message": msg("ask")})).await;
    let t = &r["result"]["task"];
    assert_eq!(t["status"]["state"], "TASK_STATE_INPUT_REQUIRED");
    assert_eq!(t["status"]["message"]["parts"][0]["text"], "which one?");
    let id = t["id"].as_str().unwrap().to_string();
    let ctx = t["contextId"].as_str().unwrap().to_string();

    let mut wrong = msg("answer");
    wrong["taskId"] = json!(id);
    wrong["contextId"] = json!("another-context");
    let v = rpc1(&s.base, "SendMessage", json!({"message": wrong})).await;
    assert_eq!(v["error"]["code"], -32602);

    let mut follow = msg("answer");
    follow["taskId"] = json!(id);
    let r = rpc1(&s.base, "SendMessage", json!({"message": follow.clone()})).await;
    let t = &r["result"]["task"];
    assert_eq!(t["id"], id.as_str());
    assert_eq!(t["contextId"], ctx.as_str());
    assert_eq!(t["status"]["state"], "TASK_STATE_COMPLETED");
    let texts: Vec<&str> = t["history"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["parts"][0]["text"].as_str())
        .collect();
    assert_eq!(texts, ["ask", "which one?", "answer"]);

    let v = rpc1(&s.base, "SendMessage", json!({"message": follow})).await;
    assert_eq!(v["error"]["code"], -32004, "terminal task refuses messages");
    let v = rpc1(&s.base, "CancelTask", json!({"id": id})).await;
    assert_eq!(v["error"]["code"], -32002);

    let mut unknown = msg("x");
    unknown["taskId"] = json!("no-such-task");
    let v = rpc1(&s.base, "SendMessage", json!({"message": unknown})).await;
    assert_eq!(v["error"]["code"], -32001);

    let r = rpc1(&s.base, "SendMessage", json!({"message": msg("fail")})).await;
    assert_eq!(r["result"]["task"]["status"]["state"], "TASK_STATE_FAILED");
    assert_eq!(
        r["result"]["task"]["status"]["message"]["parts"][0]["text"],
        "it broke"
    );
}

#[tokio::test]
async fn v1_stream_sends_task_first_then_updates_in_order() {
    let s = start().await;
    let resp = send(reqwest::Client::new()
        .post(format!("{}/echo", s.base))
        .header("A2A-Version", "1.0")
        .json(&json!({"jsonrpc": "2.0", "id": "s1", "method": "SendStreamingMessage", "params": {"message": msg("streamed")}}))).await;
    let events = sse_events(resp).await;
    let kinds: Vec<&str> = events
        .iter()
        .map(|e| {
            assert_eq!(e["id"], "s1");
            e["result"]
                .as_object()
                .unwrap()
                .keys()
                .next()
                .unwrap()
                .as_str()
        })
        .collect();
    assert_eq!(
        kinds,
        ["task", "statusUpdate", "artifactUpdate", "statusUpdate"]
    );
    assert_eq!(state_of(&events[0]), Some("TASK_STATE_SUBMITTED"));
    assert_eq!(state_of(&events[1]), Some("TASK_STATE_WORKING"));
    assert_eq!(state_of(&events[3]), Some("TASK_STATE_COMPLETED"));
}

#[tokio::test]
async fn v03_stream_uses_kinds_and_final() {
    let s = start().await;
    let m = json!({"kind": "message", "messageId": "m1", "role": "user", "parts": [{"kind": "text", "text": "hey"}]});
    let resp = send(reqwest::Client::new()
        .post(format!("{}/echo", s.base))
        .json(&json!({"jsonrpc": "2.0", "id": 3, "method": "message/stream", "params": {"message": m}}))).await;
    let events = sse_events(resp).await;
    let kinds: Vec<&str> = events
        .iter()
        .map(|e| e["result"]["kind"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        ["task", "status-update", "artifact-update", "status-update"]
    );
    assert_eq!(events[3]["result"]["final"], true);
    assert_eq!(events[3]["result"]["status"]["state"], "completed");
}

#[tokio::test]
async fn subscribe_joins_a_live_task_and_cancel_reaches_the_handler() {
    let saw = Arc::new(AtomicBool::new(false));
    let s = common::serve(A2aServer::builder().mount(agent("/echo", saw.clone()))).await;
    let r = rpc1(
        &s.base,
        "SendMessage",
        json!({"message": msg("slow"), "configuration": {"returnImmediately": true}}),
    )
    .await;
    let id = r["result"]["task"]["id"].as_str().unwrap().to_string();
    let sub =
        send(reqwest::Client::new().post(format!("{}/echo/tasks/{id}:subscribe", s.base))).await;
    let reader = tokio::spawn(sse_events(sub));
    // The subscription is registered before its response starts, so cancel now.
    let c = rpc1(&s.base, "CancelTask", json!({"id": id})).await;
    assert_eq!(c["result"]["status"]["state"], "TASK_STATE_CANCELED");
    assert!(
        saw.load(Ordering::SeqCst),
        "cancel reached the handler's token"
    );
    let events = reader.await.unwrap();
    assert!(events[0].get("task").is_some(), "first event is the task");
    assert_eq!(
        state_of(events.last().unwrap()),
        Some("TASK_STATE_CANCELED")
    );

    let terminal =
        send(reqwest::Client::new().post(format!("{}/echo/tasks/{id}:subscribe", s.base))).await;
    assert_eq!(
        terminal.status(),
        400,
        "terminal tasks cannot be subscribed to"
    );
}

#[tokio::test]
async fn http_json_binding_routes_and_errors() {
    let s = start().await;
    let c = reqwest::Client::new();
    let r: Value = json_of(
        c.post(format!("{}/echo/message:send", s.base))
            .json(&json!({"message": msg("rest")})),
    )
    .await;
    assert_eq!(r["task"]["status"]["state"], "TASK_STATE_COMPLETED");
    let id = r["task"]["id"].as_str().unwrap();
    let t: Value = json_of(c.get(format!("{}/echo/tasks/{id}?historyLength=0", s.base))).await;
    assert_eq!(t["id"], id);
    assert!(t.get("history").is_none());
    let list: Value = json_of(c.get(format!(
        "{}/echo/tasks?status=TASK_STATE_COMPLETED&includeArtifacts=true",
        s.base
    )))
    .await;
    assert_eq!(
        list["tasks"][0]["artifacts"][0]["parts"][0]["text"],
        "echo: rest"
    );

    let nf = send(c.get(format!("{}/echo/tasks/nope", s.base))).await;
    assert_eq!(nf.status(), 404);
    assert_eq!(nf.headers()["content-type"], "application/json");
    let body: Value = nf.json().await.unwrap();
    assert_eq!(body["error"]["code"], 404);
    assert_eq!(body["error"]["status"], "NOT_FOUND");
    assert_eq!(body["error"]["details"][0]["reason"], "TASK_NOT_FOUND");
    assert_status(c.post(format!("{}/echo/tasks/{id}:cancel", s.base)), 409).await;
    assert_status(
        c.post(format!("{}/echo/message:send", s.base))
            .header("content-type", "text/plain")
            .body("hi"),
        415,
    )
    .await;
    assert_status(
        c.post(format!("{}/echo/message:send", s.base))
            .header("A2A-Version", "99.0")
            .json(&json!({"message": msg("x")})),
        400,
    )
    .await;
    assert_status(
        c.post(format!(
            "{}/echo/tasks/{id}/pushNotificationConfigs",
            s.base
        ))
        .json(&json!({"url": "http://x"})),
        400,
    )
    .await;

    let resp = send(
        c.post(format!("{}/echo/message:stream", s.base))
            .json(&json!({"message": msg("streamed")})),
    )
    .await;
    let events = sse_events(resp).await;
    assert!(events[0].get("task").is_some());
    assert_eq!(
        state_of(events.last().unwrap()),
        Some("TASK_STATE_COMPLETED")
    );
}

#[tokio::test]
async fn body_and_stream_limits() {
    let s = common::serve(
        A2aServer::builder()
            .max_body_bytes(1024)
            .max_streams(1)
            .mount(echo_agent()),
    )
    .await;
    let big = "x".repeat(4096);
    let r = send(reqwest::Client::new()
        .post(format!("{}/echo", s.base))
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": msg(&big)}}))).await;
    assert_eq!(r.status(), 413);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["error"]["code"], -32600);
    assert!(v["error"]["message"].as_str().unwrap().contains("1024"));

    // One stream open (a slow task), the second is refused.
    let first = send(
        reqwest::Client::new()
            .post(format!("{}/echo/message:stream", s.base))
            .json(&json!({"message": msg("slow")})),
    )
    .await;
    assert_eq!(first.status(), 200);
    let second = send(
        reqwest::Client::new()
            .post(format!("{}/echo/message:stream", s.base))
            .json(&json!({"message": msg("slow")})),
    )
    .await;
    assert_eq!(second.status(), 503);
    assert_eq!(second.headers()["retry-after"], "5");
    let body: Value = second.json().await.unwrap();
    assert_error_says(&body, "limit 1");
    drop(first);
}

#[tokio::test]
async fn extended_card_goes_to_authenticated_callers_only() {
    // Without credentials the server refuses to build: the card would be public.
    let no_auth = A2aServer::builder()
        .mount(
            agent("/echo", Arc::new(AtomicBool::new(false)))
                .with_extended_card(AgentInfo::new("echo", "more")),
        )
        .build();
    assert!(no_auth.is_err());

    let extended = AgentInfo::new("echo", "Echoes, with the private skill").with_skill(
        subagent_a2a::types::v1::AgentSkill {
            id: "private".into(),
            name: "Private".into(),
            description: "Only for members".into(),
            tags: vec![],
            examples: vec![],
            input_modes: vec![],
            output_modes: vec![],
            security_requirements: vec![],
        },
    );
    let s = common::serve(
        A2aServer::builder().mount(
            echo_agent()
                .with_auth(ServerAuth::bearer("tok"))
                .with_extended_card(extended),
        ),
    )
    .await;
    let c = reqwest::Client::new();
    let card: Value = json_of(c.get(format!("{}/echo/.well-known/agent-card.json", s.base))).await;
    assert_eq!(card["capabilities"]["extendedAgentCard"], true);
    let card03: Value = json_of(c.get(format!("{}/echo/.well-known/agent.json", s.base))).await;
    assert_eq!(card03["supportsAuthenticatedExtendedCard"], true);
    // Unauthenticated: 401 on every binding.
    assert_status(c.get(format!("{}/echo/extendedAgentCard", s.base)), 401).await;
    let r =
        send(c.post(format!("{}/echo", s.base)).json(
            &json!({"jsonrpc": "2.0", "id": 1, "method": "GetExtendedAgentCard", "params": {}}),
        ))
        .await;
    assert_eq!(r.status(), 401);
    // Authenticated, through our client on each binding and version.
    let mut headers = http::HeaderMap::new();
    headers.insert(http::header::AUTHORIZATION, "Bearer tok".parse().unwrap());
    for (binding, version) in BINDINGS {
        let client = client(&s.url("/echo"), (binding, version), headers.clone());
        let ext = client.get_extended_agent_card().await.unwrap();
        assert_eq!(ext.description, "Echoes, with the private skill");
        assert!(
            ext.skills.iter().any(|k| k.id == "private"),
            "{binding:?} {version}"
        );
    }
}

#[tokio::test]
async fn bearer_auth_is_checked_and_declared() {
    let s = common::serve(
        A2aServer::builder().mount(echo_agent().with_auth(ServerAuth::bearer("tok"))),
    )
    .await;
    let card: Value =
        json_of(reqwest::Client::new().get(format!("{}/echo/.well-known/agent-card.json", s.base)))
            .await;
    assert_eq!(
        card["securitySchemes"]["bearer"]["httpAuthSecurityScheme"]["scheme"],
        "Bearer"
    );
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": msg("hi")}});
    let c = reqwest::Client::new();
    assert_status(c.post(format!("{}/echo", s.base)).json(&body), 401).await;
    assert_status(
        c.post(format!("{}/echo", s.base))
            .bearer_auth("wrong")
            .json(&body),
        401,
    )
    .await;
    assert_status(
        c.post(format!("{}/echo", s.base))
            .bearer_auth("tok")
            .json(&body),
        200,
    )
    .await;
}

#[tokio::test]
async fn several_agents_at_their_own_paths_and_unknown_paths() {
    let s = common::serve(
        A2aServer::builder()
            .mount(echo_agent())
            .mount(AgentMount::new(
                "/team/other",
                AgentInfo::new("other", "Another agent"),
                TestAgent::default(),
            )),
    )
    .await;
    let card: Value = json_of(
        reqwest::Client::new().get(format!("{}/team/other/.well-known/agent-card.json", s.base)),
    )
    .await;
    assert_eq!(card["name"], "other");
    assert_eq!(
        card["supportedInterfaces"][0]["url"],
        format!("{}/team/other", s.base)
    );
    let r =
        send(reqwest::Client::new().get(format!("{}/nobody/.well-known/agent-card.json", s.base)))
            .await;
    assert_eq!(r.status(), 404);
    // A task of one agent is unknown to the other.
    let t = rpc1(&s.base, "SendMessage", json!({"message": msg("hi")})).await;
    let id = t["result"]["task"]["id"].as_str().unwrap();
    let r: Value =
        json_of(reqwest::Client::new().get(format!("{}/team/other/tasks/{id}", s.base))).await;
    assert_eq!(r["error"]["code"], 404);
    assert!(
        A2aServer::builder()
            .mount(agent("/a", Arc::default()))
            .mount(agent("/a/", Arc::default()))
            .build()
            .is_err(),
        "duplicate paths are refused"
    );
}

#[tokio::test]
async fn graceful_shutdown_ends_open_streams() {
    let s = start().await;
    let resp = send(
        reqwest::Client::new()
            .post(format!("{}/echo/message:stream", s.base))
            .json(&json!({"message": msg("slow")})),
    )
    .await;
    let reader = tokio::spawn(sse_events(resp));
    s.stop.cancel();
    let events = tokio::time::timeout(Duration::from_secs(10), reader)
        .await
        .expect("stream ended at shutdown")
        .unwrap();
    assert!(events[0].get("task").is_some());
    let mut s = s;
    let done = s.done.take().expect("server task");
    tokio::time::timeout(Duration::from_secs(10), done)
        .await
        .expect("serve returned")
        .unwrap();
}

// ---------------------------------------------------------------------------------------------
// Hosting an SPI subagent
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn hosts_an_spi_definition_and_executor() {
    let cancelled = Arc::new(AtomicBool::new(false));
    let seen = cancelled.clone();
    let kind = FnKind::new().agent("shouter", move |call, ctx| {
        let seen = seen.clone();
        async move {
            match call.prompt.as_str() {
                "question" => Ok(
                    TaskOutcome::with_status("what colour?", TaskStatus::NeedsInput)
                        .with_session("sess-1"),
                ),
                "wait" => {
                    ctx.cancel().cancelled().await;
                    seen.store(true, Ordering::SeqCst);
                    Err(SubagentError::Cancelled {
                        agent: "shouter".into(),
                    })
                }
                p => {
                    let resumed = call.resume.map(|s| format!(" ({s})")).unwrap_or_default();
                    Ok(TaskOutcome::completed(format!(
                        "{}{resumed}",
                        p.to_uppercase()
                    )))
                }
            }
        }
    });
    let def: Arc<dyn SubagentDefinition> = Arc::new(
        SubagentKind::resolve(&kind, &fn_ref("shouter?Answers in capitals"))
            .await
            .unwrap(),
    );
    let exec: Arc<dyn SubagentExecutor> = Arc::new(kind);
    let s =
        common::serve(A2aServer::builder().mount(AgentMount::subagent("/echo", def, exec))).await;
    let card: Value =
        json_of(reqwest::Client::new().get(format!("{}/echo/.well-known/agent-card.json", s.base)))
            .await;
    assert_eq!(card["name"], "shouter");
    assert_eq!(card["skills"][0]["description"], "Answers in capitals");

    let r = rpc1(&s.base, "SendMessage", json!({"message": msg("hello")})).await;
    let t = &r["result"]["task"];
    assert_eq!(t["status"]["state"], "TASK_STATE_COMPLETED");
    assert_eq!(t["artifacts"][0]["parts"][0]["text"], "HELLO");

    let r = rpc1(&s.base, "SendMessage", json!({"message": msg("question")})).await;
    let t = &r["result"]["task"];
    assert_eq!(t["status"]["state"], "TASK_STATE_INPUT_REQUIRED");
    assert_eq!(t["status"]["message"]["parts"][0]["text"], "what colour?");
    let mut follow = msg("blue");
    follow["taskId"] = t["id"].clone();
    let r = rpc1(&s.base, "SendMessage", json!({"message": follow})).await;
    assert_eq!(
        r["result"]["task"]["artifacts"][0]["parts"][0]["text"], "BLUE (sess-1)",
        "the follow-up resumed the executor's session"
    );

    let r = rpc1(
        &s.base,
        "SendMessage",
        json!({"message": msg("wait"), "configuration": {"returnImmediately": true}}),
    )
    .await;
    let id = r["result"]["task"]["id"].as_str().unwrap();
    let c = rpc1(&s.base, "CancelTask", json!({"id": id})).await;
    assert_eq!(c["result"]["status"]["state"], "TASK_STATE_CANCELED");
    assert!(
        cancelled.load(Ordering::SeqCst),
        "cancel reached the executor's context"
    );
}

#[tokio::test]
async fn idle_streams_get_keep_alive_comments() {
    let mut cfg = subagent_a2a::server::ServerConfig::default();
    cfg.keep_alive = Duration::from_millis(50);
    let s = common::serve(A2aServer::builder().config(cfg).mount(echo_agent())).await;
    let resp = send(
        reqwest::Client::new()
            .post(format!("{}/echo/message:stream", s.base))
            .json(&json!({"message": msg("slow")})),
    )
    .await;
    let mut body = resp.bytes_stream();
    let mut seen = String::new();
    while !seen.contains("\n:\n") {
        let chunk = tokio::time::timeout(Duration::from_secs(10), body.next())
            .await
            .expect("a keep-alive within 10 s")
            .expect("stream open")
            .unwrap();
        seen.push_str(&String::from_utf8_lossy(&chunk));
    }
    assert!(seen.starts_with("data: "), "the task came first: {seen}");
}

#[tokio::test]
async fn shutdown_token_cancels_handlers_when_the_router_is_served_elsewhere() {
    let saw = Arc::new(AtomicBool::new(false));
    let server = A2aServer::builder()
        .mount(agent("/echo", saw.clone()))
        .build()
        .unwrap();
    let token = server.shutdown_token();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let app = server.router();
    let t2 = token.clone();
    tokio::spawn(async move {
        let _ = axum::serve(listener, app)
            .with_graceful_shutdown(async move { t2.cancelled().await })
            .await;
    });
    let r = rpc1(
        &base,
        "SendMessage",
        json!({"message": msg("slow"), "configuration": {"returnImmediately": true}}),
    )
    .await;
    assert_eq!(
        r["result"]["task"]["status"]["state"],
        "TASK_STATE_SUBMITTED"
    );
    token.cancel();
    tokio::time::timeout(Duration::from_secs(10), async {
        while !saw.load(Ordering::SeqCst) {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("the handler saw the cancellation");
}
