//! Interop of our A2A server with the official Python SDK clients: a2a-sdk 1.x (JSON-RPC and
//! HTTP+JSON, discovering the agent from `agent-card.json`) and a2a-sdk 0.3.26 (JSON-RPC,
//! discovering it from `agent.json`, or from `agent-card.json` when the server serves the 0.3
//! card there; and HTTP+JSON). Each client sends, streams, gets and cancels
//! (`tests/py_clients/*.py`).
//!
//! The venvs come from `.ci/setup-python.sh` (`target/py/a2a-1x`, `target/py/a2a-03`, or the
//! interpreters named by `SUBAGENTS_A2A_PY_1X` / `SUBAGENTS_A2A_PY_03`). Without them a test
//! is `#[ignore]`d, so `cargo test` reports it as ignored; `.ci/run` sets the venvs up and runs
//! these with `-- --ignored`, where a missing venv fails.

use std::path::{Path, PathBuf};
use std::time::Duration;

use subagent_a2a::server::{A2aServer, AgentInfo, AgentMount};
use subagent_a2a::types::ProtocolVersion;

mod common;

use common::Srv;

fn python(env: &str, venv: &str) -> Option<PathBuf> {
    let path = std::env::var_os(env).map(PathBuf::from).unwrap_or_else(|| {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../target/py")
            .join(venv)
            .join("bin/python")
    });
    if path.exists() {
        return Some(path);
    }
    let msg = format!(
        "A2A server interop: no Python at {} (set {env} or run .ci/setup-python.sh)",
        path.display()
    );
    panic!("{msg}: these tests run only when asked for (`-- --ignored`), and need it")
}

async fn start(card_version: ProtocolVersion) -> (String, Srv) {
    start_with(A2aServer::builder().agent_card_version(card_version)).await
}

/// Serves `builder` with the test agent at `/agents/echo`; the agent's URL and the server.
async fn start_with(builder: subagent_a2a::server::A2aServerBuilder) -> (String, Srv) {
    let echo = AgentMount::new(
        "/agents/echo",
        AgentInfo::new("echo", "Echoes the text back as an artifact"),
        common::TestAgent::default(),
    );
    let srv = common::serve(builder.mount(echo)).await;
    (srv.url("/agents/echo"), srv)
}

async fn run_client(python: &Path, script: &str, args: &[&str]) -> Vec<String> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/py_clients")
        .join(script);
    let out = tokio::time::timeout(
        Duration::from_secs(120),
        tokio::process::Command::new(python)
            .arg(&script)
            .args(args)
            .kill_on_drop(true)
            .output(),
    )
    .await
    .expect("python client finished within 120 s")
    .expect("python client ran");
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(
        out.status.success(),
        "{} {args:?} failed ({}):\nstdout:\n{stdout}\nstderr:\n{stderr}",
        script.display(),
        out.status
    );
    stdout.lines().map(str::to_string).collect()
}

