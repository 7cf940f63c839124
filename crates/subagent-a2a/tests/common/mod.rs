//! What the server tests share: one scripted agent, a server on a free port of 127.0.0.1, the
//! user message they send, and our client on each binding and version.

#![allow(dead_code)]

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use subagent_a2a::client::{A2aClient, Binding, Endpoint};
use subagent_a2a::server::{
    A2aHandler, A2aServerBuilder, AgentInfo, AgentMount, HandlerError, HandlerRequest,
    TaskEventSink,
};
use subagent_a2a::types::ProtocolVersion;
use subagent_a2a::types::v1::TaskState;
use subagent_spi::{CancellationToken, async_trait};

/// The scripted agent. `direct`: a Message reply; `ask`: input-required; `fail`: a handler
/// error; `slow` or `hold…`: working until cancelled (records the cancel and ends canceled;
/// gives up after 60 s); anything else: working, artifact `echo` with `echo: <text>`,
/// completed.
#[derive(Default)]
pub(crate) struct TestAgent {
    pub(crate) saw_cancel: Arc<AtomicBool>,
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
                let _ = ev.complete(None).await;
            }
        }
        Ok(())
    }
}

/// [`TestAgent`] mounted at `path` under `name`, recording cancels in `saw_cancel`.
pub(crate) fn agent_at(path: &str, name: &str, saw_cancel: Arc<AtomicBool>) -> AgentMount {
    AgentMount::new(
        path,
        AgentInfo::new(name, "Echoes text back"),
        TestAgent { saw_cancel },
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
}

impl Srv {
    /// The URL of `path` on this server.
    pub(crate) fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
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
    let server = builder.build().expect("server builds");
    let stop = server.shutdown_token();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
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
    }
}

/// A 1.0 user message with one text part (message id `m-<text>`).
pub(crate) fn msg(text: &str) -> Value {
    json!({"messageId": format!("m-{text}"), "role": "ROLE_USER", "parts": [{"text": text}]})
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
    (binding, version): (Binding, ProtocolVersion),
    headers: http::HeaderMap,
) -> A2aClient {
    A2aClient::new(
        reqwest::Client::new(),
        Endpoint {
            url: url.to_string(),
            binding,
            version,
            tenant: None,
        },
        headers,
    )
}
