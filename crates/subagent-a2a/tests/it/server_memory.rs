//! A request's peak memory on a served process (issue 30, item 3): a large `SendMessage` (1.0)
//! or `message/send` (0.3) must not cost more than twice its body. The test re-runs this test
//! binary as the server (the ignored test `memory_child_server`, serving an echo agent on
//! 127.0.0.1, one per case so that no earlier request blurs the figure), resets the child's
//! peak (`/proc/<pid>/clear_refs`, `5`) after a small warm-up request, sends the large
//! message, and compares `VmHWM` with the resident memory before it (the rig, shared with
//! `benches/server_memory.rs`: `common/memory_rig.rs`). Linux only: elsewhere (or where
//! `clear_refs` cannot be written) the test says so on stderr and passes. Memory, unlike time,
//! is deterministic enough here: one request in a fresh process. The bench prints the same
//! figures, and the resident memory after many large tasks.

use std::process::{Command, Stdio};

use subagent_a2a::server::{AgentInfo, AgentMount};

#[path = "common/memory_rig.rs"]
mod rig;

/// Set in the child's environment: serve instead of skipping.
const CHILD: &str = "A2A_MEMORY_TEST_CHILD";
/// The size of the large text (the issue's 9.5 MB).
const TEXT_BYTES: usize = 9_500_000;
/// A request's fixed cost besides its body (connection and read buffers, the reply's
/// headers), allowed over the 2x.
const SLACK_BYTES: u64 = 1 << 20;

/// The served child (run by the tests below; skipped otherwise): serves an echo agent at
/// `/echo` until its stdin closes.
#[test]
#[ignore = "the server child of the memory tests"]
fn memory_child_server() {
    if std::env::var_os(CHILD).is_none() {
        return;
    }
    rig::serve_until_stdin_closes(vec![AgentMount::new(
        "/echo",
        AgentInfo::new("echo", "Echo"),
        rig::echo_message(),
    )]);
}

/// The protocol version of the request.
#[derive(Debug, Clone, Copy)]
enum Version {
    /// 1.0 JSON-RPC `SendMessage`, `{"text": ...}` parts.
    V1,
    /// 0.3 JSON-RPC `message/send`, `{"kind": "text", "text": ...}` parts.
    V03,
}

impl Version {
    /// The `A2A-Version` header.
    fn header(self) -> &'static str {
        match self {
            Version::V1 => "1.0",
            Version::V03 => "0.3",
        }
    }

    /// The request with one text part of `text` (JSON string content).
    fn send_body(self, text: &str) -> Vec<u8> {
        match self {
            Version::V1 => rig::v1_send_body(text),
            Version::V03 => format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"message/send","params":{{"message":{{"kind":"message","messageId":"m1","role":"user","parts":[{{"kind":"text","text":"{text}"}}]}}}}}}"#
            )
            .into_bytes(),
        }
    }

    /// How the reply's result begins: a 0.3 Message carries `kind`, a 1.0 one is wrapped
    /// in `message`.
    fn result_head(self) -> &'static str {
        match self {
            Version::V1 => r#""result":{"message":{"#,
            Version::V03 => r#""result":{"kind":"message""#,
        }
    }
}

/// The child's peak memory for one large send, over its resident memory before it; `None`
/// where the peak cannot be reset (not Linux, or no write access to `clear_refs`).
async fn peak_of_one_send(version: Version, escapes: bool) -> Option<(u64, usize)> {
    let mut cmd = Command::new(std::env::current_exe().expect("test binary"));
    cmd.args([
        "server_memory::memory_child_server",
        "--exact",
        "--ignored",
        "--nocapture",
        "--test-threads=1",
    ])
    .env(CHILD, "1")
    .stderr(Stdio::null());
    let served = rig::Served::start(cmd);
    let body = version.send_body(&rig::filler(TEXT_BYTES, escapes));
    let body_len = body.len();
    let warm_up = version.send_body(&rig::filler(1000, false));
    let p = match rig::one_large_send(&served, "/echo", version.header(), warm_up, body).await {
        Ok(p) => p,
        Err(why) => {
            eprintln!("skipped: {why}");
            return None;
        }
    };
    // The request was read and answered in its version, whole.
    assert!(
        p.reply_head.contains(version.result_head()) && p.reply_len > TEXT_BYTES * 9 / 10,
        "{version:?}: a {}-byte reply: {}",
        p.reply_len,
        p.reply_head
    );
    eprintln!(
        "{version:?}, escapes {escapes}: rss before {} bytes, after {}",
        p.before, p.after
    );
    Some((p.peak(), body_len))
}

async fn assert_within_twice_the_body(version: Version, escapes: bool) {
    let Some((peak, body)) = peak_of_one_send(version, escapes).await else {
        return;
    };
    let bound = 2 * body as u64 + SLACK_BYTES;
    eprintln!(
        "{version:?}, escapes {escapes}: body {body} bytes, peak {peak} bytes = {:.2}x (bound \
         {bound})",
        peak as f64 / body as f64
    );
    assert!(
        peak <= bound,
        "a {body}-byte {version:?} send (text with escapes: {escapes}) peaked at {peak} bytes \
         over the resident memory before it, {:.2}x its body; the bound is 2x + {SLACK_BYTES}",
        peak as f64 / body as f64
    );
}

/// A large send, with a plain text and with one full of escapes, in 1.0 and in 0.3, each in a
/// fresh child. Escapes: serde_json unescapes into a scratch buffer and then copies it, so
/// without reading the raw text a text with escapes held the body, the scratch and the
/// `String` (3x). 0.3: a derived `kind`-tagged part buffered the whole part (an owned copy of
/// the text, in serde's private content tree) before choosing its variant, 3x with escapes.
#[tokio::test]
async fn large_text_sends_peak_within_twice_their_body() {
    for version in [Version::V1, Version::V03] {
        for escapes in [false, true] {
            assert_within_twice_the_body(version, escapes).await;
        }
    }
}
