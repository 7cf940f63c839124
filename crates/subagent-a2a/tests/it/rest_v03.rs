//! The HTTP+JSON binding of A2A 0.3 (`/v1/…` routes, 0.3 ProtoJSON) over real sockets: the
//! wire shapes and error statuses of our server, our client's 0.3 HTTP+JSON transport against
//! it, discovery from the 0.3 card, and the 1.0 routes still served at the same mount. Also
//! the 0.3 behaviours the 0.3 TCK relies on: non-blocking sends by default (an option),
//! follow-ups to a running task (a handler's inbox), errors of 0.3 streams as SSE events and
//! failing 0.3 calls without `id`.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use futures::StreamExt;
use serde_json::{Value, json};
use subagent_a2a::client::{A2aClient, Binding};
use subagent_a2a::server::{
    A2aHandler, A2aServer, AgentInfo, AgentMount, HandlerError, HandlerRequest, TaskEventSink,
};

use subagent_a2a::types::{ProtocolVersion, v1};
use subagent_a2a::{A2aError, A2aResolver};
use subagent_spi::{CancellationToken, SubagentReference, async_trait};

use crate::common;

use common::{Srv, get_json, header, json_of, send};

/// The test agent at `/echo` (push notifications on); the server and the agent's cancel flag.
async fn start() -> (Srv, Arc<AtomicBool>) {
    let saw_cancel = Arc::new(AtomicBool::new(false));
    let builder = A2aServer::builder().push_notifications(true);
    let srv =
        common::serve(builder.mount(common::agent_at("/echo", "echo", saw_cancel.clone()))).await;
    (srv, saw_cancel)
}

fn client(base: &str) -> A2aClient {
    common::client(
        &format!("{base}/echo"),
        (Binding::HttpJson, ProtocolVersion::V03),
        Default::default(),
    )
}

/// A 0.3 HTTP+JSON `POST {agent}/v1/{route}` of `message` (ProtoJSON).
fn post_03(c: &reqwest::Client, s: &Srv, route: &str, message: Value) -> reqwest::RequestBuilder {
    c.post(s.url(&format!("/echo/v1/{route}")))
        .json(&json!({ "message": message }))
}

fn user(id: &str, text: &str) -> v1::SendMessageRequest {
    v1::SendMessageRequest::new(v1::Message::new(
        v1::Role::User,
        id,
        vec![v1::Part::text(text)],
    ))
}

