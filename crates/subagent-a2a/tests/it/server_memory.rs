//! A request's peak memory on a served process (issue 30, item 3): a large `SendMessage` must
//! not cost more than twice its body. The test re-runs this test binary as the server (the
//! ignored test `memory_child_server`, serving an echo agent on 127.0.0.1, one per case so that
//! no earlier request blurs the figure), resets the child's peak (`/proc/<pid>/clear_refs`,
//! `5`) after a small warm-up request, sends the large message, and compares `VmHWM` with the
//! resident memory before it. Linux only: elsewhere (or where `clear_refs` cannot be written)
//! the test says so on stderr and passes. Memory, unlike time, is deterministic enough here:
//! one request in a fresh process. `benches/server_memory.rs` prints the same figures, and the
//! resident memory after many large tasks.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

use subagent_a2a::server::{
    A2aHandler, A2aServer, AgentInfo, AgentMount, HandlerError, HandlerRequest, TaskEventSink,
};
use subagent_spi::{CancellationToken, async_trait};

/// Set in the child's environment: serve instead of skipping.
const CHILD: &str = "A2A_MEMORY_TEST_CHILD";
/// The line the child prints its address on.
const ADDR: &str = "A2A_MEMORY_TEST_ADDR=";
/// The size of the large text (the issue's 9.5 MB).
const TEXT_BYTES: usize = 9_500_000;
/// A request's fixed cost besides its body (connection and read buffers, the reply's
/// headers), allowed over the 2x.
const SLACK_BYTES: u64 = 1 << 20;

/// Echoes the text back as a direct Message.
struct Echo;

#[async_trait]
impl A2aHandler for Echo {
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

/// The served child (run by the tests below; skipped otherwise): serves [`Echo`] until its
/// stdin closes.
#[test]
#[ignore = "the server child of the memory tests"]
fn memory_child_server() {
    if std::env::var_os(CHILD).is_none() {
        return;
    }
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
                Echo,
            ))
            .build()
            .expect("server");
        let l = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        println!("{ADDR}{}", l.local_addr().expect("addr"));
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

/// The child serving [`Echo`]; ended (its stdin closed, then killed: a graceful shutdown would
/// wait for this process's pooled connection) and waited for when dropped.
struct Served {
    child: Child,
    base: String,
}

impl Served {
    fn start() -> Self {
        let mut child = Command::new(std::env::current_exe().expect("test binary"))
            .args([
                "server_memory::memory_child_server",
                "--exact",
                "--ignored",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD, "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn the server child");
        let out = BufReader::new(child.stdout.take().expect("stdout"));
        let mut base = None;
        for line in out.lines() {
            let line = line.expect("child output");
            // libtest prints the test's name on the same line first.
            if let Some((_, a)) = line.split_once(ADDR) {
                base = Some(format!("http://{}", a.trim()));
                break;
            }
        }
        Self {
            base: base.expect("the child printed no address"),
            child,
        }
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        drop(self.child.stdin.take());
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A field of `/proc/<pid>/status`, in bytes.
fn status_bytes(pid: u32, key: &str) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = s.lines().find(|l| l.starts_with(key))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// A 1.0 JSON-RPC `SendMessage` with one text part of about `len` bytes of JSON text: plain
/// words, or with an escaped newline every 80 characters.
fn send_body(len: usize, escapes: bool) -> Vec<u8> {
    let line = "lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor in";
    let mut text = String::with_capacity(len + 100);
    while text.len() < len {
        text.push_str(line);
        text.push_str(if escapes { "\\n" } else { " " });
    }
    format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{{"message":{{"messageId":"m1","role":"ROLE_USER","parts":[{{"text":"{text}"}}]}}}}}}"#
    )
    .into_bytes()
}

/// Sends `body` to the child's echo agent; the reply's length.
async fn send(base: &str, body: Vec<u8>) -> usize {
    let resp = reqwest::Client::new()
        .post(format!("{base}/echo"))
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
}

/// The child's peak memory for one large send, over its resident memory before it; `None`
/// where the peak cannot be reset (not Linux, or no write access to `clear_refs`).
async fn peak_of_one_send(escapes: bool) -> Option<(u64, usize)> {
    let served = Served::start();
    let pid = served.pid();
    // Warm up: the runtime's, the router's and the connection's first allocations.
    send(&served.base, send_body(1000, false)).await;
    let body = send_body(TEXT_BYTES, escapes);
    let body_len = body.len();
    if let Err(e) = std::fs::write(format!("/proc/{pid}/clear_refs"), "5") {
        eprintln!("skipped: cannot reset the peak resident memory of the child ({e})");
        return None;
    }
    let before = status_bytes(pid, "VmRSS:")?;
    send(&served.base, body).await;
    let hwm = status_bytes(pid, "VmHWM:")?;
    Some((hwm.saturating_sub(before), body_len))
}

async fn assert_within_twice_the_body(escapes: bool) {
    let Some((peak, body)) = peak_of_one_send(escapes).await else {
        return;
    };
    let bound = 2 * body as u64 + SLACK_BYTES;
    eprintln!(
        "escapes {escapes}: body {body} bytes, peak {peak} bytes = {:.2}x (bound {bound})",
        peak as f64 / body as f64
    );
    assert!(
        peak <= bound,
        "a {body}-byte SendMessage (text with escapes: {escapes}) peaked at {peak} bytes over \
         the resident memory before it, {:.2}x its body; the bound is 2x + {SLACK_BYTES}",
        peak as f64 / body as f64
    );
}

#[tokio::test]
async fn a_large_plain_text_send_peaks_within_twice_its_body() {
    assert_within_twice_the_body(false).await;
}

/// serde_json unescapes into a scratch buffer and then copies it: without reading the raw
/// text, a text with escapes held the body, the scratch and the `String` (3x).
#[tokio::test]
async fn a_large_escaped_text_send_peaks_within_twice_its_body() {
    assert_within_twice_the_body(true).await;
}
