//! [`ScriptedApprover`]: a user at the approval prompt, answering from a script.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use subagent_spi::{ApprovalDecision, ApprovalRequest, Approver, async_trait};

/// The message of the denial given once the script has run out.
pub const SCRIPT_EXHAUSTED_DENIAL: &str = "the scripted approver says no.";

/// An [`Approver`] that records every request and answers from a script, in order; once the
/// script is used up it denies with [`SCRIPT_EXHAUSTED_DENIAL`].
///
/// ```
/// # async fn demo() {
/// use subagent_spi::{ApprovalDecision, ApprovalRequest, Approver};
/// use subagent_testkit::ScriptedApprover;
///
/// let approver = ScriptedApprover::answering([ApprovalDecision::AllowOnce]);
/// let ask = || ApprovalRequest::new(vec!["main".into()], "Bash", "ls", "runs a command");
/// assert_eq!(approver.request(ask()).await, ApprovalDecision::AllowOnce);
/// assert!(matches!(approver.request(ask()).await, ApprovalDecision::Deny { .. }));
/// assert_eq!(approver.summaries(), ["Bash:ls", "Bash:ls"]);
/// # }
/// ```
#[derive(Debug, Default)]
pub struct ScriptedApprover {
    seen: Mutex<Vec<ApprovalRequest>>,
    answers: Mutex<VecDeque<ApprovalDecision>>,
}

impl ScriptedApprover {
    /// An approver giving `answers` in order, then denying.
    pub fn answering(answers: impl IntoIterator<Item = ApprovalDecision>) -> Arc<Self> {
        Arc::new(Self {
            seen: Mutex::default(),
            answers: Mutex::new(answers.into_iter().collect()),
        })
    }

    /// Every request so far, in order.
    pub fn requests(&self) -> Vec<ApprovalRequest> {
        crate::locked(&self.seen).clone()
    }

    /// Every request so far as `tool:summary`.
    pub fn summaries(&self) -> Vec<String> {
        self.requests()
            .iter()
            .map(|r| format!("{}:{}", r.tool, r.summary))
            .collect()
    }
}

#[async_trait]
impl Approver for ScriptedApprover {
    async fn request(&self, request: ApprovalRequest) -> ApprovalDecision {
        crate::locked(&self.seen).push(request);
        crate::locked(&self.answers)
            .pop_front()
            .unwrap_or_else(|| ApprovalDecision::deny(SCRIPT_EXHAUSTED_DENIAL))
    }
}
