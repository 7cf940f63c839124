//! Usage from a remote child across processes: `subagents serve` (one process) hosts a
//! coordinator that delegates to a leaf; `subagents call … --json` (another process) shows the
//! served run's tokens and its leaf in its usage tree, reported through the A2A usage extension.

use serde_json::Value;
use subagent_testkit::{Reply, ScriptedModelServer};

struct Killed(std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn call_json_shows_the_served_runs_usage_tree_and_cost() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let model_server = rt.block_on(ScriptedModelServer::start());
    model_server.push(
        Reply::task_call("leaf", "LEAF")
            .with_usage(100, 10)
            .with_model("m"),
    );
    model_server.push(
        Reply::text("the fact")
            .with_usage(4000, 1000)
            .with_model("m"),
    );
    model_server.push(Reply::text("coordinated").with_usage(7, 3).with_model("m"));

    let dir = tempfile::tempdir().expect("tmp");
    let root = dir.path();
    let team =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../subagents/tests/fixtures/team");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port");
    let base = format!("http://127.0.0.1:{port}");
    let model = format!("openai-compatible:m@{}", model_server.openai_base_url());
    let serve = std::process::Command::new(assert_cmd::cargo::cargo_bin("subagents"))
        .args([
            "serve",
            "--listen",
            &format!("127.0.0.1:{port}"),
            "--model",
            &model,
        ])
        .arg("--agents")
        .arg(&team)
        .env("HOME", root)
        .env_remove("ANTHROPIC_API_KEY")
        .current_dir(root)
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("serve starts");
    let _serve = Killed(serve);
    rt.block_on(async {
        for _ in 0..200 {
            if reqwest::get(format!("{base}/")).await.is_ok() {
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        panic!("serve did not come up on {base}");
    });

    let cfg = root.join("subagents.toml");
    std::fs::write(&cfg, "[prices]\n\"m\" = { input = 1.0, output = 2.0 }\n").expect("config");
    let out = assert_cmd::Command::cargo_bin("subagents")
        .expect("binary")
        .arg("--config")
        .arg(&cfg)
        .args(["call", &format!("{base}/coordinator"), "go", "--json"])
        .env("HOME", root)
        .current_dir(root)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let v: Value = serde_json::from_slice(&out).expect("JSON");
    assert_eq!(v["text"], "coordinated", "{v}");
    let usage = &v["usage"];
    assert_eq!(usage["kind"], "A2A", "{v}");
    assert_eq!(usage["usage"]["input_tokens"], 107, "{v}");
    assert_eq!(usage["usage"]["output_tokens"], 13, "{v}");
    assert_eq!(usage["usage"]["turns"], 2, "{v}");
    let leaf = &usage["children"][0];
    assert_eq!(leaf["agent"], "leaf", "{v}");
    assert_eq!(leaf["kind"], "CLAUDE", "{v}");
    assert_eq!(leaf["usage"]["input_tokens"], 4000, "{v}");
    // Priced like a local run: 4000 in at $1/M + 1000 out at $2/M for the leaf.
    assert_eq!(leaf["usage"]["cost_usd"], 0.006, "{v}");
}
