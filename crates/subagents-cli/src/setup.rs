//! The one place the command assembles its agents: the facade's builder fed from the command
//! line and `subagents.toml`. `run`, `task`, `serve` and `mcp` all go through here, so they see
//! the same agents (skills, `mcpServers` tools, nesting).

use std::path::PathBuf;

use std::sync::Arc;

use subagents::claude::{PermissionMode, PermissionRule, RuleAction};
use subagents::spi::Approver;
use subagents::tools::{LandlockSupport, SandboxPolicy};
use subagents::{Error, Subagents, SubagentsBuilder};

use crate::cli::{AgentSources, PermissionArgs, TreeArgs};
use crate::config::Config;
use crate::error::CliError;

/// Everything that decides which agents a command gets.
pub(crate) struct Setup<'a> {
    /// Agent sources from the command line.
    pub sources: &'a AgentSources,
    /// The configuration file.
    pub config: &'a Config,
    /// The default model spec, when one was chosen.
    pub model: Option<&'a str>,
    /// `--workspace`, `--max-depth`, `--max-concurrent`.
    pub tree: &'a TreeArgs,
    /// `--budget-*`, for the commands that start a tree.
    pub budget: Option<&'a crate::cli::BudgetArgs>,
    /// `--permission-mode`, `--yes`.
    pub permissions: &'a PermissionArgs,
    /// Who answers approval requests.
    pub approver: Option<Arc<dyn Approver>>,
}

impl<'a> Setup<'a> {
    /// The setup of a server (`serve`, `mcp`): no tree budget, and no prompt while serving
    /// (`--yes` approves everything; otherwise the client is asked, or the call denied).
    pub(crate) fn serving(
        sources: &'a AgentSources,
        config: &'a Config,
        model: Option<&'a str>,
        tree: &'a TreeArgs,
        permissions: &'a PermissionArgs,
    ) -> Self {
        Self {
            sources,
            config,
            model,
            tree,
            budget: None,
            permissions,
            approver: crate::approve::yes_approver(permissions),
        }
    }
    /// The budget: flags over `[budget]` of subagents.toml.
    fn budget_limits(&self) -> Result<subagents::spi::BudgetLimits, CliError> {
        let flags = self.budget.cloned().unwrap_or_default();
        let conf = &self.config.budget;
        let mut l = limits(
            "--budget-{what} / [budget] {key}",
            flags.budget_tokens.or(conf.tokens),
            flags.budget_turns.or(conf.turns),
            flags.budget_time.or(conf.time_secs),
            flags.budget_usd.or(conf.usd),
        )?;
        if let Some(n) = flags
            .budget_remote_unreported_tokens
            .or(conf.remote_unreported_tokens)
        {
            l = l.with_remote_unreported_tokens(n);
        }
        Ok(l)
    }

    /// `[budget.agents.NAME]` of subagents.toml.
    fn agent_budgets(&self) -> Result<Vec<(String, subagents::spi::BudgetLimits)>, CliError> {
        let mut out = Vec::new();
        for (agent, c) in &self.config.budget.agents {
            let l = limits(
                &format!("{}: [budget.agents.{agent}] {{key}}", self.config.name()),
                c.tokens,
                c.turns,
                c.time_secs,
                c.usd,
            )?;
            out.push((agent.clone(), l));
        }
        Ok(out)
    }

    /// `[prices]` of subagents.toml.
    fn prices(&self) -> Result<subagents::spi::ModelPrices, CliError> {
        prices_of(self.config)
    }

