//! A scripted A2A peer (JSON-RPC 1.0, no streaming) in the test process: its card and answers
//! are whatever the test says, hostile ones included.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::routing::{get, post};
use serde_json::{Value, json};

/// How the peer answers `SendMessage`.
#[derive(Clone)]
pub(crate) enum Answer {
    /// A new message: the task stops `input-required` asking this; the reply (a message on
    /// that task) completes it with the second text as its artifact.
    Ask(String, String),
    /// The task fails with this status message.
    Fail(String),
    /// Holds the request this long, then completes.
    Hold(Duration),
}

#[derive(Clone)]
struct Peer {
    card: Value,
    answer: Answer,
    messages: Arc<Mutex<Vec<Value>>>,
}

/// A running peer.
pub(crate) struct Running {
    /// Its base URL (what `subagents call` takes).
    pub(crate) url: String,
    messages: Arc<Mutex<Vec<Value>>>,
}

impl Running {
    /// The messages it received, in order.
    pub(crate) fn messages(&self) -> Vec<Value> {
        self.messages.lock().expect("messages").clone()
    }
}

fn task(state: &str, message: Option<&str>, artifact: Option<&str>) -> Value {
    let mut status = json!({"state": state});
    if let Some(text) = message {
        status["message"] =
            json!({"messageId": "q-1", "role": "ROLE_AGENT", "parts": [{"text": text}]});
    }
    let mut t = json!({"id": "t-1", "contextId": "c-1", "status": status});
    if let Some(text) = artifact {
        t["artifacts"] = json!([{"artifactId": "a-1", "parts": [{"text": text}]}]);
    }
    t
}

async fn rpc(State(peer): State<Peer>, body: String) -> axum::response::Response {
    use axum::response::IntoResponse as _;
    let req: Value = serde_json::from_str(&body).unwrap_or_default();
    let id = req["id"].clone();
    let method = req["method"].as_str().unwrap_or_default();
    let result = match method {
        "SendMessage" | "SendStreamingMessage" => {
            let message = req["params"]["message"].clone();
            let follow_up = message["taskId"].is_string();
            peer.messages.lock().expect("messages").push(message);
            match &peer.answer {
                Answer::Ask(_, done) if follow_up => {
                    json!({"task": task("TASK_STATE_COMPLETED", None, Some(done))})
                }
                Answer::Ask(question, _) => {
                    json!({"task": task("TASK_STATE_INPUT_REQUIRED", Some(question), None)})
                }
                Answer::Fail(why) => json!({"task": task("TASK_STATE_FAILED", Some(why), None)}),
                Answer::Hold(d) => {
                    tokio::time::sleep(*d).await;
                    json!({"task": task("TASK_STATE_COMPLETED", None, Some("late"))})
                }
            }
        }
        "CancelTask" => task("TASK_STATE_CANCELED", None, None),
        "GetTask" => task("TASK_STATE_WORKING", None, None),
        _ => {
            return axum::Json(json!({"jsonrpc": "2.0", "id": id,
                "error": {"code": -32601, "message": "Method not found"}}))
            .into_response();
        }
    };
    let frame = json!({"jsonrpc": "2.0", "id": id, "result": result});
    if method == "SendStreamingMessage" {
        // The same answer as one event of a stream.
        return (
            [(axum::http::header::CONTENT_TYPE, "text/event-stream")],
            format!("data: {frame}\n\n"),
        )
            .into_response();
    }
    axum::Json(frame).into_response()
}

/// Starts a peer named `name` (any text: the card says it) answering per `answer`.
pub(crate) fn start(rt: &tokio::runtime::Runtime, name: &str, answer: Answer) -> Running {
    let card = json!({
        "name": name,
        "description": "A scripted peer.",
        "supportedInterfaces": [{"url": "/rpc", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}],
        "version": "1",
        "capabilities": {"streaming": false},
        "defaultInputModes": ["text/plain"],
        "defaultOutputModes": ["text/plain"],
        "skills": []
    });
    let messages: Arc<Mutex<Vec<Value>>> = Arc::default();
    let peer = Peer {
        card,
        answer,
        messages: messages.clone(),
    };
    let listener = rt
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    let app = Router::new()
        .route(
            "/.well-known/agent-card.json",
            get(|State(p): State<Peer>| async move { axum::Json(p.card) }),
        )
        .route("/rpc", post(rpc))
        .with_state(peer);
    rt.spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    Running { url, messages }
}
