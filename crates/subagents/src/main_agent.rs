//! [`MainAgent`]: a delegating main agent over the assembled agents, as `subagents run` runs.

use std::sync::Arc;

use subagent_runtime::{AgentRuntime, Limits, RunSpec};
use subagent_spi::{
    Approver, CancellationToken, FixedApprover, ProgressKind, ProgressSink, SessionApprover,
    SubagentError, TaskContext, TaskOutcome, Tool,
};

use crate::Subagents;

/// The main agent's default system prompt.
pub const MAIN_SYSTEM_PROMPT: &str = "You are the main agent of a team. Work on the user's \
request with your tools. Delegate self-contained pieces of work to subagents with the Task \
tool: each starts with a fresh context, so give it a complete prompt; only its final answer \
comes back. Run independent subagents in parallel (several Task calls in one reply) or in the \
background (run_in_background, then TaskOutput). When you are done, answer the user directly \
and concisely.";

/// A main agent run: the default model with the built-in tools and `Task`, `TaskOutput`,
/// `TaskStop` over every registered agent. Obtain one with [`Subagents::main_agent`].
///
/// The run is depth 0; the agents it starts may delegate in turn while their depth is below the
/// nesting limit. Progress of the main agent and of every descendant goes to one sink.
///
/// Its tools obey the main agent's permission mode ([`Subagents::permission_mode`]) and the
/// permission rules; calls that must be approved, its own and its descendants', go to the
/// builder's approver (one "allow for the session" memory per run). Without an approver they
/// are denied with a message the model reads.
#[must_use]
pub struct MainAgent<'a> {
    agents: &'a Subagents,
    system: String,
    max_turns: u32,
    progress: Option<Arc<dyn ProgressSink>>,
    cancel: Option<CancellationToken>,
    workspace_tools: bool,
    extra_tools: Vec<Arc<dyn Tool>>,
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
        }
    }

    /// Replaces the system prompt ([`MAIN_SYSTEM_PROMPT`] by default).
    pub fn system(mut self, system: impl Into<String>) -> Self {
        self.system = system.into();
        self
    }

    /// The turn limit (default 30).
    pub fn max_turns(mut self, turns: u32) -> Self {
        self.max_turns = turns;
        self
    }

    /// Where progress of the whole tree goes.
    pub fn progress(mut self, sink: Arc<dyn ProgressSink>) -> Self {
        self.progress = Some(sink);
        self
    }

    /// A token that cancels the run and every child.
    pub fn cancel(mut self, token: CancellationToken) -> Self {
        self.cancel = Some(token);
        self
    }

    /// Whether the main agent gets the built-in tools (Read, Write, Edit, Glob, Grep, Bash,
    /// WebFetch, TodoWrite) besides delegation (default true).
    pub fn workspace_tools(mut self, yes: bool) -> Self {
        self.workspace_tools = yes;
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
        let model = self.agents.default_model()?;
        let mut tools: Vec<Arc<dyn Tool>> = Vec::new();
        if self.workspace_tools {
            tools.extend(self.agents.workspace_tools());
        }
        tools.extend(self.extra_tools);
        tools.extend(self.agents.tools().to_vec());
        let local = self.agents.local()?;
        let policy = subagent_claude::PermissionPolicy::new(local.main_mode, local.rules.clone());
        let tools = subagent_claude::guard_tools(tools, &policy, "main", None);
        let approver: Arc<dyn Approver> = match self.agents.approver() {
            Some(a) => a.clone(),
            None => Arc::new(FixedApprover::deny_all(
                "no approver is configured for this run, so nobody can approve it.",
            )),
        };
        let mut ctx = TaskContext::new()
            .with_agent("main")
            .with_task_id("main")
            .with_delegation(self.agents.task().delegation())
            .with_approver(Arc::new(SessionApprover::new(approver)));
        if let Some(name) = self.agents.default_model_name() {
            ctx = ctx.with_parent_model(name);
        }
        if let Some(sink) = self.progress {
            ctx = ctx.with_progress(sink);
        }
        if let Some(token) = self.cancel {
            ctx = ctx.with_cancel(token);
        }
        let prompt = prompt.into();
        ctx.emit(ProgressKind::Started {
            description: prompt
                .lines()
                .next()
                .unwrap_or_default()
                .chars()
                .take(80)
                .collect(),
        });
        let spec = RunSpec::new(model, prompt)
            .with_system(self.system)
            .with_tools(tools)
            .with_limits(Limits::default().with_max_turns(self.max_turns));
        let result = AgentRuntime::default().run(spec, &ctx).await;
        let (status, usage) = match &result {
            Ok(o) => (o.status, o.usage.clone()),
            Err(_) => (subagent_spi::TaskStatus::Failed, Default::default()),
        };
        ctx.emit(ProgressKind::Finished { status, usage });
        result
    }
}
