//! The argument groups repeated across subcommands (flattened into each with
//! `#[command(flatten)]`): the models, where the agents come from, the workspace and tree
//! limits, the budgets and the permissions. A module of its own, so that the code that reads them does not
//! depend on the whole command line.

use std::path::PathBuf;

use clap::Args;

/// The model flags (shared by the subcommands that run local agents). A subcommand whose
/// `--model` or `--agent-model` means something more says so with
/// `#[command(mut_arg("model", |a| a.help(...)))]`.
#[derive(Debug, Args, Clone, Default)]
pub(crate) struct ModelArgs {
    /// Model override (spec or alias).
    #[arg(long, value_name = "SPEC")]
    pub model: Option<String>,
    /// Run every local agent on this model (see `run --agent-model`).
    #[arg(long, value_name = "SPEC")]
    pub agent_model: Option<String>,
}

/// Where agents come from (shared by several subcommands).
#[derive(Debug, Args, Clone, Default)]
pub(crate) struct AgentSources {
    /// A directory of Markdown agents (repeatable). Default: .claude/agents found from the
    /// current directory upwards and ~/.claude/agents.
    #[arg(long = "agents", value_name = "DIR")]
    pub agents: Vec<PathBuf>,
    /// A remote A2A agent's base URL (repeatable).
    #[arg(long = "a2a", value_name = "URL")]
    pub a2a: Vec<String>,
    /// An MCP server whose tools are agents: `stdio:COMMAND ARGS...` or an http(s) URL,
    /// optionally followed by `#tool=TOOL&argument=FIELD&name=AGENT` (repeatable). Without
    /// `tool`, each tool of the server is an agent; the prompt goes to `argument`, else
    /// `prompt`, else the tool's only string argument.
    #[arg(long = "mcp", value_name = "SPEC")]
    pub mcp: Vec<String>,
    /// Run no Claude Code hooks: neither those of .claude/settings.json (user, project, local)
    /// nor agents' own `hooks`. Hooks are shell commands; use this in projects you do not
    /// trust.
    #[arg(long)]
    pub no_hooks: bool,
}

/// Where the agents work and how far the delegation tree reaches (shared by the subcommands
/// that run agents).
#[derive(Debug, Args, Clone, Default)]
pub(crate) struct TreeArgs {
    /// Workspace root for the agents' file and shell tools (default: the current directory).
    #[arg(long, value_name = "DIR")]
    pub workspace: Option<PathBuf>,
    /// The nesting limit: agents at depth N or deeper are not offered Task (the main agent is
    /// depth 0; default 3, or `max_depth` in subagents.toml).
    #[arg(long, value_name = "N")]
    pub max_depth: Option<u32>,
    /// Children working at once over the whole tree: more Task calls wait their turn (default
    /// 20, or `max_concurrent` in subagents.toml).
    #[arg(long, value_name = "N")]
    pub max_concurrent: Option<usize>,
    /// The models' context window in tokens: a run nearing it trims old tool outputs and
    /// summarises older turns (default: the model's known window, else 32768; or
    /// `context_window` in subagents.toml). Set it for a local server with a small window.
    #[arg(long, value_name = "TOKENS", value_parser = clap::value_parser!(u64).range(256..))]
    pub context_window: Option<u64>,
    /// An agent whose model stream and tools make no progress this long stops `limit_reached`
    /// (`stalled`), keeping its partial answer (default 600; 0 never; or `stall_timeout_secs`
    /// in subagents.toml).
    #[arg(long, value_name = "SECS")]
    pub stall_timeout: Option<f64>,
    /// An agent whose `model` cannot be used (unknown here, or a Claude model without
    /// ANTHROPIC_API_KEY) fails instead of running on the session's model with a notice
    /// (Claude Code's behaviour, the default; or `strict_models` in subagents.toml).
    #[arg(long)]
    pub strict_models: bool,
}

/// What a run of a delegation tree may reach, spend and do (shared by `run`, `task`,
/// `tasks resume` and `workflow run|resume`).
#[derive(Debug, Args, Clone, Default)]
pub(crate) struct RunnerArgs {
    /// Workspace and tree limits.
    #[command(flatten)]
    pub tree: TreeArgs,
    /// Budgets over the whole tree (for a resumed workflow, what it spent before counts).
    #[command(flatten)]
    pub budget: BudgetArgs,
    /// Permissions.
    #[command(flatten)]
    pub permissions: PermissionArgs,
}

/// Permission settings (shared by the subcommands that run agents).
#[derive(Debug, Args, Clone, Default)]
pub(crate) struct PermissionArgs {
    /// Permission mode for the main agent and every agent, overriding their `permissionMode`:
    /// default (reads free; edits, commands and web fetches ask), acceptEdits (edits free),
    /// plan (read-only), dontAsk (what would ask is denied), bypassPermissions (nothing asks),
    /// auto (as bypassPermissions; no classifier). Default: `[permissions] mode` in
    /// subagents.toml, else each agent's own (the main agent: `permissions.defaultMode` of
    /// .claude/settings.json, else default).
    #[arg(long, value_name = "MODE", value_parser = parse_mode)]
    pub permission_mode: Option<subagents::claude::PermissionMode>,
    /// Approve every tool call that would ask. Without it, a terminal prompt asks on stderr
    /// (yes / no / always); without a terminal, such calls are denied and the model is told.
    #[arg(long, short = 'y')]
    pub yes: bool,
    /// Run Bash commands unconfined: writes anywhere the user may, and the whole environment
    /// less credentials. By default (Linux: namespaces and Landlock, or Landlock alone; see
    /// `subagents doctor`) they may write only in the workspace, less its control files, and
    /// the temp directory and get an environment allow-list; no permission mode lifts that.
    #[arg(long)]
    pub no_sandbox: bool,
    /// Deny Bash commands TCP connections and listening sockets (Landlock ABI 4+).
    #[arg(long)]
    pub no_network: bool,
}

fn parse_mode(s: &str) -> Result<subagents::claude::PermissionMode, String> {
    s.parse()
}

/// Budgets over the whole delegation tree (children, background and remote children
/// included); when one is spent the tree is cancelled and reports `limit_reached` naming it.
#[derive(Debug, Default, Clone, Args)]
pub(crate) struct BudgetArgs {
    /// Tokens (input + output) over the whole tree (or `[budget] tokens` in subagents.toml).
    #[arg(long, value_name = "N")]
    pub budget_tokens: Option<u64>,
    /// Model turns over the whole tree (or `[budget] turns`).
    #[arg(long, value_name = "N")]
    pub budget_turns: Option<u32>,
    /// Wall time in seconds (or `[budget] time_secs`).
    #[arg(long, value_name = "SECS")]
    pub budget_time: Option<f64>,
    /// Cost in USD, from the `[prices]` of subagents.toml (or `[budget] usd`); a model without
    /// a price is reported, never guessed.
    #[arg(long, value_name = "USD")]
    pub budget_usd: Option<f64>,
    /// Not a limit: the tokens a remote A2A run whose usage report is refused or malformed
    /// counts as at least (or `[budget] remote_unreported_tokens`; default 100000), so a
    /// remote peer cannot zero its spend; such figures are marked `estimated`.
    #[arg(long, value_name = "N")]
    pub budget_remote_unreported_tokens: Option<u64>,
}
