//! Our gRPC client against the official Python SDK's gRPC server (`a2a-sdk[grpc]` 1.x,
//! `tests/py/server_v1.py --grpc PORT`): the card's GRPC interface is chosen when asked for,
//! and send, direct message, stream, get, cancel and an error status go through.
//!
//! Needs the venv of `.ci/setup-python.sh` (`target/py/a2a-1x`, or `SUBAGENTS_A2A_PY_1X`), so
//! it is `#[ignore]`d; CI runs it with `-- --ignored`.

use futures::StreamExt;
use subagent_a2a::A2aError;
use subagent_a2a::client::{A2aClient, A2aConfig, AgentCard, Binding, usable_endpoints};
use subagent_a2a::types::jsonrpc::codes;
use subagent_a2a::types::v1::{self, TaskState};
use subagent_spi::SubagentReference;

use crate::{common, python};

use python::{PyServer, SDK_1X, free_port, user as send};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the official Python A2A SDK venvs: bash .ci/setup-python.sh, then cargo test --workspace --all-features -- --ignored (CI does)"]
async fn our_grpc_client_against_the_python_sdk_grpc_server() {
    let (port, grpc_port) = (free_port(), free_port());
    let server = PyServer::start(
        &python::interpreter(SDK_1X),
        "py/server_v1.py",
        port,
        &["--grpc", &grpc_port.to_string()],
    )
    .await;
    let card_url = format!("{}/.well-known/agent-card.json", server.base);
    let card: v1::AgentCard = common::get_json(&card_url).await;
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
}
