//! Throughput, latency, memory and streaming of the A2A server, side by side with a bare axum
//! handler (and, when `A2A_LF_URL` names one, the official Rust SDK's server), in one session
//! (see `docs/perf/subagent-a2a-server.md` and `docs/PERFORMANCE.md`).
//!
//! ```text
//! cargo bench -p subagent-a2a --bench server_throughput   # 3 rounds, 10 s / 5 s runs
//! ROUNDS=3 DURATION=10s A2A_LF_URL=http://127.0.0.1:3999/ \
//!   cargo bench -p subagent-a2a --bench server_throughput
//! ```
//!
//! Load comes from `oha` (`cargo install oha --locked`; found on PATH or in ~/.cargo/bin).
//! Without oha only the SSE measurement runs. Our server runs as configured in production:
//! a bearer token required (every request carries it), the default limits, and a W3C
//! `traceparent` on every request (the bare handler and the SDK get the same headers). Each
//! round runs bare, ours, [sdk, sdk,] ours, bare (ABBA, so load drifting during a round weighs
//! on all alike): 64 connections for DURATION each (throughput, p99), then bare and ours with 1
//! connection for DURATION_1C (p50 latency); the figures are the medians of the per-round
//! ratios. Our server answers `SendMessage` from an echo agent replying with a Message (no
//! task stored); the bare handler returns the very same bytes; the SDK column is a minimal
//! echo server built on `a2a-server-lf` outside this repository (its URL from `A2A_LF_URL`;
//! the column is skipped, and says so, without it). Resident memory is read from
//! /proc/self/status after each of our runs. Finally one SSE client receives 1,000 streamed
//! events (artifact chunks) from one task, 20 times; the median is printed.
//!
//! A third server, the *parsing ceiling* (`common::parsing_ceiling`: a bare handler that checks
//! the bearer token, parses the JSON-RPC envelope and typed params, and serializes the reply —
//! the least any A2A server must do), runs twice per round inside the ABBA order (bare, ours,
//! parsing, [sdk, sdk,] parsing, ours, bare), so ours can be read against the protocol's own
//! JSON work as well as against fixed bytes. With `SERVE_ONLY=1` the bench only serves the three
//! and prints their URLs, for `perf stat -p` / `strace -c -p` under a load of your own.

/// The allocator `subagents serve` runs with (subagents-cli's default feature `jemalloc`), for
/// both servers of the comparison. Remove these lines to measure with glibc's malloc (the
/// perf doc has the figures of both).
#[cfg(not(target_env = "msvc"))]
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use futures::StreamExt;
use subagent_a2a::server::{A2aServer, AgentInfo, AgentMount, ServerAuth};

mod common;
use common::{BODY, Echo, parsing_ceiling};

fn oha() -> Option<PathBuf> {
    let home = std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo/bin/oha"));
    let found = std::env::var_os("PATH").and_then(|p| {
        std::env::split_paths(&p)
            .map(|d| d.join("oha"))
            .find(|c| c.exists())
    });
    found.or(home.filter(|h| h.exists()))
}

/// The bearer token our server requires (sent to every server).
const TOKEN: &str = "bench-token";
/// A W3C trace context sent with every request.
const TRACEPARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

struct Load {
    rps: f64,
    p50_ms: f64,
    p99_ms: f64,
}

