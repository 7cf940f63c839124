//! The scripted model server's context window, stalled and cut streams.

use std::time::Duration;

use serde_json::json;
use subagent_testkit::{Reply, ScriptedModelServer};

#[tokio::test]
async fn a_request_over_the_window_is_refused_and_counted() {
    let server = ScriptedModelServer::start().await;
    server.push(Reply::text("small enough"));
    server.push(Reply::text("never sent"));
    server.set_context_window(Some(50));
    let url = format!("{}/chat/completions", server.openai_base_url());
    let client = reqwest::Client::new();
    let small = json!({"model": "m", "messages": [{"role": "user", "content": "hi"}]});
    let resp = client.post(&url).json(&small).send().await.unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    let big = json!({"model": "m", "messages": [{"role": "user", "content": "x".repeat(400)}]});
    let resp = client.post(&url).json(&big).send().await.unwrap();
    assert_eq!(resp.status().as_u16(), 400);
    let text = resp.text().await.unwrap();
    assert!(text.contains("context_length_exceeded"), "{text}");
    assert_eq!(
        server.remaining(),
        1,
        "no reply was taken for the refused request"
    );
    let reqs = server.requests();
    assert_eq!(server.max_prompt_tokens(), reqs[1].prompt_tokens());
    assert!(reqs[1].prompt_tokens() > 100 && reqs[0].prompt_tokens() < 50);
}

#[tokio::test]
async fn streams_can_hang_or_be_cut() {
    let server = ScriptedModelServer::start().await;
    server.push(Reply::text("hello there").with_hang_after(2));
    server.push(Reply::text("hello there").with_cut_after(2));
    let url = format!("{}/chat/completions", server.openai_base_url());
    let body = json!({"model": "m", "stream": true, "messages": []});
    let client = reqwest::Client::new();

    let mut resp = client.post(&url).json(&body).send().await.unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    for _ in 0..2 {
        assert!(resp.chunk().await.unwrap().is_some());
    }
    let next = tokio::time::timeout(Duration::from_millis(300), resp.chunk()).await;
    assert!(next.is_err(), "nothing more comes: {next:?}");

    let mut resp = client.post(&url).json(&body).send().await.unwrap();
    let mut got = Vec::new();
    let end = loop {
        match resp.chunk().await {
            Ok(Some(c)) => got.push(c),
            Ok(None) => break "clean end",
            Err(_) => break "broken off",
        }
    };
    assert_eq!(end, "broken off");
    assert_eq!(got.len(), 2, "{got:?}");
}
