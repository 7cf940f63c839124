//! The `CLAUDE` executor and the [`ClaudeSubagentType`] builder.

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
use derive_setters::Setters;
use subagent_runtime::{
    AgentRuntime, InMemoryTranscriptStore, Limits, ModelRegistry, RunSpec, TranscriptStore,
};
use subagent_spi::{
    Approver, SubagentError, SubagentKind, SubagentReference, SubagentType, TaskCall, TaskContext,
    TaskOutcome, Tool, ToolSource,
};
use tokio::sync::OnceCell;

use crate::KIND;
use crate::approval::FileApproval;
use crate::builtin::builtin_references;
use crate::definition::{ClaudeAgentDefinition, ModelChoice, PermissionMode};
use crate::discovery::home_dir;
use crate::extras::RunExtras;
use crate::hooks::Hooks;
use crate::instructions::ProjectInstructions;
use crate::permissions::{PermissionPolicy, guard_tools};
use crate::resolver::ClaudeResolver;
use crate::rules::PermissionRules;
use crate::skills::{Skill, SkillSet};
use crate::toolsel::{is_delegation_tool, never_delegates, select_tools};

/// Where the model of a run came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ModelSource {
    /// `TaskCall.model`.
    Call,
    /// The frontmatter's `model`.
    Frontmatter,
    /// `model: inherit`: the parent's model from the context.
    Inherited,
    /// The type's default model.
    Default,
}

impl fmt::Display for ModelSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ModelSource::Call => "the Task call's `model`",
            ModelSource::Frontmatter => "the agent's `model` field",
            ModelSource::Inherited => "the parent's model (`model: inherit`)",
            ModelSource::Default => "the default model",
        })
    }
}

/// Picks the model name for a run: `call.model` → frontmatter `model` → `inherit` (the parent's
/// model) → `default_model` (or `default`, the registry's default).
pub fn route_model(
    call_model: Option<&str>,
    def: &ClaudeAgentDefinition,
    parent_model: Option<&str>,
    default_model: Option<&str>,
) -> (String, ModelSource) {
    if let Some(m) = nonempty(call_model) {
        if m.eq_ignore_ascii_case("inherit") {
            if let Some(p) = nonempty(parent_model) {
                return (p.to_string(), ModelSource::Inherited);
            }
        } else {
            return (m.to_string(), ModelSource::Call);
        }
    }
    match &def.model {
        Some(ModelChoice::Named(m)) if !m.trim().is_empty() => {
            return (m.trim().to_string(), ModelSource::Frontmatter);
        }
        Some(ModelChoice::Inherit) => {
            if let Some(p) = nonempty(parent_model) {
                return (p.to_string(), ModelSource::Inherited);
            }
        }
        _ => {}
    }
    (
        nonempty(default_model).unwrap_or("default").to_string(),
        ModelSource::Default,
    )
}

fn nonempty(s: Option<&str>) -> Option<&str> {
    s.map(str::trim).filter(|s| !s.is_empty())
}

