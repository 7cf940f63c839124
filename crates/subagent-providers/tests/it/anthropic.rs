//! Anthropic Messages client against the scripted model server over real HTTP.

use crate::common;

use std::time::Duration;

use common::*;
use serde_json::json;
use subagent_providers::{AnthropicModel, PromptCaching};
use subagent_spi::ModelError;
use subagent_spi::chat::{
    ChatMessage, ChatModel, ChatRequest, StopReason, TokenUsage, ToolCall, ToolChoice,
};
use subagent_testkit::{Reply, ScriptedModelServer};

#[tokio::test]
async fn plain_reply_headers_system_and_usage_with_cache_tokens() {
    let server = ScriptedModelServer::start().await;
    server.push(
        Reply::text("Bonjour")
            .with_usage(21, 4)
            .with_cache_tokens(1000, 200),
    );
    let model = anthropic(&server);
    let mut req = user("Say hello in French");
    req.system = Some("You are terse.".into());
    let reply = model.chat(req).await.unwrap();
    assert_eq!(reply.content, "Bonjour");
    assert_eq!(reply.stop_reason, StopReason::EndTurn);
    assert_eq!(reply.model, "claude-test");
    // The SPI counts what was written to the cache as input too.
    assert_eq!(reply.usage, TokenUsage::new(221, 4).with_cache(1000, 200));

    let r = server.last_request().unwrap();
    assert_eq!(r.path, "/v1/messages");
    assert_eq!(r.header("x-api-key"), Some("sk-ant-test"));
    assert_eq!(r.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(r.header("authorization"), None);
    assert_eq!(r.model(), Some("claude-test"));
    // Prompt caching is on: breakpoints on the system prompt and on the last message.
    let cc = json!({"type": "ephemeral"});
    assert_eq!(
        r.body["system"],
        json!([{"type": "text", "text": "You are terse.", "cache_control": cc}])
    );
    assert_eq!(r.body["max_tokens"], 8192);
    assert_eq!(
        r.body["messages"],
        json!([{"role": "user", "content": [
            {"type": "text", "text": "Say hello in French", "cache_control": cc}
        ]}])
    );
    assert!(!r.is_stream());
}

#[tokio::test]
async fn explicit_max_tokens_is_kept() {
    let server = ScriptedModelServer::start().await;
    server.push(Reply::text("ok"));
    let mut req = user("x");
    req.max_tokens = Some(256);
    anthropic(&server).chat(req).await.unwrap();
    assert_eq!(server.last_request().unwrap().body["max_tokens"], 256);
}

#[tokio::test]
async fn streamed_text_and_tool_use_with_input_json_deltas() {
    let server = ScriptedModelServer::start().await;
    let args = json!({"path": "docs/ü.md", "limit": 20, "nested": {"a": [true, null]}});
    server.push(
        Reply::text_and_tool_calls("Reading the file…", vec![("Read", args.clone())])
            .with_usage(50, 17)
            .with_cache_tokens(7, 3)
            .with_fragment_chars(2)
            .with_write_size(11)
            .with_chunk_delay(Duration::from_micros(200)),
    );
    let model = anthropic(&server);
    let mut req = user("read it");
    req.tools = vec![tool("Read")];
    let (reply, deltas) = stream(&model, req).await;
    let reply = reply.unwrap();
    assert_eq!(reply.content, "Reading the file…");
    assert_eq!(delta_text(&deltas), "Reading the file…");
    assert_eq!(reply.stop_reason, StopReason::ToolUse);
    assert_eq!(reply.tool_calls.len(), 1);
    assert_eq!(reply.tool_calls[0].name, "Read");
    assert!(reply.tool_calls[0].id.starts_with("toolu_"));
    assert_eq!(reply.tool_calls[0].arguments, args);
    let s = starts(&deltas);
    assert_eq!(
        s,
        vec![(0, reply.tool_calls[0].id.clone(), "Read".to_string())]
    );
    let streamed: serde_json::Value = serde_json::from_str(&delta_args(&deltas, 0)).unwrap();
    assert_eq!(streamed, args);
    assert_eq!(reply.usage, TokenUsage::new(53, 17).with_cache(7, 3));

    let r = server.last_request().unwrap();
    assert!(r.is_stream());
    assert_eq!(
        r.body["tools"],
        json!([{
            "name": "Read",
            "description": "the Read tool",
            "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}},
            // No system prompt: the tool list ends the cached prefix.
            "cache_control": {"type": "ephemeral"}
        }])
    );
    assert_eq!(r.body["tool_choice"], json!({"type": "auto"}));
}

#[tokio::test]
async fn several_tool_calls_without_ids_streamed_and_not() {
    let server = ScriptedModelServer::start().await;
    let calls = vec![("a", json!({"x": 1})), ("b", json!({}))];
    server.push(Reply::tool_calls(calls.clone()).without_tool_call_ids());
    server.push(Reply::tool_calls(calls).without_tool_call_ids());
    let model = anthropic(&server);
    let reply = model.chat(user("go")).await.unwrap();
    assert_eq!(reply.tool_calls.len(), 2);
    assert!(reply.tool_calls.iter().all(|c| !c.id.is_empty()));
    let (reply, deltas) = stream(&model, user("go")).await;
    let reply = reply.unwrap();
    assert_eq!(reply.tool_calls[0].arguments, json!({"x": 1}));
    assert_eq!(reply.tool_calls[1].arguments, json!({}));
    assert_eq!(starts(&deltas).len(), 2);
    assert_ne!(reply.tool_calls[0].id, reply.tool_calls[1].id);
}

#[tokio::test]
async fn tool_results_are_grouped_into_one_user_message() {
    let server = ScriptedModelServer::start().await;
    server.push(Reply::text("thanks"));
    let req = {
        let mut v = ChatRequest::default();
        v.system = Some("sys".into());
        v.messages = vec![
            ChatMessage::user("do two things"),
            ChatMessage::Assistant {
                content: "ok".into(),
                tool_calls: vec![
                    ToolCall::new("toolu_1", "a", json!({"q": 1})),
                    ToolCall::new("toolu_2", "b", json!({})),
                ],
            },
            ChatMessage::Tool {
                call_id: "toolu_1".into(),
                name: "a".into(),
                content: "one".into(),
                is_error: false,
            },
            ChatMessage::Tool {
                call_id: "toolu_2".into(),
                name: "b".into(),
                content: "failed: boom".into(),
                is_error: true,
            },
        ];
        v.tools = vec![tool("a"), tool("b")];
        v.tool_choice = ToolChoice::Tool("b".into());
        v
    };
    // The wire shape without cache breakpoints (see `cache_breakpoints_...` for those).
    let model = AnthropicModel::builder()
        .base_url(server.base_url())
        .api_key("sk-ant-test")
        .model("claude-test")
        .prompt_caching(PromptCaching::Off)
        .build()
        .unwrap();
    model.chat(req).await.unwrap();
    let r = server.last_request().unwrap();
    assert_eq!(r.body["tool_choice"], json!({"type": "tool", "name": "b"}));
    assert_eq!(
        r.body["messages"],
        json!([
            {"role": "user", "content": "do two things"},
            {"role": "assistant", "content": [
                {"type": "text", "text": "ok"},
                {"type": "tool_use", "id": "toolu_1", "name": "a", "input": {"q": 1}},
                {"type": "tool_use", "id": "toolu_2", "name": "b", "input": {}}
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "one"},
                {"type": "tool_result", "tool_use_id": "toolu_2", "content": "failed: boom", "is_error": true}
            ]}
        ])
    );
}

