//! How an approval question travels over A2A: our server puts it in the `input-required`
//! status message (text for people, this structure in the message's `metadata` for programs),
//! and our client turns it back into the same [`ApprovalRequest`] for its own caller.
//!
//! The client answers with a follow-up message on the same task whose text starts with `yes`
//! (once), `always` (for the rest of the task) or `no` (optionally `no: reason`), ignoring case
//! (see [`ApprovalText::from_reply`](subagent_core::ApprovalText::from_reply)).

use serde::{Deserialize, Serialize};
use subagent_spi::ApprovalRequest;

use super::JsonObject;

/// The `metadata` key of a status message carrying an [`ApprovalQuestion`].
pub const APPROVAL_METADATA_KEY: &str = "subagents/approval";

/// The answers a server reading [`ApprovalText::from_reply`](subagent_core::ApprovalText::from_reply) understands.
pub const APPROVAL_ANSWERS: [&str; 3] = ["yes", "no", "always"];

/// An approval question in machine-readable form.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ApprovalQuestion {
    /// The agent names from the served agent to the asking one.
    #[serde(default)]
    pub agent_path: Vec<String>,
    /// The tool.
    pub tool: String,
    /// A short summary of the call's input.
    #[serde(default)]
    pub summary: String,
    /// Why it asks.
    #[serde(default)]
    pub reason: String,
    /// What `always` allows, as a permission rule.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_rule: Option<String>,
    /// The answers understood (`yes`, `no`, `always`).
    #[serde(default)]
    pub answers: Vec<String>,
}

impl ApprovalQuestion {
    /// The question of `request`.
    pub fn from_request(request: &ApprovalRequest) -> Self {
        Self {
            agent_path: request.agent_path.clone(),
            tool: request.tool.clone(),
            summary: request.summary.clone(),
            reason: request.reason.clone(),
            session_rule: request.session_rule.clone(),
            answers: APPROVAL_ANSWERS.iter().map(|s| s.to_string()).collect(),
        }
    }

    /// Reads the question from a message's metadata, if there is a well-formed one.
    pub fn from_metadata(metadata: Option<&JsonObject>) -> Option<Self> {
        let v = metadata?.get(APPROVAL_METADATA_KEY)?;
        serde_json::from_value(v.clone()).ok()
    }

    /// The metadata object holding this question.
    pub fn to_metadata(&self) -> JsonObject {
        let mut m = JsonObject::new();
        if let Ok(v) = serde_json::to_value(self) {
            m.insert(APPROVAL_METADATA_KEY.to_string(), v);
        }
        m
    }

    /// The text shown to people: who asks to run what, why, and the answers understood.
    pub fn text(&self, timeout_secs: Option<u64>) -> String {
        let who = if self.agent_path.is_empty() {
            "the agent".to_string()
        } else {
            self.agent_path.join(" > ")
        };
        let always = self
            .session_rule
            .as_deref()
            .map(|r| format!(" for {r}"))
            .unwrap_or_default();
        let deadline = timeout_secs
            .map(|s| format!(" Without an answer within {s} s the call is denied."))
            .unwrap_or_default();
        format!(
            "Approval needed: {who} wants to run {}: {} ({}). Answer `yes` (once), \
             `always` (for the rest of this task{always}) or `no` (optionally `no: reason`), \
             in a message on this task.{deadline}",
            self.tool, self.summary, self.reason
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn questions_round_trip_through_metadata() {
        let r = ApprovalRequest::new(vec!["worker".into()], "Bash", "touch x", "mode `default`")
            .with_session_rule("Bash(touch:*)");
        let q = ApprovalQuestion::from_request(&r);
        let m = q.to_metadata();
        assert_eq!(m[APPROVAL_METADATA_KEY]["tool"], "Bash");
        assert_eq!(m[APPROVAL_METADATA_KEY]["sessionRule"], "Bash(touch:*)");
        assert_eq!(ApprovalQuestion::from_metadata(Some(&m)), Some(q.clone()));
        assert_eq!(ApprovalQuestion::from_metadata(None), None);
        let t = q.text(Some(300));
        assert!(
            t.starts_with("Approval needed: worker wants to run Bash: touch x"),
            "{t}"
        );
        assert!(
            t.contains("`yes`") && t.contains("`always`") && t.contains("300 s"),
            "{t}"
        );
    }
}
