//! Real server processes for the A2A store tests: `a2a-tck-sut-store` (built by
//! `cargo test -p subagent-store --features a2a`, which builds the crate's examples).

#![allow(dead_code)]

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

mod pg;

/// A running SUT process (killed with SIGKILL when dropped).
pub(crate) struct Sut {
    pub child: Child,
    pub base: String,
}

pub(crate) fn sut_binary() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable");
    let dir = exe
        .parent()
        .and_then(|d| d.parent())
        .expect("target directory");
    let bin = dir.join("examples").join("a2a-tck-sut-store");
    assert!(
        bin.exists(),
        "{} is missing: run these tests with `cargo test -p subagent-store --features a2a` \
         (it builds the example)",
        bin.display()
    );
    bin
}

impl Sut {
    /// Starts the SUT's two-minute task (it runs unless stopped) and waits until it is
    /// `working`; its id.
    pub(crate) async fn start_long_task(&self) -> String {
        let long = self
            .send(message("test-resubscribe-message-id", None), true)
            .await;
        let long_id = long["id"].as_str().unwrap().to_string();
        let mut seen = String::new();
        for _ in 0..100 {
            seen = state(&self.get(&long_id).await).to_string();
            if seen == "TASK_STATE_WORKING" {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        assert_eq!(seen, "TASK_STATE_WORKING");
        long_id
    }

    /// Starts the SUT on a free port with `--store store` and extra arguments.
    pub(crate) async fn start(store: &str, extra: &[&str]) -> Sut {
        Self::start_with(store, extra, 60).await
    }

    /// Like [`Sut::start`], with the long-running scenario tasks
    /// (`test-resubscribe-message-id*`) working `2 × streaming_secs` seconds.
    pub(crate) async fn start_with(store: &str, extra: &[&str], streaming_secs: u64) -> Sut {
        let mut child = Command::new(sut_binary())
            .args(["--port", "0", "--store", store])
            .args(extra)
            .env("TCK_STREAMING_TIMEOUT", streaming_secs.to_string())
            .env("RUST_LOG", "warn")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("start the SUT");
        let stderr = child.stderr.take().expect("stderr");
        let mut lines = BufReader::new(stderr).lines();
        let base = tokio::time::timeout(Duration::from_secs(60), async {
            while let Some(line) = lines.next_line().await.expect("read stderr") {
                if let Some(rest) = line.split("listening on ").nth(1) {
                    return rest.split_whitespace().next().unwrap().to_string();
                }
                eprintln!("sut: {line}");
            }
            panic!("the SUT exited before listening");
        })
        .await
        .expect("the SUT did not start within 60 s");
        // Keep draining stderr so the process never blocks on a full pipe.
        tokio::spawn(async move {
            while let Ok(Some(line)) = lines.next_line().await {
                eprintln!("sut: {line}");
            }
        });
        Sut { child, base }
    }

    /// Two replicas on one fresh PostgreSQL database ([`fresh_postgres_db`] with `tag`), each
    /// started as [`Sut::start_with`] does.
    pub(crate) async fn replicas(tag: &str, extra: &[&str], streaming_secs: u64) -> (Sut, Sut) {
        let url = fresh_postgres_db(tag).await;
        let a = Self::start_with(&url, extra, streaming_secs).await;
        let b = Self::start_with(&url, extra, streaming_secs).await;
        (a, b)
    }

    /// Subscribes to task `id` over HTTP+JSON; the response (its body is the SSE stream).
    pub(crate) async fn subscribe(&self, id: &str) -> reqwest::Response {
        reqwest::Client::new()
            .post(format!("{}/tasks/{id}:subscribe", self.base))
            .header("A2A-Version", "1.0")
            .send()
            .await
            .expect("subscribe request")
    }

    /// SIGKILL, and wait for the process to be gone.
    pub(crate) async fn kill9(mut self) {
        self.child.kill().await.expect("kill -9");
    }

    /// Sends `signal` (`STOP`, `CONT`, ...) to the process with kill(1).
    pub(crate) fn signal(&self, signal: &str) {
        let pid = self.child.id().expect("the SUT runs");
        let ok = std::process::Command::new("kill")
            .args([format!("-{signal}"), pid.to_string()])
            .status()
            .expect("run kill")
            .success();
        assert!(ok, "kill -{signal} {pid} failed");
    }

    /// A JSON-RPC 1.0 call; the whole response object.
    pub(crate) async fn rpc(&self, method: &str, params: Value) -> Value {
        let resp = reqwest::Client::new()
            .post(&self.base)
            .header("A2A-Version", "1.0")
            .json(&json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}))
            .send()
            .await
            .expect("request");
        assert_eq!(resp.status(), 200);
        resp.json().await.expect("json")
    }

    /// SendMessage; the resulting task (panics on an error answer).
    pub(crate) async fn send(&self, message: Value, return_immediately: bool) -> Value {
        let r = self
            .rpc(
                "SendMessage",
                json!({"message": message, "configuration": {"returnImmediately": return_immediately}}),
            )
            .await;
        r["result"]["task"].clone()
    }

    /// GetTask's result (Null when not found).
    pub(crate) async fn get(&self, id: &str) -> Value {
        self.rpc("GetTask", json!({"id": id})).await["result"].clone()
    }
}

/// A user message; `id` picks the TCK scenario.
pub(crate) fn message(id: &str, task_id: Option<&str>) -> Value {
    let mut m = json!({
        "messageId": format!("{id}-{}", uuid()),
        "role": "ROLE_USER",
        "parts": [{"text": "hello"}],
    });
    if let Some(t) = task_id {
        m["taskId"] = json!(t);
    }
    m
}

