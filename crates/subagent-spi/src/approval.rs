//! The approval channel: how a tool call that needs a person's (or a policy's) consent reaches
//! whoever holds the root of a delegation tree.
//!
//! A kind that enforces permissions (the Markdown kind does, per Claude Code's permission
//! modes and rules) asks [`TaskContext::approver`](crate::TaskContext::approver) when a call
//! must be approved. The host puts one [`Approver`] into the root context
//! ([`TaskContext::with_approver`](crate::TaskContext::with_approver)); every child context
//! copies it, so a request from any depth reaches the same place, carrying the path of agent
//! names from the root. Without an approver, a call that must be approved is denied.

use std::fmt;

use async_trait::async_trait;
use derive_setters::Setters;

/// One question: may this agent make this tool call?
#[derive(Debug, Clone, PartialEq, Eq, Setters)]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct ApprovalRequest {
    /// The names of the runs from the root to the asking agent (e.g.
    /// `["main", "coordinator", "leaf"]`).
    #[setters(skip)]
    pub agent_path: Vec<String>,
    /// The tool (`Bash`, `Write`, ...).
    #[setters(skip)]
    pub tool: String,
    /// A short, single-line summary of the call's input (the command, the file, the URL).
    #[setters(skip)]
    pub summary: String,
    /// Why the call needs approval (the permission mode or the `ask` rule).
    #[setters(skip)]
    pub reason: String,
    /// What an [`ApprovalDecision::AllowSession`] answer allows for the rest of the session,
    /// as a permission rule (`Bash(git status:*)`, `Edit`, `WebFetch(domain:example.com)`);
    /// `None` when only this call can be approved.
    pub session_rule: Option<String>,
    /// The task id of the asking run, when it has one.
    pub task_id: Option<String>,
    /// Only a person may approve this call, and only this call: a standing policy
    /// (`--yes`) denies it, an "allow for the session" answer is
    /// not remembered (a session approver asks every time), and
    /// [`granted`](Approver::granted) is not consulted. Set for changes to a project's
    /// protected control files (`subagents.toml`, `.claude/settings.json`, `.git/hooks/`...),
    /// which could lift limits or run commands later. Default false.
    #[setters(skip)]
    pub person_only: bool,
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
            person_only: false,
        }
    }

    /// Marks the request [`person_only`](Self::person_only) (builder style).
    #[must_use]
    pub fn person_only(mut self) -> Self {
        self.person_only = true;
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

    /// False when this approver has nobody to ask about `request` and would only deny it
    /// (e.g. a deny-all approver in a run without a terminal). A caller with another
    /// way to go on asks this first: the A2A kind, for instance, hands a remote agent's
    /// question back to its own caller as a resumable `needs_input` outcome instead of
    /// answering `no` for the user. The default is `true`.
    fn can_answer(&self, request: &ApprovalRequest) -> bool {
        let _ = request;
        true
    }
}
