//! The served child of the memory measurements (issue 30, item 3), one copy for
//! `tests/it/server_memory.rs` and `benches/server_memory.rs` (which includes this file by
//! `#[path]`): the process re-runs itself as an A2A server on 127.0.0.1 that serves until its
//! stdin closes, and the parent reads the child's `/proc/<pid>/status` around one large
//! request (its peak resident memory reset just before, `/proc/<pid>/clear_refs`, `5`).
//!
//! Self-contained (it uses nothing else of `tests/it`), so that the bench can include it; each
//! of the two uses part of it.

#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::ops::Deref;
use std::process::{Child, Command, Stdio};

use subagent_a2a::server::{A2aHandler, A2aServer, AgentMount, handler_fn};

/// The line the child prints its address on, after this prefix (libtest may print the test's
/// name on the same line first).
const ADDR: &str = "A2A_MEMORY_ADDR=";

/// Echoes the text back as a direct Message (no task stored).
pub(crate) fn echo_message() -> impl A2aHandler {
    handler_fn(|req, ev, _cancel| async move {
        let m = ev.agent_text(req.text());
        drop(req);
        ev.reply(m).await?;
        Ok(())
    })
}

/// The child's side: serves `mounts` on a free port of 127.0.0.1 (bodies up to 16 MiB) on a
/// two-thread runtime, prints the address line, and returns when stdin closes.
pub(crate) fn serve_until_stdin_closes(mounts: Vec<AgentMount>) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let server = mounts
            .into_iter()
            .fold(A2aServer::builder().max_body_bytes(16 << 20), |b, m| {
                b.mount(m)
            })
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

/// The parent's side: a child serving (see [`serve_until_stdin_closes`]); ended (its stdin
/// closed, then killed: a graceful shutdown would wait for the parent's pooled connection)
/// and waited for when dropped.
pub(crate) struct Served {
    child: Child,
    /// `http://127.0.0.1:<port>`.
    pub(crate) base: String,
}

impl Served {
    /// Spawns `cmd` (this executable, told to serve) with piped stdin and stdout, and reads
    /// its address.
    pub(crate) fn start(mut cmd: Command) -> Self {
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("spawn the server child");
        let out = BufReader::new(child.stdout.take().expect("stdout"));
        let mut base = None;
        for line in out.lines() {
            let line = line.expect("child output");
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

    /// The child's process id.
    pub(crate) fn pid(&self) -> u32 {
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
pub(crate) fn status_bytes(pid: u32, key: &str) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = s.lines().find(|l| l.starts_with(key))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// `len` bytes of JSON string content: plain words, or with an escaped newline (`\n`) every
/// 80 characters.
pub(crate) fn filler(len: usize, escapes: bool) -> String {
    let line = "lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor in";
    let mut text = String::with_capacity(len + line.len() + 2);
    while text.len() < len {
        text.push_str(line);
        text.push_str(if escapes { "\\n" } else { " " });
    }
    text.truncate(len);
    if text.ends_with('\\') {
        text.pop();
    }
    text
}

/// A 1.0 JSON-RPC `SendMessage` with one text part of `text` (JSON string content).
pub(crate) fn v1_send_body(text: &str) -> Vec<u8> {
    format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{{"message":{{"messageId":"m1","role":"ROLE_USER","parts":[{{"text":"{text}"}}]}}}}}}"#
    )
    .into_bytes()
}

/// POSTs `body` to `url` with `A2A-Version: <version>`; the reply, checked to be a success
/// without a JSON-RPC error.
pub(crate) async fn send(
    client: &reqwest::Client,
    url: &str,
    version: &str,
    body: Vec<u8>,
) -> impl Deref<Target = [u8]> {
    let resp = client
        .post(url)
        .header("content-type", "application/json")
        .header("A2A-Version", version)
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
    bytes
}

/// The child's memory around one large request (bytes).
pub(crate) struct Peak {
    /// Resident before the request (after the warm-up).
    pub(crate) before: u64,
    /// The peak resident memory during the request (`VmHWM`, reset before it).
    pub(crate) hwm: u64,
    /// Resident after the reply.
    pub(crate) after: u64,
    /// The reply's first bytes (at most 300), for checking its shape.
    pub(crate) reply_head: String,
    /// The reply's length.
    pub(crate) reply_len: usize,
}

impl Peak {
    /// The request's peak over the resident memory before it.
    pub(crate) fn peak(&self) -> u64 {
        self.hwm.saturating_sub(self.before)
    }
}

/// Sends a small `warm_up` request (the runtime's, the router's and the connection's first
/// allocations), resets the child's peak resident memory, sends `body` and reads the figures;
/// `Err` (why) where the peak cannot be reset or read (not Linux, or no write access to
/// `clear_refs`).
pub(crate) async fn one_large_send(
    served: &Served,
    path: &str,
    version: &str,
    warm_up: Vec<u8>,
    body: Vec<u8>,
) -> Result<Peak, String> {
    let client = reqwest::Client::new();
    let url = format!("{}{path}", served.base);
    send(&client, &url, version, warm_up).await;
    let pid = served.pid();
    std::fs::write(format!("/proc/{pid}/clear_refs"), "5")
        .map_err(|e| format!("cannot reset the peak resident memory of the child ({e})"))?;
    let status = |key| status_bytes(pid, key).ok_or(format!("no {key} in /proc/{pid}/status"));
    let before = status("VmRSS:")?;
    let reply = send(&client, &url, version, body).await;
    let hwm = status("VmHWM:")?;
    let after = status("VmRSS:")?;
    Ok(Peak {
        before,
        hwm,
        after,
        reply_head: String::from_utf8_lossy(&reply[..reply.len().min(300)]).into_owned(),
        reply_len: reply.len(),
    })
}
