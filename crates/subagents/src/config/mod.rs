//! `subagents.toml`: the configuration file of the `subagents` command, its schema, loading and
//! validation, and how it configures a [`SubagentsBuilder`].
//!
//! A Rust program loads the configuration the command uses with
//! [`Subagents::from_config`](crate::Subagents::from_config) (or [`Config::load`] and
//! [`SubagentsBuilder::config`]), so both assemble the same agents from the same file.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let agents = subagents::Subagents::from_config("subagents.toml")?.build().await?;
//! # let _ = agents; Ok(()) }
//! ```
//!
//! A workspace's `subagents.toml` may have been written by a model or come with a cloned
//! repository: the command applies its settings that lift limits only once the user approved
//! the file (see the command's `trust`); a program loading a file it did not write should do
//! the same (strip them, or refuse the file).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use subagent_core::{ModelPrice, ModelPrices};
use subagent_spi::BudgetLimits;

use crate::{Subagents, SubagentsBuilder};

#[cfg(all(feature = "claude", feature = "providers", feature = "store"))]
pub mod trust;

/// The file the command reads from the current directory when no other is given.
pub const DEFAULT_FILE: &str = "subagents.toml";

/// The smallest context window accepted, in tokens.
pub const MIN_CONTEXT_WINDOW: u64 = 256;

/// The configuration file, `subagents.toml` (every key is optional).
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
/// strict_models = false             # true: an agent whose model cannot be used fails
/// [budget]                          # over the whole tree, like --budget-tokens etc.
/// tokens = 200000
/// usd = 2.5                         # counted with [prices]
/// remote_unreported_tokens = 100000 # a remote run with a broken usage report counts this
/// [budget.agents.reviewer]          # an agent's own budget (over its frontmatter `budget`)
/// tokens = 20000                    # each run gets at most this and what the caller has left
/// time_secs = 120
/// [prices]                          # USD per million tokens, by model name, over the
/// "gpt-4.1" = { input = 2.0, output = 8.0, cache_read = 0.5 }   # built-in table of
///                                   # common hosted models (cache_read, cache_write: the
///                                   # prompt cache's rates; absent: the table's for
///                                   # the model, else the input rate)
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
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct Config {
    /// Default model spec (a name of `[models]` stands for its spec).
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
    /// An agent whose `model` cannot be used fails instead of running on the session's model
    /// (`--strict-models`; default false, Claude Code's behaviour).
    pub strict_models: Option<bool>,
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
    /// Workspace settings files whose weakening settings must not apply (not approved by the
    /// user); [`SubagentsBuilder::config`] passes each to
    /// [`untrusted_file`](SubagentsBuilder::untrusted_file).
    #[serde(skip)]
    pub untrusted_files: Vec<PathBuf>,
}

/// `[budget]` of subagents.toml.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct BudgetConfig {
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

/// The limits of one budget: the keys of `[budget]` and `[budget.agents.NAME]`.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct LimitsConfig {
    /// Tokens (input + output).
    pub tokens: Option<u64>,
    /// Model turns.
    pub turns: Option<u32>,
    /// Wall time in seconds.
    pub time_secs: Option<f64>,
    /// Cost in USD.
    pub usd: Option<f64>,
}

impl LimitsConfig {
    /// These limits.
    pub fn new(
        tokens: Option<u64>,
        turns: Option<u32>,
        time_secs: Option<f64>,
        usd: Option<f64>,
    ) -> Self {
        Self {
            tokens,
            turns,
            time_secs,
            usd,
        }
    }