/// Runs Claude-style agents on the [`AgentRuntime`] loop.
///
/// Per run: the system prompt is the agent's body plus the text of each preloaded skill; the
/// first user message is `TaskCall.prompt` on a fresh message list (or the stored transcript
/// when `TaskCall.resume` names a session); the tools are the configured set plus the
/// agent's `mcpServers` tools plus the delegation tools of the context's handle
/// ([`TaskContext::delegation_tools`]: present only below the nesting limit), filtered by
/// `disallowedTools`, then `tools` (omitted `tools` inherits `Task`; `Agent(a, b)` limits its
/// targets; the built-in read-only agents `Explore` and `Plan` never delegate); tools are
/// wrapped to enforce `permissionMode` (or the type's override) and the permission rules, and
/// calls that must be approved are asked of the context's approver; `maxTurns` becomes the turn limit. Only the final text
/// comes back; `session_id` resumes the run.
pub struct ClaudeExecutor {
    /// Reads agent files: the executor is the whole kind ([`SubagentKind`]).
    resolver: ClaudeResolver,
    runtime: AgentRuntime,
    models: Arc<ModelRegistry>,
    default_model: Option<String>,
    tools: Option<Vec<Arc<dyn Tool>>>,
    workspace: Option<PathBuf>,
    default_tools: OnceCell<Vec<Arc<dyn Tool>>>,
    extra_tools: Vec<Arc<dyn Tool>>,
    skill_dirs: Vec<PathBuf>,
    preset_skills: Option<SkillSet>,
    skills: OnceCell<SkillSet>,
    rules: Arc<PermissionRules>,
    mode_override: Option<PermissionMode>,
    session_mode: PermissionMode,
    file_approval: Option<Arc<dyn FileApproval>>,
    approver: Option<Arc<dyn Approver>>,
    default_max_turns: u32,
    stream: bool,
    mcp: Option<Arc<dyn ToolSource>>,
    hooks: Hooks,
    sandbox: subagent_tools::SandboxPolicy,
    long_run: LongRun,
    strict_models: bool,
    instructions: Option<Arc<ProjectInstructions>>,
}

/// The long-run settings of every agent of the kind (see the builder's `context_window` and
/// `stall_timeout`).
#[derive(Debug, Clone, Copy)]
struct LongRun {
    context_window: Option<u64>,
    stall_timeout: Option<std::time::Duration>,
}

impl fmt::Debug for ClaudeExecutor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClaudeExecutor")
            .field("models", &self.models)
            .field("default_model", &self.default_model)
            .field(
                "tools",
                &self
                    .tools
                    .as_ref()
                    .map(|t| t.iter().map(|t| t.name().to_string()).collect::<Vec<_>>()),
            )
            .field("skill_dirs", &self.skill_dirs)
            .field("rules", &self.rules)
            .field("mode_override", &self.mode_override)
            .finish_non_exhaustive()
    }
}

impl ClaudeExecutor {
    /// The model registry.
    pub fn models(&self) -> &ModelRegistry {
        &self.models
    }

    /// The permission mode `def` runs in: the type's override, else its `permissionMode`.
    pub fn permission_mode_of(&self, def: &ClaudeAgentDefinition) -> PermissionMode {
        self.mode_override.unwrap_or(def.permission_mode)
    }

    /// The runtime (and through it the transcript store).
    pub fn runtime(&self) -> &AgentRuntime {
        &self.runtime
    }

    async fn base_tools(&self) -> Vec<Arc<dyn Tool>> {
        let mut tools = match &self.tools {
            Some(t) => t.clone(),
            None => self
                .default_tools
                .get_or_init(|| async {
                    let root = self.workspace.clone();
                    tokio::task::spawn_blocking(move || default_tool_set(root))
                        .await
                        .unwrap_or_default()
                })
                .await
                .clone(),
        };
        for t in &self.extra_tools {
            tools.retain(|e| e.name() != t.name());
            tools.push(t.clone());
        }
        tools
    }

    /// The project root: the workspace the default tools are confined to, else the current
    /// directory. Memory (`project`, `local`), worktrees and hooks work from it.
    fn project_root(&self) -> PathBuf {
        self.workspace
            .clone()
            .or_else(|| std::env::current_dir().ok())
            .unwrap_or_else(|| PathBuf::from("."))
    }

    async fn skill_set(&self) -> &SkillSet {
        self.skills
            .get_or_init(|| async {
                let mut set = self.preset_skills.clone().unwrap_or_default();
                if !self.skill_dirs.is_empty() {
                    let scan = SkillSet::discover(self.skill_dirs.clone()).await;
                    for w in &scan.warnings {
                        tracing::warn!("{w}");
                    }
                    for (path, reason) in &scan.skipped {
                        tracing::warn!(path = %path.display(), "skill not loaded: {reason}");
                    }
                    for s in scan.skills.iter() {
                        set.insert(Skill::clone(s));
                    }
                }
                set
            })
            .await
    }

