//! [`MainAgent`]: a delegating main agent over the assembled agents, as `subagents run` runs.

use std::sync::Arc;

use derive_setters::Setters;
use subagent_core::{BudgetExt, FixedApprover, SessionApprover};
use subagent_runtime::{AgentRuntime, Limits, RunSpec};
use subagent_spi::{
    Approver, CancellationToken, ProgressKind, ProgressSink, SubagentError, TaskCall, TaskContext,
    TaskOutcome, Tool,
};

use crate::Subagents;
use crate::main_offered::MAIN_SYSTEM_PROMPT;

/// A main agent run: the default model with the built-in tools and `Task`, `TaskOutput`,
/// `TaskStop` over every registered agent. Obtain one with [`Subagents::main_agent`].
///
/// The run is depth 0; the agents it starts may delegate in turn while their depth is below the
/// nesting limit. Progress of the main agent and of every descendant goes to one sink. The
/// settings hooks (`PreToolUse`, `PostToolUse`, `PostToolUseFailure`) run around its tool calls.
///
/// Its tools obey the main agent's permission mode ([`Subagents::permission_mode`]) and the
/// permission rules; calls that must be approved, its own and its descendants', go to the
/// builder's approver (one "allow for the session" memory per run). Without an approver they
/// are denied with a message the model reads.
///
/// With [`agent`](Self::agent), a registered agent is the main agent instead (Claude Code's
/// `claude --agent NAME`): a Markdown agent's body is the system prompt, its tools, model,
/// memory, hooks and the rest of its file apply, and its `initialPrompt` opens the
/// conversation.
#[must_use]
#[derive(Setters)]
pub struct MainAgent<'a> {
    #[setters(skip)]
    agents: &'a Subagents,
    /// Replaces the system prompt ([`MAIN_SYSTEM_PROMPT`] by default).
    #[setters(into)]
    system: String,
    /// The turn limit (default 30).
    max_turns: u32,
    /// Where progress of the whole tree goes.
    #[setters(strip_option)]
    progress: Option<Arc<dyn ProgressSink>>,
    /// A token that cancels the run and every child.
    #[setters(strip_option)]
    cancel: Option<CancellationToken>,
    /// Whether the main agent gets the built-in tools (Read, Write, Edit, Glob, Grep, Bash,
    /// WebFetch; TodoWrite when [`only_tools`](Self::only_tools) names it) besides delegation
    /// (default true).
    workspace_tools: bool,
    #[setters(skip)] // added one by one with `tool`
    extra_tools: Vec<Arc<dyn Tool>>,
    #[setters(skip)] // set with `only_tools`
    only_tools: Option<Vec<String>>,
    /// Runs the registered agent of this name as the main agent (at depth 0, so it may delegate when
    /// its tools allow `Task`). The system prompt, tools and model are the agent's own;
    /// [`system`](Self::system), [`workspace_tools`](Self::workspace_tools) and
    /// [`tool`](Self::tool) do not apply. Its `initialPrompt`, when it has one, is the first
    /// user message, followed by the prompt given to [`run`](Self::run) (which may then be
    /// empty).
    #[setters(strip_option, into)]
    agent: Option<String>,
}

impl std::fmt::Debug for MainAgent<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MainAgent")
            .field("max_turns", &self.max_turns)
            .field("workspace_tools", &self.workspace_tools)
            .finish_non_exhaustive()
    }
}

impl<'a> MainAgent<'a> {
    pub(crate) fn new(agents: &'a Subagents) -> Self {
        Self {
            agents,
            system: MAIN_SYSTEM_PROMPT.to_string(),
            max_turns: Limits::DEFAULT_MAX_TURNS,
            progress: None,
            cancel: None,
            workspace_tools: true,
            extra_tools: Vec::new(),
            only_tools: None,
            agent: None,
        }
    }

    /// Offers the main agent only the tools of these names (a lean main agent: a small
    /// model's prompt shrinks with every tool schema left out). [`DELEGATION_TOOLS`] stands
    /// for `Task`, `TaskOutput`, `TaskStop` and `SendMessage`; [`ALL_TOOLS`] for every tool
    /// ([`NOT_BY_DEFAULT`] included). Without it the main agent gets every tool but
    /// [`NOT_BY_DEFAULT`]. A name that is no tool of the main agent makes [`run`](Self::run)
    /// fail with [`SubagentError::InvalidInput`] listing the tools there are. Applies to the
    /// default main agent, not to one run with [`agent`](Self::agent).
    pub fn only_tools<S: Into<String>>(mut self, names: impl IntoIterator<Item = S>) -> Self {
        self.only_tools = Some(names.into_iter().map(Into::into).collect());
        self
    }

    /// Adds a tool of your own.
    pub fn tool(mut self, tool: Arc<dyn Tool>) -> Self {
        self.extra_tools.push(tool);
        self
    }

