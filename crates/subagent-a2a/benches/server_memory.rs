//! Memory of the A2A server per large message, measured on a served process (issue 30, item
//! 3). The bench re-runs itself as the server (a child process serving two agents on
//! 127.0.0.1) and reads the child's `/proc/<pid>/status`:
//!
//! 1. **Peak per request**: a `SendMessage` with one large text part (`A2A_MEM_MB`, default
//!    9.5 MB) to an echo agent answering with a Message, each in a fresh server (the
//!    allocator's state from earlier requests would blur the figure): after a small warm-up
//!    request the child's peak resident memory is reset (`/proc/<pid>/clear_refs`, `5`), the
//!    large request sent, and `VmHWM` read; the request's peak is `VmHWM - VmRSS before`.
//!    Asserted `<= 2x` the body plus 1 MB for the fixed cost of a request (buffers), for a
//!    text without escapes and one with escapes (the issue's bound; the integration test
//!    `tests/it/server_memory.rs` checks the same on every test run).
//! 2. **Resident memory after 30 large messages** (`A2A_MEM_COUNT`) to an agent that stores
//!    each as a completed task (the user's message in its history, the echo as its status
//!    message: about twice the body per task) in the default 256 MiB task store: `VmRSS` after
//!    each; the goal is `<= the store's budget + 64 MB` at the end (printed, not asserted).
//!
//! ```text
//! cargo bench -p subagent-a2a --bench server_memory
//! ```
//!
//! Resident memory counts the pages a process touched, not the capacity it reserved, so the
//! figures are what the machine pays. Not a timed test: it asserts only memory.

/// The allocator `subagents serve` runs with (subagents-cli's default feature `jemalloc`), so
/// the served process here is the command's. Remove these lines to measure glibc's malloc
/// (the perf doc has the figures of both).
#[cfg(not(target_env = "msvc"))]
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use subagent_a2a::server::{
    A2aHandler, A2aServer, AgentInfo, AgentMount, HandlerError, HandlerRequest, InMemoryTaskStore,
    TaskEventSink,
};
use subagent_spi::{CancellationToken, async_trait};

/// Echoes the text back as a direct Message (no task stored).
struct EchoMessage;

#[async_trait]
impl A2aHandler for EchoMessage {
    async fn handle(
        &self,
        req: HandlerRequest,
        ev: TaskEventSink,
        _cancel: CancellationToken,
    ) -> Result<(), HandlerError> {
        let m = ev.agent_text(req.text());
        drop(req);
        ev.reply(m).await?;
        Ok(())
    }
}

/// Completes a task with the echoed text as its status message (the task is stored).
struct EchoTask;

#[async_trait]
impl A2aHandler for EchoTask {
    async fn handle(
        &self,
        req: HandlerRequest,
        ev: TaskEventSink,
        _cancel: CancellationToken,
    ) -> Result<(), HandlerError> {
        let m = ev.agent_text(req.text());
        drop(req);
        ev.complete(Some(m)).await?;
        Ok(())
    }
}

fn serve() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let server = A2aServer::builder()
            .max_body_bytes(16 << 20)
            .mount(AgentMount::new(
                "/echo",
                AgentInfo::new("echo", "Echo"),
                EchoMessage,
            ))
            .mount(AgentMount::new(
                "/task",
                AgentInfo::new("task", "Task"),
                EchoTask,
            ))
            .build()
            .expect("server");
        let l = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        println!("{}", l.local_addr().expect("addr"));
        // Serves until the parent closes our stdin.
        let stop = tokio::task::spawn_blocking(|| {
            let mut s = String::new();
            while std::io::stdin()
                .read_line(&mut s)
                .map(|n| n > 0)
                .unwrap_or(false)
            {}
        });
        server
            .serve(l, async move {
                let _ = stop.await;
            })
            .await
            .expect("serve");
    });
}

fn status_kb(pid: u32, key: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(key))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|n| n.parse().ok())
        })
        .unwrap_or(0)
}

/// A 1.0 JSON-RPC `SendMessage` with one text part of `len` bytes (plain letters, or with a
/// newline every 80 characters, which JSON escapes).
fn body(len: usize, escapes: bool) -> Vec<u8> {
    let mut text = String::with_capacity(len + len / 40);
    let line = "lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor in";
    while text.len() < len {
        text.push_str(line);
        text.push_str(if escapes { "\\n" } else { " " });
    }
    text.truncate(len);
    if text.ends_with('\\') {
        text.pop();
    }
    format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{{"message":{{"messageId":"m1","role":"ROLE_USER","parts":[{{"text":"{text}"}}]}}}}}}"#
    )
    .into_bytes()
}

