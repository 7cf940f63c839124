//! The gRPC binding over real sockets (127.0.0.1): our server's `serve_grpc` and our client's
//! gRPC transport, every RPC including the streaming ones, errors as gRPC status codes (with
//! the A2A reason), the card's GRPC interface, credentials, tenants and the message size bound.

use futures::StreamExt;
use subagent_a2a::client::{A2aClient, Binding, usable_endpoints};
use subagent_a2a::error::A2aError;
use subagent_a2a::server::{A2aServer, A2aServerBuilder, AgentInfo, AgentMount, ServerAuth};
use subagent_a2a::types::ProtocolVersion;
use subagent_a2a::types::jsonrpc::codes;
use subagent_a2a::types::v1::{self, TaskState};

use crate::common;

use common::{Srv, TestAgent};

/// Serves `builder` over HTTP and gRPC.
async fn serve(builder: A2aServerBuilder) -> Srv {
    common::serve_with_grpc(builder).await
}

/// [`TestAgent`] at `path`.
fn mount(path: &str) -> AgentMount {
    AgentMount::new(
        path,
        AgentInfo::new("echo", "Echoes text back"),
        TestAgent::default(),
    )
}

/// Our gRPC client (1.0) for the server at `url`, on `tenant`.
fn client(url: &str, tenant: Option<&str>, headers: http::HeaderMap) -> A2aClient {
    common::tenant_client(url, (Binding::Grpc, ProtocolVersion::V1), tenant, headers)
}

/// The card's GRPC interface (it must list one).
fn grpc_interface(card: &v1::AgentCard) -> &v1::AgentInterface {
    card.supported_interfaces
        .iter()
        .find(|i| i.protocol_binding == "GRPC")
        .expect("GRPC interface on the card")
}

fn send(text: &str) -> v1::SendMessageRequest {
    v1::SendMessageRequest::new(v1::Message::new(
        v1::Role::User,
        format!("m-{text}-{}", uuid::Uuid::new_v4()),
        vec![v1::Part::text(text)],
    ))
}

fn code(e: &A2aError) -> i32 {
    match e {
        A2aError::Rpc { error, .. } => error.code,
        other => panic!("not an A2A error: {other}"),
    }
}

