//! Approvals across A2A, through the binaries: `subagents run` delegates to an agent served by
//! `subagents serve` in another process; the served agent's Bash call needs approval, so its
//! task goes `input-required`; the root answers (`--yes`) and the same remote task completes.
//! Without anyone to answer (no terminal, no `--yes`) the command does not run remotely.

mod common;

use std::path::Path;
use std::process::{Child, Command, Stdio};

use serde_json::{Value, json};
use subagent_testkit::{Reply, ScriptedModelServer};

struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `subagents serve` with a `worker` agent (Bash, default mode) in `root`, its model
/// scripted as `worker-model`; returns the process and the worker's URL.
fn serve_worker(
    rt: &tokio::runtime::Runtime,
    model: &ScriptedModelServer,
    root: &Path,
) -> (Killed, String) {
    std::fs::create_dir_all(root.join("agents")).expect("mkdir");
    std::fs::write(
        root.join("agents/worker.md"),
        "---\nname: worker\ndescription: Runs commands.\ntools: Bash\n---\nWork.\n",
    )
    .expect("agent file");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port");
    let base = format!("http://127.0.0.1:{port}");
    let mut cmd = Command::new(assert_cmd::cargo::cargo_bin("subagents"));
    for var in common::CLEARED_VARS {
        cmd.env_remove(var);
    }
    let serve = cmd
        .args([
            "serve",
            "--store",
            "memory",
            "--listen",
            &format!("127.0.0.1:{port}"),
        ])
        .arg("--model")
        .arg(format!(
            "openai-compatible:worker-model@{}",
            model.openai_base_url()
        ))
        .arg("--agents")
        .arg(root.join("agents"))
        .env("HOME", root)
        .env("SUBAGENTS_OLLAMA_URL", "http://127.0.0.1:9")
        .current_dir(root)
        .stderr(Stdio::null())
        .spawn()
        .expect("serve starts");
    let serve = Killed(serve);
    rt.block_on(async {
        for _ in 0..400 {
            if reqwest::get(format!("{base}/")).await.is_ok() {
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        panic!("serve did not come up on {base}");
    });
    (serve, format!("{base}/worker"))
}

fn list_tasks(rt: &tokio::runtime::Runtime, url: &str) -> Vec<Value> {
    rt.block_on(async {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "ListTasks", "params": {}});
        let v: Value = reqwest::Client::new()
            .post(url)
            .header("A2A-Version", "1.0")
            .json(&body)
            .send()
            .await
            .expect("ListTasks answers")
            .json()
            .await
            .expect("JSON");
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
    let rt = common::rt();
    let model = rt.block_on(ScriptedModelServer::start());
    let served = tempfile::tempdir().expect("tmp");
    let (_serve, url) = serve_worker(&rt, &model, served.path());
    model.push(Reply::task_call("worker", "touch the file"));
    model.push_for_model(
        "worker-model",
        Reply::tool_calls(vec![(
            "Bash",
            json!({"command": "touch made-remotely.txt"}),
        )]),
    );
    model.push_for_model("worker-model", Reply::text("touched it"));
    model.push(Reply::text("done"));

    let home = tempfile::tempdir().expect("tmp");
    let out = common::subagents_in(home.path())
        .args(["run", "--yes", "--store", "memory", "--a2a", &url])
        .arg("--model")
        .arg(format!(
            "openai-compatible:main-model@{}",
            model.openai_base_url()
        ))
        .arg("go")
        .assert()
        .success()
        .get_output()
        .clone();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("done"), "{stdout}");
    assert!(
        served.path().join("made-remotely.txt").exists(),
        "approved from the root, so the remote command ran"
    );

    // One remote task: the one that asked, was answered `yes`, and completed.
    let tasks = list_tasks(&rt, &url);
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
    let rt = common::rt();
    let model = rt.block_on(ScriptedModelServer::start());
    let served = tempfile::tempdir().expect("tmp");
    let (_serve, url) = serve_worker(&rt, &model, served.path());
    model.push(Reply::task_call("worker", "touch the file"));
    model.push_for_model(
        "worker-model",
        Reply::tool_calls(vec![(
            "Bash",
            json!({"command": "touch made-remotely.txt"}),
        )]),
    );
    model.push(Reply::text("the worker needs an answer"));

    let home = tempfile::tempdir().expect("tmp");
    common::subagents_in(home.path())
        .args(["run", "--store", "memory", "--a2a", &url])
        .arg("--model")
        .arg(format!(
            "openai-compatible:main-model@{}",
            model.openai_base_url()
        ))
        .arg("go")
        .assert()
        .success();
    assert!(
        !served.path().join("made-remotely.txt").exists(),
        "nobody approved, so the remote command did not run"
    );
    // The remote task still waits for its answer (resumable), not completed.
    let tasks = list_tasks(&rt, &url);
    assert_eq!(tasks.len(), 1, "{tasks:?}");
    assert_eq!(
        tasks[0]["status"]["state"], "TASK_STATE_INPUT_REQUIRED",
        "{tasks:?}"
    );
}