/// Starts the server child: its process, pid and base URL.
fn spawn_server() -> (std::process::Child, u32, String) {
    let exe = std::env::current_exe().expect("current exe");
    let mut child = Command::new(exe)
        .env("A2A_MEM_SERVE", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn the server");
    let pid = child.id();
    let mut addr = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut addr)
        .expect("server address");
    (child, pid, format!("http://{}", addr.trim()))
}

fn mb(kb: u64) -> f64 {
    kb as f64 / 1024.0
}

fn main() {
    if std::env::var_os("A2A_MEM_SERVE").is_some() {
        serve();
        return;
    }
    let size_mb: f64 = std::env::var("A2A_MEM_MB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(9.5);
    let count: usize = std::env::var("A2A_MEM_COUNT")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(30);
    let len = (size_mb * 1_000_000.0) as usize;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let client = reqwest::Client::new();
    let send = |base: &str, path: &'static str, body: Vec<u8>| {
        let client = client.clone();
        let url = format!("{base}{path}");
        rt.block_on(async move {
            let resp = client
                .post(url)
                .header("content-type", "application/json")
                .header("A2A-Version", "1.0")
                .body(body)
                .send()
                .await
                .expect("send");
            let status = resp.status();
            let bytes = resp.bytes().await.expect("reply");
            assert!(
                status.is_success() && !bytes.windows(8).any(|w| w == b"\"error\":"),
                "{status}: {}",
                String::from_utf8_lossy(&bytes[..bytes.len().min(300)])
            );
            bytes.len()
        })
    };
    // 1. Peak per request, each in a fresh server.
    let mut worst = 0.0f64;
    for (escapes, what) in [(false, "plain text"), (true, "text with escapes")] {
        for i in 0..3 {
            let (mut child, pid, base) = spawn_server();
            // Warm up (first-use allocations of the runtime, the router, the connection).
            send(&base, "/echo", body(1000, false));
            let b = body(len, escapes);
            let body_len = b.len();
            std::fs::write(format!("/proc/{pid}/clear_refs"), "5").expect("reset VmHWM");
            let before = status_kb(pid, "VmRSS:");
            let reply = send(&base, "/echo", b);
            let hwm = status_kb(pid, "VmHWM:");
            let after = status_kb(pid, "VmRSS:");
            drop(child.stdin.take());
            let _ = child.wait();
            let peak = hwm.saturating_sub(before) as f64 * 1024.0;
            let ratio = peak / body_len as f64;
            println!(
                "{what} #{i}: body {:.2} MB, reply {:.2} MB: rss before {:.1} MB, peak {:.1} MB \
                 (+{:.2} MB = {ratio:.2}x the body), after {:.1} MB",
                body_len as f64 / 1e6,
                reply as f64 / 1e6,
                mb(before),
                mb(hwm),
                peak / 1e6,
                mb(after)
            );
            worst = worst.max((peak - 1e6) / body_len as f64);
        }
    }

    // 2. Resident memory after `count` large messages stored as tasks.
    let (mut child, pid, base) = spawn_server();
    let mut rss = Vec::new();
    for _ in 0..count {
        send(&base, "/task", body(len, false));
        rss.push(mb(status_kb(pid, "VmRSS:")).round() as u64);
    }
    let budget_mb = (InMemoryTaskStore::DEFAULT_MAX_BYTES >> 20) as u64;
    let last = *rss.last().unwrap_or(&0);
    println!(
        "rss after each of {count} x {size_mb} MB SendMessage stored as tasks (MB): {rss:?}; \
         last {last} MB, store budget {budget_mb} MB (+64 MB = {} MB)",
        budget_mb + 64
    );
    drop(child.stdin.take());
    let _ = child.wait();

    assert!(
        worst <= 2.0,
        "a request's peak memory (less 1 MB) is {worst:.2}x its body (goal <= 2x)"
    );
    // Reported, not asserted: glibc keeps freed steps of earlier requests resident (see
    // docs/perf/subagent-a2a-server.md, fourth pass), so this goal is not met yet.
    println!(
        "rss goal (<= store budget + 64 MB = {} MB): {}",
        budget_mb + 64,
        if last <= budget_mb + 64 {
            "met"
        } else {
            "NOT met"
        }
    );
}
