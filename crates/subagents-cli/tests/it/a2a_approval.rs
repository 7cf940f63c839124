//! Approvals across A2A, through the binaries: `subagents run` delegates to an agent served by
//! `subagents serve` in another process; the served agent's Bash call needs approval, so its
//! task goes `input-required`; the root answers (`--yes`) and the same remote task completes.
//! Without anyone to answer (no terminal, no `--yes`) the command does not run remotely.

use crate::common;

use serde_json::{Value, json};
use subagent_testkit::Reply;

/// `subagents serve` with a `worker` agent (Bash, default mode) in its own directory, its
/// model scripted as `worker-model`; the main agent's model (`main-model`) on the same server
/// delegates to it, and the worker's first turn asks to run a Bash command (which needs
/// approval).
struct Remote {
    w: common::ServedWorker,
}

impl Remote {
    fn start() -> Self {
        let w = common::ServedWorker::start(
            "---\nname: worker\ndescription: Runs commands.\ntools: Bash\n---\nWork.\n",
        );
        let model = &w.model;
        model.push(Reply::task_call("worker", "touch the file"));
        model.push_for_model(
            "worker-model",
            Reply::tool_calls(vec![(
                "Bash",
                // Confined Bash cannot create files directly in the workspace root: a subdirectory.
                json!({"command": "touch agents/made-remotely.txt"}),
            )]),
        );
        Self { w }
    }

    /// `subagents run ARGS... --a2a URL go` in a home of its own.
    fn run(&self, args: &[&str]) -> assert_cmd::assert::Assert {
        let home = tempfile::tempdir().expect("tmp");
        common::subagents_in(home.path())
            .args(["run", "--store", "memory"])
            .args(args)
            .args(["--a2a", &self.w.url])
            .args(["--model", &self.w.model.openai_model("main-model")])
            .arg("go")
            .assert()
    }

    /// Whether the worker's command ran.
    fn ran(&self) -> bool {
        self.w.dir.path().join("agents/made-remotely.txt").exists()
    }

    /// The served worker's tasks.
    fn tasks(&self) -> Vec<Value> {
        list_tasks(&self.w.rt, &self.w.url)
    }
}

fn list_tasks(rt: &tokio::runtime::Runtime, url: &str) -> Vec<Value> {
    rt.block_on(async {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "ListTasks", "params": {}});
        let v = common::a2a_post(url, &body).await;
        v["result"]["tasks"].as_array().cloned().unwrap_or_default()
    })
}

fn texts(message: &Value) -> String {
    message["parts"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| p["text"].as_str())
        .collect()
}

#[test]
fn yes_at_the_root_answers_a_remote_input_required_and_the_same_task_completes() {
    let remote = Remote::start();
    remote
        .w
        .model
        .push_for_model("worker-model", Reply::text("touched it"));
    remote.w.model.push(Reply::text("done"));

    let stdout = common::stdout_of(remote.run(&["--yes"]).success());
    assert!(stdout.contains("done"), "{stdout}");
    assert!(
        remote.ran(),
        "approved from the root, so the remote command ran"
    );

    // One remote task: the one that asked, was answered `yes`, and completed.
    let tasks = remote.tasks();
    assert_eq!(tasks.len(), 1, "{tasks:?}");
    let task = &tasks[0];
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{task}");
    let history = task["history"].as_array().expect("history");
    let answer = history
        .iter()
        .find(|m| m["role"] == "ROLE_USER" && texts(m).eq_ignore_ascii_case("yes"))
        .expect("the root's answer is in the remote task's history");
    assert_eq!(answer["taskId"], task["id"]);
}

#[test]
fn without_a_terminal_or_yes_the_remote_command_does_not_run() {
    let remote = Remote::start();
    remote
        .w
        .model
        .push(Reply::text("the worker needs an answer"));

    remote.run(&[]).success();
    assert!(
        !remote.ran(),
        "nobody approved, so the remote command did not run"
    );
    // The remote task still waits for its answer (resumable), not completed.
    let tasks = remote.tasks();
    assert_eq!(tasks.len(), 1, "{tasks:?}");
    assert_eq!(
        tasks[0]["status"]["state"], "TASK_STATE_INPUT_REQUIRED",
        "{tasks:?}"
    );
}
