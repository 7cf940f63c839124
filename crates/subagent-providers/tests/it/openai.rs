//! OpenAI Chat Completions client against the scripted model server over real HTTP.

use crate::common;

use std::time::Duration;

use common::*;
use serde_json::json;
use subagent_spi::chat::{
    ChatMessage, ChatModel, ChatRequest, StopReason, TokenUsage, ToolCall, ToolChoice,
};
use subagent_testkit::{Reply, ScriptedModelServer};

#[tokio::test]
async fn plain_reply_and_what_was_sent() {
    let server = ScriptedModelServer::start().await;
    server.push(Reply::text("Hello there").with_usage(12, 3));
    let model = openai(&server);
    let mut req = user("Say hello");
    req.system = Some("Be brief.".into());
    req.temperature = Some(0.5);
    req.max_tokens = Some(100);
    let reply = model.chat(req).await.unwrap();
    assert_eq!(reply.content, "Hello there");
    assert!(reply.tool_calls.is_empty());
    assert_eq!(reply.stop_reason, StopReason::EndTurn);
    assert_eq!(reply.model, "gpt-test");
    assert_eq!(reply.usage, TokenUsage::new(12, 3));

    let sent = server.requests();
    assert_eq!(sent.len(), 1);
    let r = &sent[0];
    assert_eq!(r.method, "POST");
    assert_eq!(r.path, "/v1/chat/completions");
    assert_eq!(r.header("authorization"), Some("Bearer sk-test-123"));
    assert_eq!(r.header("content-type"), Some("application/json"));
    assert_eq!(r.model(), Some("gpt-test"));
    assert!(!r.is_stream());
    assert_eq!(
        r.body["messages"],
        json!([
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Say hello"}
        ])
    );
    assert_eq!(r.body["max_tokens"], 100);
    assert_eq!(r.body["temperature"], 0.5);
    assert!(r.body.get("tools").is_none());
    assert!(r.body.get("tool_choice").is_none());
}

#[tokio::test]
async fn no_key_sends_no_authorization_and_request_model_overrides() {
    let server = ScriptedModelServer::start().await;
    server.push(Reply::text("ok"));
    let model = subagent_providers::OpenAiModel::builder()
        .provider_name("ollama")
        .base_url(server.openai_base_url())
        .model("qwen2.5")
        .build()
        .unwrap();
    let mut req = user("hi");
    req.model = Some("llama3.2".into());
    let reply = model.chat(req).await.unwrap();
    assert_eq!(reply.model, "llama3.2");
    let r = server.last_request().unwrap();
    assert_eq!(r.header("authorization"), None);
    assert_eq!(r.model(), Some("llama3.2"));
    assert_eq!(model.model_name(), "qwen2.5");
}

#[tokio::test]
async fn streamed_text_arrives_in_deltas_with_usage() {
    let server = ScriptedModelServer::start().await;
    let text = "Grüße aus Köln 🌍, wie geht's?";
    server.push(
        Reply::text(text)
            .with_usage(40, 9)
            .with_cache_tokens(30, 0)
            .with_fragment_chars(2),
    );
    let model = openai(&server);
    let (reply, deltas) = stream(&model, user("hi")).await;
    let reply = reply.unwrap();
    assert_eq!(reply.content, text);
    assert!(
        deltas.len() > 10,
        "expected many deltas, got {}",
        deltas.len()
    );
    assert_eq!(delta_text(&deltas), text);
    assert_eq!(reply.stop_reason, StopReason::EndTurn);
    // prompt_tokens = 70 with 30 cached: input excludes the cache reads.
    assert_eq!(reply.usage, TokenUsage::new(40, 9).with_cache(30, 0));
    let r = server.last_request().unwrap();
    assert!(r.is_stream());
    assert_eq!(r.body["stream_options"], json!({"include_usage": true}));
}

