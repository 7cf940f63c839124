//! The A2A client's event streams: the workspace's one SSE decoder ([`subagent_sse::SseParser`])
//! wrapped in a `futures::Stream` of `data` payloads, with a bound on the size of one event and
//! an optional idle timeout.

use std::collections::VecDeque;
use std::time::Duration;

use bytes::Bytes;
use futures::{Stream, StreamExt};
use subagent_sse::SseParser;

/// What went wrong while reading an event stream.
#[derive(Debug)]
pub(crate) enum SseError<E> {
    /// The underlying byte stream failed.
    Source(E),
    /// One event grew past the limit.
    TooLarge(usize),
    /// No bytes at all (not even a keep-alive comment) arrived for this long.
    Idle(Duration),
}

struct State<S, E> {
    source: S,
    parser: SseParser,
    /// Events decoded from the last chunk, not yet handed out.
    ready: VecDeque<String>,
    /// The error that ends the stream, handed out after the events decoded before it.
    error: Option<SseError<E>>,
    done: bool,
    idle: Option<Duration>,
}

/// Reads `data:` payloads from an SSE byte stream, with the WHATWG rules of
/// [`subagent_sse`] (LF, CRLF and lone-CR line endings; comments, `event:`, `id:` and `retry:`
/// skipped; multi-line data joined with `\n`); an event is emitted at each blank line (and at
/// the end of the stream, if one is pending). A line or an event larger than `limit` bytes ends
/// the stream with [`SseError::TooLarge`]. With `idle`, a silence of that long (no bytes at all)
/// ends the stream with [`SseError::Idle`] (needs a tokio runtime with time).
pub(crate) fn data_events<S, E>(
    source: S,
    limit: usize,
    idle: Option<Duration>,
) -> impl Stream<Item = Result<String, SseError<E>>> + Send
where
    S: Stream<Item = Result<Bytes, E>> + Send + Unpin,
    E: Send,
{
    let state = State {
        source,
        parser: SseParser::with_max_event_bytes(limit),
        ready: VecDeque::new(),
        error: None,
        done: false,
        idle,
    };
    futures::stream::unfold(state, move |mut st| async move {
        loop {
            if let Some(ev) = st.ready.pop_front() {
                return Some((Ok(ev), st));
            }
            if let Some(error) = st.error.take() {
                return Some((Err(error), st));
            }
            if st.done {
                return None;
            }
            let next = match st.idle {
                None => st.source.next().await,
                Some(d) => match tokio::time::timeout(d, st.source.next()).await {
                    Ok(n) => n,
                    Err(_) => {
                        st.done = true;
                        return Some((Err(SseError::Idle(d)), st));
                    }
                },
            };
            let ready = &mut st.ready;
            let parsed = match next {
                Some(Ok(chunk)) => st
                    .parser
                    .feed(&chunk, |ev| ready.push_back(ev.data.to_owned())),
                Some(Err(e)) => {
                    st.done = true;
                    return Some((Err(SseError::Source(e)), st));
                }
                None => {
                    st.done = true;
                    // A trailing line and event without their terminators still count.
                    st.parser.finish(|ev| ready.push_back(ev.data.to_owned()))
                }
            };
            if parsed.is_err() {
                st.done = true;
                st.error = Some(SseError::TooLarge(limit));
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The decoded events `data`, as [`run`] gives them.
    fn events(data: &[&str]) -> Vec<Result<String, String>> {
        data.iter().map(|d| Ok(d.to_string())).collect()
    }

    fn run(chunks: Vec<&'static str>, limit: usize) -> Vec<Result<String, String>> {
        let src = futures::stream::iter(
            chunks
                .into_iter()
                .map(|c| Ok::<_, std::io::Error>(Bytes::from_static(c.as_bytes()))),
        );
        let out: Vec<_> = futures::executor::block_on(data_events(src, limit, None).collect());
        out.into_iter()
            .map(|r| {
                r.map_err(|e| match e {
                    SseError::Source(e) => e.to_string(),
                    SseError::TooLarge(n) => format!("too large {n}"),
                    SseError::Idle(d) => format!("idle {d:?}"),
                })
            })
            .collect()
    }

    #[test]
    fn splits_events_across_chunks_and_skips_comments() {
        let got = run(
            vec![
                ": keep-alive\n\nda",
                "ta: {\"a\":1}\r\n\r\nevent: x\ndata: l1\ndata:l2\n\n",
                "data: tail",
            ],
            1024,
        );
        assert_eq!(got, events(&["{\"a\":1}", "l1\nl2", "tail"]));
    }

    #[tokio::test]
    async fn silence_past_the_idle_limit_is_an_error() {
        let src =
            futures::stream::iter([Ok::<_, std::io::Error>(Bytes::from_static(b"data: 1\n\n"))])
                .chain(futures::stream::pending());
        let mut events = Box::pin(data_events(src, 1024, Some(Duration::from_millis(200))));
        assert_eq!(events.next().await.unwrap().ok(), Some("1".to_string()));
        match events.next().await {
            Some(Err(SseError::Idle(d))) => assert_eq!(d, Duration::from_millis(200)),
            other => panic!("expected an idle error, got {:?}", other.map(|r| r.is_ok())),
        }
        assert!(events.next().await.is_none());
    }

    #[test]
    fn lone_cr_ends_lines_like_lf_and_crlf() {
        let got = run(
            vec!["data: a\rdata: b\r\rdata: c\r\n\r\n: note\rdata: d\n\n"],
            1024,
        );
        assert_eq!(got, events(&["a\nb", "c", "d"]));
    }

    #[test]
    fn lone_cr_at_a_chunk_end_is_not_doubled_by_a_following_lf() {
        // `\r` then `\n` in the next chunk is one CRLF, not two line ends (which would dispatch
        // `a` early); a `\r` followed by another `\r` is two.
        let got = run(
            vec!["data: a\r", "\ndata: b\r", "\r", "data: c\r", "\r"],
            1024,
        );
        assert_eq!(got, events(&["a\nb", "c"]));
    }

    #[test]
    fn events_before_an_oversized_one_are_delivered_first() {
        let got = run(vec!["data: ok\r\rdata: 0123456789\r\r"], 8);
        assert_eq!(
            got,
            vec![Ok("ok".to_string()), Err("too large 8".to_string())]
        );
    }

    #[test]
    fn an_oversized_event_is_an_error() {
        let got = run(vec!["data: 0123456789\n\n"], 4);
        assert_eq!(got, vec![Err("too large 4".to_string())]);
    }
}

#[cfg(test)]
mod props {
    use super::*;
    use proptest::prelude::*;

    fn decode(chunks: Vec<Vec<u8>>, limit: usize) -> Vec<Result<String, SseError<std::io::Error>>> {
        let src = futures::stream::iter(
            chunks
                .into_iter()
                .map(|c| Ok::<_, std::io::Error>(Bytes::from(c))),
        );
        futures::executor::block_on(data_events(src, limit, None).collect())
    }

    fn sse_byte() -> impl Strategy<Value = u8> {
        prop_oneof![
            any::<u8>(),
            Just(b'\n'),
            Just(b'\r'),
            Just(b':'),
            Just(b' '),
            Just(b'd'),
            Just(b'a'),
            Just(b't'),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig {
            cases: 128,
            failure_persistence: None,
            ..ProptestConfig::default()
        })]

        /// Any bytes, any chunking, any limit: no panic, events within the limit, at most one
        /// error and nothing after it.
        #[test]
        fn never_panics_and_respects_the_limit(
            chunks in prop::collection::vec(prop::collection::vec(sse_byte(), 0..64), 0..16),
            limit in 1usize..96,
        ) {
            let out = decode(chunks, limit);
            for (i, r) in out.iter().enumerate() {
                match r {
                    Ok(ev) => prop_assert!(ev.len() <= limit, "event of {} > {}", ev.len(), limit),
                    Err(SseError::TooLarge(n)) => {
                        prop_assert_eq!(*n, limit);
                        prop_assert_eq!(i, out.len() - 1, "nothing after an error");
                    }
                    Err(_) => prop_assert!(false, "unexpected error kind"),
                }
            }
        }

        /// How the bytes are split into chunks does not change the events, with LF, CRLF or
        /// lone-CR line endings (a cut between `\r` and `\n` included).
        #[test]
        fn chunking_does_not_change_events(
            lines in prop::collection::vec(
                prop_oneof![
                    "data: [^\r\n]{0,12}",
                    "data:[^\r\n]{0,6}",
                    ": [^\r\n]{0,6}",
                    "event: x",
                    Just(String::new()),
                    "[^\r\n]{0,8}",
                ],
                0..24,
            ),
            ending in prop::sample::select(vec!["\n", "\r\n", "\r"]),
            cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..8),
        ) {
            let nl = ending;
            let doc: Vec<u8> = lines.iter().flat_map(|l| format!("{l}{nl}").into_bytes()).collect();
            let whole = decode(vec![doc.clone()], 1 << 20);
            let mut at: Vec<usize> = cuts.iter().map(|c| c.index(doc.len() + 1)).collect();
            at.sort_unstable();
            let mut chunks = Vec::new();
            let mut prev = 0;
            for a in at {
                chunks.push(doc[prev..a].to_vec());
                prev = a;
            }
            chunks.push(doc[prev..].to_vec());
            let split = decode(chunks, 1 << 20);
            let ok = |v: Vec<Result<String, SseError<std::io::Error>>>| -> Vec<String> {
                v.into_iter().map(|r| r.unwrap_or_else(|_| "<error>".into())).collect()
            };
            prop_assert_eq!(ok(whole), ok(split));
        }
    }
}
