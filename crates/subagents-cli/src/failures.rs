//! Children that failed, as the outcome reports them: counted and given with their reasons in
//! `--json` and stream-json's result line, named on the `done ·` line, and turned into exit 4
//! by `run --fail-on-child-error`.

use serde::Serialize;
use subagents::spi::{TaskStatus, UsageNode};

use subagents::claude::escape_for_terminal as terminal_safe;

/// Failed children named on the `done ·` line at most (the rest are counted).
const NAMED: usize = 3;

/// One child (at any depth) that failed.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Failure {
    /// The agent.
    pub agent: String,
    /// Its task id, when it had one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    /// Its depth (the main agent's children are at 1).
    pub depth: u32,
    /// Why it failed, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// The runs below the root of a usage tree (its children, at any depth): how many, and those
/// that failed, depth first.
pub(crate) fn of(children: &[UsageNode]) -> (usize, Vec<Failure>) {
    fn walk(nodes: &[UsageNode], depth: u32, total: &mut usize, out: &mut Vec<Failure>) {
        for n in nodes {
            *total += 1;
            if n.status == TaskStatus::Failed {
                out.push(Failure {
                    agent: n.agent.clone(),
                    task_id: n.task_id.clone(),
                    depth,
                    error: n.error.clone(),
                });
            }
            walk(&n.children, depth + 1, total, out);
        }
    }
    let (mut total, mut out) = (0, Vec::new());
    walk(children, 1, &mut total, &mut out);
    (total, out)
}

/// `1 of 24 children failed: worker` for the `done ·` line (at most [`NAMED`] names, then
/// `and N more`); `None` when none failed.
pub(crate) fn summary(total: usize, failures: &[Failure]) -> Option<String> {
    if failures.is_empty() {
        return None;
    }
    let mut names: Vec<String> = failures
        .iter()
        .take(NAMED)
        .map(|f| terminal_safe(&f.agent).into_owned())
        .collect();
    if failures.len() > NAMED {
        names.push(format!("and {} more", failures.len() - NAMED));
    }
    let noun = if total == 1 { "child" } else { "children" };
    Some(format!(
        "{} of {total} {noun} failed: {}",
        failures.len(),
        names.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use subagents::spi::Usage;

    fn node(agent: &str, status: TaskStatus) -> UsageNode {
        UsageNode::new(agent, "CLAUDE", status, Usage::new())
    }

    #[test]
    fn failed_children_at_any_depth_are_counted_and_named() {
        let mut coordinator = node("coordinator", TaskStatus::Completed);
        coordinator
            .children
            .push(node("leaf", TaskStatus::Failed).with_error("HTTP 429"));
        let children = vec![
            node("a", TaskStatus::Failed),
            coordinator,
            node("b", TaskStatus::Completed),
        ];
        let (total, failed) = of(&children);
        assert_eq!(total, 4);
        assert_eq!(failed.len(), 2);
        assert_eq!((failed[1].agent.as_str(), failed[1].depth), ("leaf", 2));
        assert_eq!(failed[1].error.as_deref(), Some("HTTP 429"));
        assert_eq!(
            summary(total, &failed).as_deref(),
            Some("2 of 4 children failed: a, leaf")
        );
        assert_eq!(summary(total, &[]), None);
    }

    #[test]
    fn past_three_the_rest_are_counted_and_names_are_escaped() {
        let children: Vec<UsageNode> = (0..5)
            .map(|i| node(&format!("w{i}\u{1b}"), TaskStatus::Failed))
            .collect();
        let (total, failed) = of(&children);
        assert_eq!(
            summary(total, &failed).as_deref(),
            Some("5 of 5 children failed: w0\\u{1b}, w1\\u{1b}, w2\\u{1b}, and 2 more")
        );
        let (total, failed) = of(&children[..1]);
        assert_eq!(
            summary(total, &failed).as_deref(),
            Some("1 of 1 child failed: w0\\u{1b}")
        );
    }
}
