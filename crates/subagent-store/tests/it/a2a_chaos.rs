//! Chaos under load: three `a2a-tck-sut-store` replicas on one PostgreSQL database, clients
//! spreading thousands of tasks, streams and continuations across them, while one replica at a
//! time is killed with SIGKILL and restarted on a timer. At the end every acknowledged task
//! must be readable (none lost), no `input-required` task may have taken two continuations,
//! and every task must be terminal or waiting for input once the dead replicas' leases ran
//! out. The figures (and p99 latency during and outside the kill windows) are printed:
//!
//! ```text
//! eval "$(bash .ci/postgres.sh start /tmp/pg)"
//! cargo test -p subagent-store --features a2a --test it -- a2a_chaos:: --ignored --nocapture
//! ```
//!
//! `SUBAGENTS_CHAOS_SECS` sets how long the load runs (default 60).

#![cfg(feature = "a2a")]

use crate::common;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{Sut, event_state, fresh_postgres_db, message, response, sse_events, state};
use futures::StreamExt;
use serde_json::{Value, json};
use tokio::time::Instant;

const REPLICAS: usize = 3;
/// Concurrent clients.
const WORKERS: usize = 16;
/// The replicas' lease, in seconds.
const LEASE: u64 = 2;
/// Long tasks work twice this, in seconds.
const LONG: u64 = 1;
/// A replica is killed this often, and restarted this long after.
const KILL_EVERY: Duration = Duration::from_secs(5);
const DOWN_FOR: Duration = Duration::from_secs(1);
/// How long a client follows a stream before giving up on it.
const STREAM_WAIT: Duration = Duration::from_secs(20);
/// Latencies of the first seconds (cold caches, new connections) are not counted.
const WARM_UP: Duration = Duration::from_secs(3);

/// What kind of work a task was.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Kind {
    /// A blocking `SendMessage` that completes at once.
    Blocking,
    /// A `SendStreamingMessage` that streams its task to completion.
    Streamed,
    /// An `input-required` task, then two continuations racing through two replicas.
    Continued,
    /// A task that works 2 s (returned at once), followed through another replica's
    /// `SubscribeToTask` stream.
    Long,
}

#[derive(Default)]
struct Tally {
    /// Acknowledged tasks: id → kind.
    acked: HashMap<String, Kind>,
    /// Continued tasks: id → the message ids of the continuations that were answered with the
    /// continued task.
    winners: HashMap<String, Vec<String>>,
    races: usize,
    doubles: usize,
    refused: usize,
    /// Continuations whose answer never came (their replica died).
    unanswered: usize,
    /// Requests that got no answer (connection refused or cut by a kill).
    transport_errors: usize,
    /// Answers that were neither the task nor an expected refusal (first few kept).
    odd: Vec<String>,
    odd_count: usize,
    streams: usize,
    /// Streams that ended with a terminal state.
    streams_done: usize,
    /// Streams still open without a terminal state when the client gave up on them.
    streams_stalled: usize,
    /// Each answered request: when it started and how long it took.
    latencies: Vec<(Instant, Duration)>,
}

impl Tally {
    /// Counts a stream read from `started`; true when it ended with a terminal state (else
    /// it was cut by a kill, or stalled).
    fn count_stream(&mut self, events: &[Value], started: Instant) -> bool {
        self.streams += 1;
        let done = events.last().and_then(event_state).is_some_and(is_terminal);
        if done {
            self.streams_done += 1;
        } else if started.elapsed() >= STREAM_WAIT {
            self.streams_stalled += 1;
        }
        done
    }
}

type Shared = Arc<Mutex<Tally>>;

fn lock(t: &Shared) -> std::sync::MutexGuard<'_, Tally> {
    t.lock().unwrap_or_else(|e| e.into_inner())
}

/// A small deterministic generator (xorshift), one per client.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
}

struct Client {
    http: reqwest::Client,
    bases: Arc<Vec<String>>,
    tally: Shared,
}