#[tokio::test]
async fn tool_call_fragments_split_across_many_chunks_are_reassembled() {
    let server = ScriptedModelServer::start().await;
    let args0 = json!({"path": "src/main.rs", "note": "naïve — ünïcödé"});
    let args1 = json!({"pattern": "fn\\s+main", "paths": ["a", "b"], "n": 3});
    server.push(
        Reply::text_and_tool_calls(
            "Let me look.",
            vec![("Read", args0.clone()), ("Grep", args1.clone())],
        )
        .with_fragment_chars(3)
        // Re-split every SSE byte into 7-byte writes, paced so the client sees them apart.
        .with_write_size(7)
        .with_chunk_delay(Duration::from_micros(200)),
    );
    let model = openai(&server);
    let mut req = user("look");
    req.tools = vec![tool("Read"), tool("Grep")];
    req.tool_choice = ToolChoice::Tool("Read".into());
    let (reply, deltas) = stream(&model, req).await;
    let reply = reply.unwrap();
    assert_eq!(reply.content, "Let me look.");
    assert_eq!(reply.stop_reason, StopReason::ToolUse);
    assert_eq!(reply.tool_calls.len(), 2);
    assert_eq!(reply.tool_calls[0].name, "Read");
    assert_eq!(reply.tool_calls[0].arguments, args0);
    assert_eq!(reply.tool_calls[1].name, "Grep");
    assert_eq!(reply.tool_calls[1].arguments, args1);
    assert_ne!(reply.tool_calls[0].id, reply.tool_calls[1].id);

    let s = starts(&deltas);
    assert_eq!(s.len(), 2);
    assert_eq!((s[0].0, s[0].2.as_str()), (0, "Read"));
    assert_eq!((s[1].0, s[1].2.as_str()), (1, "Grep"));
    assert_eq!(s[0].1, reply.tool_calls[0].id);
    let streamed: serde_json::Value = serde_json::from_str(&delta_args(&deltas, 0)).unwrap();
    assert_eq!(streamed, args0);
    let fragments = deltas
        .iter()
        .filter(|d| {
            matches!(
                d,
                subagent_spi::chat::ChatDelta::ToolCallArguments { index: 1, .. }
            )
        })
        .count();
    assert!(fragments > 5, "arguments came in {fragments} fragments");

    let r = server.last_request().unwrap();
    assert_eq!(
        r.body["tools"][0],
        json!({
            "type": "function",
            "function": {
                "name": "Read",
                "description": "the Read tool",
                "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}
            }
        })
    );
    assert_eq!(r.tools().len(), 2);
    assert_eq!(
        r.body["tool_choice"],
        json!({"type": "function", "function": {"name": "Read"}})
    );
}

#[tokio::test]
async fn tool_choice_variants_are_sent() {
    let server = ScriptedModelServer::start().await;
    let model = openai(&server);
    for (choice, wire) in [
        (ToolChoice::Auto, json!("auto")),
        (ToolChoice::None, json!("none")),
        (ToolChoice::Required, json!("required")),
    ] {
        server.push(Reply::text("ok"));
        let mut req = user("x");
        req.tools = vec![tool("Read")];
        req.tool_choice = choice;
        model.chat(req).await.unwrap();
        assert_eq!(server.last_request().unwrap().body["tool_choice"], wire);
    }
}

#[tokio::test]
async fn missing_tool_call_ids_are_generated() {
    let server = ScriptedModelServer::start().await;
    let calls = vec![("a", json!({"x": 1})), ("b", json!({}))];
    server.push(Reply::tool_calls(calls.clone()).without_tool_call_ids());
    server.push(Reply::tool_calls(calls).without_tool_call_ids());
    let model = openai(&server);

    let reply = model.chat(user("go")).await.unwrap();
    assert_eq!(reply.tool_calls.len(), 2);
    for c in &reply.tool_calls {
        assert!(c.id.starts_with("call_"), "{}", c.id);
    }
    assert_ne!(reply.tool_calls[0].id, reply.tool_calls[1].id);
    assert_eq!(reply.tool_calls[0].arguments, json!({"x": 1}));

    let (reply, deltas) = stream(&model, user("go")).await;
    let reply = reply.unwrap();
    assert_eq!(reply.tool_calls.len(), 2);
    assert!(reply.tool_calls.iter().all(|c| c.id.starts_with("call_")));
    let s = starts(&deltas);
    assert_eq!(s[0].1, reply.tool_calls[0].id);
    assert_eq!(s[1].1, reply.tool_calls[1].id);
    assert_eq!(reply.tool_calls[1].arguments, json!({}));
}

