//! Streaming parse throughput on a recorded-shaped OpenAI Chat Completions SSE stream (~1 MB of
//! text and tool-call fragment chunks), fed in 1,460-byte pieces as a socket delivers them.
//!
//! `sse_framing`: the SSE parser alone (`subagent-sse`); `sse_framing_sse_stream_crate`: the same
//! with the `sse-stream` crate, as a baseline (it copies each piece into `Bytes`, as a socket
//! would hand them over). `openai_decode`: SSE + per-chunk JSON decoding + reply
//! assembly, i.e. everything `OpenAiModel::chat_stream` does with the bytes.

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use subagent_providers::bench_internals::OpenAiStreamDecoder;
use subagent_sse::SseParser;

const WORDS: &[&str] = &[
    "the",
    "model",
    "streams",
    "tokens",
    "over",
    "HTTP",
    "and",
    "each",
    "chunk",
    "carries",
    "a",
    "small",
    "delta",
    "of",
    "text,",
    "often",
    "one",
    "word",
    "or",
    "less.",
    "Rust",
    "parses",
    "them",
    "quickly",
    "naïve",
    "café",
    "Grüße",
    "—",
    "\"quoted\"",
    "line\n",
    "`code`",
    "🌍",
];

/// One chunk exactly as OpenAI frames it.
fn chunk(seq: usize, delta: &str, finish: &str) -> String {
    format!(
        "data: {{\"id\":\"chatcmpl-BXz9kq3Lr7cV2mN8pQ4sT6uW1yA0\",\"object\":\"chat.completion.chunk\",\"created\":1747000000,\"model\":\"gpt-4.1-2025-04-14\",\"service_tier\":\"default\",\"system_fingerprint\":\"fp_b3f1157249\",\"choices\":[{{\"index\":0,\"delta\":{delta},\"logprobs\":null,\"finish_reason\":{finish}}}],\"usage\":null,\"obfuscation\":\"x{seq:05}\"}}\n\n"
    )
}

fn json_str(s: &str) -> String {
    serde_json::to_string(s).unwrap()
}

/// A realistic stream of about `target` bytes: several assistant turns' worth of text deltas,
/// then tool calls whose arguments arrive in small fragments, then usage and `[DONE]`.
fn recorded_stream(target: usize) -> Vec<u8> {
    let mut out = String::with_capacity(target + 4096);
    out.push_str(&chunk(
        0,
        "{\"role\":\"assistant\",\"content\":\"\",\"refusal\":null}",
        "null",
    ));
    let mut seq = 1;
    let mut w = 0usize;
    // ~85% text, then tool calls.
    while out.len() < target * 85 / 100 {
        let word = WORDS[w % WORDS.len()];
        w = w.wrapping_mul(31).wrapping_add(7) % 1_000_003;
        let token = if seq % 3 == 0 {
            word.to_string()
        } else {
            format!(" {word}")
        };
        out.push_str(&chunk(
            seq,
            &format!("{{\"content\":{}}}", json_str(&token)),
            "null",
        ));
        seq += 1;
    }
    let mut call = 0;
    while out.len() < target {
        let head = format!(
            "{{\"tool_calls\":[{{\"index\":{call},\"id\":\"call_Xk2P9mQ{call:04}\",\"type\":\"function\",\"function\":{{\"name\":\"Grep\",\"arguments\":\"\"}}}}]}}"
        );
        out.push_str(&chunk(seq, &head, "null"));
        seq += 1;
        let args = format!(
            "{{\"pattern\":\"fn\\\\s+handle_{call}\",\"path\":\"crates/subagent-providers/src\",\"glob\":\"*.rs\",\"output_mode\":\"content\",\"-n\":true}}"
        );
        let mut rest = args.as_str();
        while !rest.is_empty() {
            let mut n = 4.min(rest.len());
            while !rest.is_char_boundary(n) {
                n += 1;
            }
            let (frag, tail) = rest.split_at(n);
            rest = tail;
            let d = format!(
                "{{\"tool_calls\":[{{\"index\":{call},\"function\":{{\"arguments\":{}}}}}]}}",
                json_str(frag)
            );
            out.push_str(&chunk(seq, &d, "null"));
            seq += 1;
        }
        call += 1;
    }
    out.push_str(&chunk(seq, "{}", "\"tool_calls\""));
    out.push_str("data: {\"id\":\"chatcmpl-BXz9kq3Lr7cV2mN8pQ4sT6uW1yA0\",\"object\":\"chat.completion.chunk\",\"created\":1747000000,\"model\":\"gpt-4.1-2025-04-14\",\"choices\":[],\"usage\":{\"prompt_tokens\":1834,\"completion_tokens\":9120,\"total_tokens\":10954,\"prompt_tokens_details\":{\"cached_tokens\":1024,\"audio_tokens\":0},\"completion_tokens_details\":{\"reasoning_tokens\":0}}}\n\n");
    out.push_str("data: [DONE]\n\n");
    out.into_bytes()
}

const PIECE: usize = 1460;

fn bench(c: &mut Criterion) {
    let stream = recorded_stream(1 << 20);
    // Sanity: the stream decodes into a full reply.
    {
        let mut dec = OpenAiStreamDecoder::new("bench", "m");
        for piece in stream.chunks(PIECE) {
            dec.feed(piece, &|_| {}).unwrap();
        }
        let reply = dec.finish().unwrap();
        assert!(!reply.content.is_empty() && !reply.tool_calls.is_empty());
    }

    let mut g = c.benchmark_group("sse_parse");
    g.throughput(Throughput::Bytes(stream.len() as u64));
    g.sample_size(30);
    g.measurement_time(Duration::from_secs(6));

    g.bench_function("sse_framing", |b| {
        b.iter(|| {
            let mut p = SseParser::new();
            let mut n = 0usize;
            for piece in stream.chunks(PIECE) {
                p.feed(black_box(piece), |ev| n += ev.data.len()).unwrap();
            }
            p.finish(|ev| n += ev.data.len()).unwrap();
            black_box(n)
        })
    });

    // Baseline: the maintained `sse-stream` crate over the same pieces (unbounded, allocates per
    // field; see subagent-sse's crate docs for why we keep our own).
    g.bench_function("sse_framing_sse_stream_crate", |b| {
        b.iter(|| {
            let pieces = stream
                .chunks(PIECE)
                .map(|p| Ok::<_, std::io::Error>(bytes::Bytes::copy_from_slice(black_box(p))));
            let events = sse_stream::SseStream::from_bytes_stream(futures::stream::iter(pieces));
            let n = futures::executor::block_on(futures::StreamExt::fold(
                events,
                0usize,
                |n, ev| async move { n + ev.unwrap().data.map_or(0, |d| d.len()) },
            ));
            black_box(n)
        })
    });

    g.bench_function("openai_decode", |b| {
        b.iter(|| {
            let mut dec = OpenAiStreamDecoder::new("bench", "m");
            for piece in stream.chunks(PIECE) {
                dec.feed(black_box(piece), &|d| {
                    black_box(d);
                })
                .unwrap();
            }
            black_box(dec.finish().unwrap())
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
