//! What the server benches share: the echo agent and the request they send.

use subagent_a2a::server::{A2aHandler, HandlerError, HandlerRequest, TaskEventSink};
use subagent_a2a::types::v1::{Artifact, Part};
use subagent_spi::{CancellationToken, async_trait};

/// Answers `stream-1000` with a task streaming 1,000 artifact chunks, anything else with a
/// direct Message echoing the text (no task stored).
pub(crate) struct Echo;

#[async_trait]
impl A2aHandler for Echo {
    async fn handle(
        &self,
        req: HandlerRequest,
        ev: TaskEventSink,
        _cancel: CancellationToken,
    ) -> Result<(), HandlerError> {
        if req.text() == "stream-1000" {
            let _ = ev.working().await;
            for i in 0..1000 {
                let a = Artifact {
                    artifact_id: "out".into(),
                    name: None,
                    description: None,
                    parts: vec![Part::text(format!("chunk {i} "))],
                    metadata: None,
                    extensions: Vec::new(),
                };
                let _ = ev.artifact(a, i > 0, i == 999).await;
            }
            let _ = ev.complete(None).await;
        } else {
            let mut m = ev.agent_text(req.text());
            m.message_id = "reply".into();
            let _ = ev.reply(m).await;
        }
        Ok(())
    }
}

/// A 160-byte JSON-RPC 1.0 `SendMessage`.
pub(crate) const BODY: &str = r#"{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"hello, agent"}],"contextId":"ctx-1"}}}"#;

/// A second ceiling: a bare axum handler doing the least any A2A server must per
/// `SendMessage` (compare the bearer token `token`, parse the JSON-RPC envelope and the typed
/// `SendMessageRequest`, build the reply `Message`, serialize the response: the same bytes our
/// server answers), so a measurement can tell our overhead from the protocol's JSON work.
#[allow(dead_code)] // not every bench that includes this module serves it
pub(crate) fn parsing_ceiling(token: &'static str) -> axum::Router {
    use http::header;
    axum::Router::new().route(
        "/",
        axum::routing::post(
            move |headers: http::HeaderMap, body: axum::body::Bytes| async move {
                #[derive(serde::Deserialize)]
                struct Env<'a> {
                    #[allow(dead_code)]
                    jsonrpc: &'a str,
                    #[serde(borrow)]
                    id: &'a serde_json::value::RawValue,
                    #[allow(dead_code)]
                    method: &'a str,
                    params: subagent_a2a::types::v1::SendMessageRequest,
                }
                #[derive(serde::Serialize)]
                struct Res<'a> {
                    message: &'a subagent_a2a::types::v1::Message,
                }
                #[derive(serde::Serialize)]
                struct Out<'a> {
                    jsonrpc: &'static str,
                    id: &'a serde_json::value::RawValue,
                    result: Res<'a>,
                }
                let ok = headers
                    .get(header::AUTHORIZATION)
                    .and_then(|v| v.as_bytes().strip_prefix(b"Bearer "))
                    .is_some_and(|v| v == token.as_bytes());
                if !ok {
                    return (
                        http::StatusCode::UNAUTHORIZED,
                        [(header::CONTENT_TYPE, "application/json")],
                        Vec::new(),
                    );
                }
                let Ok(env) = serde_json::from_slice::<Env<'_>>(&body) else {
                    return (
                        http::StatusCode::BAD_REQUEST,
                        [(header::CONTENT_TYPE, "application/json")],
                        Vec::new(),
                    );
                };
                let text = env
                    .params
                    .message
                    .parts
                    .iter()
                    .filter_map(|p| p.as_text())
                    .collect::<String>();
                let mut m = subagent_a2a::types::v1::Message::new(
                    subagent_a2a::types::v1::Role::Agent,
                    "reply",
                    vec![subagent_a2a::types::v1::Part::text(text)],
                );
                m.context_id = env.params.message.context_id.clone();
                let out = Out {
                    jsonrpc: "2.0",
                    id: env.id,
                    result: Res { message: &m },
                };
                (
                    http::StatusCode::OK,
                    [(header::CONTENT_TYPE, "application/json")],
                    serde_json::to_vec(&out).unwrap_or_default(),
                )
            },
        ),
    )
}