    /// Runs the main agent on `prompt` and returns its final answer with the usage tree of
    /// everything it delegated.
    pub async fn run(self, prompt: impl Into<String>) -> Result<TaskOutcome, SubagentError> {
        if let Some(name) = self.agent.clone() {
            return self.run_agent(&name, prompt.into()).await;
        }
        let model = self.agents.default_model()?;
        let ctx = self.root_context("main");
        let (mut system, tools) = self.offered()?;
        let local = self.agents.local()?;
        let policy = subagent_claude::PermissionPolicy::new(local.main_mode, local.rules.clone())
            .with_workspace(local.workspace.clone());
        let tools = subagent_claude::guard_tools(tools, &policy, "main", None);
        let tools = subagent_claude::HookRunner::new(local.hooks.clone(), local.workspace.root())
            .with_sandbox(local.sandbox.clone(), local.workspace.root())
            .wrap_tools(tools);
        // The project's instructions (CLAUDE.md, AGENTS.md), as Claude Code's main session has.
        if let Some(i) = local.instructions.as_deref().filter(|i| !i.is_empty()) {
            system.push_str("\n\n");
            system.push_str(&i.section);
        }
        let prompt = prompt.into();
        let started = started(&prompt);
        let mut limits = Limits::default().with_max_turns(self.max_turns);
        limits.context_window = local.context_window;
        limits.stall_timeout = local.stall_timeout;
        let spec = RunSpec::new(model, prompt)
            .with_system(system)
            .with_tools(tools)
            .with_limits(limits)
            .streaming(local.stream);
        run_as_root(
            &ctx,
            ctx.agent(),
            started,
            AgentRuntime::new(local.transcripts.clone()).run(spec, &ctx),
        )
        .await
    }
}

impl MainAgent<'_> {
    /// The system prompt and the tools the default main agent is offered (before its
    /// permission policy and hooks wrap them).
    fn offered(&self) -> Result<(String, Vec<Arc<dyn Tool>>), SubagentError> {
        let mut tools: Vec<Arc<dyn Tool>> = Vec::new();
        if self.workspace_tools {
            // The built-ins not offered by default are kept for a list that names them.
            let by_default = self.only_tools.is_none();
            tools.extend(
                self.agents
                    .workspace_tools()
                    .into_iter()
                    .filter(|t| !(by_default && NOT_BY_DEFAULT.contains(&t.name()))),
            );
        }
        tools.extend(self.extra_tools.iter().cloned());
        tools.extend(self.agents.tools().to_vec());
        // Workflows beside Task (a lean `only_tools` list leaves it out unless it names it).
        #[cfg(feature = "workflow")]
        tools.push(Arc::new(self.agents.workflow_tool()));
        let mut system = self.system.clone();
        if let Some(names) = &self.only_tools
            && !names
                .iter()
                .any(|n| n.trim().eq_ignore_ascii_case(ALL_TOOLS))
        {
            tools = keep_only(tools, names)?;
            // Texts that name only the tools kept (crate::main_offered).
            tools = crate::main_offered::follow_offered(tools, self.agents.task());
            system = crate::main_offered::system_for(system, &tools);
        }
        Ok((system, tools))
    }

    /// The estimated tokens every turn of the default main agent starts with: its system
    /// prompt and tool definitions, counted as compaction counts them
    /// ([`subagent_runtime::fixed_prompt_tokens`]). With [`agent`](Self::agent) set, `None`
    /// (that agent's prompt is its own). Fails as [`run`](Self::run) would on an unknown
    /// [`only_tools`](Self::only_tools) name.
    pub fn prompt_tokens(&self) -> Result<Option<u64>, SubagentError> {
        if self.agent.is_some() {
            return Ok(None);
        }
        let (system, tools) = self.offered()?;
        let specs: Vec<_> = tools.iter().map(|t| t.spec()).collect();
        Ok(Some(subagent_runtime::fixed_prompt_tokens(
            Some(&system),
            &specs,
        )))
    }
}

/// The word [`MainAgent::only_tools`] reads as the delegation tools.
pub const DELEGATION_TOOLS: &str = "delegation";

/// The word [`MainAgent::only_tools`] reads as every tool, [`NOT_BY_DEFAULT`] included.
pub const ALL_TOOLS: &str = "all";

/// Built-in tools the default main agent is not offered unless asked for (by name, or with
/// [`ALL_TOOLS`]): every turn carries each offered tool's schema, and a delegating main agent
/// plans through its agents (`Plan`) rather than a todo list (`TodoWrite` is about 190 tokens
/// a turn with Qwen2.5's template). Markdown agents still get them by their own `tools`.
pub const NOT_BY_DEFAULT: &[&str] = &["TodoWrite"];

