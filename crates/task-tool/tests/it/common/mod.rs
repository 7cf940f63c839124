//! The in-process test kind lives in `subagent-testkit`.
#![allow(dead_code, unused_imports)]

pub(crate) mod offer;

pub(crate) use subagent_testkit::{FN_KIND as KIND, FnKind, fn_ref};

/// The background task id (`task_…`) a `Task` result names in its text.
pub(crate) fn task_id_in(text: &str) -> String {
    text.split_whitespace()
        .find(|w| w.starts_with("task_"))
        .unwrap_or_else(|| panic!("a task id in {text:?}"))
        .trim_end_matches('.')
        .to_string()
}

/// Dispatches `call`, which must run in the foreground: the agent that ran it and its outcome.
pub(crate) async fn foreground(
    task: &task_tool::TaskTool,
    call: subagent_spi::TaskCall,
    ctx: &subagent_spi::TaskContext,
) -> (String, subagent_spi::TaskOutcome) {
    match task.dispatch(call, ctx).await.expect("runs") {
        task_tool::Dispatch::Foreground { agent, outcome, .. } => (agent, outcome),
        other => panic!("not a foreground run: {other:?}"),
    }
}

/// Asserts that the output's text contains `text`.
#[track_caller]
pub(crate) fn assert_has(out: &subagent_spi::ToolOutput, text: &str) {
    assert!(out.content.contains(text), "{}", out.content);
}

/// Asserts that the output is an error whose text contains `text`.
#[track_caller]
pub(crate) fn assert_error(out: &subagent_spi::ToolOutput, text: &str) {
    assert!(out.is_error, "{}", out.content);
    assert_has(out, text);
}

/// Asserts that the output's text starts with `text`.
#[track_caller]
pub(crate) fn assert_starts(out: &subagent_spi::ToolOutput, text: &str) {
    assert!(out.content.starts_with(text), "{}", out.content);
}

/// A `TaskTool` over `kind` with the agents `refs`, its builder first passed to `with` (for
/// limits).
pub(crate) async fn build_tool(
    kind: subagent_spi::SubagentType,
    refs: impl IntoIterator<Item = subagent_spi::SubagentReference>,
    with: impl FnOnce(task_tool::TaskToolBuilder) -> task_tool::TaskToolBuilder,
) -> task_tool::TaskTool {
    try_build_tool(kind, refs, with).await.expect("builds")
}

/// [`build_tool`], for a build that may fail.
pub(crate) async fn try_build_tool(
    kind: subagent_spi::SubagentType,
    refs: impl IntoIterator<Item = subagent_spi::SubagentReference>,
    with: impl FnOnce(task_tool::TaskToolBuilder) -> task_tool::TaskToolBuilder,
) -> Result<task_tool::TaskTool, task_tool::BuildError> {
    let builder = task_tool::TaskTool::builder()
        .subagent_type(kind)
        .subagent_references(refs);
    with(builder).build().await
}
