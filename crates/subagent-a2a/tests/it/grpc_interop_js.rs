//! Our gRPC client against the official A2A JavaScript SDK's gRPC server (`@a2a-js/sdk` 1.3,
//! `@a2a-js/sdk/server/grpc` on `@grpc/grpc-js`; `tests/js/server.mjs --grpc`): our resolver
//! verifies the card the SDK signed and picks its GRPC interface when asked for, then send,
//! stream, get, cancel and an error status go through.
//!
//! Needs `node_modules` from `.ci/setup-js.sh`, so it is `#[ignore]`d; CI runs it with
//! `-- --ignored`.

use crate::js;

use std::process::Stdio;

use futures::StreamExt;
use subagent_a2a::A2aError;
use subagent_a2a::client::{A2aResolver, Binding, CardVerification};
use subagent_a2a::signing::{CardTrust, TrustedKeys};
use subagent_a2a::types::jsonrpc::codes;
use subagent_a2a::types::v1::{self, TaskState};
use subagent_spi::SubagentReference;

fn send(text: &str, return_immediately: bool) -> v1::SendMessageRequest {
    let mut r = v1::SendMessageRequest::new(v1::Message::new(
        v1::Role::User,
        uuid::Uuid::new_v4().to_string(),
        vec![v1::Part::text(text)],
    ));
    r.configuration = Some(v1::SendMessageConfiguration {
        return_immediately,
        ..Default::default()
    });
    r
}

fn artifact_text(t: &v1::Task) -> String {
    t.artifacts
        .iter()
        .flat_map(|a| a.parts.iter().filter_map(|p| p.as_text()))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs node_modules from .ci/setup-js.sh"]
async fn our_grpc_client_against_the_js_sdk_grpc_server() {
    let mut child = js::node()
        .args(["server.mjs", "--grpc"])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("node starts");
    let got = js::read_prefixed(
        child.stdout.take().expect("stdout"),
        &["GRPC ", "LISTENING ", "JWK "],
    )
    .await;
    let (grpc_addr, base, jwk) = (&got[0], &got[1], &got[2]);

    // The JS-signed card, verified under Require; the GRPC interface chosen when asked for.
    let def = A2aResolver::new()
        .with_card_verification(CardVerification::new(
            CardTrust::Require,
            TrustedKeys::new().with(jwk, None).expect("the JS key"),
        ))
        .resolve_a2a(
            &SubagentReference::new(base.as_str(), subagent_a2a::KIND)
                .with_metadata("binding", "GRPC"),
        )
        .await
        .expect("our resolver accepts the JS SDK's signed card");
    assert_eq!(
        def.endpoint().binding,
        Binding::Grpc,
        "{:?}",
        def.endpoint()
    );
    assert_eq!(def.endpoint().url, format!("http://{grpc_addr}"));
    let c = def.client(reqwest::Client::new());

    // Send (blocking): a completed task with the echo artifact.
    let task = match c.send_message(send("hello", false)).await.expect("send") {
        v1::SendMessageResponse::Task(t) => t,
        other @ v1::SendMessageResponse::Message(_) => panic!("expected a task, got {other:?}"),
    };
    assert_eq!(task.status.state, TaskState::Completed);
    assert_eq!(artifact_text(&task), "echo: hello");
    // Stream: an artifact on the way, the last event completed.
    let mut events = c
        .send_streaming_message(send("streamed", false))
        .await
        .expect("stream");
    let (mut artifacts, mut last) = (0, None);
    while let Some(e) = events.next().await {
        match e.expect("event") {
            v1::StreamResponse::ArtifactUpdate(_) => artifacts += 1,
            v1::StreamResponse::StatusUpdate(u) => last = Some(u.status.state),
            v1::StreamResponse::Task(t) => last = Some(t.status.state),
            v1::StreamResponse::Message(m) => panic!("a message in the stream: {m:?}"),
        }
    }
    assert!(artifacts > 0, "no artifact update");
    assert_eq!(last, Some(TaskState::Completed));
    // Get, and an unknown task: NOT_FOUND read back as TaskNotFound.
    let again = c.get_task(&task.id, None).await.expect("get");
    assert_eq!(again.id, task.id);
    assert_eq!(again.status.state, TaskState::Completed);
    match c.get_task("no-such-task", None).await {
        Err(A2aError::Rpc { error, .. }) => {
            assert_eq!(error.code, codes::TASK_NOT_FOUND, "{error:?}")
        }
        other => panic!("expected TaskNotFound, got {other:?}"),
    }
    // Cancel a slow task.
    let slow = match c.send_message(send("slow", true)).await.expect("send slow") {
        v1::SendMessageResponse::Task(t) => t,
        other @ v1::SendMessageResponse::Message(_) => panic!("expected a task, got {other:?}"),
    };
    let canceled = c.cancel_task(&slow.id).await.expect("cancel");
    assert_eq!(canceled.status.state, TaskState::Canceled);
    let _ = child.kill().await;
}
