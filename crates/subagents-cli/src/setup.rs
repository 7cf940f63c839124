//! The one place the command assembles its agents: the facade's builder fed from the command
//! line and `subagents.toml`. `run`, `task`, `serve` and `mcp` all go through here, so they see
//! the same agents (skills, `mcpServers` tools, nesting).

use std::path::PathBuf;

use std::sync::Arc;

use subagents::config::{A2aEntry, LimitsConfig};
use subagents::spi::Approver;
use subagents::tools::{SandboxMode, SandboxPolicy};
use subagents::{Subagents, SubagentsBuilder};

use crate::args::{AgentSources, BudgetArgs, PermissionArgs, RunnerArgs, TreeArgs};
use crate::config::Config;
use crate::error::{CliError, facade_error};

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
    pub budget: Option<&'a BudgetArgs>,
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
    /// The setup of a command that runs a tree (`run`, `task`, `workflow`): its budgets, and
    /// `approver` answering approval requests.
    pub(crate) fn running(
        sources: &'a AgentSources,
        config: &'a Config,
        model: Option<&'a str>,
        runner: &'a RunnerArgs,
        approver: Arc<dyn Approver>,
    ) -> Self {
        Self {
            sources,
            config,
            model,
            tree: &runner.tree,
            budget: Some(&runner.budget),
            permissions: &runner.permissions,
            approver: Some(approver),
        }
    }

    /// The configuration the command runs with: the flags folded over `subagents.toml` (a
    /// flag wins over its key; given agent sources come before the file's).
    fn folded(&self) -> Result<Config, CliError> {
        let mut c = self.config.clone();
        // The model and the model for every agent are chosen by the command (flags, the
        // environment, the file), and set after the file's settings.
        c.model = None;
        c.agent_model = None;
        c.agents = self
            .sources
            .agents
            .iter()
            .chain(&c.agents)
            .cloned()
            .collect();
        c.a2a = self
            .sources
            .a2a
            .iter()
            .map(|url| A2aEntry::Url(url.clone()))
            .chain(c.a2a)
            .collect();
        c.mcp = self.sources.mcp.iter().chain(&c.mcp).cloned().collect();
        c.max_depth = self.tree.max_depth.or(c.max_depth);
        c.max_concurrent = self.tree.max_concurrent.or(c.max_concurrent);
        c.context_window = self.tree.context_window.or(c.context_window);
        c.stall_timeout_secs = self.tree.stall_timeout.or(c.stall_timeout_secs);
        if self.tree.strict_models {
            c.strict_models = Some(true);
        }
        // The budget: flags over `[budget]`, checked here so a bad flag is named as one.
        let flags = self.budget.cloned().unwrap_or_default();
        let b = &mut c.budget;
        b.tokens = flags.budget_tokens.or(b.tokens);
        b.turns = flags.budget_turns.or(b.turns);
        b.time_secs = flags.budget_time.or(b.time_secs);
        b.usd = flags.budget_usd.or(b.usd);
        b.remote_unreported_tokens = flags
            .budget_remote_unreported_tokens
            .or(b.remote_unreported_tokens);
        LimitsConfig::new(b.tokens, b.turns, b.time_secs, b.usd)
            .limits("--budget-{what} / [budget] {key}")?;
        // A flag's mode is set after the file's (which is still checked).
        if self.permissions.no_sandbox {
            c.sandbox.enabled = Some(false);
        }
        if self.permissions.no_network {
            c.sandbox.network = Some(false);
        }
        Ok(c)
    }

    /// The builder, configured: `subagents.toml` with the flags over it
    /// ([`SubagentsBuilder::config`]), then what only the command decides.
    pub(crate) fn builder(&self) -> Result<SubagentsBuilder, CliError> {
        let cwd = std::env::current_dir()
            .map_err(|e| CliError::Config(format!("cannot read the current directory: {e}")))?;
        let root: PathBuf = self.tree.workspace.clone().unwrap_or_else(|| cwd.clone());
        let folded = self.folded()?;
        let mut b = Subagents::builder()
            .workspace(root.clone())
            .discover_from(&cwd)
            .config(&folded)?;
        if let Some(spec) = self.model {
            b = b.model(spec);
        }
        if let Some(spec) = crate::routes::agent_model(self.config, self.model) {
            b = b.agent_model(spec);
        }
        // Permissions: .claude/settings*.json of the workspace too; a mode flag wins.
        b = b.claude_settings(&root);
        // Agent files approved with `subagents trust` (their inline MCP servers, their mode).
        if let Ok(store) = subagents::config::trust::TrustStore::load(&root) {
            b = b.approvals(Arc::new(store));
        }
        if let Some(m) = self.permissions.permission_mode {
            b = b.permission_mode(m);
        }
        if let Some(a) = &self.approver {
            b = b.approver(a.clone());
        }
        if self.sources.no_hooks {
            b = b.hooks(false);
        }
        b = b.store(crate::config::store_url(&folded)?);
        // What a third-party binary adds (`subagents_cli::Cli`): its kinds, references, settings.
        Ok(crate::extension::apply(b))
    }

    /// How Bash is confined: `--no-sandbox` / `--no-network`, then `[sandbox]`.
    pub(crate) fn sandbox(&self) -> SandboxPolicy {
        match self.folded() {
            Ok(c) => c.sandbox_policy(),
            Err(_) => SandboxPolicy::default(),
        }
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
        let confine = sandbox.confine_writes;
        // Blocking the first time (it may start the sandbox helper once).
        let report =
            tokio::task::spawn_blocking(move || subagents::tools::sandbox_report(&sandbox)).await;
        match report {
            Ok(r) if r.mode == SandboxMode::Unconfined && confine => eprintln!(
                "subagents: notice: Bash commands run unconfined ({}): they can write wherever \
                 you can. Their environment is still limited to an allow-list.",
                r.reason
            ),
            Ok(r) => tracing::info!("{}", crate::doctor::sandbox_line(&r)),
            Err(e) => tracing::warn!("the sandbox probe failed: {e}"),
        }
        // Once, before any live view starts: what loading the agents noted, as one summary
        // line (every note at -v; nothing at --log error), not as tracing WARN lines.
        for s in agents.skipped().iter().filter(|s| !s.invalid) {
            tracing::debug!(path = %s.path.display(), reason = %s.reason, "agent file skipped");
        }
        crate::notes::report(&agents);
        Ok(agents)
    }
}
