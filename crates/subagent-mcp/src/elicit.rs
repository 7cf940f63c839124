//! Approvals of served tools asked of the MCP client as elicitation requests.

use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{ElicitRequestParams, ElicitationAction, ElicitationSchema, EnumSchema};
use rmcp::service::ElicitationMode;
use rmcp::{Peer, RoleServer};
use subagent_spi::{ApprovalDecision, ApprovalRequest, Approver, async_trait};

/// How long an elicitation waits for the user by default.
pub const DEFAULT_ELICITATION_TIMEOUT: Duration = Duration::from_secs(300);

/// Asks the MCP client (form elicitation: a `decision` of `yes`, `always` or `no`, and an
/// optional `reason`) when it declared the capability; otherwise denies with a message the
/// model reads. A host's own approver (`upstream`, e.g. `--yes`) answers first when it can.
pub(crate) struct ElicitingApprover {
    pub peer: Peer<RoleServer>,
    pub upstream: Option<Arc<dyn Approver>>,
    pub timeout: Duration,
}

fn schema() -> Option<ElicitationSchema> {
    let choices = EnumSchema::builder(vec!["yes".into(), "always".into(), "no".into()])
        .enum_titles(vec![
            "Yes, this once".into(),
            "Always (for the rest of this call)".into(),
            "No".into(),
        ])
        .ok()?
        .build();
    ElicitationSchema::builder()
        .required_enum_schema("decision", choices)
        .optional_string("reason")
        .build()
        .ok()
}

#[async_trait]
impl Approver for ElicitingApprover {
    async fn request(&self, request: ApprovalRequest) -> ApprovalDecision {
        if let Some(up) = &self.upstream
            && up.can_answer(&request)
        {
            return up.request(request).await;
        }
        if !self
            .peer
            .supported_elicitation_modes()
            .contains(&ElicitationMode::Form)
        {
            return ApprovalDecision::deny(
                "the MCP client cannot be asked (it does not support elicitation), and this \
                 server was not started with --yes.",
            );
        }
        let Some(requested_schema) = schema() else {
            return ApprovalDecision::deny("the approval form could not be built.");
        };
        let message = format!(
            "{} wants to run {}: {}\nWhy: {}\nAllow it? yes (once), always{} or no.",
            request.path_text(),
            request.tool,
            request.summary,
            request.reason,
            request
                .session_rule
                .as_deref()
                .map(|r| format!(" ({r}, for the rest of this call)"))
                .unwrap_or_default(),
        );
        let params = ElicitRequestParams::FormElicitationParams {
            meta: None,
            message,
            requested_schema,
        };
        let answer = self
            .peer
            .create_elicitation_with_timeout(params, Some(self.timeout))
            .await;
        match answer {
            Ok(r) => match r.action {
                ElicitationAction::Accept => {
                    let content = r.content.unwrap_or_default();
                    let decision = content["decision"].as_str().unwrap_or("");
                    let reason = content["reason"].as_str().unwrap_or("").trim();
                    match ApprovalDecision::from_reply(decision) {
                        Some(ApprovalDecision::Deny { .. }) | None => {
                            ApprovalDecision::deny(if reason.is_empty() {
                                "the user said no."
                            } else {
                                reason
                            })
                        }
                        Some(d) => d,
                    }
                }
                ElicitationAction::Decline => ApprovalDecision::deny("the user declined."),
                _ => ApprovalDecision::deny("the user dismissed the question."),
            },
            Err(e) => ApprovalDecision::deny(format!("the MCP client did not answer ({e}).")),
        }
    }
}