fn run_oha(oha: &PathBuf, url: &str, conns: u32, duration: &str) -> Option<Load> {
    let out = Command::new(oha)
        .args(["--no-tui", "--output-format", "json", "-z", duration])
        .args(["-c", &conns.to_string(), "-m", "POST"])
        .args([
            "-H",
            "content-type: application/json",
            "-H",
            "A2A-Version: 1.0",
            "-H",
            &format!("authorization: Bearer {TOKEN}"),
            "-H",
            &format!("traceparent: {TRACEPARENT}"),
        ])
        .args(["-d", BODY, url])
        .output()
        .ok()?;
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).ok()?;
    let ok = v["statusCodeDistribution"]["200"].as_u64().unwrap_or(0);
    let total: u64 = v["statusCodeDistribution"]
        .as_object()
        .map(|m| m.values().filter_map(|x| x.as_u64()).sum())
        .unwrap_or(0);
    if ok == 0 || ok != total {
        eprintln!("oha: non-200 answers: {}", v["statusCodeDistribution"]);
    }
    Some(Load {
        rps: v["summary"]["requestsPerSec"].as_f64()?,
        p50_ms: v["latencyPercentiles"]["p50"].as_f64()? * 1000.0,
        p99_ms: v["latencyPercentiles"]["p99"].as_f64()? * 1000.0,
    })
}

fn rss_kb() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|n| n.parse().ok())
        })
        .unwrap_or(0)
}

fn two_places(v: &[f64]) -> Vec<f64> {
    v.iter().map(|r| (r * 100.0).round() / 100.0).collect()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    if v.is_empty() { 0.0 } else { v[v.len() / 2] }
}

async fn sse_1000(client: &reqwest::Client, url: &str) -> (Duration, usize) {
    let body = BODY
        .replace("SendMessage", "SendStreamingMessage")
        .replace("hello, agent", "stream-1000");
    let start = Instant::now();
    let resp = client
        .post(url)
        .header("content-type", "application/json")
        .header("A2A-Version", "1.0")
        .header("authorization", format!("Bearer {TOKEN}"))
        .body(body)
        .send()
        .await
        .expect("stream request");
    let mut events = 0usize;
    let mut s = resp.bytes_stream();
    let mut tail = Vec::new();
    while let Some(chunk) = s.next().await {
        let chunk = chunk.expect("chunk");
        tail.extend_from_slice(&chunk);
        // Count complete events (blank-line separated) as they arrive.
        while let Some(pos) = tail.windows(2).position(|w| w == b"\n\n") {
            if tail[..pos].starts_with(b"data:") {
                events += 1;
            }
            tail.drain(..pos + 2);
        }
    }
    (start.elapsed(), events)
}

/// A listener on a free port of 127.0.0.1 and its URL, `http://ADDR/`.
async fn listen() -> (tokio::net::TcpListener, String) {
    let l = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let url = format!("http://{}/", l.local_addr().expect("addr"));
    (l, url)
}

