//! The scripted model server's wire output and bookkeeping, checked with a plain HTTP client.

use std::time::Duration;

use serde_json::{Value, json};
use subagent_testkit::{Reply, Script, ScriptedModelServer, ScriptedToolCall};

async fn post(url: &str, body: Value) -> (u16, reqwest::header::HeaderMap, String) {
    let resp = reqwest::Client::new()
        .post(url)
        .header("x-test", "yes")
        .json(&body)
        .send()
        .await
        .unwrap();
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    (status, headers, resp.text().await.unwrap())
}

fn data_lines(body: &str) -> Vec<&str> {
    body.split("\n\n")
        .filter(|e| !e.is_empty())
        .map(|e| {
            e.strip_prefix("data: ")
                .expect("every OpenAI event is one data line")
        })
        .collect()
}

#[tokio::test]
async fn openai_non_streamed_reply_shape() {
    let server = ScriptedModelServer::start().await;
    server.push(Reply::text_and_tool_calls("hi", vec![("Read", json!({"p": 1}))]).with_usage(7, 2));
    let (status, headers, body) = post(
        &format!("{}/chat/completions", server.openai_base_url()),
        json!({"model": "gpt-x", "messages": []}),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(headers["content-type"], "application/json");
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["object"], "chat.completion");
    assert_eq!(v["model"], "gpt-x");
    let msg = &v["choices"][0]["message"];
    assert_eq!(msg["content"], "hi");
    assert_eq!(msg["tool_calls"][0]["function"]["name"], "Read");
    assert_eq!(msg["tool_calls"][0]["function"]["arguments"], "{\"p\":1}");
    assert_eq!(v["choices"][0]["finish_reason"], "tool_calls");
    assert_eq!(v["usage"]["prompt_tokens"], 7);
    assert_eq!(v["usage"]["completion_tokens"], 2);
}

#[tokio::test]
async fn openai_stream_framing_fragments_and_usage_chunk() {
    let server = ScriptedModelServer::start().await;
    server.push(
        Reply::message(
            "abcdef",
            vec![ScriptedToolCall::new("T", json!({"k": "vvvvvv"})).with_id("call_fixed")],
        )
        .with_fragment_chars(3),
    );
    server.push(Reply::text("x"));
    let url = format!("{}/chat/completions", server.openai_base_url());
    let (_, headers, body) = post(
        &url,
        json!({"model": "m", "stream": true, "stream_options": {"include_usage": true}}),
    )
    .await;
    assert_eq!(headers["content-type"], "text/event-stream");
    assert!(body.ends_with("data: [DONE]\n\n"));
    let lines = data_lines(&body);
    assert_eq!(*lines.last().unwrap(), "[DONE]");
    let chunks: Vec<Value> = lines[..lines.len() - 1]
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let texts: Vec<&str> = chunks
        .iter()
        .filter_map(|c| c["choices"][0]["delta"]["content"].as_str())
        .filter(|s| !s.is_empty())
        .collect();
    assert_eq!(texts, ["abc", "def"]);
    let tool_deltas: Vec<&Value> = chunks
        .iter()
        .filter_map(|c| c["choices"][0]["delta"]["tool_calls"].get(0))
        .collect();
    assert!(tool_deltas.len() >= 4, "{tool_deltas:?}");
    assert!(tool_deltas.iter().all(|d| d["index"] == 0));
    assert_eq!(tool_deltas[0]["id"], "call_fixed");
    assert_eq!(tool_deltas[0]["function"]["name"], "T");
    let args: String = tool_deltas
        .iter()
        .filter_map(|d| d["function"]["arguments"].as_str())
        .collect();
    assert_eq!(args, "{\"k\":\"vvvvvv\"}");
    let usage_chunk = &chunks[chunks.len() - 1];
    assert_eq!(usage_chunk["choices"], json!([]));
    assert_eq!(usage_chunk["usage"]["prompt_tokens"], 10);
    assert_eq!(
        chunks[chunks.len() - 2]["choices"][0]["finish_reason"],
        "tool_calls"
    );

    // Without include_usage there is no usage chunk.
    let (_, _, body) = post(&url, json!({"model": "m", "stream": true})).await;
    assert!(!body.contains("\"usage\""), "{body}");
}

