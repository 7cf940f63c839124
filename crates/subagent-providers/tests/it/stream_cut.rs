//! Streams cut off mid-answer: Anthropic continues from the text so far (a prefill), OpenAI
//! Chat Completions (no prefill) fails the call as before.

use crate::common;

use common::*;
use serde_json::json;
use subagent_spi::chat::StopReason;
use subagent_testkit::{Reply, ScriptedModelServer};

#[tokio::test]
async fn a_cut_anthropic_stream_continues_from_its_text() {
    let server = ScriptedModelServer::start().await;
    // message_start, ping, content_block_start, "The a", "nswer", then the connection breaks.
    server.push(
        Reply::text("The answer is forty-two.")
            .with_usage(10, 9)
            .with_cut_after(5),
    );
    server.push(Reply::text(" is forty-two.").with_usage(30, 6));
    let model = anthropic(&server);
    let (reply, deltas) = stream(&model, user("What is the answer?")).await;
    let reply = reply.expect("continued");
    assert_eq!(reply.content, "The answer is forty-two.");
    assert_eq!(
        delta_text(&deltas),
        "The answer is forty-two.",
        "no text twice, none lost"
    );
    assert_eq!(reply.stop_reason, StopReason::EndTurn);
    assert_eq!(reply.usage.input_tokens, 40, "both attempts count");

    let reqs = server.requests();
    assert_eq!(reqs.len(), 2);
    let last = reqs[1].messages().last().unwrap().clone();
    assert_eq!(last["role"], "assistant");
    assert!(
        last["content"].to_string().contains("The answer"),
        "the text so far is the prefill: {last}"
    );
}

#[tokio::test]
async fn a_stream_cut_inside_a_tool_call_is_not_continued() {
    let server = ScriptedModelServer::start().await;
    server.push(
        Reply::text_and_tool_calls("Reading", vec![("Read", json!({"path": "a.txt"}))])
            .with_cut_after(7),
    );
    server.push(Reply::text("never asked for"));
    let mut req = user("read a.txt");
    req.tools = vec![tool("Read")];
    let (reply, _) = stream(&anthropic(&server), req).await;
    assert!(reply.is_err(), "{reply:?}");
    assert_eq!(server.request_count(), 1);
}

#[tokio::test]
async fn a_cut_openai_stream_fails_as_before() {
    let server = ScriptedModelServer::start().await;
    server.push(Reply::text("The answer is forty-two.").with_cut_after(3));
    server.push(Reply::text("never asked for"));
    let (reply, _) = stream(&openai(&server), user("What is the answer?")).await;
    assert!(reply.is_err(), "{reply:?}");
    assert_eq!(server.request_count(), 1, "Chat Completions has no prefill");
}
