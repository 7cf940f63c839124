//! `subagents mcp`: Task / TaskOutput / TaskStop over MCP (stdio, or streamable HTTP with
//! `--listen`), so any MCP client can delegate to the same agents `run` sees.

use crate::cli::McpArgs;
use crate::config::{self, Config};
use crate::error::CliError;
use crate::setup::Setup;

/// `subagents mcp`.
pub(crate) async fn serve(args: McpArgs, config: Config) -> Result<(), CliError> {
    // Local agents need a model; remote ones do not. Without one, local agents answer with a
    // clear model error when called, and the server still serves the rest.
    let spec = match config::choose_model_spec(args.model.as_deref(), &config).await {
        Ok(spec) => Some(spec),
        Err(e) => {
            tracing::warn!("{e}");
            None
        }
    };
    let agents = Setup {
        sources: &args.sources,
        config: &config,
        model: spec.as_deref(),
        workspace: args.workspace.as_deref(),
        max_depth: args.max_depth,
        permissions: &args.permissions,
        // No prompt while serving: --yes approves everything; otherwise calls that must be
        // approved are denied (over MCP, a background task's question waits for the client's
        // TaskOutput answer).
        approver: crate::approve::yes_approver(&args.permissions),
    }
    .build()
    .await?;
    let names = agents.task().agent_names();
    let server = agents.mcp_server();
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
