//! `subagents mcp` and MCP agent references (wired to `subagent-mcp`).

use subagent_spi::{SubagentReference, SubagentType};

use crate::cli::McpArgs;
use crate::config::Config;
use crate::error::CliError;

/// The MCP kind, when built in.
pub fn kinds() -> Vec<SubagentType> {
    Vec::new()
}

/// Adds `--mcp` references.
pub fn add_references<'a>(
    refs: &mut Vec<SubagentReference>,
    specs: impl Iterator<Item = &'a String>,
) {
    for s in specs {
        refs.push(SubagentReference::new(s.clone(), "MCP"));
    }
}

/// `subagents mcp`.
pub async fn serve(_args: McpArgs, _config: Config) -> Result<(), CliError> {
    Err(CliError::Config("MCP serving is not wired yet".into()))
}
