//! Our client's A2A 0.3 HTTP+JSON transport against the official Python SDK 0.3.26's REST
//! server (`tests/py/server_v03.py --rest`: the SDK's `RESTAdapter` routes beside its
//! JSON-RPC app, HTTP+JSON listed in the card's `additionalInterfaces`), over 127.0.0.1.
//!
//! The venv comes from `.ci/setup-python.sh` (`target/py/a2a-03`, or the interpreter named by
//! `SUBAGENTS_A2A_PY_03`). The test is `#[ignore]`d; `.ci/run` runs it with `-- --ignored`,
//! where a missing venv fails.

use futures::StreamExt;
use subagent_a2a::A2aError;
use subagent_a2a::A2aResolver;
use subagent_a2a::client::{Binding, KIND};
use subagent_a2a::types::{ProtocolVersion, v1};
use subagent_spi::SubagentReference;

use crate::python;

use python::{PyServer, SDK_03, user};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the official Python A2A SDK venvs: bash .ci/setup-python.sh, then cargo test --workspace --all-features -- --ignored (CI does)"]
async fn our_03_http_json_client_against_the_python_03_rest_server() {
    let server = PyServer::start(
        &python::interpreter(SDK_03),
        "py/server_v03.py",
        python::free_port(),
        &["--rest"],
    )
    .await;
    let reference = SubagentReference::new(&server.base, KIND)
        .with_metadata("binding", "HTTP+JSON")
        .with_metadata("protocol_version", "0.3");
    let def = A2aResolver::new()
        .resolve_a2a(&reference)
        .await
        .expect("resolve the card");
    let e = def.endpoint();
    assert_eq!(
        (e.binding, e.version),
        (Binding::HttpJson, ProtocolVersion::V03)
    );
    let c = def.client(reqwest::Client::new());

    // A direct message.
    match c.send_message(user("message hi")).await.expect("send") {
        v1::SendMessageResponse::Message(m) => {
            assert_eq!(m.parts[0].as_text(), Some("echo: hi"))
        }
        other @ v1::SendMessageResponse::Task(_) => panic!("expected a message: {other:?}"),
    }
    // A task with an artifact, then read back.
    let v1::SendMessageResponse::Task(t) = c.send_message(user("artifact report")).await.unwrap()
    else {
        panic!("expected a task")
    };
    assert_eq!(t.status.state, v1::TaskState::Completed);
    assert_eq!(t.artifacts[0].parts[0].as_text(), Some("artifact: report"));
    let got = c.get_task(&t.id, None).await.expect("get");
    assert_eq!(got.id, t.id);
    assert_eq!(got.status.state, v1::TaskState::Completed);

    // Streaming: working updates, the artifact, completed.
    let mut events = c
        .send_streaming_message(user("stream it"))
        .await
        .expect("stream");
    let mut states = Vec::new();
    let mut artifact = None;
    while let Some(ev) = events.next().await {
        match ev.expect("event") {
            v1::StreamResponse::StatusUpdate(u) => states.push(u.status.state),
            v1::StreamResponse::Task(t) => states.push(t.status.state),
            v1::StreamResponse::ArtifactUpdate(a) => {
                artifact = a.artifact.parts[0].as_text().map(str::to_string)
            }
            v1::StreamResponse::Message(_) => {}
        }
    }
    assert_eq!(artifact.as_deref(), Some("streamed: it"));
    assert_eq!(states.last(), Some(&v1::TaskState::Completed), "{states:?}");
    assert!(states.contains(&v1::TaskState::Working), "{states:?}");

    // A failed task.
    let v1::SendMessageResponse::Task(t) = c.send_message(user("fail this")).await.unwrap() else {
        panic!("expected a task")
    };
    assert_eq!(t.status.state, v1::TaskState::Failed);

    // Non-blocking, then canceled.
    let mut slow = user("slow x");
    slow.configuration = Some(v1::SendMessageConfiguration {
        return_immediately: true,
        ..Default::default()
    });
    let v1::SendMessageResponse::Task(t) = c.send_message(slow).await.unwrap() else {
        panic!("expected a task")
    };
    assert!(!t.status.state.is_terminal(), "{:?}", t.status.state);
    let canceled = c.cancel_task(&t.id).await.expect("cancel");
    assert_eq!(canceled.status.state, v1::TaskState::Canceled);

    // Errors: the SDK's 404 for an unknown task.
    match c.get_task("no-such-task", None).await {
        Err(A2aError::Rest { status: 404, .. }) => {}
        other => panic!("expected a 404: {other:?}"),
    }
}
