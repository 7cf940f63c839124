//! `subagents.toml` and model selection.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::error::CliError;

/// The optional configuration file.
///
/// ```toml
/// model = "ollama:qwen2.5"          # the default model
/// agent_model = "ollama:qwen2.5"    # one model for every agent, like --agent-model
/// agents = ["./agents"]             # agent directories
/// a2a = ["http://127.0.0.1:9000",   # remote A2A agents; a table adds settings such as
///        { url = "https://h/agent", bearer_env = "AGENT_TOKEN" }]   # credentials
/// max_depth = 3                     # nesting limit (the main agent is depth 0)
/// store = "sqlite:/var/lib/subagents/ledger.db"   # like --store (or postgres://..., memory)
/// max_concurrent = 20               # children working at once over the whole tree
/// context_window = 8192             # the models' window in tokens, like --context-window
/// stall_timeout_secs = 600          # no progress this long stops an agent (0: never)
/// [budget]                          # over the whole tree, like --budget-tokens etc.
/// tokens = 200000
/// usd = 2.5                         # counted with [prices]
/// remote_unreported_tokens = 100000 # a remote run with a broken usage report counts this
/// [budget.agents.reviewer]          # an agent's own budget (over its frontmatter `budget`)
/// tokens = 20000                    # each run gets at most this and what the caller has left
/// time_secs = 120
/// [prices]                          # USD per million tokens, by model name, over the
/// "gpt-4.1" = { input = 2.0, output = 8.0 }   # built-in table of common hosted models
/// [models]                          # named models and aliases
/// fast = "openai:gpt-4.1-mini"
/// sonnet = "anthropic:claude-sonnet-4-5"
/// [permissions]                     # Claude Code's rule syntax; deny wins, then ask, then allow
/// mode = "acceptEdits"              # like --permission-mode
/// allow = ["Bash(git status:*)"]
/// ask = ["WebFetch"]
/// deny = ["Read(./secrets/**)"]
/// [sandbox]                         # how Bash is confined (Linux, Landlock)
/// enabled = true                    # false: unconfined, like --no-sandbox
/// network = true                    # false: no TCP, like --no-network
/// writable = ["/var/cache/build"]   # more writable directories
/// env = ["CARGO_HOME"]              # more environment variables passed to commands
/// ```
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Config {
    /// Default model spec.
    pub model: Option<String>,
    /// One model for every agent (`--agent-model` and `CLAUDE_CODE_SUBAGENT_MODEL` win).
    pub agent_model: Option<String>,
    /// Agent directories.
    #[serde(default)]
    pub agents: Vec<PathBuf>,
    /// Remote A2A agents: URLs, or tables of a `url` and settings.
    #[serde(default)]
    pub a2a: Vec<A2aEntry>,
    /// MCP agent specs.
    #[serde(default)]
    pub mcp: Vec<String>,
    /// Named models: name -> spec.
    #[serde(default)]
    pub models: BTreeMap<String, String>,
    /// The nesting limit.
    pub max_depth: Option<u32>,
    /// Where transcripts and background tasks are kept (`--store` wins).
    pub store: Option<String>,
    /// Children working at once over the whole tree.
    pub max_concurrent: Option<usize>,
    /// The models' context window in tokens (`--context-window` wins).
    pub context_window: Option<u64>,
    /// Seconds without progress before an agent stops `stalled` (`--stall-timeout` wins).
    pub stall_timeout_secs: Option<f64>,
    /// Budgets over the whole tree.
    #[serde(default)]
    pub budget: BudgetConfig,
    /// Per-model prices, USD per million tokens.
    #[serde(default)]
    pub prices: BTreeMap<String, PriceConfig>,
    /// Permission mode and rules.
    #[serde(default)]
    pub permissions: PermissionsConfig,
    /// Bash confinement.
    #[serde(default)]
    pub sandbox: SandboxConfig,
    /// Where the file was read from (for messages).
    #[serde(skip)]
    pub path: Option<PathBuf>,
    /// Workspace settings files whose weakening settings must not apply (not approved; see
    /// `trust`).
    #[serde(skip)]
    pub untrusted_files: Vec<PathBuf>,
}