#[tokio::test]
async fn transcript_with_tool_calls_and_results_is_encoded() {
    let server = ScriptedModelServer::start().await;
    server.push(Reply::text("done"));
    let model = openai(&server);
    let req = {
        let mut v = ChatRequest::default();
        v.messages = vec![
            ChatMessage::user("read a"),
            ChatMessage::Assistant {
                content: String::new(),
                tool_calls: vec![ToolCall::new("call_9", "Read", json!({"path": "a"}))],
            },
            ChatMessage::Tool {
                call_id: "call_9".into(),
                name: "Read".into(),
                content: "no such file".into(),
                is_error: true,
            },
        ];
        v
    };
    model.chat(req).await.unwrap();
    let r = server.last_request().unwrap();
    let msgs = r.messages();
    assert_eq!(msgs.len(), 3);
    assert_eq!(msgs[1]["role"], "assistant");
    assert!(msgs[1]["content"].is_null());
    assert_eq!(msgs[1]["tool_calls"][0]["id"], "call_9");
    assert_eq!(msgs[1]["tool_calls"][0]["type"], "function");
    let args = msgs[1]["tool_calls"][0]["function"]["arguments"]
        .as_str()
        .unwrap();
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(args).unwrap(),
        json!({"path": "a"})
    );
    assert_eq!(
        msgs[2],
        json!({"role": "tool", "tool_call_id": "call_9", "content": "Error: no such file"})
    );
}

#[tokio::test]
async fn finish_reason_variants() {
    let server = ScriptedModelServer::start().await;
    let model = openai(&server);
    assert_stop_reasons(
        &server,
        &model,
        &[
            ("length", StopReason::MaxTokens),
            ("content_filter", StopReason::ContentFilter),
            ("something_new", StopReason::Other("something_new".into())),
            ("stop", StopReason::EndTurn),
        ],
    )
    .await;
}

#[tokio::test]
async fn real_server_quirks_are_tolerated_non_streamed() {
    let server = ScriptedModelServer::start().await;
    // llama.cpp / vLLM style: extra fields, arguments as an object and as an empty string,
    // no ids, null content, function_call finish reason.
    let body = json!({
        "id": "x", "object": "chat.completion", "created": 1, "model": "local-gguf",
        "choices": [{
            "index": 0,
            "message": {
                "role": "assistant",
                "content": null,
                "reasoning_content": "thinking...",
                "tool_calls": [
                    {"type": "function", "function": {"name": "a", "arguments": {"k": [1, 2]}}},
                    {"id": "", "type": "function", "function": {"name": "b", "arguments": ""}}
                ]
            },
            "finish_reason": "function_call"
        }],
        "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7},
        "timings": {"prompt_n": 5, "predicted_per_second": 42.0}
    });
    server.push(Reply::raw(200, "application/json", body.to_string()));
    let reply = openai(&server).chat(user("q")).await.unwrap();
    assert_eq!(reply.model, "local-gguf");
    assert_eq!(reply.content, "");
    assert_eq!(reply.stop_reason, StopReason::ToolUse);
    assert_eq!(reply.tool_calls[0].arguments, json!({"k": [1, 2]}));
    assert_eq!(reply.tool_calls[1].arguments, json!({}));
    assert!(reply.tool_calls.iter().all(|c| c.id.starts_with("call_")));
    assert_eq!(reply.usage.input_tokens, 5);
}

