//! [`SubagentsBuilder`]: one assembly of kinds, agents, models and tools.

#[cfg(feature = "claude")]
use std::path::Path;
use std::path::PathBuf;
use std::time::Duration;

use std::sync::Arc;

use derive_setters::Setters;
use subagent_spi::{Approver, SubagentReference, SubagentType};
use task_tool::TaskToolBuilder;

#[cfg(feature = "claude")]
use crate::SkippedAgent;
use crate::models::ModelChoice;
use crate::{Error, Subagents};

/// The builder's approver (shown in `Debug` as present or not).
#[derive(Clone, Default)]
pub(crate) struct ApproverSlot(pub(crate) Option<Arc<dyn Approver>>);

impl std::fmt::Debug for ApproverSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() { "Some(..)" } else { "None" })
    }
}

/// Assembles [`Subagents`]: obtain one with [`Subagents::builder`].
///
/// Every setting has a default, so `Subagents::builder().build()` works (the built-in agents
/// with no model yet). What the `subagents` command does is this builder with: a model spec,
/// agent directories (or Claude Code's discovery), A2A and MCP agents, the project's skills
/// and `.mcp.json`, the workspace, and the nesting limit.
#[must_use]
#[derive(Debug, Setters)]
#[setters(generate = false)] // the fields marked `#[setters(generate)]` have a plain setter
pub struct SubagentsBuilder {
    pub(crate) task: TaskToolBuilder,
    pub(crate) kinds: Vec<SubagentType>,
    pub(crate) references: Vec<SubagentReference>,
    /// The default model: a spec string (`"ollama:qwen2.5"`, `"openai:gpt-4.1"`,
    /// `"openai-compatible:MODEL@http://HOST:PORT/v1"`, `"anthropic:claude-sonnet-4-5"`) or an
    /// `Arc<dyn ChatModel>`. Markdown agents without a `model` of their own, and the main
    /// agent, think with it.
    #[setters(generate, strip_option, into)]
    pub(crate) model: Option<ModelChoice>,
    pub(crate) named_models: Vec<(String, ModelChoice)>,
    /// One model for every Markdown agent, as a spec: whatever an agent's `model:` says
    /// (`haiku`, `inherit`, a spec) and whatever a Task call asks, it runs on this one; the
    /// main agent keeps [`model`](Self::model). What `--agent-model` and Claude Code's
    /// `CLAUDE_CODE_SUBAGENT_MODEL` set (feature `claude`).
    #[setters(generate, strip_option, into)]
    pub(crate) agent_model: Option<String>,
    pub(crate) agent_dirs: Vec<PathBuf>,
    pub(crate) agent_files: Vec<PathBuf>,
    pub(crate) discover_from: Option<PathBuf>,
    pub(crate) skill_dirs: Vec<PathBuf>,
    pub(crate) discover_skills_from: Option<PathBuf>,
    /// Whether the built-in agents (`general-purpose`, `Explore`, `Plan`, `Bash`) are
    /// registered (default true).
    #[setters(generate)]
    pub(crate) builtin_agents: bool,
    pub(crate) a2a_agents: Vec<String>,
    pub(crate) a2a_refs: Vec<SubagentReference>,
    pub(crate) mcp_agents: Vec<String>,
    /// The MCP server configuration agents' `mcpServers` names refer to, in Claude Code's
    /// `.mcp.json` format (feature `mcp`; default: `<workspace>/.mcp.json` when it exists).
    #[setters(generate, strip_option, into)]
    pub(crate) mcp_config: Option<PathBuf>,
    /// The root the built-in tools are confined to (default: the current directory). Its
    /// `.mcp.json` names the MCP servers agents may use (feature `mcp`).
    #[setters(generate, strip_option, into)]
    pub(crate) workspace: Option<PathBuf>,
    /// Streams model replies, so text deltas reach progress sinks (default off).
    #[setters(generate)]
    pub(crate) stream: bool,
    /// The turn limit of Markdown agents without `maxTurns` (default 30).
    #[setters(generate, strip_option)]
    pub(crate) default_max_turns: Option<u32>,
    /// The context window in tokens that the main agent's and every Markdown agent's requests
    /// are compacted to stay below (what `--context-window` sets; feature `claude`). Default:
    /// the model's window from [`MODEL_WINDOWS`](subagent_runtime::MODEL_WINDOWS), else
    /// [`DEFAULT_CONTEXT_WINDOW`](subagent_runtime::DEFAULT_CONTEXT_WINDOW).
    #[cfg(feature = "claude")]
    #[setters(generate, strip_option)]
    pub(crate) context_window: Option<u64>,
    /// How long the model stream and tools of the main agent or a Markdown agent may make no
    /// progress before it stops `limit_reached` naming `stalled` and where, keeping its partial
    /// answer (what `--stall-timeout` sets; feature `claude`). Default 10 minutes; `None`:
    /// never.
    #[cfg(feature = "claude")]
    #[setters(generate)]
    pub(crate) stall_timeout: Option<std::time::Duration>,
    /// A Markdown agent whose `model` cannot be used (unknown here, or a Claude model without
    /// `ANTHROPIC_API_KEY`) fails instead of running on the default model with a notice, which
    /// is Claude Code's behaviour and the default (false; what `--strict-models` sets).
    #[cfg(feature = "claude")]
    #[setters(generate)]
    pub(crate) strict_models: bool,
    /// Whether the project's instructions (`CLAUDE.md` and `AGENTS.md` from the workspace up
    /// to its repository's root, `.claude/CLAUDE.md`, the user's `~/.claude/CLAUDE.md`) join
    /// the system prompt of the main agent and of every Markdown agent without
    /// `omitClaudeMd: true`, as in Claude Code (default true; read only with
    /// [`discover_from`](Self::discover_from); see
    /// [`ProjectInstructions`](subagent_claude::ProjectInstructions)).
    #[cfg(feature = "claude")]
    #[setters(generate)]
    pub(crate) claude_md: bool,
    pub(crate) approver: ApproverSlot,
    /// A permission mode for the main agent and every Markdown agent, overriding their
    /// `permissionMode` (what `--permission-mode` sets; feature `claude`).
    #[cfg(feature = "claude")]
    #[setters(generate, strip_option)]
    pub(crate) permission_mode: Option<subagent_claude::PermissionMode>,
    #[cfg(feature = "claude")]
    pub(crate) permission_rules: subagent_claude::PermissionRules,
    /// Reads Claude Code's `.claude/settings.json` and `.claude/settings.local.json` in this
    /// project directory (those that exist): their `permissions.allow/ask/deny` rules join the others,
    /// and `permissions.defaultMode` is the main agent's mode unless
    /// [`permission_mode`](Self::permission_mode) is set. A file that cannot be used fails the
    /// build, naming it (feature `claude`).
    #[setters(generate, strip_option, into)]
    pub(crate) claude_settings: Option<PathBuf>,
    /// How the built-in `Bash` tool is confined, for the main agent and every Markdown agent
    /// (default: [`SandboxPolicy::default`](subagent_tools::SandboxPolicy): on Linux, writes
    /// only in the workspace and the temp directory; an environment allow-list). Permission
    /// modes never lift it; [`SandboxPolicy::unconfined`](subagent_tools::SandboxPolicy::unconfined)
    /// does (feature `tools`). Hooks from agent files and from the workspace's or given
    /// settings files run under the same confinement; only the hooks of the user's own
    /// `~/.claude/settings.json` run unconfined.
    #[cfg(feature = "tools")]
    #[setters(generate)]
    pub(crate) sandbox: subagent_tools::SandboxPolicy,
    /// Whether Claude Code hooks run at all: settings hooks and agents' frontmatter `hooks`
    /// (default true). Hooks are shell commands from files in the project: turn them off for
    /// projects you do not trust.
    #[setters(generate)]
    pub(crate) hooks: bool,
    pub(crate) settings_files: Vec<PathBuf>,
    pub(crate) untrusted_files: Vec<PathBuf>,
    #[cfg(feature = "claude")]
    pub(crate) approvals: Option<Arc<dyn crate::approval::Approvals>>,
    /// Where transcripts and background tasks are kept (feature `store`): `memory` (the
    /// default: nothing outlives the process), `sqlite:PATH` or `postgres://...`. With a
    /// database, `resume` of a session and `TaskOutput` of a background task work after a
    /// restart, and tasks whose process died read back as `interrupted`. The database is opened
    /// (and migrated) by [`build`](Self::build), pruned then and every 10 minutes by
    /// [`retention`](Self::retention); [`Subagents::store_db`] shares it.
    #[cfg(feature = "store")]
    #[setters(generate, strip_option)]
    pub(crate) store: Option<subagent_store::StoreUrl>,
    /// How much persisted data is kept (feature `store`; default
    /// [`Retention::default`](subagent_store::Retention)).
    #[cfg(feature = "store")]
    #[setters(generate)]
    pub(crate) retention: subagent_store::Retention,
    /// The budget of every tree this assembly starts (a main-agent run, a
    /// [`dispatch`](Subagents::dispatch) without a budget of its own): tokens, turns and wall
    /// time over the whole tree, children, background and remote children included (what
    /// `--budget-tokens`, `--budget-turns` and `--budget-time` set). When it is spent the tree
    /// is cancelled (remote children receive `CancelTask`) and the runs report
    /// `limit_reached` naming the budget, keeping their partial results. Default: none.
    #[setters(generate)]
    pub(crate) budget: subagent_spi::BudgetLimits,
    /// Per-model prices (USD per million tokens), what `[prices]` of subagents.toml sets: a
    /// budget's `usd` limit counts with them, and reports a model without a price rather than
    /// guessing one.
    #[setters(generate)]
    pub(crate) prices: subagent_core::ModelPrices,
    /// The limits of every workflow run (feature `workflow`): steps, memory, stack, wall time,
    /// agent calls. Default: [`WorkflowLimits::default`](subagent_workflow::WorkflowLimits).
    #[cfg(feature = "workflow")]
    #[setters(generate)]
    pub(crate) workflow_limits: subagent_workflow::WorkflowLimits,
}