fn assert_all_checks(lines: &[String]) {
    for check in ["send", "get", "stream", "cancel"] {
        assert!(
            lines.iter().any(|l| l.starts_with(&format!("OK {check} "))),
            "check `{check}` missing from {lines:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the official Python A2A SDK venvs: bash .ci/setup-python.sh, then cargo test --workspace --all-features -- --ignored (CI does)"]
async fn python_1x_client_over_jsonrpc() {
    let Some(py) = python("SUBAGENTS_A2A_PY_1X", "a2a-1x") else {
        return;
    };
    let (url, srv) = start(ProtocolVersion::V1).await;
    let lines = run_client(&py, "client_v1.py", &[&url, "JSONRPC"]).await;
    assert_all_checks(&lines);
    drop(srv);
}

#[cfg(feature = "grpc-server")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the official Python A2A SDK venvs: bash .ci/setup-python.sh, then cargo test --workspace --all-features -- --ignored (CI does)"]
async fn python_1x_client_over_grpc() {
    let Some(py) = python("SUBAGENTS_A2A_PY_1X", "a2a-1x") else {
        return;
    };
    // gRPC on its own port, listed on the card; the Python client discovers it there.
    let grpc = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let grpc_addr = grpc.local_addr().expect("addr");
    let server = A2aServer::builder()
        .grpc_url(grpc_addr.to_string())
        .mount(AgentMount::new(
            "/agents/echo",
            AgentInfo::new("echo", "Echoes the text back as an artifact"),
            common::TestAgent::default(),
        ))
        .build()
        .expect("server builds");
    let token = server.shutdown_token();
    let http = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = http.local_addr().expect("addr");
    let (s1, s2) = (server.clone(), server);
    let (t1, t2) = (token.clone(), token.clone());
    tokio::spawn(async move {
        let _ = s1.serve(http, async move { t1.cancelled().await }).await;
    });
    tokio::spawn(async move {
        let _ = s2
            .serve_grpc(grpc, async move { t2.cancelled().await })
            .await;
    });
    let url = format!("http://{addr}/agents/echo");
    let lines = run_client(&py, "client_v1.py", &[&url, "GRPC"]).await;
    assert_all_checks(&lines);
    token.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the official Python A2A SDK venvs: bash .ci/setup-python.sh, then cargo test --workspace --all-features -- --ignored (CI does)"]
async fn python_1x_client_over_http_json() {
    let Some(py) = python("SUBAGENTS_A2A_PY_1X", "a2a-1x") else {
        return;
    };
    let (url, srv) = start(ProtocolVersion::V1).await;
    let lines = run_client(&py, "client_v1.py", &[&url, "HTTP+JSON"]).await;
    assert_all_checks(&lines);
    drop(srv);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the official Python A2A SDK venvs: bash .ci/setup-python.sh, then cargo test --workspace --all-features -- --ignored (CI does)"]
async fn python_03_client_discovers_agent_json() {
    let Some(py) = python("SUBAGENTS_A2A_PY_03", "a2a-03") else {
        return;
    };
    let (url, srv) = start(ProtocolVersion::V1).await;
    let lines = run_client(&py, "client_v03.py", &[&url, "/.well-known/agent.json"]).await;
    assert_all_checks(&lines);
    drop(srv);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the official Python A2A SDK venvs: bash .ci/setup-python.sh, then cargo test --workspace --all-features -- --ignored (CI does)"]
async fn python_03_client_over_http_json() {
    let Some(py) = python("SUBAGENTS_A2A_PY_03", "a2a-03") else {
        return;
    };
    // The stock 0.3 client limited to HTTP+JSON: it finds the binding in the card's
    // `additionalInterfaces` and calls the `/v1/…` routes (its RestTransport).
    let (url, srv) = start(ProtocolVersion::V1).await;
    let lines = run_client(
        &py,
        "client_v03.py",
        &[&url, "/.well-known/agent.json", "HTTP+JSON"],
    )
    .await;
    assert!(
        lines.iter().any(|l| l == "OK transport RestTransport"),
        "{lines:?}"
    );
    assert_all_checks(&lines);
    drop(srv);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the official Python A2A SDK venvs: bash .ci/setup-python.sh, then cargo test --workspace --all-features -- --ignored (CI does)"]
async fn python_03_client_with_03_card_at_agent_card_json() {
    let Some(py) = python("SUBAGENTS_A2A_PY_03", "a2a-03") else {
        return;
    };
    let (url, srv) = start(ProtocolVersion::V03).await;
    let lines = run_client(
        &py,
        "client_v03.py",
        &[&url, "/.well-known/agent-card.json"],
    )
    .await;
    assert_all_checks(&lines);
    drop(srv);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the official Python A2A SDK venvs: bash .ci/setup-python.sh, then cargo test --workspace --all-features -- --ignored (CI does)"]
async fn python_03_client_discovers_agent_card_json_under_legacy_discovery() {
    let Some(py) = python("SUBAGENTS_A2A_PY_03", "a2a-03") else {
        return;
    };
    // The stock 0.3 client's default path, no A2A-Version header: the 0.3 card (1.0
    // interfaces embedded) answers.
    let (url, srv) = start_with(A2aServer::builder().legacy_card_discovery(true)).await;
    let lines = run_client(
        &py,
        "client_v03.py",
        &[&url, "/.well-known/agent-card.json"],
    )
    .await;
    assert_all_checks(&lines);
    drop(srv);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the official Python A2A SDK venvs: bash .ci/setup-python.sh, then cargo test --workspace --all-features -- --ignored (CI does)"]
async fn python_1x_client_reads_the_embedded_interfaces_under_legacy_discovery() {
    let Some(py) = python("SUBAGENTS_A2A_PY_1X", "a2a-1x") else {
        return;
    };
    // The 1.x resolver sends no A2A-Version either: it gets the 0.3 card and reads its
    // `supportedInterfaces`, so it still talks 1.0.
    let (url, srv) = start_with(A2aServer::builder().legacy_card_discovery(true)).await;
    let lines = run_client(&py, "client_v1.py", &[&url, "JSONRPC"]).await;
    assert_all_checks(&lines);
    drop(srv);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the official Python A2A SDK venvs: bash .ci/setup-python.sh, then cargo test --workspace --all-features -- --ignored (CI does)"]
async fn python_1x_client_registers_a_webhook_and_receives_pushes() {
    let Some(py) = python("SUBAGENTS_A2A_PY_1X", "a2a-1x") else {
        return;
    };
    // The client's webhook listens on 127.0.0.1: allowed explicitly.
    let (url, srv) = start_with(
        A2aServer::builder()
            .push_notifications(true)
            .push_allow_private(true),
    )
    .await;
    for binding in ["JSONRPC", "HTTP+JSON"] {
        let lines = run_client(&py, "client_v1_push.py", &[&url, binding]).await;
        for check in ["create", "get-list", "deliver"] {
            assert!(
                lines.iter().any(|l| l.starts_with(&format!("OK {check} "))),
                "{binding}: check `{check}` missing from {lines:?}"
            );
        }
    }
    drop(srv);
}