#[tokio::test]
async fn real_server_quirks_are_tolerated_streamed() {
    // CRLF framing, a keep-alive comment, reasoning_content deltas, null content, a chunk
    // without finish_reason key, no [DONE] but a finish_reason (some servers), timings.
    let sse = concat!(
        ": keep-alive\r\n\r\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":null,\"reasoning_content\":\"hm\"}}]}\r\n\r\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"4\"},\"finish_reason\":null}],\"timings\":{\"a\":1}}\r\n\r\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"2\"}}]}\r\n\r\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}],\"model\":\"m2\"}\r\n\r\n",
    );
    let (reply, deltas) = stream_raw_sse(sse, openai).await;
    let reply = reply.unwrap();
    assert_eq!(reply.content, "42");
    assert_eq!(delta_text(&deltas), "42");
    assert_eq!(reply.stop_reason, StopReason::EndTurn);
    assert_eq!(reply.model, "m2");
}

#[tokio::test]
async fn server_ignoring_stream_flag_still_works() {
    let server = ScriptedModelServer::start().await;
    let body = json!({
        "model": "m",
        "choices": [{"message": {"role": "assistant", "content": "whole"}, "finish_reason": "stop"}]
    });
    server.push(Reply::raw(200, "application/json", body.to_string()));
    let (reply, deltas) = stream(&openai(&server), user("q")).await;
    assert_eq!(reply.unwrap().content, "whole");
    assert_eq!(delta_text(&deltas), "whole");
}

#[tokio::test]
async fn truncated_stream_is_a_clear_error() {
    let (reply, deltas) = stream_raw_sse(
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"par\"}}]}\n\n",
        openai,
    )
    .await;
    let err = reply.unwrap_err();
    assert!(
        matches!(err, subagent_spi::ModelError::BadResponse { .. }),
        "{err:?}"
    );
    assert!(err.to_string().contains("closed before"), "{err}");
    assert_eq!(delta_text(&deltas), "par");
}

/// Tool calls a local model wrote as text (the three forms small models use) become tool calls
/// when the setting is on and tools were offered, streamed or not; with it off, or with
/// `tool_choice: none`, or with no tools offered, the text stays text.
#[tokio::test]
async fn tool_calls_written_as_text_are_recovered_when_asked() {
    let server = ScriptedModelServer::start().await;
    let forms = [
        r#"{"name": "Read", "arguments": {"path": "a.txt"}}"#,
        "```json\n{\"name\": \"Read\", \"arguments\": {\"path\": \"a.txt\"}}\n```",
        "<tool_call>\n{\"name\": \"Read\", \"arguments\": {\"path\": \"a.txt\"}}\n</tool_call>",
    ];
    let on = subagent_providers::OpenAiModel::builder()
        .base_url(server.openai_base_url())
        .model("local")
        .text_tool_calls(true)
        .build()
        .unwrap();
    assert!(on.recovers_text_tool_calls());
    let with_tools = || {
        let mut req = user("read a.txt");
        req.tools = vec![tool("Read")];
        req
    };
    for text in forms {
        server.push(Reply::text(text));
        let reply = on.chat(with_tools()).await.unwrap();
        assert_eq!(reply.tool_calls.len(), 1, "{text}");
        assert_eq!(reply.tool_calls[0].name, "Read");
        assert_eq!(reply.tool_calls[0].arguments, json!({"path": "a.txt"}));
        assert_eq!(reply.stop_reason, StopReason::ToolUse);
        assert_eq!(reply.content, "");
        server.push(Reply::text(text));
        let (reply, _) = stream(&on, with_tools()).await;
        let reply = reply.unwrap();
        assert_eq!(reply.tool_calls.len(), 1, "streamed: {text}");
        assert_eq!(reply.tool_calls[0].arguments, json!({"path": "a.txt"}));
    }
    // Not recovered: no tools offered, tool_choice none, the setting off (the default).
    server.push(Reply::text(forms[0]));
    assert!(on.chat(user("x")).await.unwrap().tool_calls.is_empty());
    server.push(Reply::text(forms[0]));
    let mut none = with_tools();
    none.tool_choice = ToolChoice::None;
    assert!(on.chat(none).await.unwrap().tool_calls.is_empty());
    let off = openai(&server);
    assert!(!off.recovers_text_tool_calls());
    server.push(Reply::text(forms[0]));
    let reply = off.chat(with_tools()).await.unwrap();
    assert!(reply.tool_calls.is_empty());
    assert_eq!(reply.content, forms[0]);
}

