//! Lookups the workspace's test suites share: what a recorded request asked (by model, its last
//! user message), what a responder's body holds, and where the shared agent corpus lives.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::{RecordedRequest, ScriptedModelServer};

impl ScriptedModelServer {
    /// The requests this server received for the model named `model`, in order.
    pub fn requests_for(&self, model: &str) -> Vec<RecordedRequest> {
        self.requests()
            .into_iter()
            .filter(|r| r.model() == Some(model))
            .collect()
    }
}

impl RecordedRequest {
    /// The text of the last `user` message (OpenAI format), or empty.
    pub fn last_user_text(&self) -> String {
        self.messages()
            .iter()
            .rev()
            .find(|m| m["role"] == "user")
            .and_then(|m| m["content"].as_str())
            .unwrap_or_default()
            .to_string()
    }
}

/// The text of the first message of an OpenAI request body (its system prompt), or empty: for
/// a [`Responder`](crate::Responder) that answers by agent.
pub fn first_message_text(body: &Value) -> String {
    body["messages"][0]["content"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// True when an OpenAI request body carries a tool result (a `role: tool` message).
pub fn has_tool_result(body: &Value) -> bool {
    body["messages"]
        .as_array()
        .is_some_and(|m| m.iter().any(|m| m["role"] == "tool"))
}

/// The shared corpus of real agent collections, `shared/corpora/claude-agents` in a directory
/// above the project root (`manifest_dir/../..`; a git worktree lives deeper than the main
/// checkout). `None`, after printing `SKIPPED {test}` with the reason, when it is absent.
pub fn claude_agents_corpus(manifest_dir: &Path, test: &str) -> Option<PathBuf> {
    let root = manifest_dir.join("../..");
    let root = root.canonicalize().unwrap_or(root);
    let found = root
        .ancestors()
        .skip(1)
        .map(|a| a.join("shared/corpora/claude-agents"))
        .find(|d| d.is_dir());
    if found.is_none() {
        eprintln!(
            "SKIPPED {test}: the corpus ../shared/corpora/claude-agents is not above {}",
            root.display()
        );
    }
    found
}

impl crate::ProgressRecorder {
    /// The events so far whose kind `is` accepts, in order (e.g.
    /// `|k| matches!(k, ProgressKind::Started { .. })`).
    pub fn events_where(
        &self,
        is: impl Fn(&subagent_spi::ProgressKind) -> bool,
    ) -> Vec<subagent_spi::ProgressEvent> {
        self.events().into_iter().filter(|e| is(&e.kind)).collect()
    }
}
