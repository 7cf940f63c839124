//! Our gRPC client against the official Python SDK's gRPC server (`a2a-sdk[grpc]` 1.x,
//! `tests/py/server_v1.py --grpc PORT`): the card's GRPC interface is chosen when asked for,
//! and send, direct message, stream, get, cancel and an error status go through.
//!
//! Needs the venv of `.ci/setup-python.sh` (`target/py/a2a-1x`, or `SUBAGENTS_A2A_PY_1X`), so
//! it is `#[ignore]`d; CI runs it with `-- --ignored`.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use futures::StreamExt;
use subagent_a2a::A2aError;
use subagent_a2a::client::{A2aClient, A2aConfig, AgentCard, Binding, usable_endpoints};
use subagent_a2a::types::jsonrpc::codes;
use subagent_a2a::types::v1::{self, TaskState};
use subagent_spi::SubagentReference;

fn python() -> PathBuf {
    let path = std::env::var_os("SUBAGENTS_A2A_PY_1X")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/py/a2a-1x/bin/python")
        });
    assert!(
        path.exists(),
        "no Python at {} (run .ci/setup-python.sh or set SUBAGENTS_A2A_PY_1X)",
        path.display()
    );
    path
}

fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind a free port");
    l.local_addr().expect("addr").port()
}

fn send(text: &str) -> v1::SendMessageRequest {
    v1::SendMessageRequest::new(v1::Message::new(
        v1::Role::User,
        uuid::Uuid::new_v4().to_string(),
        vec![v1::Part::text(text)],
    ))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the official Python A2A SDK venvs: bash .ci/setup-python.sh, then cargo test --workspace --all-features -- --ignored (CI does)"]
async fn our_grpc_client_against_the_python_sdk_grpc_server() {
    let (port, grpc_port) = (free_port(), free_port());
    let dir = tempfile::tempdir().expect("temp dir");
    let log = dir.path().join("stderr.log");
    let mut child = tokio::process::Command::new(python())
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/py/server_v1.py"))
        .args([port.to_string(), "--grpc".into(), grpc_port.to_string()])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::from(std::fs::File::create(&log).expect("log")))
        .kill_on_drop(true)
        .spawn()
        .expect("start the Python server");
    let card_url = format!("http://127.0.0.1:{port}/.well-known/agent-card.json");
    let mut card = None;
    for _ in 0..600 {
        if let Ok(Some(st)) = child.try_wait() {
            panic!(
                "Python server exited with {st}: {}",
                std::fs::read_to_string(&log).unwrap_or_default()
            );
        }
        if let Ok(r) = reqwest::get(&card_url).await
            && r.status().is_success()
        {
            card = Some(r.json::<v1::AgentCard>().await.expect("card"));
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let card = card.expect("the Python server answered within 60 s");
    let config = A2aConfig::from_reference(
        &SubagentReference::new(format!("http://127.0.0.1:{port}"), "A2A")
            .with_metadata("binding", "GRPC"),
    )
    .expect("config");
    let eps = usable_endpoints(&AgentCard::V1(card.clone()), &card, &card_url, &config)
        .expect("endpoints");
    assert_eq!(eps[0].binding, Binding::Grpc, "{eps:?}");
    assert_eq!(eps[0].url, format!("http://127.0.0.1:{grpc_port}"));
    let c = A2aClient::new(reqwest::Client::new(), eps[0].clone(), Default::default());

    // A task with an artifact.
    let task = match c.send_message(send("artifact report")).await.expect("send") {
        v1::SendMessageResponse::Task(t) => t,
        other @ v1::SendMessageResponse::Message(_) => panic!("expected a task, got {other:?}"),
    };
    assert_eq!(task.status.state, TaskState::Completed);
    assert_eq!(
        task.artifacts[0].parts[0].as_text(),
        Some("artifact: report")
    );
    // A direct message.
    match c.send_message(send("message hi")).await.expect("send") {
        v1::SendMessageResponse::Message(m) => assert_eq!(m.parts[0].as_text(), Some("echo: hi")),
        other @ v1::SendMessageResponse::Task(_) => panic!("expected a message, got {other:?}"),
    }
    // A stream: status updates, an artifact, completed.
    let events: Vec<v1::StreamResponse> = c
        .send_streaming_message(send("stream it"))
        .await
        .expect("stream")
        .map(|e| e.expect("event"))
        .collect()
        .await;
    assert!(
        events
            .iter()
            .any(|e| matches!(e, v1::StreamResponse::ArtifactUpdate(_))),
        "{events:?}"
    );
    let last = match events.last().expect("events") {
        v1::StreamResponse::StatusUpdate(u) => u.status.state,
        v1::StreamResponse::Task(t) => t.status.state,
        other => panic!("last event {other:?}"),
    };
    assert_eq!(last, TaskState::Completed);
    // Get, and an unknown task: NOT_FOUND with the TaskNotFound reason.
    assert_eq!(c.get_task(&task.id, None).await.expect("get").id, task.id);
    match c.get_task("no-such-task", None).await {
        Err(A2aError::Rpc { error, .. }) => {
            assert_eq!(error.code, codes::TASK_NOT_FOUND, "{error:?}")
        }
        other => panic!("expected TaskNotFound, got {other:?}"),
    }
    // Cancel a slow task.
    let mut req = send("slow");
    req.configuration = Some(v1::SendMessageConfiguration {
        return_immediately: true,
        ..Default::default()
    });
    let slow = match c.send_message(req).await.expect("send slow") {
        v1::SendMessageResponse::Task(t) => t,
        other @ v1::SendMessageResponse::Message(_) => panic!("expected a task, got {other:?}"),
    };
    let canceled = c.cancel_task(&slow.id).await.expect("cancel");
    assert_eq!(canceled.status.state, TaskState::Canceled);
    let _ = child.kill().await;
}
