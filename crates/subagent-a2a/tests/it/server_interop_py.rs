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

use subagent_a2a::server::{A2aServer, A2aServerBuilder, AgentInfo, AgentMount};
use subagent_a2a::types::ProtocolVersion;
use subagent_a2a::types::usage::usage_extension;
use subagent_spi::{TaskStatus, Usage, UsageNode};

use crate::common;
use crate::python;

use common::{Srv, TestAgent};
use python::{SDK_1X, SDK_03};

/// The test agent at `/agents/echo`, reporting usage (the usage extension, declared in the
/// card) when it completes.
fn echo_mount() -> AgentMount {
    let usage = UsageNode::new(
        "echo",
        "TEST",
        TaskStatus::Completed,
        Usage::new()
            .with_tokens(12, 3)
            .with_turns(1)
            .with_duration_ms(1)
            .with_model("echo-model"),
    )
    .with_children(vec![UsageNode::new(
        "helper",
        "TEST",
        TaskStatus::Completed,
        Usage::new().with_tokens(5, 1).with_turns(1),
    )]);
    let mut info = AgentInfo::new("echo", "Echoes the text back as an artifact");
    info.extensions.push(usage_extension());
    let agent = TestAgent {
        usage: Some(usage),
        ..TestAgent::default()
    };
    AgentMount::new("/agents/echo", info, agent)
}

/// Serves `builder` with the test agent at `/agents/echo`; the agent's URL and the server.
async fn start_with(builder: A2aServerBuilder) -> (String, Srv) {
    let echo = echo_mount();
    let srv = common::serve(builder.mount(echo)).await;
    (srv.url("/agents/echo"), srv)
}

async fn run_client(python: &Path, script: &str, args: &[&str]) -> Vec<String> {
    let stdout = python::run_script(python, &format!("py_clients/{script}"), args).await;
    stdout.lines().map(str::to_string).collect()
}

fn assert_all_checks(lines: &[String]) {
    for check in ["send", "get", "usage", "stream", "cancel"] {
        assert!(
            lines.iter().any(|l| l.starts_with(&format!("OK {check} "))),
            "check `{check}` missing from {lines:?}"
        );
    }
}

/// The official SDK clients: 1.x (`client_v1.py`, given the binding) and 0.3.26
/// (`client_v03.py`, given the card path).
#[derive(Clone, Copy)]
enum Sdk {
    V1x,
    V03,
}

impl Sdk {
    fn python(self) -> PathBuf {
        python::interpreter(match self {
            Sdk::V1x => SDK_1X,
            Sdk::V03 => SDK_03,
        })
    }

    fn script(self) -> &'static str {
        match self {
            Sdk::V1x => "client_v1.py",
            Sdk::V03 => "client_v03.py",
        }
    }
}

/// Serves `builder` with the echo agent, runs the `sdk` client against it with `arg` and
/// asserts that it sent, got, streamed and cancelled.
async fn sdk_client_passes(sdk: Sdk, builder: A2aServerBuilder, arg: &str) {
    let py = sdk.python();
    let (url, srv) = start_with(builder).await;
    let lines = run_client(&py, sdk.script(), &[&url, arg]).await;
    assert_all_checks(&lines);
    drop(srv);
}

fn card(version: ProtocolVersion) -> A2aServerBuilder {
    A2aServer::builder().agent_card_version(version)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the official Python A2A SDK venvs: bash .ci/setup-python.sh, then cargo test --workspace --all-features -- --ignored (CI does)"]
async fn python_1x_client_over_jsonrpc() {
    sdk_client_passes(Sdk::V1x, card(ProtocolVersion::V1), "JSONRPC").await;
}

#[cfg(feature = "grpc-server")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the official Python A2A SDK venvs: bash .ci/setup-python.sh, then cargo test --workspace --all-features -- --ignored (CI does)"]
async fn python_1x_client_over_grpc() {
    let py = python::interpreter(SDK_1X);
    // gRPC on its own port, listed on the card; the Python client discovers it there.
    let srv = common::serve_with_grpc(A2aServer::builder().mount(echo_mount())).await;
    let url = srv.url("/agents/echo");
    let lines = run_client(&py, "client_v1.py", &[&url, "GRPC"]).await;
    assert_all_checks(&lines);
    drop(srv);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the official Python A2A SDK venvs: bash .ci/setup-python.sh, then cargo test --workspace --all-features -- --ignored (CI does)"]
async fn python_1x_client_over_http_json() {
    sdk_client_passes(Sdk::V1x, card(ProtocolVersion::V1), "HTTP+JSON").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the official Python A2A SDK venvs: bash .ci/setup-python.sh, then cargo test --workspace --all-features -- --ignored (CI does)"]
async fn python_03_client_discovers_agent_json() {
    sdk_client_passes(
        Sdk::V03,
        card(ProtocolVersion::V1),
        "/.well-known/agent.json",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the official Python A2A SDK venvs: bash .ci/setup-python.sh, then cargo test --workspace --all-features -- --ignored (CI does)"]
async fn python_03_client_over_http_json() {
    let py = Sdk::V03.python();
    // The stock 0.3 client limited to HTTP+JSON: it finds the binding in the card's
    // `additionalInterfaces` and calls the `/v1/…` routes (its RestTransport).
    let (url, srv) = start_with(card(ProtocolVersion::V1)).await;
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
    let agent_card = "/.well-known/agent-card.json";
    sdk_client_passes(Sdk::V03, card(ProtocolVersion::V03), agent_card).await;
}

/// The stock 0.3 client's default path, no A2A-Version header: the 0.3 card (1.0 interfaces
/// embedded) answers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the official Python A2A SDK venvs: bash .ci/setup-python.sh, then cargo test --workspace --all-features -- --ignored (CI does)"]
async fn python_03_client_discovers_agent_card_json_under_legacy_discovery() {
    let legacy = A2aServer::builder().legacy_card_discovery(true);
    sdk_client_passes(Sdk::V03, legacy, "/.well-known/agent-card.json").await;
}

/// The 1.x resolver sends no A2A-Version either: it gets the 0.3 card and reads its
/// `supportedInterfaces`, so it still talks 1.0.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the official Python A2A SDK venvs: bash .ci/setup-python.sh, then cargo test --workspace --all-features -- --ignored (CI does)"]
async fn python_1x_client_reads_the_embedded_interfaces_under_legacy_discovery() {
    let legacy = A2aServer::builder().legacy_card_discovery(true);
    sdk_client_passes(Sdk::V1x, legacy, "JSONRPC").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the official Python A2A SDK venvs: bash .ci/setup-python.sh, then cargo test --workspace --all-features -- --ignored (CI does)"]
async fn python_1x_client_registers_a_webhook_and_receives_pushes() {
    let py = python::interpreter(SDK_1X);
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