#[tokio::test]
async fn the_wire_is_03_protojson() {
    let (s, _) = start().await;
    let c = reqwest::Client::new();
    // A request in proto field names (as ProtoJSON parsers must accept), no A2A-Version.
    let message = json!({"message_id": "w1", "role": "ROLE_USER", "content": [{"text": "hi"}]});
    let r = send(post_03(&c, &s, "message:send", message)).await;
    assert_eq!(r.status(), 200);
    let body: Value = r.json().await.unwrap();
    let task = &body["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{body}");
    assert_eq!(task["artifacts"][0]["parts"][0]["text"], "echo: hi");
    assert_eq!(task["history"][0]["role"], "ROLE_USER");
    assert_eq!(task["history"][0]["content"][0]["text"], "hi");
    assert!(
        task.get("kind").is_none(),
        "no JSON-RPC `kind` tags: {body}"
    );
    let id = task["id"].as_str().unwrap().to_string();

    // A direct message comes back as {"message": …}.
    let message = json!({"messageId": "w2", "role": "ROLE_USER", "content": [{"text": "direct"}]});
    let r: Value = json_of(post_03(&c, &s, "message:send", message)).await;
    assert_eq!(r["message"]["role"], "ROLE_AGENT", "{r}");
    assert_eq!(r["message"]["content"][0]["text"], "direct answer");

    // GetTask with historyLength, and the errors with the 0.3 SDKs' statuses.
    let got: Value = json_of(c.get(format!("{}/echo/v1/tasks/{id}?historyLength=0", s.base))).await;
    assert_eq!(got["id"], id.as_str());
    assert!(got.get("history").is_none(), "{got}");
    let r = send(c.get(format!("{}/echo/v1/tasks/nope", s.base))).await;
    assert_eq!(r.status(), 404);
    let e: Value = r.json().await.unwrap();
    assert_eq!(e["code"], -32001);
    assert!(e["message"].as_str().unwrap().contains("nope"));
    let r = send(c.post(format!("{}/echo/v1/tasks/{id}:cancel", s.base))).await;
    assert_eq!(r.status(), 409, "a completed task is not cancelable");
    let message = json!({"role": "ROLE_USER", "content": [{}]});
    let r = send(post_03(&c, &s, "message:send", message)).await;
    assert_eq!(r.status(), 422, "a part without content is invalid");
    let r = send(
        c.post(format!("{}/echo/v1/message:send", s.base))
            .header("content-type", "application/json")
            .body("{not json"),
    )
    .await;
    assert_eq!(r.status(), 400);
    assert_eq!(r.json::<Value>().await.unwrap()["code"], -32700);
    let r = send(
        c.get(format!("{}/echo/v1/tasks/{id}", s.base))
            .header("A2A-Version", "1.0"),
    )
    .await;
    assert_eq!(r.status(), 400, "the /v1 routes speak 0.3 only");

    // Streaming: SSE of StreamResponse objects.
    let message =
        json!({"messageId": "w3", "role": "ROLE_USER", "content": [{"text": "streamed"}]});
    let r = send(post_03(&c, &s, "message:stream", message)).await;
    assert_eq!(r.status(), 200);
    let text = r.text().await.unwrap();
    let events: Vec<Value> = text
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .map(|d| serde_json::from_str(d).unwrap())
        .collect();
    assert!(events[0].get("task").is_some(), "{events:?}");
    assert!(events.iter().any(|e| e.get("artifactUpdate").is_some()));
    let last = events.last().unwrap();
    assert_eq!(
        last["statusUpdate"]["status"]["state"],
        "TASK_STATE_COMPLETED"
    );
    assert_eq!(last["statusUpdate"]["final"], true);

    // The 1.0 routes answer at the same mount, in 1.0 shapes.
    let r: Value = json_of(c.get(format!("{}/echo/tasks/{id}", s.base))).await;
    assert_eq!(r["id"], id.as_str());
    assert_eq!(r["status"]["state"], "TASK_STATE_COMPLETED");

    // The 0.3 card lists the binding; so does the 1.0 card, as a 0.3 interface.
    let card: Value = get_json(&format!("{}/echo/.well-known/agent.json", s.base)).await;
    assert_eq!(card["preferredTransport"], "JSONRPC");
    assert!(
        card["additionalInterfaces"]
            .as_array()
            .unwrap()
            .iter()
            .any(|i| i["transport"] == "HTTP+JSON"),
        "{card}"
    );
    let card1: Value = get_json(&format!("{}/echo/.well-known/agent-card.json", s.base)).await;
    assert!(
        card1["supportedInterfaces"]
            .as_array()
            .unwrap()
            .iter()
            .any(|i| i["protocolBinding"] == "HTTP+JSON" && i["protocolVersion"] == "0.3"),
        "{card1}"
    );
    // GET /v1/card: the 0.3 card (no extended card on this agent).
    let v1card: Value = json_of(c.get(format!("{}/echo/v1/card", s.base))).await;
    assert_eq!(v1card["protocolVersion"], "0.3.0");
}