    /// The names of the tools agents choose from (the configured set and the extra tools; the
    /// delegation tools and `mcpServers` tools come per run), for [`LoadCheck::tools`](crate::LoadCheck).
    pub async fn base_tool_names(&self) -> Vec<String> {
        self.base_tools()
            .await
            .iter()
            .map(|t| t.name().to_string())
            .collect()
    }

    /// The names of the skills agents can preload (scanning the skill directories on first
    /// use), for [`LoadCheck::skills`](crate::LoadCheck).
    pub async fn skill_names(&self) -> Vec<String> {
        self.skill_set()
            .await
            .iter()
            .map(|s| s.name.clone())
            .collect()
    }

    /// The tool names an agent would get when run with `ctx` (for listings and tests), with
    /// warnings. `mcpServers` tools are not included (listing them would start the servers).
    pub async fn tool_names_for(
        &self,
        def: &ClaudeAgentDefinition,
        ctx: &TaskContext,
    ) -> (Vec<String>, Vec<String>) {
        let mut base = self.base_tools().await;
        add_delegation(&mut base, def, ctx);
        let sel = select_tools(def, &base);
        (
            sel.tools.iter().map(|t| t.name().to_string()).collect(),
            sel.warnings,
        )
    }
}

/// Adds the context's delegation tools (none beyond the nesting limit) unless the agent is one
/// of the built-in read-only agents, which never delegate.
fn add_delegation(base: &mut Vec<Arc<dyn Tool>>, def: &ClaudeAgentDefinition, ctx: &TaskContext) {
    if never_delegates(def) {
        base.retain(|t| !is_delegation_tool(t.name()));
        return;
    }
    for t in ctx.delegation_tools() {
        base.retain(|e| e.name() != t.name());
        base.push(t);
    }
}

fn default_tool_set(root: Option<PathBuf>) -> Vec<Arc<dyn Tool>> {
    let root = match root.map_or_else(std::env::current_dir, Ok) {
        Ok(r) => r,
        Err(e) => {
            tracing::error!("no current directory for the default tool set: {e}");
            return Vec::new();
        }
    };
    match subagent_tools::Workspace::new(&root) {
        Ok(ws) => subagent_tools::ToolSet::all(ws),
        Err(e) => {
            tracing::error!(root = %root.display(), "default tool set unavailable: {e}");
            Vec::new()
        }
    }
}

/// The `CLAUDE` kind: the executor resolves with its [`ClaudeResolver`] and runs the agent
/// loop (the erased resolver and executor come from the SPI's blanket impls).
#[async_trait]
impl SubagentKind for ClaudeExecutor {
    type Agent = ClaudeAgentDefinition;

    fn kind(&self) -> subagent_spi::Kind {
        KIND
    }

    fn can_resolve(&self, reference: &SubagentReference) -> bool {
        subagent_spi::SubagentResolver::can_resolve(&self.resolver, reference)
    }

    async fn resolve(
        &self,
        reference: &SubagentReference,
    ) -> Result<ClaudeAgentDefinition, SubagentError> {
        self.resolver.resolve_typed(reference).await
    }

