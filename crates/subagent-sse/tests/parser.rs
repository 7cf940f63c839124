//! The parser through its public API: pieces split anywhere, and arbitrary bytes (these came
//! from `subagent-providers`' tests when the parser moved here).

use proptest::prelude::*;
use subagent_sse::SseParser;

#[test]
fn parser_handles_multiline_data_comments_and_ids_across_pieces() {
    let input = b": hello\r\nid: 42\r\nevent: update\r\ndata: line one\r\ndata: line two\r\n\r\ndata: {\"x\":\"\xc3\xa9\"}\n\n";
    let mut seen = Vec::new();
    let mut p = SseParser::new();
    for piece in input.chunks(3) {
        p.feed(piece, |e| {
            seen.push((
                e.event.to_string(),
                e.data.to_string(),
                e.id.map(str::to_string),
            ))
        })
        .unwrap();
    }
    p.finish(|_| panic!("nothing left")).unwrap();
    assert_eq!(
        seen,
        vec![
            (
                "update".into(),
                "line one\nline two".into(),
                Some("42".into())
            ),
            (String::new(), "{\"x\":\"é\"}".into(), None),
        ]
    );
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
    fn sse_parser_never_panics_and_chunking_does_not_matter(bytes in streamish(), cut in 0usize..64) {
        let whole = {
            let mut p = SseParser::with_max_event_bytes(4096);
            let mut seen = Vec::new();
            let r = p.feed(&bytes, |e| seen.push((e.event.to_string(), e.data.to_string())));
            let f = r.and_then(|()| p.finish(|e| seen.push((e.event.to_string(), e.data.to_string()))));
            (f.is_ok(), seen)
        };
        let split = {
            let mut p = SseParser::with_max_event_bytes(4096);
            let mut seen = Vec::new();
            let at = cut.min(bytes.len());
            let mut r = p.feed(&bytes[..at], |e| seen.push((e.event.to_string(), e.data.to_string())));
            if r.is_ok() {
                r = p.feed(&bytes[at..], |e| seen.push((e.event.to_string(), e.data.to_string())));
            }
            let f = r.and_then(|()| p.finish(|e| seen.push((e.event.to_string(), e.data.to_string()))));
            (f.is_ok(), seen)
        };
        prop_assert_eq!(whole, split);
    }
}
