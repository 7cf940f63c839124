//! Runnable examples of the `subagents` framework (`cargo run --example NAME` from the
//! workspace root), and the small helpers they share for printing what a model would see.

use serde_json::Value;
use subagents::spi::{TaskContext, Tool, ToolOutput};

/// Calls a tool exactly as a model would (JSON in), prints both sides, and returns the result.
pub async fn model_calls(tool: &dyn Tool, input: Value, ctx: &TaskContext) -> ToolOutput {
    println!("\nmodel -> {} {}", tool.name(), input);
    // A tool error is shown to the model as an error result.
    let out = tool
        .call(input, ctx)
        .await
        .unwrap_or_else(|e| ToolOutput::error(e.to_string()));
    let tag = if out.is_error { " (error)" } else { "" };
    println!("{}{tag} -> model:\n{}", tool.name(), indent(&out.content));
    out
}

/// Indents every line by four spaces.
pub fn indent(s: &str) -> String {
    s.lines()
        .map(|l| format!("    {l}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The first `task_...` id in a tool result.
pub fn task_id_in(text: &str) -> String {
    text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .find(|w| w.starts_with("task_"))
        .unwrap_or_default()
        .to_string()
}

/// The `session: ...` id in a tool result's footer.
pub fn session_in(text: &str) -> String {
    text.split("session: ")
        .nth(1)
        .and_then(|rest| rest.split([' ', ']']).next())
        .unwrap_or_default()
        .to_string()
}