    /// Markdown agents run the agent loop, which reads its inbox before each model turn.
    fn message_delivery(&self, _agent: &ClaudeAgentDefinition) -> Option<&'static str> {
        Some("it reads it at its next turn boundary")
    }

    async fn run(
        &self,
        def: &ClaudeAgentDefinition,
        call: TaskCall,
        ctx: TaskContext,
    ) -> Result<TaskOutcome, SubagentError> {
        let agent = def.name.as_str();
        let output_schema =
            call.output_schema
                .as_ref()
                .map(|s| {
                    subagent_schema::OutputSchema::compile(s, subagent_schema::Profile::host())
                        .map_err(|e| {
                            SubagentError::InvalidInput(format!(
                                "output_schema for agent `{agent}`: {e}"
                            ))
                        })
                })
                .transpose()?;

        let (model_name, source) = route_model(
            call.model.as_deref(),
            def,
            ctx.parent_model(),
            self.default_model.as_deref(),
        );
        let (model, model_name) = match self.models.resolve_noted(&model_name) {
            Ok((model, None)) => (model, model_name),
            Ok((model, Some(why))) => {
                match self.stand_in(agent, &model_name, source, why, Some(model.clone()), &ctx) {
                    Some(Ok(found)) => found,
                    Some(Err(failed)) => return Ok(failed),
                    None => (model, model_name),
                }
            }
            Err(e) => match self.stand_in(agent, &model_name, source, short_reason(&e), None, &ctx)
            {
                Some(Ok(found)) => found,
                Some(Err(failed)) => return Ok(failed),
                None => {
                    return Err(SubagentError::Execution {
                        agent: agent.to_string(),
                        message: format!("cannot use model `{model_name}` (from {source}): {e}"),
                        source: Some(Box::new(e)),
                    });
                }
            },
        };

        // What only an approved file may do (crate::approval): its own MCP servers, a
        // permission mode above the session's.
        let refusal = match &self.file_approval {
            Some(approval) => approval.refusal(def).await,
            None => None,
        };
        let mode = match (&refusal, self.mode_override) {
            (Some(why), None)
                if def.permission_mode.capped_by(self.session_mode) != def.permission_mode =>
            {
                let capped = def.permission_mode.capped_by(self.session_mode);
                tracing::warn!(
                    agent,
                    "permissionMode {} not applied, running in {capped}: {why}",
                    def.permission_mode
                );
                ctx.emit(subagent_spi::ProgressKind::Status {
                    message: format!(
                        "permissionMode {} not applied, running in {capped}: {why}",
                        def.permission_mode
                    ),
                });
                capped
            }
            _ => self.permission_mode_of(def),
        };
        // The agent file's memory, isolation, hooks and effort (crate::extras).
        let extras = RunExtras::prepare(
            def,
            mode,
            &ctx,
            &self.hooks,
            &self.sandbox,
            &self.project_root(),
            home_dir().as_deref(),
        )
        .await?;
        let servers = match (&def.mcp_servers, &refusal) {
            (Some(servers), Some(why)) => {
                let inline = crate::approval::inline_mcp_servers(servers);
                if !inline.is_empty() {
                    tracing::warn!(agent, "MCP servers {inline:?} not started: {why}");
                    ctx.emit(subagent_spi::ProgressKind::Status {
                        message: format!("MCP servers {inline:?} not started: {why}"),
                    });
                }
                crate::approval::configured_mcp_servers_only(servers)
            }
            (servers, _) => servers.clone(),
        };
        let mut base = self.base_tools().await;
        if let Some(servers) = &servers {
            match &self.mcp {
                Some(source) => match source.tools_for(agent, servers).await {
                    Ok(tools) => {
                        for t in tools {
                            base.retain(|e| e.name() != t.name());
                            base.push(t);
                        }
                    }
                    Err(e) => {
                        tracing::warn!(agent, "MCP servers unavailable, running without them: {e}");
                        ctx.emit(subagent_spi::ProgressKind::Status {
                            message: format!("MCP servers unavailable: {e}"),
                        });
                    }
                },
                None => tracing::warn!(
                    agent,
                    "`mcpServers` ignored: no MCP tool source is configured on the CLAUDE kind"
                ),
            }
        }
        add_delegation(&mut base, def, &ctx);
        if let Err(e) = extras.reroot_tools(&mut base) {
            extras.discard().await;
            return Err(e);
        }
        let selection = select_tools(def, &base);
        // The same warnings are load warnings (`agent_load_warnings`), shown by hosts once.
        for w in &selection.warnings {
            tracing::debug!(agent, "{w}");
        }
        let selected = extras.add_memory_tools(def, selection.tools);
        let mut policy = PermissionPolicy::new(mode, self.rules.clone());
        if let Ok(ws) = subagent_tools::Workspace::new(self.project_root()) {
            policy = policy.with_workspace(ws);
        }
        let tools = guard_tools(selected, &policy, agent, self.approver.as_ref());
        let tools = extras.wrap_tools(tools);

        let mut run_ctx = ctx.with_parent_model(model_name);
        if run_ctx.agent().is_empty() {
            run_ctx = run_ctx.with_agent(agent);
        }
        let run_ctx = extras.run_context(run_ctx);

        let mut limits =
            Limits::default().with_max_turns(def.max_turns.unwrap_or(self.default_max_turns));
        limits.context_window = self.long_run.context_window;
        limits.stall_timeout = self.long_run.stall_timeout;
        let spec = match call
            .resume
            .as_deref()
            .map(str::trim)
            .filter(|s| !s.is_empty())
        {
            Some(session) => RunSpec::resume(model, session, call.prompt.clone()),
            None => {
                let (system, warnings) = self
                    .skill_set()
                    .await
                    .compose_prompt(&def.prompt, &def.skills);
                for w in &warnings {
                    tracing::debug!(agent, "{w}");
                }
                let mut system = system;
                if let Some(i) = self.instructions.as_deref()
                    && !def.omit_claude_md
                    && !i.is_empty()
                {
                    system.push_str("\n\n");
                    system.push_str(&i.section);
                }
                let system = system + &extras.system_additions(&run_ctx).await;
                RunSpec::new(model, call.prompt.clone()).with_system(system)
            }
        }
        .with_tools(tools)
        .with_limits(limits)
        .with_effort(extras.effort())
        .streaming(self.stream);
        // Typed result: the call's schema (the Task tool put the agent's default there).
        let mut spec = spec;
        spec.output_schema = output_schema;
        extras.run(&self.runtime, spec, &run_ctx).await
    }
}

