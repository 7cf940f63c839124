//! Tool calls named like an agent become `Task` calls to that agent.
//!
//! Small models often call the agent itself (`calculator {"expression": "17 * 23"}`) instead
//! of `Task {"subagent_type": "calculator", ...}`. When the run offers `Task` and a call names
//! no offered tool but matches an agent the run may start (case and separators `-`, `_`,
//! space, `.` aside), the call is rewritten into a `Task` call to that agent with the call's
//! arguments as the prompt. The rewritten call runs through the run's own `Task` tool, so
//! every permission rule, hook and agent restriction on `Task` applies to it unchanged: a model
//! gains nothing it could not do by calling `Task` itself.

use serde_json::Value;
use subagent_spi::chat::ToolCall;
use subagent_spi::{TaskCall, TaskContext, Tool};

/// The name of the delegation tool calls are rewritten to.
const TASK_TOOL: &str = "Task";

/// Longest prompt taken from an aliased call's arguments, in characters (the rest is cut; the
/// model's output is bounded anyway, this keeps the progress line and the child prompt sane).
const MAX_ALIAS_PROMPT_CHARS: usize = 32_000;

/// `name` without case and separators: `Code-Reviewer`, `code_reviewer`, `code reviewer` and
/// `codereviewer` are one name.
fn folded(name: &str) -> String {
    name.chars()
        .filter(|c| !matches!(c, '-' | '_' | ' ' | '.'))
        .flat_map(char::to_lowercase)
        .collect()
}

/// The prompt an aliased call carries: its `prompt` (or `task`, `query`, `input`, `request`,
/// `message`, `question`) string when it has one; else its only string value; else the
/// arguments as JSON text.
fn prompt_of(arguments: &Value) -> String {
    let text = match arguments {
        Value::String(s) => s.clone(),
        Value::Object(map) => {
            let named = [
                "prompt", "task", "query", "input", "request", "message", "question",
            ]
            .iter()
            .find_map(|k| map.get(*k).and_then(Value::as_str));
            let strings: Vec<&str> = map.values().filter_map(Value::as_str).collect();
            match (named, strings.as_slice()) {
                (Some(p), _) => p.to_string(),
                (None, [only]) if map.len() == 1 => (*only).to_string(),
                _ => arguments.to_string(),
            }
        }
        Value::Null => String::new(),
        other => other.to_string(),
    };
    match text.char_indices().nth(MAX_ALIAS_PROMPT_CHARS) {
        Some((cut, _)) => text[..cut].to_string(),
        None => text,
    }
}

/// Rewrites the calls of one reply that name an agent instead of a tool; each rewrite is
/// announced as a [`ProgressKind::Status`](subagent_spi::ProgressKind::Status) event.
pub(crate) fn resolve_agent_calls(
    calls: Vec<ToolCall>,
    tools: &[std::sync::Arc<dyn Tool>],
    ctx: &TaskContext,
) -> Vec<ToolCall> {
    let offers_task = tools.iter().any(|t| t.name() == TASK_TOOL);
    let Some(delegation) = ctx.delegation().filter(|_| offers_task) else {
        return calls;
    };
    if calls
        .iter()
        .all(|c| tools.iter().any(|t| t.name() == c.name))
    {
        return calls;
    }
    let agents = delegation.agent_names();
    calls
        .into_iter()
        .map(|call| {
            if tools.iter().any(|t| t.name() == call.name) {
                return call;
            }
            let wanted = folded(&call.name);
            let Some(agent) = agents
                .iter()
                .find(|a| **a == call.name)
                .or_else(|| agents.iter().find(|a| folded(a) == wanted))
                .filter(|_| !wanted.is_empty())
            else {
                return call;
            };
            let prompt = prompt_of(&call.arguments);
            let task = TaskCall::new(agent.as_str(), format!("{agent} (called as a tool)"), prompt);
            ctx.emit(subagent_spi::ProgressKind::Status {
                message: format!(
                    "the model called agent `{agent}` as a tool (`{}`); running it as Task to `{agent}` with the call's arguments as the prompt",
                    call.name
                ),
            });
            tracing::debug!(agent = %agent, called = %call.name, "tool call named like an agent, rewritten to Task");
            let arguments = serde_json::to_value(&task).unwrap_or(Value::Null);
            ToolCall::new(call.id, TASK_TOOL, arguments)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn names_fold_case_and_separators() {
        assert_eq!(folded("Code-Reviewer"), "codereviewer");
        assert_eq!(folded("code_reviewer"), "codereviewer");
        assert_eq!(folded("code reviewer.v2"), "codereviewerv2");
    }

    #[test]
    fn the_prompt_is_the_obvious_string() {
        assert_eq!(prompt_of(&json!({"prompt": "p", "x": "y"})), "p");
        assert_eq!(prompt_of(&json!({"expression": "17 * 23"})), "17 * 23");
        assert_eq!(prompt_of(&json!("plain")), "plain");
        assert_eq!(prompt_of(&json!({"a": 1, "b": "c"})), r#"{"a":1,"b":"c"}"#);
        assert_eq!(prompt_of(&json!(null)), "");
        let long = "x".repeat(MAX_ALIAS_PROMPT_CHARS + 10);
        assert_eq!(
            prompt_of(&json!({ "prompt": long })).chars().count(),
            MAX_ALIAS_PROMPT_CHARS
        );
    }
}
