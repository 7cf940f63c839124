//! The stream decoders at every split point of a recorded stream, and on arbitrary bytes
//! (moved here from the integration tests when the decoders became internal).

use proptest::prelude::*;
use serde_json::json;
use subagent_spi::chat::ChatResponse;
use subagent_testkit::{Reply, ScriptedModelServer};

use crate::anthropic::AnthropicStreamDecoder;
use crate::openai::OpenAiStreamDecoder;

const TEXT: &str = "Zürich → 東京 🚄 «ok»";

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
    let whole_crlf = decode_openai(&[&oa_crlf]);
    assert_eq!(whole_crlf.content, TEXT);
    let whole_an = decode_anthropic(&[&an]);
    assert_eq!(whole_an.content, TEXT);
    type Decode = fn(&[&[u8]]) -> ChatResponse;
    for (name, bytes, decode, whole) in [
        ("openai", &oa, decode_openai as Decode, &whole_oa),
        ("openai crlf", &oa_crlf, decode_openai, &whole_crlf),
        ("anthropic", &an, decode_anthropic, &whole_an),
    ] {
        for i in 0..=bytes.len() {
            assert_eq!(
                decode(&[&bytes[..i], &bytes[i..]]),
                *whole,
                "{name}: split at {i}"
            );
        }
    }
}

/// Bytes that look like an event stream often enough to reach deep states.
fn streamish() -> impl Strategy<Value = Vec<u8>> {
    let piece = prop_oneof![
        Just(b"data: ".to_vec()),
        Just(b"event: message_delta\n".to_vec()),
        Just(b"\n".to_vec()),
        Just(b"\r\n".to_vec()),
        Just(b"\r".to_vec()),
        Just(b": keep-alive\n".to_vec()),
        Just(b"{\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"}}]}".to_vec()),
        Just(b"{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"x\"}}".to_vec()),
        Just(b"[DONE]".to_vec()),
        proptest::collection::vec(any::<u8>(), 0..16),
    ];
    proptest::collection::vec(piece, 0..24).prop_map(|v| v.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn stream_decoders_never_panic(bytes in streamish(), cut in 0usize..64) {
        let at = cut.min(bytes.len());
        let noop = |_| {};
        let mut openai = OpenAiStreamDecoder::new("openai", "m");
        if openai.feed(&bytes[..at], &noop).is_ok() && openai.feed(&bytes[at..], &noop).is_ok() {
            let _ = openai.finish();
        }
        let mut anthropic = AnthropicStreamDecoder::new("m");
        if anthropic.feed(&bytes[..at], &noop).is_ok() && anthropic.feed(&bytes[at..], &noop).is_ok() {
            let _ = anthropic.finish();
        }
    }
}