#[tokio::test]
async fn our_client_speaks_03_http_json() {
    let (s, saw_cancel) = start().await;
    let c = client(&s.base);
    let r = c.send_message(user("c1", "hello")).await.unwrap();
    let v1::SendMessageResponse::Task(t) = r else {
        panic!("a task: {r:?}")
    };
    assert_eq!(t.status.state, v1::TaskState::Completed);
    assert_eq!(t.artifacts[0].parts[0].as_text(), Some("echo: hello"));
    let got = c.get_task(&t.id, Some(1)).await.unwrap();
    assert_eq!(got.id, t.id);
    assert!(got.history.len() <= 1);
    let r = c.send_message(user("c2", "direct")).await.unwrap();
    assert!(matches!(r, v1::SendMessageResponse::Message(_)), "{r:?}");

    let mut events = c
        .send_streaming_message(user("c3", "stream"))
        .await
        .unwrap();
    let mut kinds = Vec::new();
    let mut last = None;
    while let Some(ev) = events.next().await {
        let ev = ev.unwrap();
        kinds.push(match &ev {
            v1::StreamResponse::Task(_) => "task",
            v1::StreamResponse::Message(_) => "message",
            v1::StreamResponse::StatusUpdate(_) => "status",
            v1::StreamResponse::ArtifactUpdate(_) => "artifact",
        });
        last = Some(ev);
    }
    assert_eq!(kinds.first(), Some(&"task"), "{kinds:?}");
    assert!(kinds.contains(&"artifact"), "{kinds:?}");
    let Some(v1::StreamResponse::StatusUpdate(u)) = last else {
        panic!("ends with a status update: {kinds:?}")
    };
    assert_eq!(u.status.state, v1::TaskState::Completed);

    // Non-blocking send, subscribe, cancel.
    let mut slow = user("c4", "slow");
    slow.configuration = Some(v1::SendMessageConfiguration {
        return_immediately: true,
        ..Default::default()
    });
    let v1::SendMessageResponse::Task(t) = c.send_message(slow).await.unwrap() else {
        panic!("a task")
    };
    assert!(!t.status.state.is_terminal());
    let mut sub = c.subscribe_to_task(&t.id).await.unwrap();
    let canceled = c.cancel_task(&t.id).await.unwrap();
    assert_eq!(canceled.status.state, v1::TaskState::Canceled);
    assert!(saw_cancel.load(Ordering::SeqCst));
    let mut states = Vec::new();
    while let Some(ev) = sub.next().await {
        match ev.unwrap() {
            v1::StreamResponse::StatusUpdate(u) => states.push(u.status.state),
            v1::StreamResponse::Task(t) => states.push(t.status.state),
            _ => {}
        }
    }
    assert_eq!(states.last(), Some(&v1::TaskState::Canceled), "{states:?}");

    // Errors keep the server's message and status.
    match c.get_task("no-such-task", None).await {
        Err(A2aError::Rest {
            status: 404,
            message,
            ..
        }) => assert!(message.contains("no-such-task"), "{message}"),
        other => panic!("expected a 404: {other:?}"),
    }
    assert!(matches!(
        c.list_tasks(v1::ListTasksRequest::default()).await,
        Err(A2aError::Unsupported { .. })
    ));
}

#[tokio::test]
async fn the_resolver_picks_03_http_json_from_the_03_card_when_asked() {
    let (s, _) = start().await;
    let reference = SubagentReference::new(
        format!("{}/echo/.well-known/agent.json", s.base),
        subagent_a2a::client::KIND,
    )
    .with_metadata("binding", "HTTP+JSON")
    .with_metadata("protocol_version", "0.3");
    let def = A2aResolver::new().resolve_a2a(&reference).await.unwrap();
    let e = def.endpoint();
    assert_eq!(
        (e.binding, e.version),
        (Binding::HttpJson, ProtocolVersion::V03)
    );
    let r = def
        .client(reqwest::Client::new())
        .send_message(user("r1", "via card"))
        .await
        .unwrap();
    let v1::SendMessageResponse::Task(t) = r else {
        panic!("a task")
    };
    assert_eq!(t.artifacts[0].parts[0].as_text(), Some("echo: via card"));
}

/// `chat`: working, takes follow-ups (recording their texts in an artifact at the end) until
/// one says `done`, then completes.
struct Chat;