    /// The builder, configured.
    pub(crate) fn builder(&self) -> Result<SubagentsBuilder, CliError> {
        let cwd = std::env::current_dir()
            .map_err(|e| CliError::Config(format!("cannot read the current directory: {e}")))?;
        let root: PathBuf = self.tree.workspace.clone().unwrap_or_else(|| cwd.clone());
        let mut b = Subagents::builder()
            .workspace(root.clone())
            .discover_from(&cwd);
        if let Some(spec) = self.model {
            b = b.model(spec);
        }
        for (name, spec) in &self.config.models {
            b = b.named_model(name.clone(), spec.clone());
        }
        if let Some(spec) = crate::routes::agent_model(self.config, self.model) {
            b = b.agent_model(spec);
        }
        for dir in self.sources.agents.iter().chain(&self.config.agents) {
            b = b.agents_dir(dir);
        }
        for url in &self.sources.a2a {
            b = b.a2a_agent(url.clone());
        }
        for entry in &self.config.a2a {
            b = match entry {
                crate::config::A2aEntry::Url(url) => b.a2a_agent(url.clone()),
                crate::config::A2aEntry::Table { url, settings } => {
                    let mut r = subagents::spi::SubagentReference::new(
                        url.clone(),
                        subagents::a2a::client::KIND,
                    );
                    for (k, v) in settings {
                        let v = match v {
                            toml::Value::String(s) => s.clone(),
                            other => other.to_string(),
                        };
                        r = r.with_metadata(k.clone(), v);
                    }
                    b.a2a_reference(r)
                }
            };
        }
        for spec in self.sources.mcp.iter().chain(&self.config.mcp) {
            b = b.mcp_agent(spec.clone());
        }
        if let Some(depth) = self.tree.max_depth.or(self.config.max_depth) {
            b = b.max_depth(depth);
        }
        if let Some(n) = self.tree.max_concurrent.or(self.config.max_concurrent) {
            b = b.max_concurrent(n);
        }
        // Long runs compact, stalls end.
        if let Some(window) = self.tree.context_window.or(self.config.context_window) {
            if window < 256 {
                return Err(CliError::Config(format!(
                    "{}: context_window must be at least 256 tokens, not {window}",
                    self.config.name()
                )));
            }
            b = b.context_window(window);
        }
        if let Some(secs) = self.tree.stall_timeout.or(self.config.stall_timeout_secs) {
            if !secs.is_finite() || !(0.0..=1e9).contains(&secs) {
                return Err(CliError::Config(format!(
                    "--stall-timeout / stall_timeout_secs must be a number of seconds (0: never), not {secs}"
                )));
            }
            b = b.stall_timeout((secs > 0.0).then(|| std::time::Duration::from_secs_f64(secs)));
        }
        b = b.budget(self.budget_limits()?).prices(self.prices()?);
        for (agent, limits) in self.agent_budgets()? {
            b = b.agent_budget(agent, limits);
        }
        // Permissions: .claude/settings*.json of the workspace, then subagents.toml.
        b = b.claude_settings(&root);
        for file in &self.config.untrusted_files {
            b = b.untrusted_file(file.clone());
        }
        let file = self.config.name();
        let perms = &self.config.permissions;
        let mut rules = subagents::claude::PermissionRules::new();
        for (action, list) in [
            (RuleAction::Allow, &perms.allow),
            (RuleAction::Ask, &perms.ask),
            (RuleAction::Deny, &perms.deny),
        ] {
            for text in list {
                let rule = PermissionRule::parse(text, &root, &file).map_err(|e| {
                    CliError::Config(format!("{file}: [permissions] {action}: {e}"))
                })?;
                rules.push(action, rule);
            }
        }
        b = b.permission_rules(rules);
        let mode = match (self.permissions.permission_mode, &perms.mode) {
            (Some(m), _) => Some(m),
            (None, Some(text)) => Some(
                text.parse::<PermissionMode>()
                    .map_err(|e| CliError::Config(format!("{file}: [permissions] mode: {e}")))?,
            ),
            (None, None) => None,
        };
        if let Some(m) = mode {
            b = b.permission_mode(m);
        }
        if let Some(a) = &self.approver {
            b = b.approver(a.clone());
        }
        b = b.sandbox(self.sandbox());
        if self.sources.no_hooks {
            b = b.hooks(false);
        }
        b = b.store(self.config.store_url()?);
        Ok(b)
    }

    /// How Bash is confined: `--no-sandbox` / `--no-network`, then `[sandbox]`.
    pub(crate) fn sandbox(&self) -> SandboxPolicy {
        let cfg = &self.config.sandbox;
        let enabled = !self.permissions.no_sandbox && cfg.enabled.unwrap_or(true);
        let mut policy = if enabled {
            SandboxPolicy::default()
        } else {
            SandboxPolicy::unconfined()
        };
        policy = policy.network(!self.permissions.no_network && cfg.network.unwrap_or(true));
        for dir in &cfg.writable {
            policy = policy.writable(dir.clone());
        }
        for name in &cfg.env {
            policy = policy.allow_env(name.clone());
        }
        policy
    }

    /// Builds the agents; a configuration problem is exit 2.
    pub(crate) async fn build(&self) -> Result<Subagents, CliError> {
        self.build_streaming(false).await
    }