/// Specs for local servers recover text tool calls by default; a remote one does not; the
/// variable overrides both ways.
#[tokio::test]
async fn local_specs_recover_text_tool_calls_by_default() {
    let server = ScriptedModelServer::start().await;
    let spec = format!("openai-compatible:local@{}", server.openai_base_url());
    let call = r#"{"name": "Read", "arguments": {"path": "a.txt"}}"#;
    let run = |env: &'static [(&'static str, &'static str)]| {
        let model = subagent_providers::model_from_spec_with_env(&spec, &|k| {
            env.iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        })
        .unwrap();
        server.push(Reply::text(call));
        async move {
            let mut req = user("read a.txt");
            req.tools = vec![tool("Read")];
            model.chat(req).await.unwrap().tool_calls.len()
        }
    };
    assert_eq!(run(&[]).await, 1, "127.0.0.1 is local: on");
    assert_eq!(
        run(&[(subagent_providers::TEXT_TOOL_CALLS_VAR, "off")]).await,
        0
    );
    assert!(!subagent_providers::is_local_url(
        "https://api.example.com/v1"
    ));
}

/// `?temperature=<t>` on a spec is sent with every request that sets none; a request's own
/// temperature wins; without it no temperature is sent (the server's default applies).
#[tokio::test]
async fn a_spec_temperature_is_sent_unless_the_request_sets_one() {
    let server = ScriptedModelServer::start().await;
    let base = server.openai_base_url();
    let none = |_: &str| None;
    let from_spec =
        |spec: String| subagent_providers::model_from_spec_with_env(&spec, &none).unwrap();
    let zero = from_spec(format!("openai-compatible:local@{base}?temperature=0"));
    server.push(Reply::text("a"));
    zero.chat(user("hi")).await.unwrap();
    let mut own = user("hi");
    own.temperature = Some(0.7);
    server.push(Reply::text("b"));
    zero.chat(own).await.unwrap();
    let plain = from_spec(format!("openai-compatible:local@{base}"));
    server.push(Reply::text("c"));
    plain.chat(user("hi")).await.unwrap();
    let sent = server.requests();
    assert_eq!(sent[0].body["temperature"], 0.0);
    assert_eq!(sent[1].body["temperature"], 0.7);
    assert!(
        sent[2].body.get("temperature").is_none(),
        "{}",
        sent[2].body
    );
}

#[tokio::test]
async fn a_server_refusing_prompt_cache_key_is_asked_again_without_it_and_never_again() {
    let server = ScriptedModelServer::start().await;
    server.push(Reply::error_message(
        400,
        "Unrecognized request argument supplied: prompt_cache_key",
    ));
    server.push(Reply::text("first"));
    server.push(Reply::text("second"));
    let model = openai(&server);
    let scoped = || user("hi").with_cache_scope(subagent_spi::CacheScope::new("sa-0123"));
    assert_eq!(model.chat(scoped()).await.unwrap().content, "first");
    let (reply, _) = stream(&model, scoped()).await;
    assert_eq!(reply.unwrap().content, "second");
    let sent = server.requests();
    assert_eq!(sent.len(), 3);
    assert_eq!(sent[0].body["prompt_cache_key"], "sa-0123");
    assert!(sent[1].body.get("prompt_cache_key").is_none(), "the retry");
    assert!(sent[2].body.get("prompt_cache_key").is_none(), "and after");
    // Any other 400 is the caller's: no retry.
    server.push(Reply::error_message(400, "messages: too long"));
    let other = openai(&server);
    assert!(other.chat(scoped()).await.is_err());
    assert_eq!(server.requests().len(), 4);
}