impl Client {
    /// A JSON-RPC call to replica `r`; `None` when no answer came (counted).
    async fn rpc(&self, r: usize, method: &str, params: Value) -> Option<Value> {
        let started = Instant::now();
        let sent = self
            .http
            .post(&self.bases[r])
            .header("A2A-Version", "1.0")
            .json(&json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}))
            .send()
            .await;
        let body = match sent {
            Ok(resp) => resp.json::<Value>().await.ok(),
            Err(_) => None,
        };
        let mut t = lock(&self.tally);
        match &body {
            Some(_) => t.latencies.push((started, started.elapsed())),
            None => t.transport_errors += 1,
        }
        body
    }

    /// Sends a new task's first message through replica `r`, or the next ones while replicas
    /// do not answer; the answer and the replica that gave it.
    async fn create(&self, r: usize, scenario: &str, immediately: bool) -> Option<(usize, Value)> {
        for k in 0..REPLICAS {
            let at = (r + k) % REPLICAS;
            let params = json!({"message": message(scenario, None),
                "configuration": {"returnImmediately": immediately}});
            if let Some(v) = self.rpc(at, "SendMessage", params).await {
                return Some((at, v));
            }
        }
        None
    }

    fn ack(&self, task: &Value, kind: Kind) -> Option<String> {
        let id = task["id"].as_str()?.to_string();
        lock(&self.tally).acked.insert(id.clone(), kind);
        Some(id)
    }

    fn odd(&self, what: &str, v: &Value) {
        let mut t = lock(&self.tally);
        t.odd_count += 1;
        if t.odd.len() < 5 {
            t.odd.push(format!("{what}: {v}"));
        }
    }

    async fn blocking(&self, r: usize) {
        let Some((_, v)) = self.create(r, "tck-complete-task", false).await else {
            return;
        };
        let task = &v["result"]["task"];
        if state(task) == "TASK_STATE_COMPLETED" {
            self.ack(task, Kind::Blocking);
        } else {
            self.odd("blocking send", &v);
        }
    }

    async fn streamed(&self, r: usize) {
        let started = Instant::now();
        let sent = self
            .http
            .post(&self.bases[r])
            .header("A2A-Version", "1.0")
            .json(
                &json!({"jsonrpc": "2.0", "id": 1, "method": "SendStreamingMessage",
                "params": {"message": message("tck-stream-001", None)}}),
            )
            .send()
            .await;
        let resp = match sent {
            Ok(resp) if resp.status() == 200 => resp,
            _ => {
                lock(&self.tally).transport_errors += 1;
                return;
            }
        };
        let events = sse_events(resp, STREAM_WAIT, |ev| {
            is_terminal(event_state(ev).unwrap_or(""))
        })
        .await;
        let mut t = lock(&self.tally);
        if let Some(id) = events.iter().find_map(|e| event_task_id(e)) {
            t.acked.insert(id.to_string(), Kind::Streamed);
        }
        if t.count_stream(&events, started) {
            t.latencies.push((started, started.elapsed()));
        }
    }

    async fn continued(&self, r: usize, rng: &mut Rng) {
        let Some((home, v)) = self.create(r, "tck-input-required", false).await else {
            return;
        };
        let task = &v["result"]["task"];
        if state(task) != "TASK_STATE_INPUT_REQUIRED" {
            self.odd("input-required send", &v);
            return;
        }
        let Some(id) = self.ack(task, Kind::Continued) else {
            return;
        };
        // Through two different replicas, one of them (usually) not the task's.
        let first = (home + 1 + rng.below(REPLICAS - 1)) % REPLICAS;
        let second = (first + 1 + rng.below(REPLICAS - 1)) % REPLICAS;
        let (ma, mb) = (
            message("tck-complete-task", Some(&id)),
            message("tck-complete-task", Some(&id)),
        );
        let (ra, rb) = tokio::join!(
            self.rpc(first, "SendMessage", json!({"message": ma})),
            self.rpc(second, "SendMessage", json!({"message": mb})),
        );
        let mut won = Vec::new();
        let mut t_refused = 0;
        let mut t_unanswered = 0;
        for (m, answer) in [(ma, ra), (mb, rb)] {
            match answer {
                None => t_unanswered += 1,
                Some(v) if state(&v["result"]["task"]) == "TASK_STATE_COMPLETED" => {
                    won.push(m["messageId"].as_str().unwrap_or("").to_string());
                }
                Some(v) if v["error"]["code"] == -32004 => t_refused += 1,
                Some(v) => self.odd("continuation", &v),
            }
        }
        let mut t = lock(&self.tally);
        t.races += 1;
        t.refused += t_refused;
        t.unanswered += t_unanswered;
        if won.len() > 1 {
            t.doubles += 1;
        }
        t.winners.insert(id, won);
    }

    async fn long(&self, r: usize, rng: &mut Rng) {
        let Some((home, v)) = self.create(r, "test-resubscribe-message-id", true).await else {
            return;
        };
        let task = &v["result"]["task"];
        let Some(id) = self.ack(task, Kind::Long) else {
            self.odd("long send", &v);
            return;
        };
        let other = (home + 1 + rng.below(REPLICAS - 1)) % REPLICAS;
        let sent = self
            .http
            .post(format!("{}/tasks/{id}:subscribe", self.bases[other]))
            .header("A2A-Version", "1.0")
            .send()
            .await;
        let resp = match sent {
            Ok(resp) if resp.status() == 200 => resp,
            // Done already (terminal: nothing to subscribe to), or the replica is down.
            _ => return,
        };
        let started = Instant::now();
        let events = sse_events(resp, STREAM_WAIT, |ev| {
            is_terminal(event_state(ev).unwrap_or(""))
        })
        .await;
        lock(&self.tally).count_stream(&events, started);
    }
}