fn main() {
    let rounds: usize = std::env::var("ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3);
    let duration = std::env::var("DURATION").unwrap_or_else(|_| "10s".into());
    let short = std::env::var("DURATION_1C").unwrap_or_else(|_| "5s".into());
    let lf = std::env::var("A2A_LF_URL").ok().filter(|u| !u.is_empty());
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let (ours, bare, parsing) = rt.block_on(async {
        let server = A2aServer::builder()
            .mount(
                AgentMount::new("/", AgentInfo::new("echo", "Echo"), Echo)
                    .with_auth(ServerAuth::bearer(TOKEN)),
            )
            .build()
            .expect("server");
        let (l1, ours) = listen().await;
        tokio::spawn(server.serve(l1, std::future::pending::<()>()));
        // The bare handler returns exactly what our server answers.
        let reply = reqwest::Client::new()
            .post(&ours)
            .header("content-type", "application/json")
            .header("A2A-Version", "1.0")
            .header("authorization", format!("Bearer {TOKEN}"))
            .header("traceparent", TRACEPARENT)
            .body(BODY)
            .send()
            .await
            .expect("probe")
            .bytes()
            .await
            .expect("probe body");
        println!(
            "reply ({} bytes): {}",
            reply.len(),
            String::from_utf8_lossy(&reply)
        );
        let bare_app = axum::Router::new().route(
            "/",
            axum::routing::post(move || {
                let reply = reply.clone();
                async move { ([(http::header::CONTENT_TYPE, "application/json")], reply) }
            }),
        );
        let (l2, bare) = listen().await;
        tokio::spawn(async move { axum::serve(l2, bare_app).await });
        let (l3, parsing) = listen().await;
        tokio::spawn(async move { axum::serve(l3, parsing_ceiling(TOKEN)).await });
        (ours, bare, parsing)
    });
    if std::env::var_os("SERVE_ONLY").is_some() {
        println!("ours {ours} bare {bare} parsing {parsing}");
        rt.block_on(std::future::pending::<()>());
    }
    match &lf {
        Some(url) => {
            let probe = rt.block_on(async {
                reqwest::Client::new()
                    .post(url)
                    .header("content-type", "application/json")
                    .header("A2A-Version", "1.0")
                    .body(BODY)
                    .send()
                    .await
                    .ok()?
                    .text()
                    .await
                    .ok()
            });
            println!("a2a-server-lf at {url} answers: {probe:?}");
        }
        None => {
            println!("A2A_LF_URL not set: the official Rust SDK (a2a-server-lf) column is SKIPPED")
        }
    }

    if let Some(oha) = oha() {
        // Each round runs bare, ours, [sdk, sdk,] ours, bare (ABBA), so a drift in machine
        // load during the round weighs on every side alike; the figure is the median of the
        // per-round ratios.
        let (mut tput_ratios, mut lf_ratios, mut p99_ratios, mut p50_ratios, mut rss) =
            (vec![], vec![], vec![], vec![], vec![]);
        let (mut b_rps, mut o_rps, mut l_rps, mut b_p50, mut o_p50) =
            (vec![], vec![], vec![], vec![], vec![]);
        let (mut b_p99, mut o_p99, mut l_p99) = (vec![], vec![], vec![]);
        let (mut pb_ratios, mut op_ratios) = (vec![], vec![]);
        println!("rss at start: {} KB", rss_kb());
        for round in 1..=rounds {
            let b_a = run_oha(&oha, &bare, 64, &duration).expect("oha bare");
            let o_a = run_oha(&oha, &ours, 64, &duration).expect("oha ours");
            let p_a = run_oha(&oha, &parsing, 64, &duration).expect("oha parsing");
            let l = lf.as_ref().map(|u| {
                let a = run_oha(&oha, u, 64, &duration).expect("oha sdk");
                let b = run_oha(&oha, u, 64, &duration).expect("oha sdk");
                ((a.rps + b.rps) / 2.0, (a.p99_ms + b.p99_ms) / 2.0)
            });
            let p_b = run_oha(&oha, &parsing, 64, &duration).expect("oha parsing");
            let o_b = run_oha(&oha, &ours, 64, &duration).expect("oha ours");
            let b_b = run_oha(&oha, &bare, 64, &duration).expect("oha bare");
            let r = rss_kb();
            let b1_a = run_oha(&oha, &bare, 1, &short).expect("oha bare 1c");
            let o1_a = run_oha(&oha, &ours, 1, &short).expect("oha ours 1c");
            let o1_b = run_oha(&oha, &ours, 1, &short).expect("oha ours 1c");
            let b1_b = run_oha(&oha, &bare, 1, &short).expect("oha bare 1c");
            let (b, o) = ((b_a.rps + b_b.rps) / 2.0, (o_a.rps + o_b.rps) / 2.0);
            let p = (p_a.rps + p_b.rps) / 2.0;
            println!(
                "round {round}: parsing ceiling {:.0}/{:.0} req/s: parsing/bare {:.2}, \
                 ours/parsing {:.2}",
                p_a.rps,
                p_b.rps,
                p / b,
                o / p
            );
            pb_ratios.push(p / b);
            op_ratios.push(o / p);
            let (b99, o99) = (
                (b_a.p99_ms + b_b.p99_ms) / 2.0,
                (o_a.p99_ms + o_b.p99_ms) / 2.0,
            );
            let (b1, o1) = (
                (b1_a.p50_ms + b1_b.p50_ms) / 2.0,
                (o1_a.p50_ms + o1_b.p50_ms) / 2.0,
            );
            let sdk = match l {
                Some((rps, p99)) => {
                    lf_ratios.push(o / rps);
                    l_rps.push(rps);
                    l_p99.push(p99);
                    format!(
                        ", sdk {rps:.0} req/s (p99 {p99:.2} ms), ours/sdk {:.2}",
                        o / rps
                    )
                }
                None => String::new(),
            };
            println!(
                "round {round}: 64c bare {:.0}/{:.0} req/s, ours {:.0}/{:.0} req/s, ratio {:.2} \
                 (p99 bare {b99:.2} ms, ours {o99:.2} ms, ratio {:.2}){sdk}; 1c p50 bare \
                 {:.3}/{:.3} ms, ours {:.3}/{:.3} ms, ratio {:.2}; rss after our runs {} KB",
                b_a.rps,
                b_b.rps,
                o_a.rps,
                o_b.rps,
                o / b,
                o99 / b99,
                b1_a.p50_ms,
                b1_b.p50_ms,
                o1_a.p50_ms,
                o1_b.p50_ms,
                o1 / b1,
                r
            );
            tput_ratios.push(o / b);
            p99_ratios.push(o99 / b99);
            p50_ratios.push(o1 / b1);
            b_rps.push(b);
            o_rps.push(o);
            b_p99.push(b99);
            o_p99.push(o99);
            b_p50.push(b1);
            o_p50.push(o1);
            rss.push(r);
        }
        println!(
            "MEDIAN of {rounds} rounds, 64 connections: bare {:.0} req/s (p99 {:.2} ms), ours \
             {:.0} req/s (p99 {:.2} ms): ours/bare {:.2} (per round {:?}), p99 ours/bare {:.2} \
             (per round {:?})",
            median(b_rps),
            median(b_p99),
            median(o_rps),
            median(o_p99),
            median(tput_ratios.clone()),
            two_places(&tput_ratios),
            median(p99_ratios.clone()),
            two_places(&p99_ratios),
        );
        println!(
            "MEDIAN parsing ceiling: parsing/bare {:.2} (per round {:?}), ours/parsing {:.2} \
             (per round {:?})",
            median(pb_ratios.clone()),
            two_places(&pb_ratios),
            median(op_ratios.clone()),
            two_places(&op_ratios),
        );
        if lf.is_some() {
            println!(
                "MEDIAN sdk (a2a-server-lf): {:.0} req/s (p99 {:.2} ms): ours/sdk {:.2} (per \
                 round {:?})",
                median(l_rps),
                median(l_p99),
                median(lf_ratios.clone()),
                two_places(&lf_ratios),
            );
        } else {
            println!("sdk (a2a-server-lf): SKIPPED (set A2A_LF_URL)");
        }
        println!(
            "MEDIAN 1 connection p50: bare {:.3} ms, ours {:.3} ms, ratio {:.2} (per round \
             {:?}); rss after each round {:?} KB",
            median(b_p50),
            median(o_p50),
            median(p50_ratios.clone()),
            two_places(&p50_ratios),
            rss
        );
    } else {
        println!("oha not found (cargo install oha --locked): skipping the load runs");
    }

    rt.block_on(async {
        let client = reqwest::Client::new();
        let mut times = Vec::new();
        for _ in 0..20 {
            let (t, n) = sse_1000(&client, &ours).await;
            assert_eq!(n, 1003, "task + working + 1000 chunks + completed");
            times.push(t.as_secs_f64() * 1000.0);
        }
        println!(
            "SSE: 1,000 artifact events (+3) to one client: median {:.2} ms, min {:.2} ms, max {:.2} ms",
            median(times.clone()),
            times.iter().cloned().fold(f64::MAX, f64::min),
            times.iter().cloned().fold(0.0, f64::max)
        );
    });
}
