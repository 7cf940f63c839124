//! A small Server-Sent Events reader: turns a byte stream into the `data` payloads of its
//! events, with a bound on the size of one event.

use std::time::Duration;

use bytes::Bytes;
use futures::{Stream, StreamExt};

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

struct State<S> {
    source: S,
    buf: Vec<u8>,
    data: String,
    has_data: bool,
    done: bool,
    limit: usize,
    idle: Option<Duration>,
}

/// Reads `data:` payloads from an SSE byte stream. Comments (`: keep-alive`), `event:`, `id:`
/// and `retry:` lines are skipped; multi-line data is joined with `\n`; an event is emitted at
/// each blank line (and at the end of the stream, if one is pending). With `idle`, a silence
/// of that long (no bytes at all) ends the stream with [`SseError::Idle`] (needs a tokio
/// runtime with time).
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
        buf: Vec::new(),
        data: String::new(),
        has_data: false,
        done: false,
        limit,
        idle,
    };
    futures::stream::unfold(state, |mut st| async move {
        loop {
            // Process complete lines already buffered.
            while let Some(pos) = st.buf.iter().position(|b| *b == b'\n') {
                let mut line: Vec<u8> = st.buf.drain(..=pos).collect();
                line.pop();
                if line.last() == Some(&b'\r') {
                    line.pop();
                }
                if line.is_empty() {
                    if st.has_data {
                        st.has_data = false;
                        let ev = std::mem::take(&mut st.data);
                        return Some((Ok(ev), st));
                    }
                    continue;
                }
                let line = String::from_utf8_lossy(&line);
                if let Some(rest) = line.strip_prefix("data") {
                    let value = match rest.strip_prefix(':') {
                        Some(v) => v.strip_prefix(' ').unwrap_or(v),
                        // `data` with no colon is an empty data line.
                        None if rest.is_empty() => "",
                        // Another field whose name starts with `data`.
                        None => continue,
                    };
                    if st.has_data {
                        st.data.push('\n');
                    }
                    st.data.push_str(value);
                    st.has_data = true;
                    if st.data.len() > st.limit {
                        st.done = true;
                        st.buf.clear();
                        st.data.clear();
                        st.has_data = false;
                        return Some((Err(SseError::TooLarge(st.limit)), st));
                    }
                }
            }
            if st.done {
                if st.has_data {
                    st.has_data = false;
                    let ev = std::mem::take(&mut st.data);
                    return Some((Ok(ev), st));
                }
                return None;
            }
            if st.buf.len() > st.limit {
                st.done = true;
                st.buf.clear();
                st.data.clear();
                st.has_data = false;
                return Some((Err(SseError::TooLarge(st.limit)), st));
            }
            let next = match st.idle {
                None => st.source.next().await,
                Some(d) => match tokio::time::timeout(d, st.source.next()).await {
                    Ok(n) => n,
                    Err(_) => {
                        st.done = true;
                        st.buf.clear();
                        st.data.clear();
                        st.has_data = false;
                        return Some((Err(SseError::Idle(d)), st));
                    }
                },
            };
            match next {
                Some(Ok(chunk)) => st.buf.extend_from_slice(&chunk),
                Some(Err(e)) => {
                    st.done = true;
                    st.buf.clear();
                    st.has_data = false;
                    return Some((Err(SseError::Source(e)), st));
                }
                None => {
                    st.done = true;
                    if !st.buf.is_empty() {
                        // Treat a trailing partial line as complete.
                        st.buf.push(b'\n');
                    }
                }
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert_eq!(
            got,
            vec![
                Ok("{\"a\":1}".to_string()),
                Ok("l1\nl2".to_string()),
                Ok("tail".to_string())
            ]
        );
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

        /// How the bytes are split into chunks does not change the events.
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
            crlf in any::<bool>(),
            cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..8),
        ) {
            let nl = if crlf { "\r\n" } else { "\n" };
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