    /// [`build`](Self::build), with model replies streamed when `stream`, so the agents' text
    /// deltas reach the progress sink (the live tree, `--output-format stream-json`).
    pub(crate) async fn build_streaming(&self, stream: bool) -> Result<Subagents, CliError> {
        let agents = self
            .builder()?
            .stream(stream)
            .build()
            .await
            .map_err(facade_error)?;
        let sandbox = self.sandbox();
        if sandbox.confine_writes
            && let LandlockSupport::Unavailable(why) = subagents::tools::landlock_support()
        {
            eprintln!(
                "subagents: notice: Bash commands run unconfined ({why}): they can write \
                 wherever you can. Their environment is still limited to an allow-list."
            );
        } else if !sandbox.confine_writes {
            tracing::info!("Bash commands run unconfined (--no-sandbox)");
        }
        // Once, before any live view starts: broken agent files and each agent's load
        // warnings on one line (not as tracing WARN lines).
        for s in agents.skipped() {
            if s.invalid {
                // The reason of a load error names the file (and line) already.
                let path = s.path.display().to_string();
                let text = if s.reason.contains(&path) {
                    s.reason.clone()
                } else {
                    format!("{path}: {}", s.reason)
                };
                eprintln!(
                    "warning: agent file not loaded: {}",
                    crate::output::terminal_safe(&text)
                );
            } else {
                tracing::info!(path = %s.path.display(), reason = %s.reason, "agent file skipped");
            }
        }
        for w in agents.agent_warnings() {
            eprintln!("{}", crate::agents::warning_line(w));
        }
        for s in agents.shadowed() {
            tracing::info!(
                agent = %s.name,
                path = %s.path.display(),
                by = %s.winner.display(),
                "agent shadowed by one of higher precedence"
            );
        }
        Ok(agents)
    }
}

/// A facade error as a command error: model problems are "no model" (exit 2), the rest
/// configuration (exit 2).
pub(crate) fn facade_error(e: Error) -> CliError {
    match e {
        Error::Model { .. } | Error::NoModel(_) => {
            CliError::NoModel(format!("{e}\n{}", subagents::models::NO_MODEL_HELP))
        }
        other => CliError::Config(other.to_string()),
    }
}

/// Checked budget limits; `what` names the setting in messages (`{key}` is replaced by the
/// config key, `{what}` by the flag's suffix).
fn limits(
    what: &str,
    tokens: Option<u64>,
    turns: Option<u32>,
    time_secs: Option<f64>,
    usd: Option<f64>,
) -> Result<subagents::spi::BudgetLimits, CliError> {
    let name = |flag: &str, key: &str| what.replace("{what}", flag).replace("{key}", key);
    let mut limits = subagents::spi::BudgetLimits::new();
    if let Some(n) = tokens {
        limits = limits.with_tokens(n);
    }
    if let Some(n) = turns {
        limits = limits.with_turns(n);
    }
    if let Some(secs) = time_secs {
        if !secs.is_finite() || secs <= 0.0 || secs > 1e9 {
            return Err(CliError::Config(format!(
                "{} must be a positive number of seconds, not {secs}",
                name("time", "time_secs")
            )));
        }
        limits = limits.with_time(std::time::Duration::from_secs_f64(secs));
    }
    if let Some(usd) = usd {
        if !usd.is_finite() || usd <= 0.0 {
            return Err(CliError::Config(format!(
                "{} must be a positive amount, not {usd}",
                name("usd", "usd")
            )));
        }
        limits = limits.with_usd(usd);
    }
    Ok(limits)
}

/// The built-in price table of common hosted models ([`subagents::prices`]) with `[prices]`
/// of subagents.toml over it, checked.
pub(crate) fn prices_of(config: &Config) -> Result<subagents::spi::ModelPrices, CliError> {
    let mut prices = subagents::prices::default_prices();
    for (model, p) in &config.prices {
        for (what, v) in [("input", p.input), ("output", p.output)] {
            if !v.is_finite() || v < 0.0 {
                return Err(CliError::Config(format!(
                    "{}: [prices] \"{model}\" {what} must be a non-negative number of USD per million tokens, not {v}",
                    config.name()
                )));
            }
        }
        prices = prices.with(
            model.clone(),
            subagents::spi::ModelPrice::new(p.input, p.output),
        );
    }
    Ok(prices)
}
