//! Children that failed, in the usage tree: a child that ran and ended in an error still gets
//! its node, with status `failed` and the error, and a failed outcome's node gets its text as
//! the reason, so a host can count a tree's failed children and say why each failed (the
//! caller's `Task` result already says why, for the model).

use subagent_spi::{SubagentError, TaskOutcome, TaskStatus, ToolOutput, Usage, UsageNode};

/// The longest reason kept in a node, in characters.
pub(crate) const MAX_REASON: usize = 2000;

/// A dispatch that failed: the error, and the node of the child when one ran.
pub(crate) struct Failed {
    error: SubagentError,
    /// Boxed: the error path is rare, the dispatch future is on every call.
    node: Option<Box<UsageNode>>,
}

impl From<SubagentError> for Failed {
    /// A dispatch refused before any child ran (unknown agent, nesting limit, spent budget).
    fn from(error: SubagentError) -> Self {
        Self { error, node: None }
    }
}

impl Failed {
    /// The child `agent` (of `kind`, task `task_id`) ran and ended in `error`.
    pub(crate) fn ran(error: SubagentError, agent: &str, kind: &str, task_id: &str) -> Self {
        let node = UsageNode::new(agent, kind, TaskStatus::Failed, Usage::default())
            .with_task_id(task_id)
            .with_error(reason(&error.to_string()));
        Self {
            error,
            node: Some(Box::new(node)),
        }
    }

    /// The error alone.
    pub(crate) fn into_error(self) -> SubagentError {
        self.error
    }

    /// A tool result for the model: the error's text, with the child's node when one ran.
    pub(crate) fn into_output(self) -> ToolOutput {
        let mut out = ToolOutput::error(error_text(&self.error));
        out.children.extend(self.node.map(|n| *n));
        out
    }
}

/// The node of a child's outcome; a failed one gets its text as the reason.
pub(crate) fn outcome_node(
    outcome: &TaskOutcome,
    agent: &str,
    kind: &str,
    task_id: &str,
) -> UsageNode {
    let node = outcome.usage_tree(agent, kind, Some(task_id));
    if outcome.status == TaskStatus::Failed {
        let text = outcome.text.trim();
        node.with_error(reason(if text.is_empty() {
            "(no message)"
        } else {
            text
        }))
    } else {
        node
    }
}

/// `text`, cut to [`MAX_REASON`] characters.
pub(crate) fn reason(text: &str) -> String {
    match text.char_indices().nth(MAX_REASON) {
        Some((i, _)) => format!("{}…", &text[..i]),
        None => text.to_string(),
    }
}

/// The text a model reads for a `Task` call that failed: an unknown agent with the names it
/// may use, a limit that refused the start, or the failure itself.
pub(crate) fn error_text(e: &SubagentError) -> String {
    match e {
        SubagentError::UnknownSubagent { name, available } => format!(
            "Unknown agent `{name}`. Available agents: {}. Call Task again with one of these names as `subagent_type`.",
            if available.is_empty() {
                "(none)".to_string()
            } else {
                available.join(", ")
            }
        ),
        SubagentError::LimitReached { limit, .. } => format!("Cannot start the task: {limit}."),
        other => format!("Task failed: {other}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_child_that_ran_and_failed_has_a_failed_node_with_the_error() {
        let f = Failed::ran(
            SubagentError::execution("worker", "model call failed on turn 1: HTTP 429"),
            "worker",
            "CLAUDE",
            "task_1",
        );
        let node = f.node.expect("a node");
        assert_eq!(node.status, TaskStatus::Failed);
        assert_eq!(node.task_id.as_deref(), Some("task_1"));
        assert_eq!(
            node.error.as_deref(),
            Some("agent `worker` failed: model call failed on turn 1: HTTP 429")
        );
        let refused: Failed = SubagentError::execution("x", "y").into();
        assert!(refused.node.is_none());
    }

    #[test]
    fn reasons_are_bounded_and_failed_outcomes_give_theirs() {
        assert_eq!(reason(&"é".repeat(5000)).chars().count(), MAX_REASON + 1);
        let o = TaskOutcome::with_status("the peer said no\n", TaskStatus::Failed);
        let node = outcome_node(&o, "peer", "A2A", "task_2");
        assert_eq!(node.error.as_deref(), Some("the peer said no"));
        let o = TaskOutcome::completed("fine");
        assert_eq!(outcome_node(&o, "a", "K", "t").error, None);
    }
}