fn uuid() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    format!(
        "{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

/// The stream response of an SSE event (JSON-RPC wraps it in `result`).
pub(crate) fn response(ev: &Value) -> &Value {
    ev.get("result").unwrap_or(ev)
}

/// The task state an SSE event shows (its task's, or its status update's).
pub(crate) fn event_state(ev: &Value) -> Option<&str> {
    let r = response(ev);
    r["task"]["status"]["state"]
        .as_str()
        .or_else(|| r["statusUpdate"]["status"]["state"].as_str())
}

pub(crate) fn state(task: &Value) -> &str {
    task["status"]["state"].as_str().unwrap_or("")
}

/// A fresh PostgreSQL database on the server of `SUBAGENTS_TEST_POSTGRES_URL` (so tests run in
/// parallel); its URL.
pub(crate) async fn fresh_postgres_db(tag: &str) -> String {
    let base = std::env::var("SUBAGENTS_TEST_POSTGRES_URL")
        .expect("SUBAGENTS_TEST_POSTGRES_URL is set (run .ci/postgres.sh start DIR)");
    pg::create_database(&base, &format!("a2a_{tag}_{}", uuid().replace('-', "_"))).await
}

/// A SUT started on a `tasks.db` file in a new directory: the directory (keep it while the
/// test runs), the store's URL (to start it again) and the SUT.
pub(crate) async fn sut_on_new_sqlite() -> (tempfile::TempDir, String, Sut) {
    let dir = tempfile::tempdir().unwrap();
    let store = sqlite_url(&dir);
    let sut = Sut::start(&store, &[]).await;
    (dir, store, sut)
}

/// A `sqlite:` URL for a `tasks.db` file in `dir`.
pub(crate) fn sqlite_url(dir: &tempfile::TempDir) -> String {
    format!("sqlite:{}", dir.path().join("tasks.db").display())
}

/// The URL itself, for [`on_sqlite_and_postgres`] scenarios that open the database themselves
/// (to open it again, as another process would).
pub(crate) async fn url(url: &str) -> String {
    url.to_owned()
}

/// Opens the database at `url` (a real one, never `memory`).
pub(crate) async fn db(url: &str) -> subagent_store::Db {
    let url: subagent_store::StoreUrl = url.parse().expect("store URL");
    subagent_store::Db::open(&url).await.unwrap().unwrap()
}

/// A database on a fresh SQLite file (keep the directory while it is used).
pub(crate) async fn sqlite_db() -> (tempfile::TempDir, subagent_store::Db) {
    let dir = tempfile::tempdir().unwrap();
    let db = db(&sqlite_url(&dir)).await;
    (dir, db)
}

/// Opens the database at `url` and an A2A task store on it.
#[cfg(feature = "a2a")]
pub(crate) async fn task_store(
    url: &str,
    options: subagent_store::a2a::A2aStoreOptions,
) -> (subagent_store::Db, subagent_store::a2a::SqlTaskStore) {
    let db = db(url).await;
    let store = subagent_store::a2a::SqlTaskStore::open(db.clone(), options)
        .await
        .unwrap();
    (db, store)
}

/// For each scenario `name(open(url).await)` listed, a module `name` with two tests: `sqlite`
/// on a fresh SQLite file and `postgres` (ignored unless CI provides one) on a fresh database of
/// the server `SUBAGENTS_TEST_POSTGRES_URL` names. `open` is an `async fn(&str) -> T`.
#[allow(unused_macros)] // not every feature set has a test on both backends
macro_rules! on_sqlite_and_postgres {
    ($open:path => $($scenario:ident),+ $(,)?) => {$(
        mod $scenario {
            #[allow(unused_imports)]
            use super::*;

            #[tokio::test]
            async fn sqlite() {
                let dir = tempfile::tempdir().unwrap();
                super::$scenario($open(&$crate::common::sqlite_url(&dir)).await).await;
            }

            #[tokio::test]
            #[ignore = "needs PostgreSQL: set SUBAGENTS_TEST_POSTGRES_URL (.ci/postgres.sh starts one)"]
            async fn postgres() {
                let url = $crate::common::fresh_postgres_db("t").await;
                super::$scenario($open(&url).await).await;
            }
        }
    )+};
}
#[allow(unused_imports)]
pub(crate) use on_sqlite_and_postgres;

/// Reads SSE `data:` events of a response until `stop` returns true or the time is up.
pub(crate) async fn sse_events(
    resp: reqwest::Response,
    within: Duration,
    mut stop: impl FnMut(&Value) -> bool,
) -> Vec<Value> {
    use futures::StreamExt;
    let mut out = Vec::new();
    let mut buf = String::new();
    let mut body = resp.bytes_stream();
    let _ = tokio::time::timeout(within, async {
        while let Some(chunk) = body.next().await {
            let Ok(chunk) = chunk else { return };
            buf.push_str(&String::from_utf8_lossy(&chunk));
            while let Some(end) = buf.find("\n\n") {
                let frame: String = buf.drain(..end + 2).collect();
                for line in frame.lines() {
                    if let Some(data) = line.strip_prefix("data:") {
                        let v: Value = serde_json::from_str(data.trim()).expect("event JSON");
                        let done = stop(&v);
                        out.push(v);
                        if done {
                            return;
                        }
                    }
                }
            }
        }
    })
    .await;
    out
}
