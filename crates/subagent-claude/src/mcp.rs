//! The hook through which agents with `mcpServers` in their frontmatter get MCP tools.
//!
//! This crate does not speak MCP itself (rmcp stays in `subagent-mcp`); a host plugs an
//! implementation in with [`ClaudeSubagentTypeBuilder::mcp_tools`](crate::ClaudeSubagentTypeBuilder::mcp_tools).

use std::sync::Arc;

use async_trait::async_trait;
use subagent_spi::Tool;

/// Supplies the tools of the MCP servers an agent names in `mcpServers`.
///
/// The frontmatter value is passed as written: a list of server names (looked up in the
/// host's configuration, e.g. `.mcp.json`), a list mixing names and inline `{name: config}`
/// maps, or a map of inline configs. Each returned tool must be named
/// `mcp__<server>__<tool>`; the agent's `tools` / `disallowedTools` rules (including
/// `mcp__server__*` patterns) are applied to them like to any other tool.
#[async_trait]
pub trait McpToolSource: Send + Sync {
    /// The tools for one agent's `mcpServers` value. An error names the server and the cause;
    /// the agent then runs without those tools (with a warning).
    async fn tools_for(
        &self,
        agent: &str,
        mcp_servers: &serde_json::Value,
    ) -> Result<Vec<Arc<dyn Tool>>, String>;
}