impl ClaudeExecutor {
    /// What runs when the model `name` (from `source`) cannot be used as asked (`why`), as in
    /// Claude Code: for a model the agent's file asks for, the session's (default) model, with
    /// one progress notice saying so; with
    /// [`strict_models`](ClaudeSubagentTypeBuilder::strict_models), a failed outcome naming the
    /// cause (a failed child for its caller's count, not an error). `substitute` is the model
    /// the registry already put in its place ([`ModelRegistry::resolve_noted`]): a Task call's
    /// model gets it with a notice too, and an inherited or default one silently. `None` when
    /// nothing can run (no default model; a name the Task call asked for that is unknown: the
    /// calling model reads the error).
    #[allow(clippy::type_complexity)]
    fn stand_in(
        &self,
        agent: &str,
        name: &str,
        source: ModelSource,
        why: String,
        substitute: Option<Arc<dyn subagent_spi::ChatModel>>,
        ctx: &TaskContext,
    ) -> Option<Result<(Arc<dyn subagent_spi::ChatModel>, String), TaskOutcome>> {
        let default = self
            .default_model
            .as_deref()
            .unwrap_or("default")
            .to_string();
        let cannot = format!(
            "cannot use model `{}` (from {source}): {why}",
            crate::terminal::escape_for_terminal(name)
        );
        let model = match (source, substitute) {
            (ModelSource::Frontmatter, _) if self.strict_models => {
                return Some(Err(TaskOutcome::with_status(
                    format!(
                        "{cannot}; models are strict, so it does not run on the session's \
                         model instead"
                    ),
                    subagent_spi::TaskStatus::Failed,
                )));
            }
            (ModelSource::Frontmatter, Some(m)) | (ModelSource::Call, Some(m)) => m,
            (ModelSource::Frontmatter, None) => self.models.resolve(&default).ok()?,
            (_, Some(m)) => return Some(Ok((m, default))),
            (_, None) => return None,
        };
        // Short, the essentials first: hosts show a status on one line.
        let notice = format!(
            "model `{}` unusable ({}); runs on the session's model `{}`",
            crate::terminal::escape_for_terminal(name),
            crate::terminal::escape_for_terminal(&why),
            crate::terminal::escape_for_terminal(model.model_name())
        );
        tracing::info!(agent, "{cannot}; runs on the session's model instead");
        ctx.emit(subagent_spi::ProgressKind::Status { message: notice });
        Some(Ok((model, default)))
    }
}