    /// The checked limits: a time that is not a positive number of seconds (at most 1e9), or
    /// an amount that is not positive, is an error. `what` names the setting in messages:
    /// `{key}` in it is replaced by the key (`time_secs`), `{what}` by its short name (`time`),
    /// e.g. `"subagents.toml: [budget] {key}"`.
    pub fn limits(&self, what: &str) -> Result<BudgetLimits, ConfigError> {
        let name = |short: &str, key: &str| what.replace("{what}", short).replace("{key}", key);
        let mut limits = BudgetLimits::new();
        if let Some(n) = self.tokens {
            limits = limits.with_tokens(n);
        }
        if let Some(n) = self.turns {
            limits = limits.with_turns(n);
        }
        if let Some(secs) = self.time_secs {
            if !secs.is_finite() || secs <= 0.0 || secs > 1e9 {
                return Err(ConfigError::Invalid(format!(
                    "{} must be a positive number of seconds, not {secs}",
                    name("time", "time_secs")
                )));
            }
            limits = limits.with_time(std::time::Duration::from_secs_f64(secs));
        }
        if let Some(usd) = self.usd {
            if !usd.is_finite() || usd <= 0.0 {
                return Err(ConfigError::Invalid(format!(
                    "{} must be a positive amount, not {usd}",
                    name("usd", "usd")
                )));
            }
            limits = limits.with_usd(usd);
        }
        Ok(limits)
    }
}

/// One model's price in `[prices]`: USD per million tokens.
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct PriceConfig {
    /// USD per million input tokens.
    pub input: f64,
    /// USD per million output tokens.
    pub output: f64,
    /// USD per million prompt tokens read from the provider's cache (absent: the built-in
    /// table's rate for the model, else the input rate).
    #[serde(default)]
    pub cache_read: Option<f64>,
    /// USD per million prompt tokens written to the provider's cache (absent: the built-in
    /// table's rate for the model, else the input rate).
    #[serde(default)]
    pub cache_write: Option<f64>,
}

impl PriceConfig {
    /// The price this entry gives `model` over `table` (the built-in one): its rates, and for
    /// a cache rate it does not give, the table's for the model (an entry written before the
    /// table knew cache rates keeps them), else none (the input rate).
    pub(crate) fn price(&self, model: &str, table: &ModelPrices) -> ModelPrice {
        let base = table.get(model);
        let mut price = ModelPrice::new(self.input, self.output);
        price.cache_read_per_mtok = self
            .cache_read
            .or_else(|| base.and_then(|b| b.cache_read_per_mtok));
        price.cache_write_per_mtok = self
            .cache_write
            .or_else(|| base.and_then(|b| b.cache_write_per_mtok));
        price
    }
}

/// `[sandbox]` of subagents.toml.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct SandboxConfig {
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
#[non_exhaustive]
pub enum A2aEntry {
    /// Its base URL.
    Url(String),
    /// Its base URL and settings passed to the A2A client as reference metadata:
    /// `bearer_env`, `api_key_env`, `api_key_header`, `timeout_secs`, `binding`,
    /// `allowed_origins` (more origins the credentials may go to, e.g.
    /// `["https://a2a.example.com:8443"]`), ... (secrets by environment variable name, so none
    /// is written in the file). A value that is not a string is kept as its TOML text.
    Table {
        /// The base URL.
        url: String,
        /// Settings.
        #[serde(flatten, deserialize_with = "settings_as_text")]
        settings: BTreeMap<String, String>,
    },
}

/// TOML values as text: strings as they are, anything else as TOML (`5`, `["a", "b"]`).
fn settings_as_text<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<BTreeMap<String, String>, D::Error> {
    let raw = BTreeMap::<String, toml::Value>::deserialize(d)?;
    Ok(raw
        .into_iter()
        .map(|(k, v)| {
            let v = match v {
                toml::Value::String(s) => s,
                other => other.to_string(),
            };
            (k, v)
        })
        .collect())
}

/// `[permissions]` of subagents.toml.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct PermissionsConfig {
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

/// The configuration file cannot be used. Every message names the file (and, for syntax
/// errors, the line and column).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The file cannot be read.
    #[error("cannot read {}: {source}", .path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The file is not valid TOML, or has an unknown key or a value of the wrong type.
    #[error("{}: {source}", .path.display())]
    Parse {
        /// The file.
        path: PathBuf,
        /// What is wrong, and where (line and column).
        #[source]
        source: Box<toml::de::Error>,
    },
    /// A value is out of range or malformed; the message names the file and the key.
    #[error("{0}")]
    Invalid(String),
}