impl Default for SubagentsBuilder {
    fn default() -> Self {
        Self {
            task: TaskToolBuilder::default(),
            kinds: Vec::new(),
            references: Vec::new(),
            model: None,
            named_models: Vec::new(),
            agent_model: None,
            agent_dirs: Vec::new(),
            agent_files: Vec::new(),
            discover_from: None,
            skill_dirs: Vec::new(),
            discover_skills_from: None,
            builtin_agents: true,
            a2a_agents: Vec::new(),
            a2a_refs: Vec::new(),
            mcp_agents: Vec::new(),
            mcp_config: None,
            workspace: None,
            stream: false,
            default_max_turns: None,
            #[cfg(feature = "claude")]
            context_window: None,
            #[cfg(feature = "claude")]
            stall_timeout: Some(subagent_runtime::Limits::DEFAULT_STALL_TIMEOUT),
            #[cfg(feature = "claude")]
            strict_models: false,
            #[cfg(feature = "claude")]
            claude_md: true,
            approver: ApproverSlot(None),
            #[cfg(feature = "claude")]
            permission_mode: None,
            #[cfg(feature = "claude")]
            permission_rules: subagent_claude::PermissionRules::new(),
            claude_settings: None,
            #[cfg(feature = "tools")]
            sandbox: subagent_tools::SandboxPolicy::default(),
            hooks: true,
            settings_files: Vec::new(),
            untrusted_files: Vec::new(),
            #[cfg(feature = "claude")]
            approvals: None,
            #[cfg(feature = "store")]
            store: None,
            #[cfg(feature = "store")]
            retention: subagent_store::Retention::default(),
            #[cfg(feature = "workflow")]
            workflow_limits: subagent_workflow::WorkflowLimits::default(),
            budget: subagent_spi::BudgetLimits::new(),
            prices: subagent_core::ModelPrices::new(),
        }
    }
}

