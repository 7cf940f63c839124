//! The stock approvers and the approval reply protocol: policy on top of the contract's
//! [`Approver`], [`ApprovalRequest`] and [`ApprovalDecision`].

use std::collections::HashSet;
use std::fmt;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use subagent_spi::{ApprovalDecision, ApprovalRequest, Approver};

/// The approval text protocol: an [`ApprovalDecision`] read from and written as the words a
/// person or a remote client types (`yes`, `always`, `no: MESSAGE`).
pub trait ApprovalText: Sized {
    /// Reads an answer written as text, as a person or a remote client types it (an A2A
    /// follow-up message, a prompt's line): the first word, ignoring case, decides.
    ///
    /// | first word | decision |
    /// |---|---|
    /// | `yes`, `y`, `allow`, `approve`, `ok` | [`AllowOnce`](ApprovalDecision::AllowOnce) |
    /// | `always`, `a` | [`AllowSession`](ApprovalDecision::AllowSession) |
    /// | `no`, `n`, `deny` | [`Deny`](ApprovalDecision::Deny), the rest of the text as the message (else `denied.`) |
    ///
    /// Anything else is `None`: the caller decides (usually a denial quoting the text).
    /// [`reply_text`](Self::reply_text) writes the words this reads back.
    fn from_reply(text: &str) -> Option<Self>;

    /// The answer as text for a party that asked in words (a remote A2A agent's
    /// `input-required` question): `yes`, `always`, or `no: MESSAGE`.
    /// [`from_reply`](Self::from_reply) reads it back.
    fn reply_text(&self) -> String;
}

impl ApprovalText for ApprovalDecision {
    fn from_reply(text: &str) -> Option<Self> {
        let text = text.trim();
        let end = text
            .find(|c: char| c.is_whitespace() || ".,:;!-".contains(c))
            .unwrap_or(text.len());
        let (word, rest) = text.split_at(end);
        let rest = rest
            .trim_start_matches(|c: char| c.is_whitespace() || ".,:;!-".contains(c))
            .trim();
        match word.to_ascii_lowercase().as_str() {
            "yes" | "y" | "allow" | "approve" | "ok" => Some(ApprovalDecision::AllowOnce),
            "always" | "a" => Some(ApprovalDecision::AllowSession),
            "no" | "n" | "deny" => Some(ApprovalDecision::deny(if rest.is_empty() {
                "denied."
            } else {
                rest
            })),
            _ => None,
        }
    }

    fn reply_text(&self) -> String {
        match self {
            ApprovalDecision::AllowOnce => "yes".to_string(),
            ApprovalDecision::AllowSession => "always".to_string(),
            ApprovalDecision::Deny { message } if message.trim().is_empty() => "no".to_string(),
            ApprovalDecision::Deny { message } => format!("no: {}", message.trim()),
            // An answer this protocol has no word for is not a yes.
            _ => "no".to_string(),
        }
    }
}

/// What [`FixedApprover::allow_all`] answers a [`person_only`](ApprovalRequest::person_only)
/// request.
pub const PERSON_ONLY_DENIAL: &str = "only a person may approve this call (it changes one of \
the project's protected control files), one call at a time; a standing approval such as --yes \
does not cover it.";

/// An approver with a fixed answer: [`allow_all`](Self::allow_all) (`--yes`) or
/// [`deny_all`](Self::deny_all) (nobody to ask). A [`person_only`](ApprovalRequest::person_only)
/// request is always denied: a standing answer is not a person's.
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
    async fn request(&self, request: ApprovalRequest) -> ApprovalDecision {
        if request.person_only && self.decision.is_allowed() {
            return ApprovalDecision::deny(PERSON_ONLY_DENIAL);
        }
        self.decision.clone()
    }

    /// A deny-all approver has nobody to ask, and nobody is there for a person-only request.
    fn can_answer(&self, request: &ApprovalRequest) -> bool {
        self.decision.is_allowed() && !request.person_only
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
        if request.person_only {
            return self.inner.request(request).await;
        }
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
        !request.person_only
            && self
                .granted
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .contains(&request.session_key())
            || self.inner.granted(request)
    }

    fn can_answer(&self, request: &ApprovalRequest) -> bool {
        self.granted(request) || self.inner.can_answer(request)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn person_only_requests_are_asked_every_time_and_never_by_a_policy() {
        let block = futures::executor::block_on;
        let r = ApprovalRequest::new(vec!["main".into()], "Write", "subagents.toml", "protected")
            .with_session_rule("Edit")
            .person_only();
        let yes = FixedApprover::allow_all();
        assert!(!block(yes.request(r.clone())).is_allowed());
        assert!(!yes.can_answer(&r));
        struct Always(AtomicUsize);
        #[async_trait]
        impl Approver for Always {
            async fn request(&self, _r: ApprovalRequest) -> ApprovalDecision {
                self.0.fetch_add(1, Ordering::SeqCst);
                ApprovalDecision::AllowSession
            }
        }
        let inner = Arc::new(Always(AtomicUsize::new(0)));
        let session = SessionApprover::new(inner.clone());
        for _ in 0..2 {
            assert!(block(session.request(r.clone())).is_allowed());
            assert!(!session.granted(&r));
        }
        assert_eq!(inner.0.load(Ordering::SeqCst), 2, "asked every time");
        assert!(session.granted_rules().is_empty(), "nothing remembered");
    }

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
        assert!(yes.can_answer(&req("x")) && !no.can_answer(&req("x")));
        let s = SessionApprover::new(Arc::new(no));
        assert!(!s.can_answer(&req("x")));
        s.grant("x");
        assert!(s.can_answer(&req("x")), "a session grant answers");
    }

    #[test]
    fn replies_read_and_write_the_same_words() {
        use ApprovalDecision as D;
        for (text, want) in [
            ("yes", Some(D::AllowOnce)),
            ("  Y\n", Some(D::AllowOnce)),
            ("OK, go ahead", Some(D::AllowOnce)),
            ("Always", Some(D::AllowSession)),
            ("NO", Some(D::deny("denied."))),
            (
                "no: use git diff instead",
                Some(D::deny("use git diff instead")),
            ),
            ("n - not now", Some(D::deny("not now"))),
            ("yesterday", None),
            ("", None),
            ("Paris", None),
        ] {
            assert_eq!(D::from_reply(text), want, "{text:?}");
        }
        for d in [D::AllowOnce, D::AllowSession, D::deny("not now")] {
            assert_eq!(D::from_reply(&d.reply_text()), Some(d.clone()), "{d:?}");
        }
        assert_eq!(D::deny("").reply_text(), "no");
    }
}