impl Config {
    /// Loads `path`, or `./subagents.toml` when it exists, or the empty configuration. A file
    /// given that cannot be read is an error; a missing `./subagents.toml` is not.
    pub fn load(path: Option<&Path>) -> Result<Self, ConfigError> {
        let (path, required) = match path {
            Some(p) => (p.to_path_buf(), true),
            None => (PathBuf::from(DEFAULT_FILE), false),
        };
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if !required && e.kind() == std::io::ErrorKind::NotFound => {
                return Ok(Self::default());
            }
            Err(source) => return Err(ConfigError::Read { path, source }),
        };
        Self::parse(&text, path)
    }

    /// Parses the text of the file at `path` (`path` is for messages and
    /// [`name`](Self::name)).
    pub fn parse(text: &str, path: impl Into<PathBuf>) -> Result<Self, ConfigError> {
        let path = path.into();
        let mut config: Self = match toml::from_str(text) {
            Ok(c) => c,
            Err(e) => {
                return Err(ConfigError::Parse {
                    path,
                    source: Box::new(e),
                });
            }
        };
        config.path = Some(path);
        Ok(config)
    }

    /// The file's name for messages (`subagents.toml` when it was not read from a file).
    pub fn name(&self) -> String {
        self.path
            .as_ref()
            .map_or_else(|| DEFAULT_FILE.to_string(), |p| p.display().to_string())
    }

    /// `name` resolved through `[models]`: the spec it stands for, else `name` itself.
    pub fn model_spec(&self, name: &str) -> String {
        self.models
            .get(name)
            .cloned()
            .unwrap_or_else(|| name.to_string())
    }

    /// `[budget]`, checked.
    pub fn budget_limits(&self) -> Result<BudgetLimits, ConfigError> {
        let b = &self.budget;
        let mut limits = LimitsConfig::new(b.tokens, b.turns, b.time_secs, b.usd)
            .limits(&format!("{}: [budget] {{key}}", self.name()))?;
        if let Some(n) = b.remote_unreported_tokens {
            limits = limits.with_remote_unreported_tokens(n);
        }
        Ok(limits)
    }

    /// `[budget.agents.NAME]`, checked, by agent name.
    pub fn agent_budgets(&self) -> Result<Vec<(String, BudgetLimits)>, ConfigError> {
        let mut out = Vec::new();
        for (agent, c) in &self.budget.agents {
            let l = c.limits(&format!("{}: [budget.agents.{agent}] {{key}}", self.name()))?;
            out.push((agent.clone(), l));
        }
        Ok(out)
    }

    /// The built-in price table of common hosted models ([`crate::prices`]) with `[prices]`
    /// over it, checked (no price may be negative).
    pub fn prices(&self) -> Result<ModelPrices, ConfigError> {
        let table = crate::prices::default_prices();
        let mut prices = table.clone();
        for (model, p) in &self.prices {
            let rates = [
                ("input", Some(p.input)),
                ("output", Some(p.output)),
                ("cache_read", p.cache_read),
                ("cache_write", p.cache_write),
            ];
            for (what, v) in rates
                .into_iter()
                .filter_map(|(what, v)| v.map(|v| (what, v)))
            {
                if !v.is_finite() || v < 0.0 {
                    return Err(ConfigError::Invalid(format!(
                        "{}: [prices] \"{model}\" {what} must be a non-negative number of USD per million tokens, not {v}",
                        self.name()
                    )));
                }
            }
            prices = prices.with(model.clone(), p.price(model, &table));
        }
        Ok(prices)
    }

    /// `context_window`, checked (at least [`MIN_CONTEXT_WINDOW`]).
    pub fn checked_context_window(&self) -> Result<Option<u64>, ConfigError> {
        match self.context_window {
            Some(window) if window < MIN_CONTEXT_WINDOW => Err(ConfigError::Invalid(format!(
                "{}: context_window must be at least {MIN_CONTEXT_WINDOW} tokens, not {window}",
                self.name()
            ))),
            other => Ok(other),
        }
    }

    /// `stall_timeout_secs`, checked: `None` when not set, `Some(None)` for 0 (never).
    pub fn checked_stall_timeout(
        &self,
    ) -> Result<Option<Option<std::time::Duration>>, ConfigError> {
        let Some(secs) = self.stall_timeout_secs else {
            return Ok(None);
        };
        if !secs.is_finite() || !(0.0..=1e9).contains(&secs) {
            return Err(ConfigError::Invalid(format!(
                "{}: stall_timeout_secs (--stall-timeout) must be a number of seconds (0: never), not {secs}",
                self.name()
            )));
        }
        Ok(Some(
            (secs > 0.0).then(|| std::time::Duration::from_secs_f64(secs)),
        ))
    }

    /// `store`, parsed (feature `store`); `None` when not set.
    #[cfg(feature = "store")]
    pub fn store_url(&self) -> Result<Option<subagent_store::StoreUrl>, ConfigError> {
        self.store
            .as_deref()
            .map(|text| {
                text.parse()
                    .map_err(|e| ConfigError::Invalid(format!("{}: store: {e}", self.name())))
            })
            .transpose()
    }

    /// How Bash is confined under `[sandbox]` (feature `tools`): the default confinement
    /// unless `enabled = false`, TCP unless `network = false`, plus `writable` and `env`.
    #[cfg(feature = "tools")]
    pub fn sandbox_policy(&self) -> subagent_tools::SandboxPolicy {
        let cfg = &self.sandbox;
        let mut policy = if cfg.enabled.unwrap_or(true) {
            subagent_tools::SandboxPolicy::default()
        } else {
            subagent_tools::SandboxPolicy::unconfined()
        };
        policy = policy.network(cfg.network.unwrap_or(true));
        for dir in &cfg.writable {
            policy = policy.writable(dir.clone());
        }
        for name in &cfg.env {
            policy = policy.allow_env(name.clone());
        }
        policy
    }

    /// The rules of `[permissions]` (feature `claude`), their paths relative to `root` (the
    /// workspace); a rule that does not parse is an error naming the file and the list.
    #[cfg(feature = "claude")]
    pub fn permission_rules(
        &self,
        root: &Path,
    ) -> Result<subagent_claude::PermissionRules, ConfigError> {
        use subagent_claude::{PermissionRule, RuleAction};
        let file = self.name();
        let perms = &self.permissions;
        let mut rules = subagent_claude::PermissionRules::new();
        for (action, list) in [
            (RuleAction::Allow, &perms.allow),
            (RuleAction::Ask, &perms.ask),
            (RuleAction::Deny, &perms.deny),
        ] {
            for text in list {
                let rule = PermissionRule::parse(text, root, &file).map_err(|e| {
                    ConfigError::Invalid(format!("{file}: [permissions] {action}: {e}"))
                })?;
                rules.push(action, rule);
            }
        }
        Ok(rules)
    }

    /// `[permissions] mode`, parsed (feature `claude`).
    #[cfg(feature = "claude")]
    pub fn permission_mode(&self) -> Result<Option<subagent_claude::PermissionMode>, ConfigError> {
        self.permissions
            .mode
            .as_deref()
            .map(|text| {
                text.parse::<subagent_claude::PermissionMode>()
                    .map_err(|e| {
                        ConfigError::Invalid(format!("{}: [permissions] mode: {e}", self.name()))
                    })
            })
            .transpose()
    }

    /// A setting this build cannot apply: an error naming it and the feature.
    #[allow(dead_code)]
    fn needs(&self, what: &str, feature: &str) -> ConfigError {
        ConfigError::Invalid(format!(
            "{}: {what} needs the `{feature}` feature of the `subagents` crate",
            self.name()
        ))
    }
}

