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

/// Pieces of SSE syntax (field names, separators, every line ending) and text, so the parser's
/// states are reached often.
const SSE_PIECES: &[&[u8]] = &[
    b"data: ",
    b"data:",
    b"data",
    b"event: e",
    b"id: 7",
    b"id: \0",
    b"retry: 10",
    b":",
    b" ",
    b"\n",
    b"\r\n",
    b"\r",
    "\u{e9}\u{1F600}".as_bytes(),
];

/// Bytes made of [`SSE_PIECES`] and noise.
fn sse_bytes() -> impl Strategy<Value = Vec<u8>> {
    let piece = prop_oneof![
        // one piece in fourteen is noise, as when each piece was its own alternative
        13 => proptest::sample::select(SSE_PIECES).prop_map(<[u8]>::to_vec),
        1 => proptest::collection::vec(any::<u8>(), 0..12),
    ];
    proptest::collection::vec(piece, 0..32).prop_map(|v| v.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn sse_parser_never_panics_and_chunking_does_not_matter(bytes in sse_bytes(), cut in 0usize..64) {
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
