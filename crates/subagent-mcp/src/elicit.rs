//! Approvals of served tools asked of the MCP client as elicitation requests.

use std::sync::Arc;
use std::time::Duration;

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

#[async_trait]
impl Approver for ElicitingApprover {
    async fn request(&self, request: ApprovalRequest) -> ApprovalDecision {
        if let Some(up) = crate::approval_form::upstream_answering(&self.upstream, &request) {
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
        let Some(params) = crate::approval_form::params(&request) else {
            return ApprovalDecision::deny("the approval form could not be built.");
        };
        let answer = self
            .peer
            .create_elicitation_with_timeout(params, Some(self.timeout))
            .await;
        match answer {
            Ok(r) => crate::approval_form::decision(&r),
            Err(e) => ApprovalDecision::deny(format!("the MCP client did not answer ({e}).")),
        }
    }
}
