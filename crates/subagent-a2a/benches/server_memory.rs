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
//!    `tests/it/server_memory.rs` checks the same, and for a 0.3 `message/send`, on every test
//!    run, with the same served child: `tests/it/common/memory_rig.rs`).
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

use std::process::Command;

use subagent_a2a::server::{A2aHandler, AgentInfo, AgentMount, InMemoryTaskStore, handler_fn};

/// The served child and the figures around one request, shared with the integration test.
#[path = "../tests/it/common/memory_rig.rs"]
mod rig;

/// Completes a task with the echoed text as its status message (the task is stored).
fn echo_task() -> impl A2aHandler {
    handler_fn(|req, ev, _cancel| async move {
        let m = ev.agent_text(req.text());
        drop(req);
        ev.complete(Some(m)).await?;
        Ok(())
    })
}

/// The server child: the echo agent at `/echo`, the task agent at `/task`.
fn serve() {
    rig::serve_until_stdin_closes(vec![
        AgentMount::new("/echo", AgentInfo::new("echo", "Echo"), rig::echo_message()),
        AgentMount::new("/task", AgentInfo::new("task", "Task"), echo_task()),
    ]);
}

/// A 1.0 JSON-RPC `SendMessage` with one text part of `len` bytes (plain letters, or with a
/// newline every 80 characters, which JSON escapes).
fn body(len: usize, escapes: bool) -> Vec<u8> {
    rig::v1_send_body(&rig::filler(len, escapes))
}

/// Starts the server child.
fn spawn_server() -> rig::Served {
    let mut cmd = Command::new(std::env::current_exe().expect("current exe"));
    cmd.env("A2A_MEM_SERVE", "1");
    rig::Served::start(cmd)
}

/// Bytes in MiB (printed as MB, as the perf doc's figures).
fn mb(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
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
    // 1. Peak per request, each in a fresh server.
    let mut worst = 0.0f64;
    for (escapes, what) in [(false, "plain text"), (true, "text with escapes")] {
        for i in 0..3 {
            let served = spawn_server();
            let b = body(len, escapes);
            let body_len = b.len();
            let p = rt
                .block_on(rig::one_large_send(
                    &served,
                    "/echo",
                    "1.0",
                    body(1000, false),
                    b,
                ))
                .expect("reset and read the peak resident memory");
            drop(served);
            let peak = p.peak() as f64;
            let ratio = peak / body_len as f64;
            println!(
                "{what} #{i}: body {:.2} MB, reply {:.2} MB: rss before {:.1} MB, peak {:.1} MB \
                 (+{:.2} MB = {ratio:.2}x the body), after {:.1} MB",
                body_len as f64 / 1e6,
                p.reply_len as f64 / 1e6,
                mb(p.before),
                mb(p.hwm),
                peak / 1e6,
                mb(p.after)
            );
            worst = worst.max((peak - 1e6) / body_len as f64);
        }
    }

    // 2. Resident memory after `count` large messages stored as tasks.
    let served = spawn_server();
    let client = reqwest::Client::new();
    let url = format!("{}/task", served.base);
    let mut rss = Vec::new();
    for _ in 0..count {
        rt.block_on(rig::send(&client, &url, "1.0", body(len, false)));
        let now = rig::status_bytes(served.pid(), "VmRSS:").unwrap_or(0);
        rss.push(mb(now).round() as u64);
    }
    let budget_mb = (InMemoryTaskStore::DEFAULT_MAX_BYTES >> 20) as u64;
    let last = *rss.last().unwrap_or(&0);
    println!(
        "rss after each of {count} x {size_mb} MB SendMessage stored as tasks (MB): {rss:?}; \
         last {last} MB, store budget {budget_mb} MB (+64 MB = {} MB)",
        budget_mb + 64
    );
    drop(served);

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
