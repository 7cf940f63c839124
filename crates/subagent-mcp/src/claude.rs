//! Glue for the `CLAUDE` kind (feature `claude`): an [`McpToolProvider`] gives Markdown agents
//! with `mcpServers` their `mcp__<server>__<tool>` tools.

use std::sync::Arc;

use subagent_claude::McpToolSource;
use subagent_spi::{Tool, async_trait};

use crate::McpToolProvider;

#[async_trait]
impl McpToolSource for McpToolProvider {
    async fn tools_for(
        &self,
        agent: &str,
        mcp_servers: &serde_json::Value,
    ) -> Result<Vec<Arc<dyn Tool>>, String> {
        self.tools_for_value(&format!("agent `{agent}`"), mcp_servers)
            .await
            .map_err(|e| e.to_string())
    }
}
