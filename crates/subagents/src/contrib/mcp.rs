//! The `MCP` kind (MCP servers' tools as agents), and the MCP servers of `.mcp.json` offered
//! to Markdown agents as tools (their `mcpServers`).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use subagent_spi::{ToolSource, async_trait};

use super::untrusted::Untrusted;
use super::{AgentTools, Assembly, Contribution};
use crate::{Error, SubagentsBuilder};

/// The MCP kind, registered when the builder names an MCP agent.
pub(crate) struct Mcp;

#[async_trait]
impl Contribution for Mcp {
    fn tools(&self, b: &SubagentsBuilder, root: &Path) -> Option<Box<dyn AgentTools>> {
        Some(Box::new(McpServers {
            path: b.mcp_config.clone(),
            root: root.to_path_buf(),
            untrusted: Untrusted::new(&b.untrusted_files),
        }))
    }

    async fn kinds(&mut self, b: &SubagentsBuilder, a: &mut Assembly) -> Result<(), Error> {
        if b.mcp_agents.is_empty() {
            return Ok(());
        }
        // Issue 32: a spec may name the tool and the prompt's argument (`#tool=..&argument=..`);
        // a server with several tools and none named gives one agent per tool. The kind
        // shares the pool that listed them, so each server starts once.
        let pool = subagent_mcp::McpPool::new();
        a.kinds
            .push(subagent_mcp::mcp_subagent_type_with_pool(pool.clone()));
        for spec in &b.mcp_agents {
            let reference = subagent_mcp::agent_reference(spec).map_err(|e| Error::McpAgent {
                spec: spec.clone(),
                source: Box::new(e),
            })?;
            a.references
                .extend(subagent_mcp::expand_reference(&pool, &reference).await);
        }
        Ok(())
    }
}

/// Where Markdown agents' `mcpServers` come from: the servers named in the MCP configuration
/// (`path`, else `<root>/.mcp.json` when it exists) plus inline definitions.
struct McpServers {
    path: Option<PathBuf>,
    root: PathBuf,
    untrusted: Untrusted,
}

#[async_trait]
impl AgentTools for McpServers {
    async fn load(self: Box<Self>) -> Result<Arc<dyn ToolSource>, Error> {
        let (file, required) = match &self.path {
            Some(p) => (p.clone(), true),
            None => (self.root.join(".mcp.json"), false),
        };
        let config = if self.untrusted.contains(&file) {
            tracing::info!(path = %file.display(), "MCP servers not applied: the file is not approved");
            subagent_mcp::McpServerConfig::new()
        } else if required || file.is_file() {
            subagent_mcp::McpServerConfig::from_file(&file)
                .await
                .map_err(|e| Error::McpConfig {
                    path: file.clone(),
                    source: Box::new(e),
                })?
        } else {
            subagent_mcp::McpServerConfig::new()
        };
        Ok(Arc::new(subagent_mcp::McpToolProvider::new(config)))
    }
}
