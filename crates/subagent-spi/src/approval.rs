//! The approval channel: how a tool call that needs a person's (or a policy's) consent reaches
//! whoever holds the root of a delegation tree.
//!
//! A kind that enforces permissions (the Markdown kind does, per Claude Code's permission
//! modes and rules) asks [`TaskContext::approver`](crate::TaskContext::approver) when a call
//! must be approved. The host puts one [`Approver`] into the root context
//! ([`TaskContext::with_approver`](crate::TaskContext::with_approver)); every child context
//! copies it, so a request from any depth reaches the same place, carrying the path of agent
//! names from the root. Without an approver, a call that must be approved is denied.

use std::collections::HashSet;
use std::fmt;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;

/// One question: may this agent make this tool call?
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ApprovalRequest {
    /// The names of the runs from the root to the asking agent (e.g.
    /// `["main", "coordinator", "leaf"]`).
    pub agent_path: Vec<String>,
    /// The tool (`Bash`, `Write`, ...).
    pub tool: String,
    /// A short, single-line summary of the call's input (the command, the file, the URL).
    pub summary: String,
    /// Why the call needs approval (the permission mode or the `ask` rule).
    pub reason: String,
    /// What an [`ApprovalDecision::AllowSession`] answer allows for the rest of the session,
    /// as a permission rule (`Bash(git status:*)`, `Edit`, `WebFetch(domain:example.com)`);
    /// `None` when only this call can be approved.
    pub session_rule: Option<String>,
    /// The task id of the asking run, when it has one.
    pub task_id: Option<String>,
}

impl ApprovalRequest {
    /// A request from the agent at `agent_path` to call `tool`; `summary` describes the input,
    /// `reason` says why approval is needed.
    pub fn new(
        agent_path: Vec<String>,
        tool: impl Into<String>,
        summary: impl Into<String>,
        reason: impl Into<String>,
    ) -> Self {
        Self {
            agent_path,
            tool: tool.into(),
            summary: summary.into(),
            reason: reason.into(),
            session_rule: None,
            task_id: None,
        }
    }

    /// Sets what "allow for the session" covers (builder style).
    #[must_use]
    pub fn with_session_rule(mut self, rule: impl Into<String>) -> Self {
        self.session_rule = Some(rule.into());
        self
    }

    /// Sets the asking run's task id (builder style).
    #[must_use]
    pub fn with_task_id(mut self, task_id: impl Into<String>) -> Self {
        self.task_id = Some(task_id.into());
        self
    }

    /// The agent path joined with ` > ` (`main > coordinator > leaf`).
    pub fn path_text(&self) -> String {
        if self.agent_path.is_empty() {
            "(root)".to_string()
        } else {
            self.agent_path.join(" > ")
        }
    }

    /// What "allow for the session" remembers: the session rule, else the tool.
    pub fn session_key(&self) -> String {
        self.session_rule
            .clone()
            .unwrap_or_else(|| self.tool.clone())
    }
}

impl fmt::Display for ApprovalRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} wants to run {}: {} ({})",
            self.path_text(),
            self.tool,
            self.summary,
            self.reason
        )
    }
}

/// The answer to an [`ApprovalRequest`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ApprovalDecision {
    /// Run this call.
    AllowOnce,
    /// Run this call and, for the rest of the session (the root run), every call the
    /// request's [`session_rule`](ApprovalRequest::session_rule) covers, without asking.
    AllowSession,
    /// Do not run it; the model reads `message` as the tool's error result.
    Deny {
        /// What the model is told.
        message: String,
    },
}

impl ApprovalDecision {
    /// A denial the model reads.
    pub fn deny(message: impl Into<String>) -> Self {
        ApprovalDecision::Deny {
            message: message.into(),
        }
    }

    /// True for the two allowing answers.
    pub fn is_allowed(&self) -> bool {
        matches!(
            self,
            ApprovalDecision::AllowOnce | ApprovalDecision::AllowSession
        )
    }
}

/// Decides tool calls that need approval: a terminal prompt, a policy, a remote user.
///
/// Implementations may take as long as a person needs; the caller stops waiting when its run
/// is cancelled. They must not panic; an approver that cannot ask answers
/// [`ApprovalDecision::Deny`] with a message saying why.
#[async_trait]
pub trait Approver: Send + Sync {
    /// Answers one request.
    async fn request(&self, request: ApprovalRequest) -> ApprovalDecision;

    /// True when `request` is already covered by an earlier "allow for the session" answer,
    /// so it may run without asking. The default remembers nothing.
    fn granted(&self, request: &ApprovalRequest) -> bool {
        let _ = request;
        false
    }
}