#[tokio::test]
async fn every_rpc_works_over_grpc() {
    let s = serve(
        A2aServer::builder()
            .push_notifications(true)
            .push_allow_private(true)
            .mount(mount("/")),
    )
    .await;
    // The card lists the GRPC interface, and a client asked for gRPC picks it.
    let card: v1::AgentCard = common::get_json(&s.url("/.well-known/agent-card.json")).await;
    let g = grpc_interface(&card);
    assert_eq!(format!("http://{}", g.url), s.grpc());
    let eps = usable_endpoints(
        &subagent_a2a::client::AgentCard::V1(card.clone()),
        &card,
        &format!("{}/.well-known/agent-card.json", s.base),
        &subagent_a2a::client::A2aConfig::from_reference(
            &subagent_spi::SubagentReference::new(s.base.clone(), "A2A")
                .with_metadata("binding", "GRPC"),
        )
        .unwrap(),
    )
    .unwrap();
    // Asked for gRPC, the client ranks the GRPC interface first.
    assert_eq!(eps[0].binding, Binding::Grpc, "{eps:?}");
    assert!(eps[0].url.starts_with(s.grpc()), "{eps:?}");

    let c = client(s.grpc(), None, Default::default());
    // SendMessage: a task, and a direct message.
    let task = match c.send_message(send("hello")).await.unwrap() {
        v1::SendMessageResponse::Task(t) => t,
        other @ v1::SendMessageResponse::Message(_) => panic!("expected a task, got {other:?}"),
    };
    assert_eq!(task.status.state, TaskState::Completed);
    assert_eq!(task.artifacts[0].parts[0].as_text(), Some("echo: hello"));
    match c.send_message(send("direct")).await.unwrap() {
        v1::SendMessageResponse::Message(m) => {
            assert_eq!(m.parts[0].as_text(), Some("direct answer"))
        }
        other @ v1::SendMessageResponse::Task(_) => panic!("expected a message, got {other:?}"),
    }
    // SendStreamingMessage: the events to the end of the task.
    let events: Vec<_> = c
        .send_streaming_message(send("streamed"))
        .await
        .unwrap()
        .collect()
        .await;
    let events: Vec<v1::StreamResponse> = events.into_iter().map(Result::unwrap).collect();
    assert!(
        matches!(events[0], v1::StreamResponse::Task(_)),
        "{events:?}"
    );
    assert!(
        events
            .iter()
            .any(|e| matches!(e, v1::StreamResponse::ArtifactUpdate(_))),
        "{events:?}"
    );
    match events.last().unwrap() {
        v1::StreamResponse::StatusUpdate(u) => assert_eq!(u.status.state, TaskState::Completed),
        other => panic!("last event {other:?}"),
    }
    // GetTask, with history trimmed.
    let got = c.get_task(&task.id, Some(0)).await.unwrap();
    assert_eq!(got.id, task.id);
    assert!(got.history.is_empty());
    // ListTasks by context.
    let list = c
        .list_tasks(v1::ListTasksRequest {
            context_id: task.context_id.clone(),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(list.tasks.len(), 1);
    assert_eq!(list.tasks[0].id, task.id);
    // SubscribeToTask on a running task, then CancelTask: the stream ends canceled.
    let mut req = send("slow");
    req.configuration = Some(v1::SendMessageConfiguration {
        return_immediately: true,
        ..Default::default()
    });
    let slow = match c.send_message(req).await.unwrap() {
        v1::SendMessageResponse::Task(t) => t,
        other @ v1::SendMessageResponse::Message(_) => panic!("expected a task, got {other:?}"),
    };
    let sub = c.subscribe_to_task(&slow.id).await.unwrap();
    let canceled = c.cancel_task(&slow.id).await.unwrap();
    assert_eq!(canceled.status.state, TaskState::Canceled);
    let events: Vec<_> = sub.collect().await;
    match events.last().unwrap().as_ref().unwrap() {
        v1::StreamResponse::StatusUpdate(u) => assert_eq!(u.status.state, TaskState::Canceled),
        v1::StreamResponse::Task(t) => assert_eq!(t.status.state, TaskState::Canceled),
        other => panic!("last event {other:?}"),
    }
    // Push configs: create, get, list, delete.
    let cfg = common::push_config("hook", "http://127.0.0.1:9/hook", "t");
    let made = c.create_push_config(&task.id, cfg).await.unwrap();
    assert_eq!(made.id.as_deref(), Some("hook"));
    assert_eq!(made.task_id.as_deref(), Some(task.id.as_str()));
    let got = c.get_push_config(&task.id, "hook").await.unwrap();
    assert_eq!(got.url, "http://127.0.0.1:9/hook");
    assert_eq!(c.list_push_configs(&task.id).await.unwrap().len(), 1);
    c.delete_push_config(&task.id, "hook").await.unwrap();
    assert!(c.list_push_configs(&task.id).await.unwrap().is_empty());
}

#[tokio::test]
async fn errors_are_grpc_statuses_with_the_a2a_reason() {
    let s = serve(A2aServer::builder().mount(mount("/"))).await;
    let c = client(s.grpc(), None, Default::default());
    let e = c.get_task("nope", None).await.unwrap_err();
    assert_eq!(code(&e), codes::TASK_NOT_FOUND, "{e}");
    assert!(e.to_string().contains("NotFound"), "{e}");
    let task = match c.send_message(send("x")).await.unwrap() {
        v1::SendMessageResponse::Task(t) => t,
        other @ v1::SendMessageResponse::Message(_) => panic!("{other:?}"),
    };
    // A finished task cannot be canceled (FAILED_PRECONDITION) nor subscribed to.
    let e = c.cancel_task(&task.id).await.unwrap_err();
    assert_eq!(code(&e), codes::TASK_NOT_CANCELABLE, "{e}");
    assert!(e.to_string().contains("FailedPrecondition"), "{e}");
    let e = match c.subscribe_to_task(&task.id).await {
        Err(e) => e,
        Ok(s) => s
            .collect::<Vec<_>>()
            .await
            .into_iter()
            .find_map(Result::err)
            .expect("an error"),
    };
    assert_eq!(code(&e), codes::UNSUPPORTED_OPERATION, "{e}");
    // Push configs on an agent without push notifications: UNIMPLEMENTED.
    let e = c.list_push_configs(&task.id).await.unwrap_err();
    assert_eq!(code(&e), codes::PUSH_NOTIFICATION_NOT_SUPPORTED, "{e}");
    assert!(e.to_string().contains("Unimplemented"), "{e}");
    // No extended card.
    let e = c.get_extended_agent_card().await.unwrap_err();
    assert_eq!(code(&e), codes::EXTENDED_AGENT_CARD_NOT_CONFIGURED, "{e}");
    // Negative history length: INVALID_ARGUMENT.
    let e = c.get_task(&task.id, Some(-1)).await.unwrap_err();
    assert!(e.to_string().contains("InvalidArgument"), "{e}");
}

#[tokio::test]
async fn credentials_and_tenants_are_checked() {
    let extended = AgentInfo::new("echo", "Echoes, with the private skill");
    let s = serve(
        A2aServer::builder()
            .mount(
                mount("/team/echo")
                    .with_auth(ServerAuth::bearer("tok"))
                    .with_extended_card(extended),
            )
            .mount(mount("/open")),
    )
    .await;
    // The card names the tenant.
    let card: v1::AgentCard =
        common::get_json(&s.url("/team/echo/.well-known/agent-card.json")).await;
    let g = grpc_interface(&card);
    assert_eq!(g.tenant.as_deref(), Some("team/echo"));
    // Without credentials: UNAUTHENTICATED, for every call.
    let anon = client(s.grpc(), Some("team/echo"), Default::default());
    let e = anon.send_message(send("hi")).await.unwrap_err();
    assert!(e.to_string().contains("Unauthenticated"), "{e}");
    let e = anon.get_extended_agent_card().await.unwrap_err();
    assert!(e.to_string().contains("Unauthenticated"), "{e}");
    // With them: the call and the extended card.
    let mut h = http::HeaderMap::new();
    h.insert(http::header::AUTHORIZATION, "Bearer tok".parse().unwrap());
    let authed = client(s.grpc(), Some("team/echo"), h);
    assert!(authed.send_message(send("hi")).await.is_ok());
    let ext = authed.get_extended_agent_card().await.unwrap();
    assert_eq!(ext.description, "Echoes, with the private skill");
    assert!(
        ext.supported_interfaces
            .iter()
            .any(|i| i.protocol_binding == "GRPC")
    );
    // The other tenant needs none; an unknown tenant is NOT_FOUND; with two agents and none
    // at the root, an empty tenant names nobody.
    let open = client(s.grpc(), Some("open"), Default::default());
    assert!(open.send_message(send("hi")).await.is_ok());
    let e = client(s.grpc(), Some("nobody"), Default::default())
        .send_message(send("hi"))
        .await
        .unwrap_err();
    assert!(e.to_string().contains("NotFound"), "{e}");
    let e = client(s.grpc(), None, Default::default())
        .send_message(send("hi"))
        .await
        .unwrap_err();
    assert!(e.to_string().contains("NotFound"), "{e}");
}

#[tokio::test]
async fn messages_over_the_size_bound_are_refused() {
    let s = serve(
        A2aServer::builder()
            .max_body_bytes(64 * 1024)
            .mount(mount("/")),
    )
    .await;
    let c = client(s.grpc(), None, Default::default());
    let e = c
        .send_message(send(&"x".repeat(100 * 1024)))
        .await
        .unwrap_err();
    assert!(
        e.to_string().contains("OutOfRange") || e.to_string().contains("ResourceExhausted"),
        "{e}"
    );
    // The server is still fine afterwards.
    assert!(c.send_message(send("small")).await.is_ok());
}

/// Reads from `conn` until the server closes it (EOF or reset); false when it stays open for
/// 10 s (a bound for the test only: the server's own limits here are far shorter).
async fn closed_by_server(conn: &mut tokio::net::TcpStream) -> bool {
    use tokio::io::AsyncReadExt;
    let mut buf = [0u8; 256];
    let read_to_end = async {
        loop {
            match conn.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                // The server's HTTP/2 SETTINGS, GOAWAY...: keep reading.
                Ok(_) => {}
            }
        }
    };
    tokio::time::timeout(std::time::Duration::from_secs(10), read_to_end)
        .await
        .is_ok()
}

#[tokio::test]
async fn grpc_connections_share_the_http_cap_and_time_out_without_a_preface() {
    // A cap of 4 connections over both listeners, 300 ms to send a preface and first call.
    let s = serve(
        A2aServer::builder()
            .max_connections(4)
            .header_read_timeout(std::time::Duration::from_millis(300))
            .idle_timeout(std::time::Duration::from_millis(300))
            .mount(mount("/")),
    )
    .await;
    let grpc_addr = s.grpc().trim_start_matches("http://").to_string();
    // Six connections that never send the HTTP/2 preface: more than the cap.
    let mut idle = Vec::new();
    for _ in 0..6 {
        idle.push(tokio::net::TcpStream::connect(&grpc_addr).await.unwrap());
    }
    // The HTTP binding still answers (the cap made room by closing an idle connection).
    let card: v1::AgentCard = common::get_json(&s.url("/.well-known/agent-card.json")).await;
    assert_eq!(card.name, "echo");
    // Every silent connection is closed: to make room at the cap, or at the head timeout.
    for (i, c) in idle.iter_mut().enumerate() {
        assert!(
            closed_by_server(c).await,
            "silent gRPC connection {i} is still open"
        );
    }
    // And gRPC itself still works.
    let c = client(s.grpc(), None, Default::default());
    assert!(c.send_message(send("after")).await.is_ok());
}

#[tokio::test]
async fn a_send_whose_answer_cannot_fit_is_refused_before_its_task() {
    // Default limits: 10 MiB messages. A 9 MiB message decodes, but its answer (the message
    // in the history, the echo in the artifact) could not be sent.
    let s = serve(A2aServer::builder().mount(mount("/"))).await;
    let c = client(s.grpc(), None, Default::default());
    let big = |n: usize| {
        v1::SendMessageRequest::new(v1::Message::new(
            v1::Role::User,
            format!("m-big-{n}"),
            vec![v1::Part::text("x".repeat(n))],
        ))
    };
    let e = c.send_message(big(9 * 1024 * 1024)).await.unwrap_err();
    let text = e.to_string();
    assert!(text.contains("ResourceExhausted"), "{text}");
    assert!(text.contains("nothing was started"), "{text}");
    // No task was created.
    let list = c.list_tasks(v1::ListTasksRequest::default()).await.unwrap();
    assert!(list.tasks.is_empty(), "{:?}", list.tasks);
    // A message whose answer fits still works.
    assert!(c.send_message(big(1024 * 1024)).await.is_ok());
}
