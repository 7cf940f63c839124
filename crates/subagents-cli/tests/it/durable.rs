//! Durable state through the binary, with real processes: a `subagents run` that started a
//! background child is killed with SIGKILL; a new process reads the child's result (or sees it
//! `interrupted`) with `TaskOutput`, and `subagents task --resume` continues its session. On
//! the default store (SQLite under the data directory) and, as ignored tests, on PostgreSQL.

use crate::common;
use common::OutputOk;

use std::path::PathBuf;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use common::{fixtures, last_tool_result, process_in, rt, subagents_in, word};
use serde_json::{Value, json};
use subagent_testkit::{Reply, ScriptedModelServer};

/// One test's world: a scripted model server, a home directory (whose data directory holds
/// the default SQLite store unless `store` says otherwise), a config naming the child model.
struct World {
    server: ScriptedModelServer,
    home: tempfile::TempDir,
    config: PathBuf,
    store: Option<String>,
}

impl World {
    fn new(rt: &tokio::runtime::Runtime, store: Option<String>) -> Self {
        let (server, home, config) = common::child_model_home(rt);
        Self {
            server,
            home,
            config,
            store,
        }
    }

    fn main_model(&self) -> String {
        self.server.openai_model("main-model")
    }

    fn args(&self) -> Vec<String> {
        let mut a = vec!["--config".to_string(), self.config.display().to_string()];
        if let Some(store) = &self.store {
            a.extend(["--store".to_string(), store.clone()]);
        }
        a
    }

    fn default_db(&self) -> PathBuf {
        self.home.path().join(".local/share/subagents/ledger.db")
    }