fn event_task_id(ev: &Value) -> Option<&str> {
    let r = response(ev);
    r["task"]["id"]
        .as_str()
        .or_else(|| r["statusUpdate"]["taskId"].as_str())
}

fn is_terminal(s: &str) -> bool {
    matches!(
        s,
        "TASK_STATE_COMPLETED"
            | "TASK_STATE_FAILED"
            | "TASK_STATE_CANCELED"
            | "TASK_STATE_REJECTED"
    )
}

fn is_resumable(s: &str) -> bool {
    matches!(s, "TASK_STATE_INPUT_REQUIRED" | "TASK_STATE_AUTH_REQUIRED")
}

async fn start(url: &str, port: u16) -> Sut {
    let port = port.to_string();
    Sut::start_with(url, &["--lease", &LEASE.to_string(), "--port", &port], LONG).await
}

fn port_of(base: &str) -> u16 {
    base.rsplit(':').next().unwrap().parse().unwrap()
}

/// p50 and p99 of `d`, in milliseconds.
fn percentiles(mut d: Vec<Duration>) -> (usize, f64, f64) {
    if d.is_empty() {
        return (0, 0.0, 0.0);
    }
    d.sort();
    let at = |p: f64| {
        let i = ((p * d.len() as f64).ceil() as usize).clamp(1, d.len()) - 1;
        d[i].as_secs_f64() * 1000.0
    };
    (d.len(), at(0.50), at(0.99))
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs PostgreSQL: set SUBAGENTS_TEST_POSTGRES_URL (.ci/postgres.sh starts one)"]
async fn three_replicas_under_load_with_kills_lose_nothing() {
    let secs: u64 = std::env::var("SUBAGENTS_CHAOS_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(60);
    let url = fresh_postgres_db("chaos").await;
    let mut replicas = Vec::new();
    for _ in 0..REPLICAS {
        replicas.push(Some(start(&url, 0).await));
    }
    let bases: Arc<Vec<String>> = Arc::new(
        replicas
            .iter()
            .map(|s| s.as_ref().unwrap().base.clone())
            .collect(),
    );
    let tally: Shared = Arc::default();
    let began = Instant::now();
    let until = began + Duration::from_secs(secs);

    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap();
    let workers: Vec<_> = (0..WORKERS)
        .map(|w| {
            let client = Client {
                http: http.clone(),
                bases: bases.clone(),
                tally: tally.clone(),
            };
            tokio::spawn(async move {
                let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ (w as u64 + 1).wrapping_mul(0x2545_F491));
                while Instant::now() < until {
                    let r = rng.below(REPLICAS);
                    match rng.below(10) {
                        0..=2 => client.blocking(r).await,
                        3..=4 => client.streamed(r).await,
                        5..=7 => client.continued(r, &mut rng).await,
                        _ => client.long(r, &mut rng).await,
                    }
                }
            })
        })
        .collect();

    // The chaos: every KILL_EVERY, the next replica is killed with SIGKILL and restarted on
    // its port DOWN_FOR later.
    let mut windows: Vec<(Instant, Instant)> = Vec::new();
    let mut victim = 0;
    while Instant::now() + KILL_EVERY < until {
        tokio::time::sleep(KILL_EVERY).await;
        let killed = Instant::now();
        if let Some(s) = replicas[victim].take() {
            s.kill9().await;
        }
        tokio::time::sleep(DOWN_FOR).await;
        replicas[victim] = Some(start(&url, port_of(&bases[victim])).await);
        // Its tasks are failed over within a lease (and a third) of the kill.
        windows.push((killed, Instant::now() + Duration::from_secs(LEASE) * 4 / 3));
        victim = (victim + 1) % REPLICAS;
    }
    for w in workers {
        w.await.unwrap();
    }
    let load_secs = began.elapsed().as_secs_f64();

    // Settle: the killed replicas' leases run out, long tasks end. Then every acknowledged
    // task is read back through the replicas.
    let acked: Vec<(String, Kind)> = lock(&tally)
        .acked
        .iter()
        .map(|(k, v)| (k.clone(), *v))
        .collect();
    let settle_until = Instant::now() + Duration::from_secs(30);
    let (mut lost, mut unsettled, mut stored): (Vec<String>, Vec<String>, HashMap<String, Value>);
    loop {
        let reads = futures::stream::iter(acked.iter().enumerate().map(|(i, (id, _))| {
            let (http, base) = (http.clone(), bases[i % REPLICAS].clone());
            async move {
                let v: Option<Value> = async {
                    http.post(&base)
                        .header("A2A-Version", "1.0")
                        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "GetTask",
                            "params": {"id": id}}))
                        .send()
                        .await
                        .ok()?
                        .json()
                        .await
                        .ok()
                }
                .await;
                (id.clone(), v)
            }
        }))
        .buffer_unordered(32)
        .collect::<Vec<_>>()
        .await;
        (lost, unsettled, stored) = (Vec::new(), Vec::new(), HashMap::new());
        for (id, v) in reads {
            match v {
                Some(v) if v["error"]["code"] == -32001 => lost.push(id),
                Some(v) if v["result"].is_object() => {
                    let s = state(&v["result"]);
                    if !is_terminal(s) && !is_resumable(s) {
                        unsettled.push(format!("{id}: {s}"));
                    }
                    stored.insert(id, v["result"].clone());
                }
                other => unsettled.push(format!("{id}: unreadable: {other:?}")),
            }
        }
        if unsettled.is_empty() || Instant::now() > settle_until {
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }

    let t = lock(&tally);
    // Continuations the stored history holds beyond the one (at most) that may win.
    let mut history_doubles = Vec::new();
    for (id, won) in &t.winners {
        let Some(task) = stored.get(id) else { continue };
        let took: Vec<&str> = task["history"]
            .as_array()
            .map(|h| {
                h.iter()
                    .filter(|m| m["role"] == "ROLE_USER")
                    .skip(1)
                    .filter_map(|m| m["messageId"].as_str())
                    .collect()
            })
            .unwrap_or_default();
        if took.len() > 1 || (won.len() == 1 && took.first() != Some(&won[0].as_str())) {
            history_doubles.push(format!("{id}: won {won:?}, history {took:?}"));
        }
    }
    let mut by_kind: HashMap<Kind, usize> = HashMap::new();
    for k in t.acked.values() {
        *by_kind.entry(*k).or_default() += 1;
    }
    let in_window = |at: Instant| windows.iter().any(|(a, b)| at >= *a && at <= *b);
    let (during, outside): (Vec<_>, Vec<_>) = t
        .latencies
        .iter()
        .filter(|(at, _)| *at >= began + WARM_UP)
        .partition(|(at, _)| in_window(*at));
    let (nd, p50d, p99d) = percentiles(during.iter().map(|(_, d)| *d).collect());
    let (no, p50o, p99o) = percentiles(outside.iter().map(|(_, d)| *d).collect());
    let count = |k: Kind| by_kind.get(&k).copied().unwrap_or(0);
    println!(
        "chaos: {REPLICAS} replicas, {WORKERS} clients, {load_secs:.0} s of load, {} kills (-9, \
         restarted after {} ms), lease {LEASE} s\n\
         tasks acknowledged: {} (blocking {}, streamed {}, continued {}, long {}), {:.0}/s\n\
         lost: {}\n\
         continuation races: {} (refused {}, unanswered {}), double continuations: {} \
         (in stored histories: {})\n\
         never terminal or resumable: {}\n\
         streams: {} ({} ended with a terminal state, {} stalled, the others cut by a kill)\n\
         requests without an answer (replica down): {}; odd answers: {} {:?}\n\
         latency of answered requests after {} s of warm-up, during kill windows (kill to \
         restart + 4/3 lease): n={nd} p50 {p50d:.1} ms p99 {p99d:.1} ms; \
         outside: n={no} p50 {p50o:.1} ms p99 {p99o:.1} ms",
        windows.len(),
        DOWN_FOR.as_millis(),
        t.acked.len(),
        count(Kind::Blocking),
        count(Kind::Streamed),
        count(Kind::Continued),
        count(Kind::Long),
        t.acked.len() as f64 / load_secs,
        lost.len(),
        t.races,
        t.refused,
        t.unanswered,
        t.doubles,
        history_doubles.len(),
        unsettled.len(),
        t.streams,
        t.streams_done,
        t.streams_stalled,
        t.transport_errors,
        t.odd_count,
        t.odd,
        WARM_UP.as_secs(),
    );
    assert!(!windows.is_empty(), "no replica was killed");
    assert!(t.acked.len() > 100, "too little load to say anything");
    assert!(lost.is_empty(), "acknowledged tasks lost: {lost:?}");
    assert_eq!(t.doubles, 0, "double continuations");
    assert!(history_doubles.is_empty(), "{history_doubles:?}");
    assert!(
        unsettled.is_empty(),
        "tasks never terminal or resumable: {unsettled:?}"
    );
}