/// `[budget]` of subagents.toml.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct BudgetConfig {
    /// Tokens (input + output).
    pub tokens: Option<u64>,
    /// Model turns.
    pub turns: Option<u32>,
    /// Wall time in seconds.
    pub time_secs: Option<f64>,
    /// Cost in USD.
    pub usd: Option<f64>,
    /// Not a limit: the tokens a remote A2A run with a refused or malformed usage report
    /// counts as at least (default 100000).
    pub remote_unreported_tokens: Option<u64>,
    /// Agents' own budgets, by agent name: `[budget.agents.NAME]`.
    #[serde(default)]
    pub agents: BTreeMap<String, LimitsConfig>,
}

/// The limits of one agent's own budget, `[budget.agents.NAME]`: the keys of `[budget]`.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct LimitsConfig {
    /// Tokens (input + output).
    pub tokens: Option<u64>,
    /// Model turns.
    pub turns: Option<u32>,
    /// Wall time in seconds.
    pub time_secs: Option<f64>,
    /// Cost in USD.
    pub usd: Option<f64>,
}

/// One model's price in `[prices]`: USD per million tokens.
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct PriceConfig {
    /// USD per million input tokens.
    pub input: f64,
    /// USD per million output tokens.
    pub output: f64,
}

/// `[sandbox]` of subagents.toml.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct SandboxConfig {
    /// Confine Bash (default true).
    pub enabled: Option<bool>,
    /// Allow TCP (default true).
    pub network: Option<bool>,
    /// More writable directories.
    #[serde(default)]
    pub writable: Vec<PathBuf>,
    /// More environment variables for commands.
    #[serde(default)]
    pub env: Vec<String>,
}

/// One remote A2A agent of subagents.toml.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub(crate) enum A2aEntry {
    /// Its base URL.
    Url(String),
    /// Its base URL and settings passed to the A2A client as reference metadata:
    /// `bearer_env`, `api_key_env`, `api_key_header`, `timeout_secs`, `binding`,
    /// `allowed_origins` (more origins the credentials may go to, e.g.
    /// `["https://a2a.example.com:8443"]`), ... (secrets by environment variable name, so none
    /// is written in the file).
    Table {
        /// The base URL.
        url: String,
        /// Settings.
        #[serde(flatten)]
        settings: BTreeMap<String, toml::Value>,
    },
}

/// `[permissions]` of subagents.toml.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct PermissionsConfig {
    /// A mode for every agent (like `--permission-mode`).
    pub mode: Option<String>,
    /// Allow rules.
    #[serde(default)]
    pub allow: Vec<String>,
    /// Ask rules.
    #[serde(default)]
    pub ask: Vec<String>,
    /// Deny rules.
    #[serde(default)]
    pub deny: Vec<String>,
}

impl Config {
    /// Loads `path`, or `./subagents.toml` when it exists, or the empty config.
    pub(crate) fn load(path: Option<&Path>) -> Result<Self, CliError> {
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
        let mut config: Self = toml::from_str(&text)
            .map_err(|e| CliError::Config(format!("{}: {e}", path.display())))?;
        config.path = Some(path);
        Ok(config)
    }

    /// The store: `--store` (already folded into `store`), else SQLite under the data
    /// directory.
    pub(crate) fn store_url(&self) -> Result<subagents::store::StoreUrl, CliError> {
        match &self.store {
            Some(text) => text
                .parse()
                .map_err(|e| CliError::Config(format!("{}: store: {e}", self.name()))),
            None => Ok(subagents::store::StoreUrl::default_for_cli()),
        }
    }

    /// The file's name for messages.
    pub(crate) fn name(&self) -> String {
        self.path
            .as_ref()
            .map_or_else(|| "subagents.toml".to_string(), |p| p.display().to_string())
    }
}

/// Picks the default model spec: `--model`, `$SUBAGENTS_MODEL`, the config file's `model`,
/// then a provider key in the environment or a running Ollama (see
/// [`subagents::models::choose_default_model`]). A name from `[models]` stands for its spec.
/// Exit 2 with one message when there is none.
pub(crate) async fn choose_model_spec(
    flag: Option<&str>,
    config: &Config,
) -> Result<String, CliError> {
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
