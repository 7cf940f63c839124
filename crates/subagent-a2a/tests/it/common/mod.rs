//! What the server tests share: the scripted agent and a replying one, a server on a free port
//! of 127.0.0.1 (with its gRPC port when asked), the user message they send, and our client on
//! each binding and version.

#![allow(dead_code)]

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use subagent_a2a::client::{A2aClient, Binding, Endpoint};
use subagent_a2a::server::{
    A2aHandler, A2aServer, A2aServerBuilder, AgentInfo, AgentMount, HandlerError, HandlerRequest,
    TaskEventSink,
};
use subagent_a2a::types::ProtocolVersion;
use subagent_a2a::types::usage::usage_to_metadata;
use subagent_a2a::types::v1::{self, TaskState};
use subagent_spi::{CancellationToken, UsageNode, async_trait};

/// The scripted agent. `direct`: a Message reply; `ask`: input-required; `fail`: a handler
/// error; `slow` or `hold…`: working until cancelled (records the cancel and ends canceled;
/// gives up after 60 s); anything else: working, artifact `echo` with `echo: <text>`,
/// completed (with `usage`, when set, in the status's metadata: the usage extension). With
/// `replies` (see [`replier`]): a Message `echo: <text>` for any text.
#[derive(Default)]
pub(crate) struct TestAgent {
    pub(crate) saw_cancel: Arc<AtomicBool>,
    pub(crate) usage: Option<UsageNode>,
    pub(crate) replies: bool,
}

#[async_trait]
impl A2aHandler for TestAgent {
    async fn handle(
        &self,
        req: HandlerRequest,
        ev: TaskEventSink,
        cancel: CancellationToken,
    ) -> Result<(), HandlerError> {
        let text = req.text();
        if self.replies {
            let _ = ev.reply_text(format!("echo: {text}")).await;
            return Ok(());
        }
        match text.as_str() {
            "direct" => {
                let _ = ev.reply_text("direct answer").await;
            }
            "ask" => {
                let _ = ev.require_input("which one?").await;
            }
            "fail" => return Err(HandlerError::failed("it broke")),
            t if t == "slow" || t.starts_with("hold") => {
                let _ = ev.working().await;
                tokio::select! {
                    _ = cancel.cancelled() => {
                        self.saw_cancel.store(true, Ordering::SeqCst);
                        let _ = ev.status(TaskState::Canceled, None).await;
                    }
                    _ = tokio::time::sleep(Duration::from_secs(60)) => {}
                }
            }
            _ => {
                let _ = ev.working().await;
                let _ = ev
                    .text_artifact(Some("echo"), format!("echo: {text}"))
                    .await;
                let _ = match &self.usage {
                    Some(usage) => {
                        let metadata = usage_to_metadata(usage);
                        ev.status_with_metadata(TaskState::Completed, None, metadata)
                            .await
                    }
                    None => ev.complete(None).await,
                };
            }
        }
        Ok(())
    }
}

/// A [`TestAgent`] that answers every message at once with a Message `echo: <text>` (no
/// task).
pub(crate) fn replier() -> TestAgent {
    TestAgent {
        replies: true,
        ..TestAgent::default()
    }
}

/// [`TestAgent`] mounted at `path` under `name`, recording cancels in `saw_cancel`.
pub(crate) fn agent_at(path: &str, name: &str, saw_cancel: Arc<AtomicBool>) -> AgentMount {
    AgentMount::new(
        path,
        AgentInfo::new(name, "Echoes text back"),
        TestAgent {
            saw_cancel,
            ..TestAgent::default()
        },
    )
}

/// A running server; dropping it shuts it down.
pub(crate) struct Srv {
    pub(crate) addr: SocketAddr,
    /// `http://ADDR`.
    pub(crate) base: String,
    pub(crate) stop: CancellationToken,
    /// The serving task (it panics if `serve` failed).
    pub(crate) done: Option<tokio::task::JoinHandle<()>>,
    /// `http://ADDR` of the gRPC binding, when served by [`serve_with_grpc`].
    pub(crate) grpc: Option<String>,
}

impl Srv {
    /// The URL of `path` on this server.
    pub(crate) fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// `http://ADDR` of the gRPC binding (served by [`serve_with_grpc`]).
    pub(crate) fn grpc(&self) -> &str {
        self.grpc.as_deref().expect("served with gRPC")
    }
}

