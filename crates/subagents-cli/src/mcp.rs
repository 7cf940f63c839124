//! MCP in the CLI: `--mcp` agent references (the `MCP` kind), `mcpServers` tools for Markdown
//! agents (servers from `.mcp.json` in the workspace root, or inline), and `subagents mcp`,
//! which serves Task / TaskOutput / TaskStop over MCP so any MCP client can delegate.

use std::path::Path;
use std::sync::Arc;

use subagent_claude::McpToolSource;
use subagent_mcp::{McpServerConfig, McpToolProvider, McpToolServer};
use subagent_runtime::ModelRegistry;
use subagent_spi::{SubagentReference, SubagentType};

use crate::cli::McpArgs;
use crate::config::{self, Config};
use crate::error::CliError;

/// The MCP kind.
pub fn kinds() -> Vec<SubagentType> {
    vec![subagent_mcp::mcp_subagent_type()]
}

/// Adds `--mcp` references (`stdio:COMMAND ARGS...` or an http(s) URL).
pub fn add_references<'a>(
    refs: &mut Vec<SubagentReference>,
    specs: impl Iterator<Item = &'a String>,
) {
    for s in specs {
        refs.push(SubagentReference::new(s.clone(), subagent_mcp::KIND));
    }
}

/// Where Markdown agents' `mcpServers` come from: the servers named in `<root>/.mcp.json`
/// (Claude Code's project file) plus inline definitions in the frontmatter.
pub async fn tool_source(root: &Path) -> Result<Arc<dyn McpToolSource>, CliError> {
    let file = root.join(".mcp.json");
    let config = if tokio::fs::try_exists(&file).await.unwrap_or(false) {
        McpServerConfig::from_file(&file)
            .await
            .map_err(|e| CliError::Config(e.to_string()))?
    } else {
        McpServerConfig::new()
    };
    Ok(Arc::new(McpToolProvider::new(config)))
}

/// `subagents mcp`.
pub async fn serve(args: McpArgs, config: Config) -> Result<(), CliError> {
    // Local agents need a model; remote ones do not. Without one, local agents answer with a
    // clear model error when called, and the server still serves the rest.
    let registry = match config::choose_model_spec(args.model.as_deref(), &config).await {
        Ok(spec) => config::registry(&spec, &config)?,
        Err(e) => {
            tracing::warn!("{e}");
            ModelRegistry::new()
        }
    };
    let ws = crate::run::workspace(args.workspace.as_deref())?;
    let task = crate::run::task_tool(&args.sources, &config, registry, &ws).await?;
    let names = task.agent_names();
    let server = McpToolServer::new(task.tools())
        .with_server_info("subagents", env!("CARGO_PKG_VERSION"))
        .with_instructions(
            "Delegate work to subagents with the Task tool (agents are listed in its \
             description); run them in the background and read results with TaskOutput; \
             cancel with TaskStop.",
        );
    match args.listen {
        Some(addr) => {
            let http = server
                .serve_streamable_http(addr)
                .await
                .map_err(|e| CliError::Config(format!("cannot serve MCP on {addr}: {e}")))?;
            eprintln!(
                "serving Task/TaskOutput/TaskStop over MCP (streamable HTTP) at {} for {} agent(s): {}",
                http.url(),
                names.len(),
                names.join(", ")
            );
            let _ = tokio::signal::ctrl_c().await;
            http.shutdown()
                .await
                .map_err(|e| CliError::Failed(e.to_string()))
        }
        None => server
            .serve_stdio()
            .await
            .map_err(|e| CliError::Failed(format!("MCP stdio server: {e}"))),
    }
}