impl SubagentsBuilder {
    /// Applies a configuration file ([`Config`]): every setting it has, over the builder's
    /// (later calls win). The default model and `agent_model` are resolved through
    /// `[models]`; the `[permissions]` rules' paths are relative to the builder's
    /// [`workspace`](Self::workspace) (else the current directory); the files in
    /// [`Config::untrusted_files`] are passed to [`untrusted_file`](Self::untrusted_file).
    /// An invalid value is an error naming the file and the key; a setting whose feature is
    /// not compiled in is an error naming the feature.
    pub fn config(mut self, c: &Config) -> Result<Self, ConfigError> {
        let default = c.model.as_deref().map(|m| c.model_spec(m));
        if let Some(spec) = &default {
            self = self.model(spec.clone());
        }
        for (name, spec) in &c.models {
            self = self.named_model(name.clone(), spec.clone());
        }
        if let Some(chosen) = &c.agent_model {
            let routes = crate::models::ModelRoutes::new(
                default.as_deref(),
                c.models.iter().map(|(n, s)| (n.clone(), s.clone())),
                None,
            );
            self = self.agent_model(routes.spec_of(chosen).unwrap_or_else(|| chosen.clone()));
        }
        for dir in &c.agents {
            self = self.agents_dir(dir);
        }
        for entry in &c.a2a {
            self = match entry {
                A2aEntry::Url(url) => self.a2a_agent(url.clone()),
                A2aEntry::Table { url, settings } => {
                    // The kind is the A2A one whatever it says here (see `a2a_reference`).
                    let mut r = subagent_spi::SubagentReference::new(
                        url.clone(),
                        subagent_spi::Kind::from_static("A2A"),
                    );
                    for (k, v) in settings {
                        r = r.with_metadata(k.clone(), v.clone());
                    }
                    self.a2a_reference(r)
                }
            };
        }
        for spec in &c.mcp {
            self = self.mcp_agent(spec.clone());
        }
        if let Some(depth) = c.max_depth {
            self = self.max_depth(depth);
        }
        if let Some(n) = c.max_concurrent {
            self = self.max_concurrent(n);
        }
        let window = c.checked_context_window()?;
        let stall = c.checked_stall_timeout()?;
        #[cfg(feature = "claude")]
        {
            if let Some(window) = window {
                self = self.context_window(window);
            }
            if let Some(stall) = stall {
                self = self.stall_timeout(stall);
            }
            if let Some(strict) = c.strict_models {
                self = self.strict_models(strict);
            }
        }
        #[cfg(not(feature = "claude"))]
        {
            if window.is_some() {
                return Err(c.needs("context_window", "claude"));
            }
            if c.strict_models.is_some() {
                return Err(c.needs("strict_models", "claude"));
            }
            if stall.is_some() {
                return Err(c.needs("stall_timeout_secs", "claude"));
            }
        }
        self = self.budget(c.budget_limits()?).prices(c.prices()?);
        for (agent, limits) in c.agent_budgets()? {
            self = self.agent_budget(agent, limits);
        }
        for file in &c.untrusted_files {
            self = self.untrusted_file(file.clone());
        }
        #[cfg(feature = "claude")]
        {
            let root = match &self.workspace {
                Some(r) => r.clone(),
                None => std::env::current_dir().map_err(|e| {
                    ConfigError::Invalid(format!(
                        "{}: [permissions]: cannot read the current directory: {e}",
                        c.name()
                    ))
                })?,
            };
            self = self.permission_rules(c.permission_rules(&root)?);
            if let Some(mode) = c.permission_mode()? {
                self = self.permission_mode(mode);
            }
        }
        #[cfg(not(feature = "claude"))]
        {
            let p = &c.permissions;
            if p.mode.is_some() || !p.allow.is_empty() || !p.ask.is_empty() || !p.deny.is_empty() {
                return Err(c.needs("[permissions]", "claude"));
            }
        }
        #[cfg(feature = "tools")]
        {
            self = self.sandbox(c.sandbox_policy());
        }
        #[cfg(not(feature = "tools"))]
        {
            let s = &c.sandbox;
            if s.enabled.is_some()
                || s.network.is_some()
                || !s.writable.is_empty()
                || !s.env.is_empty()
            {
                return Err(c.needs("[sandbox]", "tools"));
            }
        }
        #[cfg(feature = "store")]
        if let Some(url) = c.store_url()? {
            self = self.store(url);
        }
        #[cfg(not(feature = "store"))]
        if c.store.is_some() {
            return Err(c.needs("store", "store"));
        }
        Ok(self)
    }
}

