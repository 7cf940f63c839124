//! # subagent-sse
//!
//! The one Server-Sent Events (`text/event-stream`) decoder of `subagents`, shared by the LLM
//! providers (`subagent-providers`, model streams) and the A2A client (`subagent-a2a`, task
//! streams). Those two crates do not depend on each other; this tiny crate (no runtime, no
//! HTTP, only `memchr` and `thiserror`) is what they share.
//!
//! Feed [`SseParser`] bytes as they come off the socket, in chunks split anywhere (inside a
//! line, between `\r` and `\n`, inside a UTF-8 sequence); it calls back once per complete event
//! with borrowed [`SseEvent`]s (no allocation per event). It follows the WHATWG rules that
//! matter for model and agent APIs: lines end in `\n`, `\r\n` or a lone `\r`; lines starting
//! with `:` are comments; `field: value` drops one space after the colon; a line without a
//! colon is a field with an empty value; several `data:` lines join with `\n`; a blank line
//! dispatches the event; an event with no `data` is dropped; `retry` and unknown fields are
//! ignored; an `id` containing NUL is ignored. Invalid UTF-8 is replaced, not fatal. One line
//! and one event's data are bounded ([`SseParser::with_max_event_bytes`]), so a hostile peer
//! cannot grow memory without limit.
//!
//! ```
//! use subagent_sse::SseParser;
//!
//! let mut parser = SseParser::new();
//! let mut seen = Vec::new();
//! for piece in [&b"event: ping\nda"[..], b"ta: {\"a\":", b"1}\r\rdata: 2\r\n\r\n: comment\n"] {
//!     parser
//!         .feed(piece, |ev| seen.push((ev.event.to_string(), ev.data.to_string())))
//!         .unwrap();
//! }
//! assert_eq!(
//!     seen,
//!     vec![
//!         ("ping".to_string(), "{\"a\":1}".to_string()),
//!         (String::new(), "2".to_string()),
//!     ]
//! );
//! ```
//!
//! ## Why our own decoder rather than a crate
//!
//! We looked at the two maintained decoders on crates.io (both MIT OR Apache-2.0):
//!
//! - `sse-stream` (0.2, already in our tree under `rmcp`): no bound on a line or an event (a
//!   peer that never sends a newline grows the buffer until memory runs out), and stricter than
//!   the WHATWG rules in ways real servers trip over: a line without a colon, an unknown field,
//!   a repeated `event:`/`id:` line or invalid UTF-8 end the stream with an error; it needs an
//!   `http_body::Body`, and it allocates a `String` per field.
//! - `eventsource-stream` (0.2, last release 2022): no bound on line or event size either, and
//!   a `nom` dependency for a grammar of five rules.
//!
//! Neither lets us cap memory, which our standards require of every input read from the
//! network, so wrapping one would still need our own line accounting in front of it. It is
//! also about 4x faster than `sse-stream`: the measurement is in `docs/perf/subagent-sse.md`.
//!
//! The A2A client wraps the parser in a `futures::Stream` with an idle timeout; the providers
//! feed it from their response loop. Both get lone-CR handling and the same size cap.

/// Default cap on one line or one event's data, in bytes (16 MiB).
pub const DEFAULT_MAX_EVENT_BYTES: usize = 16 * 1024 * 1024;

/// One dispatched event, borrowed from the parser's buffers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SseEvent<'a> {
    /// The `event:` field; empty when the event had none (the SSE default type is `message`).
    pub event: &'a str,
    /// The `data:` lines joined with `\n`.
    pub data: &'a str,
    /// The `id:` field of this event, if it had one.
    pub id: Option<&'a str>,
}

/// The stream broke the parser's limits.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SseError {
    /// A line or an event's data grew past the cap.
    #[error("server-sent event exceeds {limit} bytes")]
    TooLarge {
        /// The cap in bytes.
        limit: usize,
    },
}

/// Incremental SSE parser; see the [crate docs](crate).
#[derive(Debug)]
pub struct SseParser {
    /// Bytes of an unfinished line carried over from the previous chunk.
    line: Vec<u8>,
    /// The data of the event being built.
    data: String,
    event: String,
    id: String,
    has_data: bool,
    has_id: bool,
    /// The previous chunk ended with `\r`: a `\n` starting the next chunk belongs to it.
    skip_lf: bool,
    max: usize,
}

impl Default for SseParser {
    fn default() -> Self {
        Self::new()
    }
}

