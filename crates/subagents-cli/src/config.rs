//! `subagents.toml` and model selection.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;
use subagent_runtime::ModelRegistry;
use subagent_spi::ChatModel;

use crate::error::CliError;

/// The optional configuration file.
///
/// ```toml
/// model = "ollama:qwen2.5"          # the default model
/// agents = ["./agents"]             # agent directories
/// a2a = ["http://127.0.0.1:9000"]   # remote A2A agents
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

/// Where the Ollama probe looks (overridable for tests and unusual setups).
fn ollama_url() -> String {
    std::env::var("SUBAGENTS_OLLAMA_URL").unwrap_or_else(|_| "http://127.0.0.1:11434".into())
}

const NO_MODEL_HELP: &str = "no model is reachable. Set one of:\n  \
     SUBAGENTS_MODEL=ollama:qwen2.5 (after `ollama pull qwen2.5`, with Ollama on 127.0.0.1:11434)\n  \
     SUBAGENTS_MODEL=openai:gpt-4.1 and OPENAI_API_KEY=...\n  \
     SUBAGENTS_MODEL=anthropic:claude-sonnet-4-5 and ANTHROPIC_API_KEY=...\n  \
     SUBAGENTS_MODEL=openai-compatible:MODEL@http://HOST:PORT/v1 (vLLM, llama.cpp, LM Studio)\n\
     or pass --model SPEC";

fn env_nonempty(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

/// Picks the default model spec: `--model`, `$SUBAGENTS_MODEL`, the config file, a provider
/// key in the environment, then a running Ollama. Exit 2 with one message when none.
pub async fn choose_model_spec(flag: Option<&str>, config: &Config) -> Result<String, CliError> {
    if let Some(spec) = flag
        .map(str::to_string)
        .or_else(|| env_nonempty("SUBAGENTS_MODEL"))
        .or_else(|| config.model.clone())
    {
        return Ok(config.models.get(&spec).cloned().unwrap_or(spec));
    }
    if env_nonempty("ANTHROPIC_API_KEY").is_some() {
        return Ok("anthropic:claude-sonnet-4-5".into());
    }
    if env_nonempty("OPENAI_API_KEY").is_some() {
        return Ok("openai:gpt-4.1".into());
    }
    probe_ollama().await
}

async fn probe_ollama() -> Result<String, CliError> {
    let base = ollama_url();
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(2))
        .build()
        .map_err(|e| CliError::NoModel(format!("{NO_MODEL_HELP}\n(http client: {e})")))?;
    let url = format!("{}/api/tags", base.trim_end_matches('/'));
    let resp = client.get(&url).send().await.map_err(|_| {
        CliError::NoModel(format!(
            "{NO_MODEL_HELP}\n(tried Ollama at {base}: not reachable)"
        ))
    })?;
    let body: serde_json::Value = resp.json().await.map_err(|_| {
        CliError::NoModel(format!(
            "{NO_MODEL_HELP}\n(tried Ollama at {base}: not an Ollama server)"
        ))
    })?;
    let first = body["models"]
        .as_array()
        .and_then(|m| m.first())
        .and_then(|m| m["name"].as_str().or_else(|| m["model"].as_str()))
        .map(str::to_string);
    match first {
        Some(name) => Ok(format!(
            "openai-compatible:{name}@{}/v1",
            base.trim_end_matches('/')
        )),
        None => Err(CliError::NoModel(format!(
            "{NO_MODEL_HELP}\n(Ollama at {base} has no models: run `ollama pull qwen2.5`)"
        ))),
    }
}

/// Builds a model from a spec, as a configuration error (exit 2) when it cannot be built.
pub fn build_model(spec: &str) -> Result<Arc<dyn ChatModel>, CliError> {
    subagent_providers::model_from_spec(spec)
        .map_err(|e| CliError::NoModel(format!("model `{spec}`: {e}\n{NO_MODEL_HELP}")))
}

/// The model registry for a run: `default` = the chosen model; names from the config;
/// `sonnet`/`opus`/`haiku` go to Anthropic when a key is set and otherwise fall back to the
/// default model (so agents written for Claude Code run on any model); anything else is
/// built from its spec on first use.
pub fn registry(default_spec: &str, config: &Config) -> Result<ModelRegistry, CliError> {
    let default = build_model(default_spec)?;
    let mut reg = ModelRegistry::new();
    reg.register(default_spec, default);
    reg.set_default(default_spec);
    // Named models are aliases of their specs, built by the fallback on first use: a broken
    // entry fails with its cause when an agent uses it, and costs nothing otherwise.
    for (name, spec) in &config.models {
        reg.alias(name.clone(), spec.clone());
    }
    let anthropic = env_nonempty("ANTHROPIC_API_KEY").is_some();
    for (alias, target) in subagent_providers::default_aliases() {
        if config.models.contains_key(alias) {
            continue;
        }
        let to = if anthropic {
            format!("anthropic:{target}")
        } else {
            default_spec.to_string()
        };
        reg.alias(alias, to);
    }
    reg.set_fallback(Arc::new(|name: &str| {
        name.contains(':')
            .then(|| subagent_providers::model_from_spec(name))
    }));
    Ok(reg)
}