/// Why a model cannot be used, briefly (a notice's reason): `unknown here` for a name nothing
/// resolves, else the error.
fn short_reason(e: &subagent_spi::ModelError) -> String {
    match e {
        subagent_spi::ModelError::UnknownModel { .. } => "unknown here".to_string(),
        other => other.to_string(),
    }
}

/// Entry point for building the `CLAUDE` [`SubagentType`].
#[derive(Debug, Clone, Copy)]
pub struct ClaudeSubagentType;

impl ClaudeSubagentType {
    /// A builder with defaults: no models (set them), the built-in tools on the current
    /// directory, no skill directories, each agent's own `permissionMode`, no permission rules,
    /// no fallback approver (calls that ask are denied unless the context has an approver), an
    /// in-memory transcript store, the built-in agents as default references.
    pub fn builder() -> ClaudeSubagentTypeBuilder {
        ClaudeSubagentTypeBuilder::default()
    }
}

/// Builds the `CLAUDE` [`SubagentType`]: resolver + executor + built-in agents.
#[derive(Setters)]
pub struct ClaudeSubagentTypeBuilder {
    /// The model registry (names, aliases, default, fallback factory), owned or shared.
    #[setters(into)]
    models: Arc<ModelRegistry>,
    /// The model name used when neither the call, the frontmatter nor `inherit` picks one
    /// (default: the registry's `default`).
    #[setters(strip_option, into)]
    default_model: Option<String>,
    /// The tool set agents choose from (default: every built-in tool of `subagent-tools`,
    /// confined to [`workspace`](Self::workspace) or the current directory).
    #[setters(strip_option)]
    tools: Option<Vec<Arc<dyn Tool>>>,
    /// The root the default tool set is confined to (default: the current directory). It is
    /// also the project root: `project`/`local` memory, worktrees (`isolation: worktree`) and
    /// hooks (`CLAUDE_PROJECT_DIR`) work from it, and the built-in file and shell tools of an
    /// isolated run are re-rooted from it into the worktree.
    #[setters(strip_option, into)]
    workspace: Option<PathBuf>,
    #[setters(skip)] // added with `extra_tool(s)`
    extra_tools: Vec<Arc<dyn Tool>>,
    #[setters(skip)] // added with `skill_dir(s)`
    skill_dirs: Vec<PathBuf>,
    /// Skills already loaded (take precedence over those found in skill directories).
    #[setters(strip_option)]
    skills: Option<SkillSet>,
    /// Allow, ask and deny rules every agent's tool calls obey (deny wins, then ask, then
    /// allow; see [`PermissionRules`]).
    #[setters(rename = "permission_rules")]
    rules: PermissionRules,
    /// A permission mode for every agent, overriding their `permissionMode` (as
    /// `--permission-mode` does).
    #[setters(rename = "permission_mode", strip_option)]
    mode_override: Option<PermissionMode>,
    /// The session's permission mode (the main agent's; default `default`): without an
    /// override ([`permission_mode`](Self::permission_mode)), an agent whose file the
    /// [`file_approval`](Self::file_approval) refuses runs in at most this mode
    /// ([`PermissionMode::capped_by`]).
    session_mode: PermissionMode,
    /// Which agent files may start their own MCP servers and lift the session's mode (see
    /// [`FileApproval`]); default: every file may.
    #[setters(strip_option)]
    file_approval: Option<Arc<dyn FileApproval>>,
    /// The approver asked when a run's context has none (default: none, so such calls are
    /// denied with a message the model reads). Hosts normally put the approver into the root
    /// context instead ([`TaskContext::with_approver`]), so it reaches every kind.
    #[setters(strip_option)]
    approver: Option<Arc<dyn Approver>>,
    /// Where transcripts are kept for `resume` (default: in memory).
    #[setters(rename = "transcript_store", strip_option)]
    store: Option<Arc<dyn TranscriptStore>>,
    /// Replaces the resolver (e.g. one with extra embedded agents or a base directory).
    resolver: ClaudeResolver,
    /// Whether the built-in agents are contributed as default references (default true).
    #[setters(rename = "builtin_agents")]
    builtins: bool,
    /// The turn limit for agents without `maxTurns` (default 30).
    default_max_turns: u32,
    /// Streams model replies (text deltas become progress events; default off).
    stream: bool,
    /// Where agents with `mcpServers` get their `mcp__<server>__<tool>` tools (e.g. the
    /// `subagent-mcp` crate's provider). Without one, `mcpServers` is ignored with a warning.
    #[setters(rename = "mcp_tools", strip_option)]
    mcp: Option<Arc<dyn ToolSource>>,
    /// Hooks that apply to every agent of the kind (Claude Code's settings hooks, e.g. from
    /// [`Hooks::from_settings_files`]): `PreToolUse`/`PostToolUse`/`PostToolUseFailure` around
    /// every tool call, `SubagentStart`/`SubagentStop` around every subagent run. Agents' own
    /// frontmatter `hooks` apply on top. Default: none.
    hooks: Hooks,
    /// How hooks from agent files and workspace settings files are confined: give the policy
    /// the tool set's `Bash` tool has (see [`HookRunner::with_sandbox`](crate::HookRunner::with_sandbox)).
    /// Default: [`SandboxPolicy::default`](subagent_tools::SandboxPolicy::default).
    sandbox: subagent_tools::SandboxPolicy,
    /// The context window (tokens) every agent's requests are compacted to stay below
    /// (default: the model's known window, else
    /// [`DEFAULT_CONTEXT_WINDOW`](subagent_runtime::DEFAULT_CONTEXT_WINDOW)).
    #[setters(strip_option)]
    context_window: Option<u64>,
    /// How long an agent's model stream and tools may make no progress before it stops
    /// `limit_reached` naming `stalled` (default 10 minutes; `None`: never).
    stall_timeout: Option<std::time::Duration>,
    /// An agent whose model (its `model` field, or the Task call's `model`) cannot be used
    /// fails (a `failed` outcome naming why) instead of running on the default model with a
    /// progress notice, Claude Code's behaviour and the default (false).
    strict_models: bool,
    /// The project's instructions ([`ProjectInstructions`]: `CLAUDE.md`, `AGENTS.md`), appended
    /// to the system prompt of every agent whose file does not say `omitClaudeMd: true`
    /// (default: none).
    #[setters(rename = "project_instructions", strip_option)]
    instructions: Option<Arc<ProjectInstructions>>,
}

