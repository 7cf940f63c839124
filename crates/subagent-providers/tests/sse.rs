//! SSE decoding when the bytes arrive split anywhere: over real HTTP one byte per write. (Every
//! split point of a recorded stream is tested on the internal decoders, in
//! `src/stream_tests.rs`; the SSE parser itself in `subagent-sse`.)

mod common;

use std::time::Duration;

use common::*;
use serde_json::json;
use subagent_testkit::{Reply, ScriptedModelServer};

const TEXT: &str = "Zürich → 東京 🚄 «ok»";

#[tokio::test]
async fn openai_stream_one_byte_per_write_over_http() {
    let server = ScriptedModelServer::start().await;
    server.push(
        Reply::text_and_tool_calls(TEXT, vec![("Edit", json!({"old": "é", "new": "😀"}))])
            .with_write_size(1)
            .with_chunk_delay(Duration::from_micros(20)),
    );
    let (reply, deltas) = stream(&openai(&server), user("q")).await;
    let reply = reply.unwrap();
    assert_eq!(reply.content, TEXT);
    assert_eq!(delta_text(&deltas), TEXT);
    assert_eq!(
        reply.tool_calls[0].arguments,
        json!({"old": "é", "new": "😀"})
    );
}

#[tokio::test]
async fn anthropic_stream_one_byte_per_write_over_http() {
    let server = ScriptedModelServer::start().await;
    server.push(
        Reply::text_and_tool_calls(TEXT, vec![("Edit", json!({"old": "é", "new": "😀"}))])
            .with_write_size(1)
            .with_chunk_delay(Duration::from_micros(20)),
    );
    let (reply, deltas) = stream(&anthropic(&server), user("q")).await;
    let reply = reply.unwrap();
    assert_eq!(reply.content, TEXT);
    assert_eq!(delta_text(&deltas), TEXT);
    assert_eq!(
        reply.tool_calls[0].arguments,
        json!({"old": "é", "new": "😀"})
    );
}
