//! Interop with the official A2A JavaScript SDK (`@a2a-js/sdk`, pinned in
//! `tests/js/package.json`): its client calls our server over JSON-RPC, HTTP+JSON and gRPC (send,
//! stream, get, cancel, push notifications to a webhook it registers, and our card signature
//! checked with its verifier), and our client calls its server (the same calls, and the
//! signature its server puts on the card checked by our resolver).
//!
//! The SDK comes from `.ci/setup-js.sh` (`npm ci` in `tests/js`); without `node_modules` the
//! tests are `#[ignore]`d, and `.ci/run` runs them with `-- --ignored`, where a missing
//! install fails.

use std::process::Stdio;
use std::time::Duration;

use futures::StreamExt;
use serde_json::json;
use subagent_a2a::client::{A2aClient, A2aResolver, Binding, CardVerification};
use subagent_a2a::server::{A2aServer, AgentInfo, AgentMount};
use subagent_a2a::signing::{CardSigner, CardTrust, TrustedKeys};
use subagent_a2a::types::ProtocolVersion;
use subagent_a2a::types::v1::{self, TaskState};
use subagent_spi::SubagentReference;

use crate::common;
use crate::js;

use common::TestAgent;

#[tokio::test]
#[ignore = "needs node_modules from .ci/setup-js.sh"]
async fn js_sdk_client_calls_our_server() {
    let signer = CardSigner::es256_from_bytes(&[11u8; 32])
        .unwrap()
        .with_kid("our-key");
    let builder = A2aServer::builder()
        .card_signer(signer.clone())
        .push_notifications(true)
        // The JS client's webhook listens on 127.0.0.1.
        .push_allow_private(true)
        .mount(AgentMount::new(
            "/agents/echo",
            AgentInfo::new("echo", "Echoes the text back as an artifact"),
            TestAgent::default(),
        ));
    // gRPC on its own port, listed on the card (with the `grpc-server` feature).
    #[cfg(feature = "grpc-server")]
    let srv = common::serve_with_grpc(builder).await;
    #[cfg(not(feature = "grpc-server"))]
    let srv = common::serve(builder).await;
    let base = srv.url("/agents/echo");
    let jwk = signer.public_jwk().to_string();
    let bindings: &[&str] = if cfg!(feature = "grpc-server") {
        &["JSONRPC", "HTTP+JSON", "GRPC"]
    } else {
        &["JSONRPC", "HTTP+JSON"]
    };
    for &binding in bindings {
        let out = tokio::time::timeout(
            Duration::from_secs(120),
            js::node()
                .args(["client.mjs", &base, binding, &jwk])
                .output(),
        )
        .await
        .expect("the JS client finished within 120 s")
        .expect("node ran");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "client.mjs {binding} failed ({}):\nstdout:\n{stdout}\nstderr:\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        for check in [
            "OK signature verified",
            "OK altered card refused",
            "OK send",
            "OK stream",
            "OK get TASK_STATE_COMPLETED",
            "OK cancel TASK_STATE_CANCELED",
            "OK push-created delivered cancel",
            "OK push-send delivered",
        ] {
            assert!(
                stdout.contains(check),
                "{binding}: no `{check}` in\n{stdout}"
            );
        }
    }
    drop(srv);
}

fn send_request(text: &str, return_immediately: bool) -> v1::SendMessageRequest {
    serde_json::from_value(json!({
        "message": {
            "messageId": format!("rs-{text}-{}", uuid::Uuid::new_v4()),
            "role": "ROLE_USER",
            "parts": [{"text": text}]
        },
        "configuration": {"returnImmediately": return_immediately}
    }))
    .unwrap()
}

/// Sends `text` (see [`send_request`]); the task it answered with (a Message fails the test).
async fn send_for_task(
    client: &A2aClient,
    text: &str,
    return_immediately: bool,
    binding: Binding,
) -> v1::Task {
    let request = send_request(text, return_immediately);
    match client.send_message(request).await.unwrap() {
        v1::SendMessageResponse::Task(t) => t,
        other @ v1::SendMessageResponse::Message(_) => {
            panic!("{binding:?}: send answered {other:?}")
        }
    }
}

fn artifact_text(t: &v1::Task) -> String {
    serde_json::to_value(&t.artifacts)
        .unwrap()
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|a| a["parts"].as_array().cloned().unwrap_or_default())
        .filter_map(|p| p["text"].as_str().map(str::to_string))
        .collect()
}

#[tokio::test]
#[ignore = "needs node_modules from .ci/setup-js.sh"]
async fn our_client_calls_a_js_sdk_server() {
    let mut child = js::node()
        .arg("server.mjs")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("node starts");
    let [base, jwk]: [String; 2] =
        js::read_prefixed(child.stdout.take().unwrap(), &["LISTENING ", "JWK "])
            .await
            .try_into()
            .unwrap();

    // The card the JS server signed, verified by our resolver under Require.
    let def = A2aResolver::new()
        .with_card_verification(CardVerification::new(
            CardTrust::Require,
            TrustedKeys::new().with(&jwk, None).unwrap(),
        ))
        .resolve_a2a(&SubagentReference::new(&base, subagent_a2a::KIND))
        .await
        .expect("our resolver accepts the JS SDK's signed card");
    assert_eq!(subagent_spi::SubagentDefinition::name(&def), "js-echo");
    // Another key: refused, naming the JS key id.
    let e = A2aResolver::new()
        .with_card_verification(CardVerification::new(
            CardTrust::Require,
            TrustedKeys::new().with_signer(&CardSigner::es256_from_bytes(&[2u8; 32]).unwrap()),
        ))
        .resolve_a2a(&SubagentReference::new(&base, subagent_a2a::KIND))
        .await
        .unwrap_err();
    assert!(e.to_string().contains("js-key-1"), "{e}");

    for (binding, path) in [(Binding::JsonRpc, "jsonrpc"), (Binding::HttpJson, "rest")] {
        let client = common::client(
            &format!("{base}/a2a/{path}"),
            (binding, ProtocolVersion::V1),
            http::HeaderMap::new(),
        );
        // send (blocking)
        let task = send_for_task(&client, "hello", false, binding).await;
        assert_eq!(task.status.state, TaskState::Completed, "{binding:?}");
        assert_eq!(artifact_text(&task), "echo: hello", "{binding:?}");
        // stream
        let mut events = client
            .send_streaming_message(send_request("streamed", false))
            .await
            .unwrap();
        let mut kinds = Vec::new();
        let mut last_state = None;
        while let Some(ev) = events.next().await {
            match ev.unwrap() {
                v1::StreamResponse::Task(t) => {
                    kinds.push("task");
                    last_state = Some(t.status.state);
                }
                v1::StreamResponse::StatusUpdate(u) => {
                    kinds.push("status");
                    last_state = Some(u.status.state);
                }
                v1::StreamResponse::ArtifactUpdate(_) => kinds.push("artifact"),
                v1::StreamResponse::Message(_) => kinds.push("message"),
            }
        }
        assert!(kinds.contains(&"artifact"), "{binding:?}: {kinds:?}");
        assert_eq!(
            last_state,
            Some(TaskState::Completed),
            "{binding:?}: {kinds:?}"
        );
        // get
        let got = client.get_task(&task.id, None).await.unwrap();
        assert_eq!(got.id, task.id);
        assert_eq!(got.status.state, TaskState::Completed);
        // cancel
        let slow = send_for_task(&client, "slow", true, binding).await;
        let canceled = client.cancel_task(&slow.id).await.unwrap();
        assert_eq!(canceled.status.state, TaskState::Canceled, "{binding:?}");
    }
    let _ = child.kill().await;
}