impl Default for ClaudeSubagentTypeBuilder {
    fn default() -> Self {
        Self {
            models: Arc::new(ModelRegistry::new()),
            default_model: None,
            tools: None,
            workspace: None,
            extra_tools: Vec::new(),
            skill_dirs: Vec::new(),
            skills: None,
            rules: PermissionRules::new(),
            mode_override: None,
            session_mode: PermissionMode::Default,
            file_approval: None,
            approver: None,
            store: None,
            resolver: ClaudeResolver::new(),
            builtins: true,
            default_max_turns: Limits::DEFAULT_MAX_TURNS,
            stream: false,
            mcp: None,
            hooks: Hooks::new(),
            sandbox: subagent_tools::SandboxPolicy::default(),
            context_window: None,
            stall_timeout: Some(Limits::DEFAULT_STALL_TIMEOUT),
            strict_models: false,
            instructions: None,
        }
    }
}

impl fmt::Debug for ClaudeSubagentTypeBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClaudeSubagentTypeBuilder")
            .field("models", &self.models)
            .field("default_model", &self.default_model)
            .field("skill_dirs", &self.skill_dirs)
            .finish_non_exhaustive()
    }
}

impl ClaudeSubagentTypeBuilder {
    /// Adds a tool on top of the tool set (e.g. the host's `Task` tool), subject to the same
    /// filters; `Task`/`Agent` is withheld beyond the depth limit.
    #[must_use]
    pub fn extra_tool(mut self, tool: Arc<dyn Tool>) -> Self {
        self.extra_tools.push(tool);
        self
    }

