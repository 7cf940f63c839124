//! Approvals of a served subagent, asked of the A2A client: the task goes `input-required`
//! with the question, and the client's next message on the task answers it.

use std::sync::Arc;
use std::time::Duration;

use subagent_spi::{ApprovalDecision, ApprovalRequest, Approver, CancellationToken, async_trait};

use super::handler::TaskEventSink;
use crate::types::approval::ApprovalQuestion;
use subagent_core::ApprovalText;

/// How long a served agent waits for the client's answer by default.
pub const DEFAULT_APPROVAL_TIMEOUT: Duration = Duration::from_secs(300);

/// Asks the A2A client of one task. A host's own approver (`upstream`, e.g. `--yes`) answers
/// first when it can; a zero timeout asks nobody (every request is denied).
pub(crate) struct ClientApprover {
    pub events: TaskEventSink,
    pub upstream: Option<Arc<dyn Approver>>,
    pub timeout: Duration,
    pub cancel: CancellationToken,
}

fn message_text(m: &crate::types::v1::Message) -> String {
    m.parts
        .iter()
        .filter_map(|p| p.as_text())
        .collect::<Vec<_>>()
        .join("\n")
}

#[async_trait]
impl Approver for ClientApprover {
    async fn request(&self, request: ApprovalRequest) -> ApprovalDecision {
        if let Some(up) = &self.upstream
            && up.can_answer(&request)
        {
            return up.request(request).await;
        }
        if self.timeout.is_zero() {
            return ApprovalDecision::deny(
                "this server does not ask its A2A clients for approvals (approval timeout 0), \
                 so the call was denied.",
            );
        }
        let secs = self.timeout.as_secs().max(1);
        let question = ApprovalQuestion::from_request(&request);
        let mut message = self.events.agent_text(question.text(Some(secs)));
        message.metadata = Some(question.to_metadata());
        let wait = tokio::time::timeout(self.timeout, self.events.await_input(message));
        let answer = tokio::select! {
            r = wait => r,
            () = self.cancel.cancelled() => {
                return ApprovalDecision::deny("the task was canceled.");
            }
        };
        let decision = match answer {
            Ok(Ok(m)) => {
                let text = message_text(&m);
                ApprovalDecision::from_reply(&text).unwrap_or_else(|| {
                    let shown: String = text.chars().take(500).collect();
                    ApprovalDecision::deny(format!(
                        "the A2A client answered {shown:?}, which is not yes, no or always."
                    ))
                })
            }
            Ok(Err(_)) => {
                return ApprovalDecision::deny("the task was closed before the client answered.");
            }
            Err(_) => ApprovalDecision::deny(format!(
                "the A2A client did not answer within {secs} s, so the call was denied."
            )),
        };
        let note = match &decision {
            ApprovalDecision::Deny { message } => format!("{} denied: {message}", request.tool),
            d => format!("{} approved ({})", request.tool, d.reply_text()),
        };
        let _ = self.events.working_text(note).await;
        decision
    }
}
