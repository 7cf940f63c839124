//! Interop through real processes: `subagents mcp --listen` serves a `Task` call as an MCP
//! task (`io.modelcontextprotocol/tasks`, 2026-07-28) to a client of the official MCP Python
//! SDK 2.x (`mcp` on PyPI; `tests/support/mcp_tasks_client.py`, venv `target/py/mcp-2x` from
//! `.ci/setup-mcp.sh`, or the interpreter named by `SUBAGENTS_MCP_PY`), which follows it to its
//! result with `tasks/get`, and cancels another with `tasks/cancel`.
//!
//! Ignored by default (they need the venv); CI runs them with `--ignored`.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use common::{Killed, free_port, process_in, write_agent};
use serde_json::{Value, json};
use subagent_testkit::{Reply, ScriptedModelServer};

fn python() -> PathBuf {
    common::venv_python(
        "SUBAGENTS_MCP_PY",
        "mcp-2x",
        "the MCP SDK 2.x",
        ".ci/setup-mcp.sh",
    )
}

/// Serves the agent `worker` (Bash) from `home` over MCP on a free port; returns the process
/// and the endpoint URL once the port accepts connections.
fn serve(
    rt: &tokio::runtime::Runtime,
    model: &ScriptedModelServer,
    home: &Path,
) -> (Killed, String) {
    let agents = write_agent(
        home,
        "worker",
        "---\nname: worker\ndescription: Runs commands.\ntools: Bash\n---\nWork.\n",
    );
    std::fs::create_dir_all(home.join("out")).expect("out/");
    let listen = format!("127.0.0.1:{}", free_port());
    let mut cmd = process_in(home);
    cmd.args(["mcp", "--listen", &listen])
        .args(["--model", &model.openai_model("worker-model")])
        .arg("--agents")
        .arg(&agents)
        .arg("--workspace")
        .arg(home)
        .stderr(Stdio::null());
    let process = Killed(cmd.spawn().expect("subagents mcp starts"));
    rt.block_on(async {
        for _ in 0..400 {
            if tokio::net::TcpStream::connect(&listen).await.is_ok() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("subagents mcp did not come up on {listen}");
    });
    (process, format!("http://{listen}/mcp"))
}

/// Runs the Python client (bounded: 120 s) and returns its JSON report.
fn client(rt: &tokio::runtime::Runtime, url: &str, mode: &str) -> Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support/mcp_tasks_client.py");
    let out = rt.block_on(async {
        let child = tokio::process::Command::new(python())
            .arg(script)
            .args([url, mode, "worker", "do the work"])
            .kill_on_drop(true)
            .output();
        tokio::time::timeout(Duration::from_secs(120), child)
            .await
            .expect("the Python client ends within 120 s")
            .expect("the Python client runs")
    });
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "the Python client failed: {}\n{stdout}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(stdout.lines().last().unwrap_or_default())
        .unwrap_or_else(|e| panic!("a JSON report ({e}): {stdout}"))
}

#[test]
#[ignore = "needs the MCP Python SDK venv (.ci/setup-mcp.sh)"]
fn a_python_sdk_client_follows_a_task_to_its_result() {
    let (rt, model) = common::scripted();
    model.push(Reply::text("python sees 42"));
    let home = tempfile::tempdir().expect("tmp");
    let (_server, url) = serve(&rt, &model, home.path());
    let report = client(&rt, &url, "result");
    assert_eq!(report["handle_status"], "working", "{report}");
    assert!(
        report["task_id"]
            .as_str()
            .is_some_and(|t| t.starts_with("task_")),
        "{report}"
    );
    assert_eq!(report["status"], "completed", "{report}");
    assert_eq!(report["is_error"], false, "{report}");
    assert!(
        report["text"]
            .as_str()
            .is_some_and(|t| t.contains("python sees 42")),
        "{report}"
    );
}

#[test]
#[ignore = "needs the MCP Python SDK venv (.ci/setup-mcp.sh)"]
fn a_python_sdk_client_cancels_a_task() {
    let (rt, model) = common::scripted();
    // The run stops at a Bash call that needs approval (nobody gives it), so it is still
    // going when the client cancels.
    model.push(Reply::tool_calls(vec![(
        "Bash",
        json!({"command": "touch out/never.txt"}),
    )]));
    model.push(Reply::text("never reached"));
    let home = tempfile::tempdir().expect("tmp");
    let (_server, url) = serve(&rt, &model, home.path());
    let report = client(&rt, &url, "cancel");
    assert_eq!(report["status"], "cancelled", "{report}");
    assert!(!home.path().join("out/never.txt").exists());
}