impl Subagents {
    /// A builder configured by the configuration file at `path` (the `subagents.toml` the
    /// command reads; see [`Config`]): `Subagents::from_config(path)?.build().await`. Settings
    /// of the builder called afterwards win over the file's.
    pub fn from_config(path: impl AsRef<Path>) -> Result<SubagentsBuilder, ConfigError> {
        let config = Config::load(Some(path.as_ref()))?;
        Subagents::builder().config(&config)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_syntax_error_names_the_file_and_line() {
        let e = Config::parse(
            "model = \"m\"\nmax_depth = \"three\"\n",
            "conf/subagents.toml",
        )
        .unwrap_err();
        let text = e.to_string();
        assert!(text.starts_with("conf/subagents.toml: "), "{text}");
        assert!(text.contains("line 2"), "{text}");
        let e = Config::parse("[sandbox]\nenabeld = true\n", "x.toml").unwrap_err();
        assert!(e.to_string().contains("enabeld"), "{e}");
    }

    #[test]
    fn a_missing_default_file_is_the_empty_config_but_a_given_one_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let given = dir.path().join("none.toml");
        let e = Config::load(Some(&given)).unwrap_err();
        assert!(matches!(e, ConfigError::Read { .. }), "{e}");
        assert!(e.to_string().contains("none.toml"), "{e}");
    }