#[tokio::test]
async fn stop_reason_variants() {
    let server = ScriptedModelServer::start().await;
    let model = anthropic(&server);
    assert_stop_reasons(
        &server,
        &model,
        &[
            ("max_tokens", StopReason::MaxTokens),
            ("stop_sequence", StopReason::StopSequence),
            ("refusal", StopReason::ContentFilter),
            ("pause_turn", StopReason::Other("pause_turn".into())),
        ],
    )
    .await;
}

#[tokio::test]
async fn thinking_blocks_and_pings_are_skipped() {
    let sse = concat!(
        "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"model\":\"claude-x\",\"usage\":{\"input_tokens\":3,\"output_tokens\":1}}}\n\n",
        "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"thinking\",\"thinking\":\"\"}}\n\n",
        "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\"hmm\"}}\n\n",
        "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"signature_delta\",\"signature\":\"sig\"}}\n\n",
        "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
        "event: ping\ndata: {\"type\": \"ping\"}\n\n",
        "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
        "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"text_delta\",\"text\":\"answer\"}}\n\n",
        "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":1}\n\n",
        "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":12}}\n\n",
        "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
    );
    let (reply, deltas) = stream_raw_sse(sse, anthropic).await;
    let reply = reply.unwrap();
    assert_eq!(reply.content, "answer");
    assert_eq!(delta_text(&deltas), "answer");
    assert_eq!(reply.model, "claude-x");
    assert_eq!(
        (reply.usage.input_tokens, reply.usage.output_tokens),
        (3, 12)
    );
}

#[tokio::test]
async fn error_event_mid_stream_is_reported() {
    let server = ScriptedModelServer::start().await;
    let sse = concat!(
        "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"model\":\"c\",\"usage\":{\"input_tokens\":3,\"output_tokens\":1}}}\n\n",
        "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n",
    );
    server.push(Reply::raw_sse(sse));
    let (reply, _) = stream(&anthropic(&server), user("q")).await;
    match reply.unwrap_err() {
        err @ ModelError::Rejected { .. } => {
            assert_eq!(subagent_providers::http_status(&err), Some(529));
            assert!(err.to_string().contains("Overloaded"), "{err}");
        }
        other => panic!("expected an HTTP 529 error, got {other:?}"),
    }
    // Mid-stream errors are not retried: output may already have been shown.
    assert_eq!(server.request_count(), 1);
}