    /// `subagents run PROMPT` as a child process we can kill.
    fn spawn_run(&self, prompt: &str) -> Child {
        process_in(self.home.path())
            .args(self.args())
            .args(["run", prompt, "--model", &self.main_model(), "--agents"])
            .arg(fixtures().join("local"))
            .arg("--workspace")
            .arg(self.home.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn subagents run")
    }

    /// `subagents ARGS...` to completion, in the same home.
    fn command(&self) -> assert_cmd::Command {
        let mut cmd = subagents_in(self.home.path());
        cmd.args(self.args());
        cmd
    }

    /// A main agent's run that answers at once, to completion.
    fn run_hello(&self) {
        self.server
            .script()
            .push_for_model("main-model", Reply::text("hello"));
        self.command()
            .args(["run", "hi", "--model", &self.main_model()])
            .assert()
            .success();
    }

    /// `subagents prune` exits 2 with `why` on stderr.
    fn prune_refused(&self, why: &str) {
        self.command()
            .args(["prune"])
            .assert()
            .code(2)
            .stderr(predicates::str::contains(why));
    }

    /// Waits (bounded) until the server has `n` requests.
    fn wait_requests(&self, rt: &tokio::runtime::Runtime, n: usize) {
        rt.block_on(async {
            tokio::time::timeout(Duration::from_secs(60), self.server.wait_for_requests(n))
                .await
                .unwrap_or_else(|_| panic!("{n} model requests within 60 s"));
        });
    }

    /// Polls `subagents prune --dry-run` until the store holds a finished background task.
    fn wait_finished_record(&self) {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let out = self
                .command()
                .args(["prune", "--dry-run", "--older-than", "0s", "--json"])
                .output()
                .expect("prune runs");
            let v: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
            if v["tasks"].as_u64().unwrap_or(0) >= 1 {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "the finished child was never recorded: {v} {}",
                String::from_utf8_lossy(&out.stderr)
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The first process: the main agent starts `echo-agent` in the background (on the child
    /// model), then thinks forever; returns the process and the child's task id.
    fn start_first_process(
        &self,
        rt: &tokio::runtime::Runtime,
        child_reply: Reply,
    ) -> (Child, String) {
        let script = self.server.script();
        script.push_for_model("main-model", common::background_echo_call());
        script.push_for_model("child-model", child_reply);
        // The main agent's next turn never ends: the process is killed during it.
        script.push_for_model(
            "main-model",
            Reply::text("never seen").with_delay(Duration::from_secs(120)),
        );
        let child = self.spawn_run("start the long job");
        self.wait_requests(rt, 3);
        let reqs = self.server.requests();
        let second_main = reqs
            .iter()
            .filter(|r| r.model() == Some("main-model"))
            .nth(1)
            .expect("the main agent's second turn");
        let task_id = word(&last_tool_result(&second_main.body), "task_").expect("a task id");
        (child, task_id)
    }

    /// A second process whose main agent reads `task_id` with TaskOutput; returns what
    /// TaskOutput said.
    fn task_output_in_new_process(&self, rt: &tokio::runtime::Runtime, task_id: &str) -> String {
        let before = self.server.request_count();
        let script = self.server.script();
        script.push_for_model(
            "main-model",
            Reply::tool_calls(vec![(
                "TaskOutput",
                json!({"task_id": task_id, "block": false}),
            )]),
        );
        script.push_for_model("main-model", Reply::text("read it"));
        self.command()
            .args([
                "run",
                "read the old task",
                "--model",
                &self.main_model(),
                "--agents",
            ])
            .arg(fixtures().join("local"))
            .arg("--workspace")
            .arg(self.home.path())
            .assert()
            .success();
        self.wait_requests(rt, before + 2);
        let reqs = self.server.requests();
        last_tool_result(&reqs.last().expect("a request").body)
    }

    /// `subagents task echo-agent PROMPT --resume SESSION` in a third process; returns its
    /// stdout and the messages the child model was sent.
    fn resume(&self, session: &str, answer: &str) -> (String, Vec<Value>) {
        self.server
            .script()
            .push_for_model("child-model", Reply::text(answer));
        let out = self
            .command()
            .args([
                "task",
                "echo-agent",
                "go on",
                "--resume",
                session,
                "--model",
                "child",
            ])
            .arg("--agents")
            .arg(fixtures().join("local"))
            .arg("--workspace")
            .arg(self.home.path())
            .assert()
            .success();
        let stdout = String::from_utf8_lossy(&out.get_output().stdout).to_string();
        let last = self.server.last_request().expect("the child's request");
        assert_eq!(last.model(), Some("child-model"));
        (stdout, last.messages().to_vec())
    }
}

fn kill(mut child: Child) {
    child.kill().expect("SIGKILL"); // std sends SIGKILL on Unix
    child.wait().expect("reaped");
}

fn contents(messages: &[Value]) -> Vec<String> {
    messages
        .iter()
        .map(|m| m["content"].as_str().unwrap_or_default().to_string())
        .collect()
}

/// The child finished before the kill: its result is read back, and its session resumes.
fn finished_result_survives_sigkill(store: Option<String>) {
    let rt = rt();
    let w = World::new(&rt, store);
    let (first, task_id) = w.start_first_process(&rt, Reply::text("the long job is done"));
    w.wait_finished_record();
    kill(first);

    let said = w.task_output_in_new_process(&rt, &task_id);
    assert!(said.contains("status: completed"), "{said}");
    assert!(said.contains("the long job is done"), "{said}");
    assert!(said.contains("earlier process"), "{said}");
    let session = word(&said, "sess_").expect("the result names its session");

    let (stdout, sent) = w.resume(&session, "continued after the restart");
    assert!(stdout.contains("continued after the restart"), "{stdout}");
    let texts = contents(&sent);
    assert!(
        texts.iter().any(|t| t.contains("do the long job"))
            && texts.iter().any(|t| t == "the long job is done")
            && texts.last().is_some_and(|t| t == "go on"),
        "the resumed child sees its earlier turns: {texts:?}"
    );
}

/// The child was still thinking at the kill: it reads back as interrupted with its session,
/// which resumes from its stored transcript.
fn running_task_is_interrupted_and_resumes(store: Option<String>) {
    let rt = rt();
    let w = World::new(&rt, store);
    let (first, task_id) = w.start_first_process(
        &rt,
        Reply::text("never finished").with_delay(Duration::from_secs(120)),
    );
    // The child's model call is in flight: its session was announced before it, and the
    // ledger writer batches within milliseconds.
    std::thread::sleep(Duration::from_millis(1500));
    kill(first);

    let said = w.task_output_in_new_process(&rt, &task_id);
    assert!(said.contains("status: interrupted"), "{said}");
    assert!(said.contains("was interrupted"), "{said}");
    let session = word(&said, "sess_").expect("an interrupted task names its session");
    assert!(said.contains(&format!("resume `{session}`")), "{said}");

    let (stdout, sent) = w.resume(&session, "picked up where it stopped");
    assert!(stdout.contains("picked up where it stopped"), "{stdout}");
    let texts = contents(&sent);
    assert!(
        texts.iter().any(|t| t.contains("do the long job"))
            && texts.last().is_some_and(|t| t == "go on"),
        "the resumed child sees the prompt it was given before the crash: {texts:?}"
    );
}

#[test]
fn sqlite_finished_background_result_survives_sigkill() {
    finished_result_survives_sigkill(None);
}

#[test]
fn sqlite_running_background_task_is_interrupted_and_resumes() {
    running_task_is_interrupted_and_resumes(None);
}

#[test]
fn default_store_is_sqlite_in_the_data_dir_and_memory_opts_out() {
    let rt = rt();
    let w = World::new(&rt, None);
    let out = w
        .command()
        .args(["prune", "--dry-run", "--json"])
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let expected = format!("sqlite:{}", w.default_db().display());
    assert_eq!(v["store"], expected.as_str(), "{v}");
    // A run creates it.
    w.run_hello();
    assert!(w.default_db().exists());
    let w = World::new(&rt, Some("memory".into()));
    w.prune_refused("nothing is persisted");
    w.run_hello();
    assert!(!w.default_db().exists(), "memory writes no file");
    let bad = World::new(&rt, Some("mysql://x".into()));
    bad.prune_refused("invalid store URL");
}

/// A database of its own on the test server for one test.
pub(crate) fn postgres_store() -> String {
    let base = std::env::var("SUBAGENTS_TEST_POSTGRES_URL")
        .expect("SUBAGENTS_TEST_POSTGRES_URL is set (run .ci/postgres.sh)");
    let (head, _) = base.rsplit_once('/').expect("a database in the URL");
    let name = format!(
        "cli_durable_{}_{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    );
    // Debian puts psql on the PATH; a bare cluster has it next to initdb.
    let psql = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .map(|d| d.path().join("bin/psql"))
        .find(|p| p.exists())
        .unwrap_or_else(|| PathBuf::from("psql"));
    let status = std::process::Command::new(psql)
        .arg(&base)
        .args(["-v", "ON_ERROR_STOP=1", "-q", "-c"])
        .arg(format!("CREATE DATABASE {name}"))
        .status()
        .expect("psql runs");
    assert!(status.success(), "CREATE DATABASE {name}");
    format!("{head}/{name}")
}

#[test]
#[ignore = "needs PostgreSQL: set SUBAGENTS_TEST_POSTGRES_URL (.ci/postgres.sh starts one)"]
fn postgres_finished_background_result_survives_sigkill() {
    finished_result_survives_sigkill(Some(postgres_store()));
}

#[test]
#[ignore = "needs PostgreSQL: set SUBAGENTS_TEST_POSTGRES_URL (.ci/postgres.sh starts one)"]
fn postgres_running_background_task_is_interrupted_and_resumes() {
    running_task_is_interrupted_and_resumes(Some(postgres_store()));
}

/// `subagents prune` covers the tasks `subagents serve` served over A2A: a dry run counts a
/// finished one and keeps it, a real run drops it.
#[test]
fn prune_covers_served_a2a_tasks_with_dry_run() {
    use subagents::a2a::server::TaskStore;
    use subagents::a2a::types::v1;
    use subagents::store::a2a::{A2aStoreOptions, SqlTaskStore};
    use subagents::store::{Db, StoreUrl};

    let rt = rt();
    let home = tempfile::tempdir().expect("dir");
    let path = home.path().join("served.db");
    let url = format!("sqlite:{}", path.display());
    rt.block_on(async {
        let db = Db::open(&StoreUrl::Sqlite(path.clone()))
            .await
            .expect("open")
            .expect("a database");
        let store = SqlTaskStore::open(db, A2aStoreOptions::default())
            .await
            .expect("store")
            .for_agent("/echo");
        let mut task: v1::Task = serde_json::from_value(json!({
            "id": "served-1",
            "contextId": "ctx-1",
            "status": {"state": "TASK_STATE_COMPLETED", "timestamp": "2026-01-01T00:00:00Z"},
        }))
        .expect("a task");
        task.history.clear();
        store.save(task).await.expect("saved");
    });
    let w = World::new(&rt, Some(url));
    let prune = |extra: &[&str]| -> Value {
        let out = w
            .command()
            .args(["prune", "--older-than", "0s", "--json"])
            .args(extra)
            .output_ok();
        serde_json::from_slice(&out.stdout).expect("JSON")
    };
    std::thread::sleep(Duration::from_millis(5));
    for _ in 0..2 {
        let v = prune(&["--dry-run"]);
        assert_eq!(v["a2a_tasks"], 1, "a dry run counts the served task: {v}");
        assert_eq!(v["dry_run"], true, "{v}");
    }
    let v = prune(&[]);
    assert_eq!(v["a2a_tasks"], 1, "{v}");
    let v = prune(&[]);
    assert_eq!(v["a2a_tasks"], 0, "dropped by the first run: {v}");
}