impl SubagentsBuilder {
    // --- models ---

    /// A named model (or alias) agents may ask for with `model: NAME`: a spec string or a model
    /// value. A spec is built on first use.
    pub fn named_model(mut self, name: impl Into<String>, model: impl Into<ModelChoice>) -> Self {
        self.named_models.push((name.into(), model.into()));
        self
    }

    // --- Markdown agents (feature `claude`) ---

    /// A directory of Markdown agents (every `*.md` file with frontmatter; files that do not
    /// load are reported in [`Subagents::skipped`]). Given directories replace discovery
    /// ([`discover_from`](Self::discover_from)) and are one scope, like Claude Code's
    /// `--agents`: of a name in two of them (or twice in one) the first file is used (the
    /// directory given first, the first in path order) and [`Subagents::duplicates`] lists the
    /// other.
    pub fn agents_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.agent_dirs.push(dir.into());
        self
    }

    /// One Markdown agent file.
    pub fn agent_file(mut self, path: impl Into<PathBuf>) -> Self {
        self.agent_files.push(path.into());
        self
    }

    /// Claude Code's discovery from `dir`: `.claude/agents` in `dir` and each directory above
    /// it, then `~/.claude/agents`, used when no [`agents_dir`](Self::agents_dir) is given. On
    /// a name clash the nearer directory wins (the project over the user, both over the
    /// built-ins) and the other file is listed in [`Subagents::shadowed`]; of a name twice in
    /// one directory the first file in path order is used and [`Subagents::duplicates`] lists
    /// the other. Also discovers skills from the same places
    /// (`.claude/skills`) and reads the hooks of `~/.claude/settings.json` and of the
    /// workspace's `.claude/settings.json` and `.claude/settings.local.json`.
    pub fn discover_from(mut self, dir: impl Into<PathBuf>) -> Self {
        let dir = dir.into();
        self.discover_skills_from = Some(dir.clone());
        self.discover_from = Some(dir);
        self
    }

    /// A Claude Code settings file whose `hooks` apply to every Markdown agent and to the main
    /// agent's tool calls (repeatable; feature `claude`). With
    /// [`discover_from`](Self::discover_from), `~/.claude/settings.json` and the workspace's
    /// `.claude/settings.json` and `.claude/settings.local.json` are read too. Its hooks run
    /// confined like the `Bash` tool ([`sandbox`](Self::sandbox)).
    pub fn settings_file(mut self, path: impl Into<PathBuf>) -> Self {
        self.settings_files.push(path.into());
        self
    }

    /// A workspace file whose settings that lift a limit or run something are **not** applied
    /// (repeatable): for `.claude/settings.json` / `settings.local.json`, its `hooks`,
    /// `permissions.allow` rules and a `defaultMode` weaker than `default` (its ask and deny
    /// rules still apply); for `.mcp.json`, its servers. Its hooks are left out even with
    /// [`settings_file`](Self::settings_file). What the `subagents` command passes for the
    /// workspace's files the user has not approved (a model may have written them).
    pub fn untrusted_file(mut self, path: impl Into<PathBuf>) -> Self {
        self.untrusted_files.push(path.into());
        self
    }

    /// The workspace files the person approved (feature `claude`; the command passes its
    /// `trusted.json`). An agent file from the project's `.claude/agents`, a given directory
    /// ([`agents_dir`](Self::agents_dir)) or the workspace starts its inline `mcpServers` and
    /// runs in a `permissionMode` that asks less than the session's only when approved as it is
    /// now: its bytes and the workspace files its commands name ([`crate::approval`]). Without
    /// this, no such file is approved (its agent runs without those servers, in the session's
    /// mode, and says so); `~/.claude/agents`, the built-ins and agents defined in code are the
    /// user's own.
    #[cfg(feature = "claude")]
    pub fn approvals(mut self, approvals: Arc<dyn crate::approval::Approvals>) -> Self {
        self.approvals = Some(approvals);
        self
    }

    /// Skills (`<dir>/<skill>/SKILL.md`) that agents may preload with `skills:`.
    pub fn skill_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.skill_dirs.push(dir.into());
        self
    }

    // --- permissions ---

    /// Who answers tool calls that must be approved (a terminal prompt, a policy, a remote
    /// user). It is put into the root context of every [`main_agent`](Subagents::main_agent)
    /// run and every [`dispatch`](Subagents::dispatch) without one of its own, and into the
    /// context of served agents, so a request from any depth reaches it. Without one, such
    /// calls are denied with a message the model reads.
    pub fn approver(mut self, approver: Arc<dyn Approver>) -> Self {
        self.approver = ApproverSlot(Some(approver));
        self
    }

    /// Allow, ask and deny rules (Claude Code's syntax) for the main agent's and every
    /// Markdown agent's tool calls; added to those already given (feature `claude`).
    #[cfg(feature = "claude")]
    pub fn permission_rules(mut self, rules: subagent_claude::PermissionRules) -> Self {
        self.permission_rules.extend(rules);
        self
    }

    // --- remote agents ---

    /// A remote agent over A2A, by its base URL (feature `a2a`).
    pub fn a2a_agent(mut self, url: impl Into<String>) -> Self {
        self.a2a_agents.push(url.into());
        self
    }

    /// A remote agent over A2A with settings in its metadata (feature `a2a`): credentials
    /// (`auth.bearer_env`, `auth.api_key_env`, `auth.api_key_header`, ...), timeouts; see
    /// `subagents::a2a::client::keys`. Its URI is the agent's base URL.
    pub fn a2a_reference(mut self, reference: SubagentReference) -> Self {
        self.a2a_refs.push(reference);
        self
    }

    /// An MCP server's tools as agents: `stdio:COMMAND ARGS...` or an `http(s)://` URL
    /// (feature `mcp`), optionally followed by `#tool=TOOL&argument=FIELD&name=AGENT`
    /// (see `subagent_mcp::agent_reference`). Without `tool`, a server with several tools
    /// gives one agent per tool; the prompt goes to the argument named, else `prompt`, else
    /// the tool's only string argument.
    pub fn mcp_agent(mut self, spec: impl Into<String>) -> Self {
        self.mcp_agents.push(spec.into());
        self
    }

    // --- custom kinds and references ---

    /// Registers a kind of your own: a [`SubagentType`], or any typed
    /// [`SubagentKind`](subagent_spi::SubagentKind) (turned into one).
    pub fn kind(mut self, kind: impl Into<SubagentType>) -> Self {
        self.kinds.push(kind.into());
        self
    }

    /// Adds an agent reference for any registered kind.
    pub fn reference(mut self, reference: SubagentReference) -> Self {
        self.references.push(reference);
        self
    }

    /// Adds several agent references.
    pub fn references(mut self, refs: impl IntoIterator<Item = SubagentReference>) -> Self {
        self.references.extend(refs);
        self
    }

    /// Adds an agent by URI and kind.
    pub fn agent(self, uri: impl Into<String>, kind: impl Into<subagent_spi::Kind>) -> Self {
        self.reference(SubagentReference::new(uri, kind))
    }

    // --- the Task tool ---

    /// The nesting limit (default 3): a run at depth `d` is offered `Task` only when
    /// `d < max_depth`; the main agent is depth 0.
    pub fn max_depth(mut self, depth: u32) -> Self {
        self.task = self.task.max_depth(depth);
        self
    }

    /// Children working at once over the whole tree, foreground and background, at every depth
    /// (default 20). Task calls over it wait their turn (background ones show `queued`); a run
    /// waiting for its own children gives its place back meanwhile, so nesting never
    /// deadlocks (see [`TaskToolBuilder::max_concurrent`]).
    pub fn max_concurrent(mut self, n: usize) -> Self {
        self.task = self.task.max_concurrent(n);
        self
    }

    /// A budget of its own for the agent named `agent` (what `[budget.agents.NAME]` of
    /// subagents.toml sets), winning over its `budget` frontmatter: every run of the agent
    /// gets at most these limits and at most what is left of its caller's budget, over its
    /// whole subtree (background and remote children included). When it is spent only that
    /// subtree stops, and its outcome is `limit_reached` naming the budget and the agent
    /// (`budget_tokens=5000 (agent reviewer)`). See [`TaskToolBuilder::agent_budget`].
    pub fn agent_budget(
        mut self,
        agent: impl Into<String>,
        limits: subagent_spi::BudgetLimits,
    ) -> Self {
        self.task = self.task.agent_budget(agent, limits);
        self
    }

    /// Maximum background tasks running at once (default 16).
    pub fn max_background(mut self, n: usize) -> Self {
        self.task = self.task.max_background(n);
        self
    }

    /// How long finished background results stay readable (default 30 minutes); with a
    /// [`store`](Self::store), also how long their records are kept.
    pub fn result_ttl(mut self, ttl: Duration) -> Self {
        self.task = self.task.result_ttl(ttl);
        #[cfg(feature = "store")]
        {
            self.retention.task_ttl = ttl;
        }
        self
    }

    // --- durable state (feature `store`) ---

    /// Time allowed to resolve each reference, e.g. fetch an agent card (default 30 s).
    pub fn resolve_timeout(mut self, timeout: Duration) -> Self {
        self.task = self.task.resolve_timeout(timeout);
        self
    }

    /// The bounds of each background task's inbox, which `SendMessage` and
    /// [`Subagents::send`](crate::Subagents::send) fill (default 16 unread messages of at most
    /// 16 KiB each).
    pub fn inbox_limits(mut self, limits: impl Into<subagent_core::InboxLimits>) -> Self {
        self.task = self.task.inbox_limits(limits);
        self
    }

    /// How long `TaskStop` waits for a cancelled task to wind down (default 5 s).
    pub fn stop_grace(mut self, grace: Duration) -> Self {
        self.task = self.task.stop_grace(grace);
        self
    }

    /// Skip references that fail to resolve (with a warning) instead of failing the build.
    pub fn skip_unresolvable(mut self, yes: bool) -> Self {
        self.task = self.task.skip_unresolvable(yes);
        self
    }

    /// Gives direct access to every Task tool setting.
    pub fn configure(mut self, f: impl FnOnce(TaskToolBuilder) -> TaskToolBuilder) -> Self {
        self.task = f(self.task);
        self
    }

    /// Builds the model registry, the kinds and the references, resolves every agent, and
    /// returns the assembled [`Subagents`].
    pub async fn build(self) -> Result<Subagents, Error> {
        crate::assemble::assemble(self).await
    }
}

/// The agent directories Claude Code would read from `start`: `.claude/agents` upwards, then
/// `~/.claude/agents`, the ones that exist.
#[cfg(feature = "claude")]
pub fn discovered_agent_dirs(start: &Path) -> Vec<PathBuf> {
    let home = subagent_claude::home_dir();
    subagent_claude::agent_dirs(start, home.as_deref())
        .into_iter()
        .map(|d| d.path)
        .filter(|p| p.is_dir())
        .collect()
}

/// Records a skipped file.
#[cfg(feature = "claude")]
pub(crate) fn skipped(path: &Path, reason: impl Into<String>, invalid: bool) -> SkippedAgent {
    SkippedAgent {
        path: path.to_path_buf(),
        reason: reason.into(),
        invalid,
    }
}