    #[test]
    fn invalid_values_name_the_file_and_key() {
        let c = Config::parse(
            "[budget.agents.reviewer]\ntime_secs = -1\n",
            "ws/subagents.toml",
        )
        .unwrap();
        let e = c.agent_budgets().unwrap_err().to_string();
        assert_eq!(
            e,
            "ws/subagents.toml: [budget.agents.reviewer] time_secs must be a positive number of seconds, not -1"
        );
        let c = Config::parse("context_window = 10\n", "w.toml").unwrap();
        let e = Subagents::builder().config(&c).unwrap_err().to_string();
        assert!(e.starts_with("w.toml: context_window"), "{e}");
        let c = Config::parse("[prices]\nm = { input = -1.0, output = 1.0 }\n", "p.toml").unwrap();
        assert!(
            c.prices()
                .unwrap_err()
                .to_string()
                .starts_with("p.toml: [prices]")
        );
    }

    #[test]
    fn a_price_without_cache_rates_keeps_the_tables_for_its_model() {
        let c = Config::parse(
            "[prices]\n\"claude-sonnet-4-5\" = { input = 3.0, output = 15.0 }\n\
             \"gpt-4.1\" = { input = 2.0, output = 8.0, cache_read = 0.6 }\n\
             \"my-model\" = { input = 1.0, output = 2.0 }\n",
            "p.toml",
        )
        .unwrap();
        let prices = c.prices().unwrap();
        let rates = |m: &str| {
            let p = prices.get(m).unwrap();
            (p.cache_read_per_mtok, p.cache_write_per_mtok)
        };
        assert_eq!(rates("claude-sonnet-4-5"), (Some(0.3), Some(3.75)));
        assert_eq!(
            rates("gpt-4.1"),
            (Some(0.6), Some(2.0)),
            "its own, the table's"
        );
        assert_eq!(rates("my-model"), (None, None), "unknown: the input rate");
        let bad = Config::parse(
            "[prices]\nm = { input = 1.0, output = 1.0, cache_write = -2.0 }\n",
            "p.toml",
        )
        .unwrap();
        let e = bad.prices().unwrap_err().to_string();
        assert!(e.contains("cache_write must be a non-negative"), "{e}");
    }

    #[test]
    fn a2a_table_settings_are_text() {
        let c = Config::parse(
            "a2a = [{ url = \"http://h\", bearer_env = \"T\", timeout_secs = 5 }]\n",
            "a.toml",
        )
        .unwrap();
        let A2aEntry::Table { url, settings } = &c.a2a[0] else {
            panic!("{c:?}")
        };
        assert_eq!(url, "http://h");
        assert_eq!(settings["bearer_env"], "T");
        assert_eq!(settings["timeout_secs"], "5");
    }
}