/// An approver with a fixed answer: [`allow_all`](Self::allow_all) (`--yes`) or
/// [`deny_all`](Self::deny_all) (nobody to ask).
#[derive(Debug, Clone)]
pub struct FixedApprover {
    decision: ApprovalDecision,
}

impl FixedApprover {
    /// Approves every request once.
    pub fn allow_all() -> Self {
        Self {
            decision: ApprovalDecision::AllowOnce,
        }
    }

    /// Denies every request with `message`.
    pub fn deny_all(message: impl Into<String>) -> Self {
        Self {
            decision: ApprovalDecision::deny(message),
        }
    }
}

#[async_trait]
impl Approver for FixedApprover {
    async fn request(&self, _request: ApprovalRequest) -> ApprovalDecision {
        self.decision.clone()
    }
}

/// Wraps an approver and remembers its "allow for the session" answers, by
/// [`ApprovalRequest::session_key`]: a later request with the same key is allowed without
/// asking. Hosts put one at the root of each run, so the memory lasts as long as the run.
pub struct SessionApprover {
    inner: Arc<dyn Approver>,
    granted: Mutex<HashSet<String>>,
}

impl fmt::Debug for SessionApprover {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SessionApprover")
            .field("granted", &self.granted_rules())
            .finish_non_exhaustive()
    }
}

impl SessionApprover {
    /// Remembers `inner`'s session answers.
    pub fn new(inner: Arc<dyn Approver>) -> Self {
        Self {
            inner,
            granted: Mutex::new(HashSet::new()),
        }
    }

    /// The session keys allowed so far, sorted.
    pub fn granted_rules(&self) -> Vec<String> {
        let mut v: Vec<String> = self
            .granted
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .cloned()
            .collect();
        v.sort();
        v
    }

    /// Remembers `key` as allowed for the session.
    pub fn grant(&self, key: impl Into<String>) {
        self.granted
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(key.into());
    }
}

#[async_trait]
impl Approver for SessionApprover {
    async fn request(&self, request: ApprovalRequest) -> ApprovalDecision {
        if self.granted(&request) {
            return ApprovalDecision::AllowSession;
        }
        let key = request.session_key();
        let decision = self.inner.request(request).await;
        if decision == ApprovalDecision::AllowSession {
            self.grant(key);
        }
        decision
    }

    fn granted(&self, request: &ApprovalRequest) -> bool {
        self.granted
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .contains(&request.session_key())
            || self.inner.granted(request)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    struct Counting(AtomicUsize, ApprovalDecision);

    #[async_trait]
    impl Approver for Counting {
        async fn request(&self, _: ApprovalRequest) -> ApprovalDecision {
            self.0.fetch_add(1, Ordering::SeqCst);
            self.1.clone()
        }
    }

    fn req(rule: &str) -> ApprovalRequest {
        ApprovalRequest::new(vec!["main".into()], "Bash", "git status", "default mode")
            .with_session_rule(rule)
    }

    #[test]
    fn session_answers_are_remembered_by_rule() {
        let inner = Arc::new(Counting(
            AtomicUsize::new(0),
            ApprovalDecision::AllowSession,
        ));
        let s = SessionApprover::new(inner.clone());
        let block = futures::executor::block_on;
        assert_eq!(
            block(s.request(req("Bash(git:*)"))),
            ApprovalDecision::AllowSession
        );
        assert!(s.granted(&req("Bash(git:*)")));
        block(s.request(req("Bash(git:*)")));
        assert_eq!(inner.0.load(Ordering::SeqCst), 1, "asked once");
        block(s.request(req("Bash(rm:*)")));
        assert_eq!(inner.0.load(Ordering::SeqCst), 2, "another rule asks");
        assert_eq!(s.granted_rules(), ["Bash(git:*)", "Bash(rm:*)"]);
    }

    #[test]
    fn once_is_not_remembered_and_fixed_approvers_answer() {
        let inner = Arc::new(Counting(AtomicUsize::new(0), ApprovalDecision::AllowOnce));
        let s = SessionApprover::new(inner.clone());
        let block = futures::executor::block_on;
        block(s.request(req("Bash(git:*)")));
        block(s.request(req("Bash(git:*)")));
        assert_eq!(inner.0.load(Ordering::SeqCst), 2);
        let (yes, no) = (FixedApprover::allow_all(), FixedApprover::deny_all("no"));
        assert!(block(yes.request(req("x"))).is_allowed());
        assert_eq!(block(no.request(req("x"))), ApprovalDecision::deny("no"));
        assert_eq!(req("r").path_text(), "main");
    }
}