#[async_trait]
impl A2aHandler for Chat {
    async fn handle(
        &self,
        _req: HandlerRequest,
        ev: TaskEventSink,
        cancel: CancellationToken,
    ) -> Result<(), HandlerError> {
        let _ = ev.working().await;
        let mut inbox = ev.inbox(4);
        let mut seen = Vec::new();
        loop {
            tokio::select! {
                m = inbox.next() => {
                    let Some(m) = m else { break };
                    let t: String = m.parts.iter().filter_map(|p| p.as_text()).collect();
                    if t == "done" {
                        break;
                    }
                    seen.push(t);
                }
                _ = cancel.cancelled() => {
                    let _ = ev.status(v1::TaskState::Canceled, None).await;
                    return Ok(());
                }
            }
        }
        let _ = ev.text_artifact(Some("seen"), seen.join(",")).await;
        let _ = ev.complete(None).await;
        Ok(())
    }
}

#[tokio::test]
async fn v03_non_blocking_default_inbox_and_stream_errors() {
    let builder = A2aServer::builder()
        .v03_blocking_by_default(false)
        .mount(AgentMount::new(
            "/chat",
            AgentInfo::new("chat", "Takes follow-ups while it works"),
            Chat,
        ));
    let srv = common::serve(builder).await;
    let base = srv.url("/chat");
    let c = reqwest::Client::new();
    let rpc = |method: &str, params: Value| {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        let req = c.post(&base).json(&body);
        async move { req.send().await.unwrap().json::<Value>().await.unwrap() }
    };
    let msg = |id: &str, text: &str, task: Option<&str>| {
        let mut m = json!({"kind": "message", "messageId": id, "role": "user",
            "parts": [{"kind": "text", "text": text}]});
        if let Some(t) = task {
            m["taskId"] = json!(t);
        }
        json!({ "message": m })
    };
    // No `blocking`: answered at once, the task still running.
    let r = rpc("message/send", msg("a1", "start", None)).await;
    let state = r["result"]["status"]["state"].as_str().unwrap().to_string();
    assert!(state == "submitted" || state == "working", "{r}");
    let id = r["result"]["id"].as_str().unwrap().to_string();
    // Follow-ups reach the running handler (not refused), and join the history.
    for (i, t) in ["one", "two"].iter().enumerate() {
        let r = rpc("message/send", msg(&format!("f{i}"), t, Some(&id))).await;
        assert_eq!(r["result"]["id"], id.as_str(), "{r}");
        assert_eq!(r["result"]["status"]["state"], "working", "{r}");
    }
    // An explicit blocking follow-up waits for the end.
    let mut p = msg("f9", "done", Some(&id));
    p["configuration"] = json!({"blocking": true});
    let r = rpc("message/send", p).await;
    assert_eq!(r["result"]["status"]["state"], "completed", "{r}");
    assert_eq!(r["result"]["artifacts"][0]["parts"][0]["text"], "one,two");
    assert_eq!(r["result"]["history"].as_array().unwrap().len(), 4, "{r}");
    // A finished task takes no more messages.
    let r = rpc("message/send", msg("f10", "late", Some(&id))).await;
    assert_eq!(r["error"]["code"], -32004, "{r}");

    // The error of a 0.3 stream, for a client asking for SSE, is an SSE event.
    let r = send(c.post(&base).header("accept", "text/event-stream").json(
        &json!({"jsonrpc": "2.0", "id": 5, "method": "tasks/resubscribe", "params": {"id": "nope"}}),
    ))
    .await;
    assert_eq!(r.status(), 200);
    assert!(header(&r, "content-type").starts_with("text/event-stream"));
    let text = r.text().await.unwrap();
    let data: Value = serde_json::from_str(text.trim().strip_prefix("data: ").unwrap()).unwrap();
    assert_eq!(data["error"]["code"], -32001, "{data}");
    assert_eq!(data["id"], 5);
    // Without that Accept it stays a JSON answer; 1.0 streams are unchanged.
    let r = rpc("tasks/resubscribe", json!({"id": "nope"})).await;
    assert_eq!(r["error"]["code"], -32001);
    drop(srv);
}
