//! A tool call's output as the MCP result a client reads: text content, `isError` for a
//! failed call or an error (errors are results, not protocol errors).

use rmcp::model::{CallToolResult, ContentBlock};
use subagent_spi::{ToolError, ToolOutput};

/// A tool's output as an MCP tool result (`isError` for a failed call).
pub(crate) fn call_result(out: ToolOutput) -> CallToolResult {
    let content = vec![ContentBlock::text(out.content)];
    if out.is_error {
        CallToolResult::error(content)
    } else {
        CallToolResult::success(content)
    }
}

/// A tool call's result as an MCP tool result: errors too are results the caller reads.
pub(crate) fn call_result_of(result: Result<ToolOutput, ToolError>) -> CallToolResult {
    match result {
        Ok(out) => call_result(out),
        Err(ToolError::Cancelled { tool }) => CallToolResult::error(vec![ContentBlock::text(
            format!("tool `{tool}` was cancelled"),
        )]),
        Err(e) => CallToolResult::error(vec![ContentBlock::text(e.to_string())]),
    }
}