    /// Adds several extra tools.
    #[must_use]
    pub fn extra_tools(mut self, tools: impl IntoIterator<Item = Arc<dyn Tool>>) -> Self {
        self.extra_tools.extend(tools);
        self
    }

    /// Adds a skill directory (`<dir>/<skill>/SKILL.md`); scanned on first use.
    #[must_use]
    pub fn skill_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.skill_dirs.push(dir.into());
        self
    }

    /// Adds several skill directories.
    #[must_use]
    pub fn skill_dirs(mut self, dirs: impl IntoIterator<Item = PathBuf>) -> Self {
        self.skill_dirs.extend(dirs);
        self
    }

    /// Builds the type and also returns the executor (for listings: [`ClaudeExecutor::tool_names_for`]).
    pub fn build_with_executor(self) -> (SubagentType, Arc<ClaudeExecutor>) {
        let store = self
            .store
            .unwrap_or_else(|| Arc::new(InMemoryTranscriptStore::new()));
        let executor = Arc::new(ClaudeExecutor {
            resolver: self.resolver,
            runtime: AgentRuntime::new(store),
            models: self.models,
            default_model: self.default_model,
            tools: self.tools,
            workspace: self.workspace,
            default_tools: OnceCell::new(),
            extra_tools: self.extra_tools,
            skill_dirs: self.skill_dirs,
            preset_skills: self.skills,
            skills: OnceCell::new(),
            rules: Arc::new(self.rules),
            mode_override: self.mode_override,
            session_mode: self.session_mode,
            file_approval: self.file_approval,
            approver: self.approver,
            default_max_turns: self.default_max_turns,
            stream: self.stream,
            mcp: self.mcp,
            hooks: self.hooks,
            sandbox: self.sandbox,
            long_run: LongRun {
                context_window: self.context_window,
                stall_timeout: self.stall_timeout,
            },
            strict_models: self.strict_models,
            instructions: self.instructions,
        });
        let mut ty = SubagentType::from_kind(executor.clone());
        if self.builtins {
            ty = ty.with_default_references(builtin_references());
        }
        (ty, executor)
    }

    /// Builds the type.
    pub fn build(self) -> SubagentType {
        self.build_with_executor().0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routing_order() {
        let mut d = ClaudeAgentDefinition::new("a", "d", "p");
        assert_eq!(
            route_model(None, &d, Some("parent"), None),
            ("default".into(), ModelSource::Default)
        );
        d.model = Some(ModelChoice::Inherit);
        assert_eq!(
            route_model(None, &d, Some("parent"), Some("def")),
            ("parent".into(), ModelSource::Inherited)
        );
        assert_eq!(
            route_model(None, &d, None, Some("def")),
            ("def".into(), ModelSource::Default)
        );
        d.model = Some(ModelChoice::Named("haiku".into()));
        assert_eq!(
            route_model(None, &d, Some("parent"), None),
            ("haiku".into(), ModelSource::Frontmatter)
        );
        assert_eq!(
            route_model(Some("opus"), &d, Some("parent"), None),
            ("opus".into(), ModelSource::Call)
        );
        assert_eq!(
            route_model(Some(" "), &d, None, None),
            ("haiku".into(), ModelSource::Frontmatter)
        );
    }

    #[test]
    fn builder_adds_builtins() {
        let ty = ClaudeSubagentType::builder().build();
        assert_eq!(ty.kind(), &KIND);
        assert_eq!(ty.default_references().len(), 4);
        let ty = ClaudeSubagentType::builder().builtin_agents(false).build();
        assert!(ty.default_references().is_empty());
    }
}