impl Drop for Srv {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// Builds the server (its mounts given by the caller) and serves it on a free port of
/// 127.0.0.1.
pub(crate) async fn serve(builder: A2aServerBuilder) -> Srv {
    let listener = bind().await;
    serve_on(builder.build().expect("server builds"), listener)
}

/// A listener on a free port of 127.0.0.1.
pub(crate) async fn bind() -> tokio::net::TcpListener {
    tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind")
}

/// Serves the built `server` on `listener` (HTTP: JSON-RPC, HTTP+JSON and the cards).
pub(crate) fn serve_on(server: A2aServer, listener: tokio::net::TcpListener) -> Srv {
    let stop = server.shutdown_token();
    let addr = listener.local_addr().expect("addr");
    let s2 = stop.clone();
    let done = tokio::spawn(async move {
        server
            .serve(listener, async move { s2.cancelled().await })
            .await
            .expect("serve");
    });
    Srv {
        addr,
        base: format!("http://{addr}"),
        stop,
        done: Some(done),
        grpc: None,
    }
}

/// Like [`serve`], and the gRPC binding on a second free port (listed on the cards).
#[cfg(feature = "grpc-server")]
pub(crate) async fn serve_with_grpc(builder: A2aServerBuilder) -> Srv {
    let (http, grpc) = (bind().await, bind().await);
    let grpc_addr = grpc.local_addr().expect("addr");
    let server = builder
        .grpc_url(grpc_addr.to_string())
        .build()
        .expect("server builds");
    let (g, stop) = (server.clone(), server.shutdown_token());
    tokio::spawn(async move {
        g.serve_grpc(grpc, async move { stop.cancelled().await })
            .await
            .expect("serve gRPC");
    });
    let mut srv = serve_on(server, http);
    srv.grpc = Some(format!("http://{grpc_addr}"));
    srv
}

/// A 1.0 user message with one text part (message id `m-<text>`).
pub(crate) fn msg(text: &str) -> Value {
    json!({"messageId": format!("m-{text}"), "role": "ROLE_USER", "parts": [{"text": text}]})
}

/// A reference of the A2A kind to the agent at `uri`, with `metadata` (key, value) in order.
#[cfg(feature = "client")]
pub(crate) fn a2a_ref(uri: &str, metadata: &[(&str, &str)]) -> subagent_spi::SubagentReference {
    metadata.iter().fold(
        subagent_spi::SubagentReference::new(uri, subagent_a2a::client::KIND),
        |r, (k, v)| r.with_metadata(*k, *v),
    )
}

/// A push config `id` for the webhook at `url` with `token` (no task, tenant or
/// authentication: the call names the task).
pub(crate) fn push_config(id: &str, url: &str, token: &str) -> v1::TaskPushNotificationConfig {
    v1::TaskPushNotificationConfig {
        tenant: None,
        id: Some(id.into()),
        task_id: None,
        url: url.into(),
        token: Some(token.into()),
        authentication: None,
    }
}

/// The bindings and versions our client speaks.
pub(crate) const BINDINGS: [(Binding, ProtocolVersion); 4] = [
    (Binding::JsonRpc, ProtocolVersion::V1),
    (Binding::HttpJson, ProtocolVersion::V1),
    (Binding::JsonRpc, ProtocolVersion::V03),
    (Binding::HttpJson, ProtocolVersion::V03),
];

/// Our client for the agent at `url` on `binding` and `version`, sending `headers`.
pub(crate) fn client(
    url: &str,
    binding: (Binding, ProtocolVersion),
    headers: http::HeaderMap,
) -> A2aClient {
    tenant_client(url, binding, None, headers)
}

/// [`client`] for `tenant` (none: the endpoint names no tenant).
pub(crate) fn tenant_client(
    url: &str,
    (binding, version): (Binding, ProtocolVersion),
    tenant: Option<&str>,
    headers: http::HeaderMap,
) -> A2aClient {
    A2aClient::new(
        reqwest::Client::new(),
        Endpoint {
            url: url.to_string(),
            binding,
            version,
            tenant: tenant.map(str::to_string),
        },
        headers,
    )
}

/// GETs `url` (it must answer) and reads its JSON body as `T` (a card, a task…).
pub(crate) async fn get_json<T: serde::de::DeserializeOwned>(url: &str) -> T {
    reqwest::get(url)
        .await
        .expect("request sent")
        .json()
        .await
        .expect("a JSON body")
}

/// Sends the request (it must reach the server) and reads its JSON body.
pub(crate) async fn json_of(request: reqwest::RequestBuilder) -> Value {
    send(request).await.json().await.expect("a JSON body")
}

/// Sends the request; it must reach the server.
pub(crate) async fn send(request: reqwest::RequestBuilder) -> reqwest::Response {
    request.send().await.expect("request sent")
}

/// Sends the request (it must reach the server); the answer's status.
pub(crate) async fn status_of(request: reqwest::RequestBuilder) -> u16 {
    send(request).await.status().as_u16()
}

/// Sends `request` and checks that the answer's status is `want`.
pub(crate) async fn assert_status(request: reqwest::RequestBuilder, want: u16) {
    assert_eq!(status_of(request).await, want);
}

/// The answer's header `name` (it must be there, as text).
#[track_caller]
pub(crate) fn header<'a>(r: &'a reqwest::Response, name: &str) -> &'a str {
    r.headers()[name].to_str().expect("a text header")
}

/// Asserts that `v` is an error whose message contains `text`.
#[track_caller]
pub(crate) fn assert_error_says(v: &Value, text: &str) {
    let message = v["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains(text), "{v}");
}

/// Asserts that `v` is an error with `code` whose message contains `text`.
#[track_caller]
pub(crate) fn assert_error(v: &Value, code: i64, text: &str) {
    assert_eq!(v["error"]["code"], code, "{v}");
    assert_error_says(v, text);
}