/// `tools` restricted to `names` (with [`DELEGATION_TOOLS`] standing for the delegation
/// tools), in their order; an unknown name is an error listing the available ones.
fn keep_only(
    tools: Vec<Arc<dyn Tool>>,
    names: &[String],
) -> Result<Vec<Arc<dyn Tool>>, SubagentError> {
    let mut wanted: Vec<&str> = Vec::new();
    for n in names.iter().map(|n| n.trim()).filter(|n| !n.is_empty()) {
        if n.eq_ignore_ascii_case(DELEGATION_TOOLS) {
            wanted.extend(["Task", "TaskOutput", "TaskStop", "SendMessage"]);
        } else if tools.iter().any(|t| t.name() == n) {
            wanted.push(n);
        } else {
            let available: Vec<&str> = tools.iter().map(|t| t.name()).collect();
            return Err(SubagentError::InvalidInput(format!(
                "the main agent has no tool `{n}`; its tools: {} (or `{DELEGATION_TOOLS}` for Task, TaskOutput, TaskStop and SendMessage, `{ALL_TOOLS}` for every tool)",
                available.join(", ")
            )));
        }
    }
    Ok(tools
        .into_iter()
        .filter(|t| wanted.contains(&t.name()))
        .collect())
}

/// The `Started` event of a run on `prompt`: its first line, at most 80 characters.
fn started(prompt: &str) -> ProgressKind {
    ProgressKind::Started {
        description: prompt
            .lines()
            .next()
            .unwrap_or_default()
            .chars()
            .take(80)
            .collect(),
    }
}

/// Runs `run` as the root of a trace (the OpenTelemetry GenAI `invoke_agent` span of `agent`,
/// task id `main`, with its status and usage at the end), between the `started` event and the
/// `Finished` one.
async fn run_as_root(
    ctx: &TaskContext,
    agent: &str,
    started: ProgressKind,
    run: impl std::future::Future<Output = Result<TaskOutcome, SubagentError>>,
) -> Result<TaskOutcome, SubagentError> {
    ctx.emit(started);
    let span = subagent_core::telemetry::invoke_agent_span(agent, "main");
    let result = tracing::Instrument::instrument(run, span.clone()).await;
    if !span.is_disabled() {
        subagent_core::telemetry::record_run_end(&span, &result);
    }
    let (status, usage) = match &result {
        Ok(o) => (o.status, o.usage.clone()),
        Err(_) => (subagent_spi::TaskStatus::Failed, Default::default()),
    };
    ctx.emit(ProgressKind::Finished { status, usage });
    result
}

impl MainAgent<'_> {
    /// The builder's approver (or one that denies, saying why), with one "allow for the
    /// session" memory for this run.
    fn session_approver(&self) -> Arc<dyn Approver> {
        let approver: Arc<dyn Approver> = match self.agents.approver() {
            Some(a) => a.clone(),
            None => Arc::new(FixedApprover::deny_all(
                "no approver is configured for this run, so nobody can approve it.",
            )),
        };
        Arc::new(SessionApprover::new(approver))
    }

    /// The root context of a main-agent run.
    fn root_context(&self, agent: &str) -> TaskContext {
        let mut ctx = subagent_claude::with_hook_session(TaskContext::new())
            .with_agent(agent)
            .with_task_id("main")
            .with_delegation(self.agents.task().delegation())
            .with_approver(self.session_approver());
        if let Some(name) = self.agents.default_model_name() {
            ctx = ctx.with_parent_model(name);
        }
        if let Some(sink) = &self.progress {
            ctx = ctx.with_progress(sink.clone());
        }
        if let Some(token) = &self.cancel {
            ctx = ctx.with_cancel(token.clone());
        }
        if let Some(budget) = self.agents.root_budget(&ctx) {
            ctx = ctx.with_budget(budget);
        }
        ctx
    }

    /// Runs a registered agent as the main agent through its own kind's executor.
    async fn run_agent(self, name: &str, prompt: String) -> Result<TaskOutcome, SubagentError> {
        let task = self.agents.task();
        let (Some(def), Some(executor)) = (task.find(name).cloned(), task.executor_of(name)) else {
            return Err(SubagentError::UnknownSubagent {
                name: name.to_string(),
                available: task.agent_names(),
            });
        };
        let initial = def
            .downcast_ref::<subagent_claude::ClaudeAgentDefinition>()
            .and_then(|d| d.initial_prompt.clone());
        let prompt = match (initial, prompt.trim().is_empty()) {
            (Some(first), true) => first,
            (Some(first), false) => format!("{first}\n\n{prompt}"),
            (None, false) => prompt,
            (None, true) => {
                return Err(SubagentError::InvalidInput(format!(
                    "agent `{}` has no `initialPrompt`, so a prompt is needed",
                    def.name()
                )));
            }
        };
        let ctx = self
            .root_context(def.name())
            .with_max_turns(Some(self.max_turns));
        let started = started(&prompt);
        let call = TaskCall::new(def.name(), "main agent", prompt);
        run_as_root(
            &ctx,
            name,
            started,
            executor.execute(call, def, ctx.clone()),
        )
        .await
    }
}