impl SseParser {
    /// A parser with the [default size cap](DEFAULT_MAX_EVENT_BYTES).
    pub fn new() -> Self {
        Self::with_max_event_bytes(DEFAULT_MAX_EVENT_BYTES)
    }

    /// A parser refusing lines or events larger than `max` bytes.
    pub fn with_max_event_bytes(max: usize) -> Self {
        Self {
            line: Vec::new(),
            data: String::new(),
            event: String::new(),
            id: String::new(),
            has_data: false,
            has_id: false,
            skip_lf: false,
            max,
        }
    }

    /// Parse the next chunk, calling `on_event` for every event it completes.
    pub fn feed(
        &mut self,
        mut chunk: &[u8],
        mut on_event: impl FnMut(SseEvent<'_>),
    ) -> Result<(), SseError> {
        if self.skip_lf {
            if let Some(rest) = chunk.strip_prefix(b"\n") {
                chunk = rest;
                self.skip_lf = false;
            } else if !chunk.is_empty() {
                self.skip_lf = false;
            }
        }
        while let Some(pos) = memchr::memchr2(b'\n', b'\r', chunk) {
            let terminator = chunk[pos];
            let mut next = pos + 1;
            if terminator == b'\r' {
                if next < chunk.len() {
                    if chunk[next] == b'\n' {
                        next += 1;
                    }
                } else {
                    self.skip_lf = true;
                }
            }
            if self.line.is_empty() {
                self.process_line(&chunk[..pos], &mut on_event)?;
            } else {
                if self.line.len() + pos > self.max {
                    return Err(SseError::TooLarge { limit: self.max });
                }
                let mut line = std::mem::take(&mut self.line);
                line.extend_from_slice(&chunk[..pos]);
                let r = self.process_line(&line, &mut on_event);
                line.clear();
                self.line = line;
                r?;
            }
            chunk = &chunk[next..];
        }
        if !chunk.is_empty() {
            if self.line.len() + chunk.len() > self.max {
                return Err(SseError::TooLarge { limit: self.max });
            }
            self.line.extend_from_slice(chunk);
        }
        Ok(())
    }

    /// The stream ended: finish a last line and event that lacked their terminators (lenient
    /// towards servers that close without a final blank line).
    pub fn finish(&mut self, mut on_event: impl FnMut(SseEvent<'_>)) -> Result<(), SseError> {
        if !self.line.is_empty() {
            let line = std::mem::take(&mut self.line);
            self.process_line(&line, &mut on_event)?;
        }
        self.dispatch(&mut on_event);
        self.skip_lf = false;
        Ok(())
    }

    fn process_line(
        &mut self,
        line: &[u8],
        on_event: &mut impl FnMut(SseEvent<'_>),
    ) -> Result<(), SseError> {
        if line.is_empty() {
            self.dispatch(on_event);
            return Ok(());
        }
        if line[0] == b':' {
            return Ok(());
        }
        let (name, value) = match memchr::memchr(b':', line) {
            Some(i) => {
                let v = &line[i + 1..];
                (&line[..i], v.strip_prefix(b" ").unwrap_or(v))
            }
            None => (line, &b""[..]),
        };
        match name {
            b"data" => {
                if self.data.len() + value.len() + 1 > self.max {
                    return Err(SseError::TooLarge { limit: self.max });
                }
                if self.has_data {
                    self.data.push('\n');
                }
                push_utf8(&mut self.data, value);
                self.has_data = true;
            }
            b"event" => {
                self.event.clear();
                push_utf8(&mut self.event, value);
            }
            // Per the spec, an id containing NUL is ignored.
            b"id" if !value.contains(&0) => {
                self.id.clear();
                push_utf8(&mut self.id, value);
                self.has_id = true;
            }
            _ => {} // `retry` and unknown fields: ignored.
        }
        Ok(())
    }

    fn dispatch(&mut self, on_event: &mut impl FnMut(SseEvent<'_>)) {
        if self.has_data {
            on_event(SseEvent {
                event: &self.event,
                data: &self.data,
                id: self.has_id.then_some(self.id.as_str()),
            });
        }
        self.data.clear();
        self.event.clear();
        self.has_data = false;
        self.has_id = false;
    }
}

fn push_utf8(out: &mut String, bytes: &[u8]) {
    match std::str::from_utf8(bytes) {
        Ok(s) => out.push_str(s),
        Err(_) => out.push_str(&String::from_utf8_lossy(bytes)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn collect(chunks: &[&[u8]]) -> Vec<(String, String, Option<String>)> {
        let mut p = SseParser::new();
        let mut out = Vec::new();
        for c in chunks {
            p.feed(c, |e| {
                out.push((e.event.into(), e.data.into(), e.id.map(String::from)))
            })
            .unwrap();
        }
        p.finish(|e| out.push((e.event.into(), e.data.into(), e.id.map(String::from))))
            .unwrap();
        out
    }

    fn data_only(chunks: &[&[u8]]) -> Vec<String> {
        collect(chunks).into_iter().map(|(_, d, _)| d).collect()
    }

    /// Every split of `input` into two and three pieces yields the same events as the whole.
    fn assert_split_invariant(input: &[u8]) {
        let whole = collect(&[input]);
        for i in 0..=input.len() {
            assert_eq!(collect(&[&input[..i], &input[i..]]), whole, "split at {i}");
            for j in i..=input.len() {
                assert_eq!(
                    collect(&[&input[..i], &input[i..j], &input[j..]]),
                    whole,
                    "split at {i},{j}"
                );
            }
        }
        let bytes: Vec<&[u8]> = input.chunks(1).collect();
        assert_eq!(collect(&bytes), whole, "byte by byte");
    }

    #[test]
    fn lf_crlf_and_cr_line_endings() {
        assert_eq!(
            data_only(&[b"data: a\n\ndata: b\r\n\r\ndata: c\r\rdata: d\n\n"]),
            ["a", "b", "c", "d"]
        );
    }

    #[test]
    fn multi_line_data_joins_with_newline() {
        assert_eq!(
            data_only(&[b"data: one\ndata:two\ndata:  three\n\n"]),
            ["one\ntwo\n three"]
        );
    }

    #[test]
    fn comments_ids_event_names_and_unknown_fields() {
        let evs =
            collect(&[b": keep-alive\nretry: 10\nid: 7\nevent: delta\nfoo: bar\ndata: x\n\n"]);
        assert_eq!(evs, vec![("delta".into(), "x".into(), Some("7".into()))]);
    }

    #[test]
    fn events_without_data_are_dropped() {
        assert_eq!(
            collect(&[b"event: ping\n\n\n\ndata: y\n\n"]),
            vec![(String::new(), "y".into(), None)]
        );
    }

    #[test]
    fn field_without_colon_and_empty_data() {
        assert_eq!(data_only(&[b"data\n\ndata:\n\n"]), ["", ""]);
    }

    #[test]
    fn crlf_split_between_cr_and_lf() {
        assert_eq!(
            data_only(&[b"data: a\r", b"\n\r", b"\ndata: b\r\n\r\n"]),
            ["a", "b"]
        );
    }

    #[test]
    fn utf8_split_inside_a_sequence() {
        let text = "data: h\u{e9}llo \u{1F600} w\u{f6}rld\n\n".as_bytes();
        assert_split_invariant(text);
        assert_eq!(data_only(&[text]), ["h\u{e9}llo \u{1F600} w\u{f6}rld"]);
    }

    #[test]
    fn every_split_of_a_mixed_stream_is_equivalent() {
        assert_split_invariant(
            b": c\r\nevent: e\r\ndata: {\"x\":1}\r\n\r\ndata: a\rdata: b\r\rid: 1\ndata: [DONE]\n\n",
        );
    }

    #[test]
    fn missing_final_blank_line_is_flushed_on_finish() {
        assert_eq!(data_only(&[b"data: [DONE]"]), ["[DONE]"]);
        assert_eq!(data_only(&[b"data: [DONE]\n"]), ["[DONE]"]);
    }

    #[test]
    fn oversized_line_is_an_error() {
        let mut p = SseParser::with_max_event_bytes(8);
        let err = p.feed(b"data: 0123456789", |_| {}).unwrap_err();
        assert_eq!(err, SseError::TooLarge { limit: 8 });
        let mut p = SseParser::with_max_event_bytes(8);
        p.feed(b"data: 01", |_| {}).unwrap();
        assert!(p.feed(b"23456789\n", |_| {}).is_err());
    }

    #[test]
    fn invalid_utf8_is_replaced_not_fatal() {
        assert_eq!(data_only(&[b"data: a\xffb\n\n"]), ["a\u{fffd}b"]);
    }
}
