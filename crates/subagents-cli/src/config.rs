//! `subagents.toml` and model selection.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::error::CliError;

/// The optional configuration file.
///
/// ```toml
/// model = "ollama:qwen2.5"          # the default model
/// agents = ["./agents"]             # agent directories
/// a2a = ["http://127.0.0.1:9000"]   # remote A2A agents
/// max_depth = 3                     # nesting limit (the main agent is depth 0)
/// [models]                          # named models and aliases
/// fast = "openai:gpt-4.1-mini"
/// sonnet = "anthropic:claude-sonnet-4-5"
/// ```
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Default model spec.
    pub model: Option<String>,
    /// Agent directories.
    #[serde(default)]
    pub agents: Vec<PathBuf>,
    /// Remote A2A agent URLs.
    #[serde(default)]
    pub a2a: Vec<String>,
    /// MCP agent specs.
    #[serde(default)]
    pub mcp: Vec<String>,
    /// Named models: name -> spec.
    #[serde(default)]
    pub models: BTreeMap<String, String>,
    /// The nesting limit.
    pub max_depth: Option<u32>,
}

impl Config {
    /// Loads `path`, or `./subagents.toml` when it exists, or the empty config.
    pub fn load(path: Option<&Path>) -> Result<Self, CliError> {
        let (path, required) = match path {
            Some(p) => (p.to_path_buf(), true),
            None => (PathBuf::from("subagents.toml"), false),
        };
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if !required && e.kind() == std::io::ErrorKind::NotFound => {
                return Ok(Self::default());
            }
            Err(e) => {
                return Err(CliError::Config(format!(
                    "cannot read {}: {e}",
                    path.display()
                )));
            }
        };
        toml::from_str(&text).map_err(|e| CliError::Config(format!("{}: {e}", path.display())))
    }
}

/// Picks the default model spec: `--model`, `$SUBAGENTS_MODEL`, the config file's `model`,
/// then a provider key in the environment or a running Ollama (see
/// [`subagents::models::choose_default_model`]). A name from `[models]` stands for its spec.
/// Exit 2 with one message when there is none.
pub async fn choose_model_spec(flag: Option<&str>, config: &Config) -> Result<String, CliError> {
    let env = std::env::var("SUBAGENTS_MODEL")
        .ok()
        .filter(|v| !v.trim().is_empty());
    let explicit = flag
        .map(str::to_string)
        .or(env)
        .or_else(|| config.model.clone());
    let explicit = explicit.as_deref();
    let spec = subagents::models::choose_default_model(explicit)
        .await
        .map_err(crate::setup::facade_error)?;
    Ok(config.models.get(&spec).cloned().unwrap_or(spec))
}
