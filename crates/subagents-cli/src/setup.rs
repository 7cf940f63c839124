//! The one place the command assembles its agents: the facade's builder fed from the command
//! line and `subagents.toml`. `run`, `task`, `serve` and `mcp` all go through here, so they see
//! the same agents (skills, `mcpServers` tools, nesting).

use std::path::{Path, PathBuf};

use subagents::{Error, Subagents, SubagentsBuilder};

use crate::cli::AgentSources;
use crate::config::Config;
use crate::error::CliError;

/// Everything that decides which agents a command gets.
pub struct Setup<'a> {
    /// Agent sources from the command line.
    pub sources: &'a AgentSources,
    /// The configuration file.
    pub config: &'a Config,
    /// The default model spec, when one was chosen.
    pub model: Option<&'a str>,
    /// `--workspace`.
    pub workspace: Option<&'a Path>,
    /// `--max-depth`.
    pub max_depth: Option<u32>,
}

impl Setup<'_> {
    /// The builder, configured.
    pub fn builder(&self) -> Result<SubagentsBuilder, CliError> {
        let cwd = std::env::current_dir()
            .map_err(|e| CliError::Config(format!("cannot read the current directory: {e}")))?;
        let root: PathBuf = self
            .workspace
            .map_or_else(|| cwd.clone(), Path::to_path_buf);
        let mut b = Subagents::builder().workspace(root).discover_from(&cwd);
        if let Some(spec) = self.model {
            b = b.model(spec);
        }
        for (name, spec) in &self.config.models {
            b = b.named_model(name.clone(), spec.clone());
        }
        for dir in self.sources.agents.iter().chain(&self.config.agents) {
            b = b.agents_dir(dir);
        }
        for url in self.sources.a2a.iter().chain(&self.config.a2a) {
            b = b.a2a_agent(url.clone());
        }
        for spec in self.sources.mcp.iter().chain(&self.config.mcp) {
            b = b.mcp_agent(spec.clone());
        }
        if let Some(depth) = self.max_depth.or(self.config.max_depth) {
            b = b.max_depth(depth);
        }
        if self.sources.no_hooks {
            b = b.hooks(false);
        }
        Ok(b)
    }

    /// Builds the agents; a configuration problem is exit 2.
    pub async fn build(&self) -> Result<Subagents, CliError> {
        let agents = self.builder()?.build().await.map_err(facade_error)?;
        for s in agents.skipped() {
            tracing::info!(path = %s.path.display(), reason = %s.reason, "agent file skipped");
        }
        Ok(agents)
    }
}

/// A facade error as a command error: model problems are "no model" (exit 2), the rest
/// configuration (exit 2).
pub fn facade_error(e: Error) -> CliError {
    match e {
        Error::Model { .. } | Error::NoModel(_) => {
            CliError::NoModel(format!("{e}\n{}", subagents::models::NO_MODEL_HELP))
        }
        other => CliError::Config(other.to_string()),
    }
}
