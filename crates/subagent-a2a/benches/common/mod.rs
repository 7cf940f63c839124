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
