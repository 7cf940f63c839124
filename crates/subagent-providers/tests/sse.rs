//! SSE decoding when the bytes arrive split anywhere: over real HTTP one byte per write, and
//! through the public decoders at every split point of a recorded stream.

mod common;

use std::time::Duration;

use common::*;
use serde_json::json;
use subagent_providers::{AnthropicStreamDecoder, OpenAiStreamDecoder};
use subagent_spi::chat::ChatResponse;
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

/// The raw SSE body the scripted server sends for `reply`.
async fn raw_body(path: &str, reply: Reply, body: serde_json::Value) -> Vec<u8> {
    let server = ScriptedModelServer::start().await;
    server.push(reply);
    let resp = reqwest::Client::new()
        .post(format!("{}{path}", server.base_url()))
        .json(&body)
        .send()
        .await
        .unwrap();
    resp.bytes().await.unwrap().to_vec()
}

fn decode_openai(pieces: &[&[u8]]) -> ChatResponse {
    let mut dec = OpenAiStreamDecoder::new("t", "m");
    for p in pieces {
        dec.feed(p, &|_| {}).unwrap();
    }
    dec.finish().unwrap()
}

fn decode_anthropic(pieces: &[&[u8]]) -> ChatResponse {
    let mut dec = AnthropicStreamDecoder::new("m");
    for p in pieces {
        dec.feed(p, &|_| {}).unwrap();
    }
    dec.finish().unwrap()
}

#[tokio::test]
async fn every_two_way_split_of_recorded_streams_decodes_the_same() {
    let reply =
        || Reply::text_and_tool_calls(TEXT, vec![("T", json!({"k": "ü"}))]).with_usage(3, 4);
    let body = json!({"model": "m", "stream": true, "stream_options": {"include_usage": true}});
    let oa = raw_body("/v1/chat/completions", reply(), body.clone()).await;
    // CRLF framing too.
    let oa_crlf: Vec<u8> = String::from_utf8(oa.clone())
        .unwrap()
        .replace('\n', "\r\n")
        .into_bytes();
    let an = raw_body("/v1/messages", reply(), body).await;
    let whole_oa = decode_openai(&[&oa]);
    assert_eq!(whole_oa.content, TEXT);
    assert_eq!(whole_oa.usage.output_tokens, 4);
    for i in 0..=oa.len() {
        assert_eq!(
            decode_openai(&[&oa[..i], &oa[i..]]),
            whole_oa,
            "split at {i}"
        );
    }
    let whole_crlf = decode_openai(&[&oa_crlf]);
    assert_eq!(whole_crlf.content, TEXT);
    for i in 0..=oa_crlf.len() {
        assert_eq!(
            decode_openai(&[&oa_crlf[..i], &oa_crlf[i..]]),
            whole_crlf,
            "crlf split at {i}"
        );
    }
    let whole_an = decode_anthropic(&[&an]);
    assert_eq!(whole_an.content, TEXT);
    for i in 0..=an.len() {
        assert_eq!(
            decode_anthropic(&[&an[..i], &an[i..]]),
            whole_an,
            "split at {i}"
        );
    }
}