#[tokio::test]
async fn anthropic_stream_event_order() {
    let server = ScriptedModelServer::start().await;
    server.push(
        Reply::text_and_tool_calls("hey", vec![("T", json!({"a": 1}))]).with_cache_tokens(4, 5),
    );
    let (_, _, body) = post(
        &format!("{}/v1/messages", server.base_url()),
        json!({"model": "claude", "stream": true, "max_tokens": 10}),
    )
    .await;
    let events: Vec<(&str, Value)> = body
        .split("\n\n")
        .filter(|e| !e.is_empty())
        .map(|e| {
            let (ev, data) = e.split_once('\n').unwrap();
            let name = ev.strip_prefix("event: ").unwrap();
            let v: Value = serde_json::from_str(data.strip_prefix("data: ").unwrap()).unwrap();
            assert_eq!(v["type"], name);
            (name, v)
        })
        .collect();
    let names: Vec<&str> = events.iter().map(|(n, _)| *n).collect();
    assert_eq!(names[0], "message_start");
    assert_eq!(names[names.len() - 2], "message_delta");
    assert_eq!(names[names.len() - 1], "message_stop");
    assert!(names.contains(&"ping"));
    assert_eq!(
        events[0].1["message"]["usage"]["cache_read_input_tokens"],
        4
    );
    assert_eq!(
        events[0].1["message"]["usage"]["cache_creation_input_tokens"],
        5
    );
    let starts: Vec<&Value> = events
        .iter()
        .filter(|(n, _)| *n == "content_block_start")
        .map(|(_, v)| v)
        .collect();
    assert_eq!(starts[0]["content_block"]["type"], "text");
    assert_eq!(starts[1]["content_block"]["type"], "tool_use");
    assert_eq!(starts[1]["index"], 1);
    let json: String = events
        .iter()
        .filter_map(|(_, v)| v["delta"]["partial_json"].as_str())
        .collect();
    assert_eq!(json, "{\"a\":1}");
    assert_eq!(
        events[names.len() - 2].1["delta"]["stop_reason"],
        "tool_use"
    );
}

#[tokio::test]
async fn errors_headers_and_exhaustion() {
    let server = ScriptedModelServer::start().await;
    server.push(Reply::rate_limited(3));
    server.push(Reply::error_message(401, "invalid x-api-key"));
    let openai = format!("{}/chat/completions", server.openai_base_url());
    let anthropic = format!("{}/v1/messages", server.base_url());
    let (status, headers, body) = post(&openai, json!({})).await;
    assert_eq!(status, 429);
    assert_eq!(headers["retry-after"], "3");
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["error"]["type"], "rate_limit_error");
    let (status, _, body) = post(&anthropic, json!({})).await;
    assert_eq!(status, 401);
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        v,
        json!({"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}})
    );
    let (status, _, body) = post(&anthropic, json!({"model": "c"})).await;
    assert_eq!(status, 500);
    assert!(body.contains("script exhausted"), "{body}");
    assert!(body.contains("request #3"), "{body}");
    let (status, _, _) = post(&format!("{}/v2/nothing", server.base_url()), json!({})).await;
    assert_eq!(status, 404);
}

#[tokio::test]
async fn requests_are_recorded() {
    let server = ScriptedModelServer::start().await;
    server.push(Reply::text("a"));
    post(
        &format!("{}/chat/completions", server.openai_base_url()),
        json!({"model": "gpt", "messages": [{"role": "user", "content": "q"}], "tools": [{"type": "function"}]}),
    )
    .await;
    let reqs = server.requests();
    assert_eq!(reqs.len(), 1);
    let r = &reqs[0];
    assert_eq!(r.path, "/v1/chat/completions");
    assert_eq!(r.header("X-Test"), Some("yes"));
    assert_eq!(r.model(), Some("gpt"));
    assert_eq!(r.messages()[0]["content"], "q");
    assert_eq!(r.tools().len(), 1);
    assert!(!r.is_stream());
}

#[tokio::test]
async fn per_model_scripts_fallback_and_shared_scripts() {
    let script = Script::new();
    let a = ScriptedModelServer::start_with_script(script.clone()).await;
    let b = ScriptedModelServer::start_with_script(script.clone()).await;
    script.push(Reply::text("general"));
    script.push_for_model("special", Reply::text("for special"));
    let reply_text = |body: String| -> String {
        let v: Value = serde_json::from_str(&body).unwrap();
        v["choices"][0]["message"]["content"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let (_, _, body) = post(
        &format!("{}/chat/completions", b.openai_base_url()),
        json!({"model": "special"}),
    )
    .await;
    assert_eq!(reply_text(body), "for special");
    let (_, _, body) = post(
        &format!("{}/chat/completions", a.openai_base_url()),
        json!({"model": "special"}),
    )
    .await;
    assert_eq!(reply_text(body), "general");
    assert_eq!(script.remaining(), 0);
    a.set_fallback(Some(Reply::text("again")));
    for _ in 0..2 {
        let (_, _, body) = post(
            &format!("{}/chat/completions", b.openai_base_url()),
            json!({"model": "x"}),
        )
        .await;
        assert_eq!(reply_text(body), "again");
    }
}

#[tokio::test]
async fn delayed_replies_overlap_under_concurrency() {
    let server = ScriptedModelServer::start().await;
    server.set_fallback(Some(
        Reply::text("slow").with_delay(Duration::from_millis(300)),
    ));
    let url = format!("{}/chat/completions", server.openai_base_url());
    let calls = (0..3).map(|_| post(&url, json!({"model": "m"})));
    let results = futures::future::join_all(calls).await;
    assert!(results.iter().all(|(s, _, _)| *s == 200));
    tokio::time::timeout(Duration::from_secs(5), server.wait_for_requests(3))
        .await
        .unwrap();
    assert!(server.max_concurrent_requests() >= 2);
}

#[tokio::test]
async fn dropping_the_server_stops_it() {
    let server = ScriptedModelServer::start().await;
    let addr = server.addr();
    drop(server);
    let mut refused = false;
    for _ in 0..100 {
        if tokio::net::TcpStream::connect(addr).await.is_err() {
            refused = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(refused, "the port still accepts connections after drop");
}
