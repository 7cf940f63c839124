//! Hooks around one run: [`HookedTool`] wraps a tool with its `PreToolUse`/`PostToolUse`
//! hooks, [`RunHooks`] holds a run's start and stop hooks.

use crate::definition::{PermissionMode, is_task_name};
use async_trait::async_trait;
use serde_json::{Map, Value, json};
use std::path::Path;
use std::sync::Arc;
use subagent_spi::{TaskContext, Tool, ToolError, ToolOutput};
use subagent_tools::SandboxPolicy;

use super::*;

/// A tool with `PreToolUse`, `PostToolUse` and `PostToolUseFailure` hooks around its calls.
pub(super) struct HookedTool {
    inner: Arc<dyn Tool>,
    runner: Arc<HookRunner>,
}

impl HookRunner {
    /// Wraps each tool so `PreToolUse`, `PostToolUse` and `PostToolUseFailure` hooks run around
    /// its calls. Tools are returned unwrapped when no tool hook is configured.
    pub fn wrap_tools(&self, tools: Vec<Arc<dyn Tool>>) -> Vec<Arc<dyn Tool>> {
        let tool_events = [
            HookEvent::PreToolUse,
            HookEvent::PostToolUse,
            HookEvent::PostToolUseFailure,
        ];
        if tool_events.iter().all(|e| self.hooks().count(*e) == 0) {
            return tools;
        }
        let runner = Arc::new(self.clone());
        tools
            .into_iter()
            .map(|inner| {
                Arc::new(HookedTool {
                    inner,
                    runner: runner.clone(),
                }) as Arc<dyn Tool>
            })
            .collect()
    }
}

#[async_trait]
impl Tool for HookedTool {
    wrapped_tool_identity!();

    fn description(&self) -> String {
        self.inner.description()
    }

    async fn call(&self, input: Value, ctx: &TaskContext) -> Result<ToolOutput, ToolError> {
        let name = self.inner.name().to_string();
        let tool_name = if is_task_name(&name) {
            "Task".to_string()
        } else {
            name.clone()
        };
        let mut extra = Map::new();
        extra.insert("tool_name".into(), json!(tool_name));
        extra.insert("tool_input".into(), input.clone());
        let pre = self
            .runner
            .fire(HookEvent::PreToolUse, &name, false, extra.clone(), ctx)
            .await;
        if let Some(reason) = &pre.stop {
            ctx.cancel().cancel();
            return Err(ToolError::denied(
                &name,
                format!("a PreToolUse hook stopped the agent: {reason}"),
            ));
        }
        if let Some(msg) = pre.block {
            return Err(ToolError::denied(
                &name,
                format!("blocked by a PreToolUse hook: {msg}"),
            ));
        }
        let input = match pre.updated_input {
            Some(updated) => {
                extra.insert("tool_input".into(), updated.clone());
                updated
            }
            None => input,
        };
        let result = self.inner.call(input, ctx).await;
        let failed = match &result {
            Ok(out) => out.is_error.then(|| out.content.clone()),
            Err(e) => Some(e.to_string()),
        };
        let post = match &failed {
            None => {
                let response = result
                    .as_ref()
                    .map(|o| o.content.clone())
                    .unwrap_or_default();
                extra.insert("tool_response".into(), json!(response));
                self.runner
                    .fire(HookEvent::PostToolUse, &name, false, extra, ctx)
                    .await
            }
            Some(error) => {
                extra.insert("error".into(), json!(error));
                extra.insert("is_interrupt".into(), json!(false));
                self.runner
                    .fire(HookEvent::PostToolUseFailure, &name, false, extra, ctx)
                    .await
            }
        };
        let mut notes: Vec<String> = pre.context;
        if let Some(block) = post.block {
            notes.push(block);
        }
        notes.extend(post.context);
        if let Some(reason) = post.stop {
            notes.push(format!("A hook stopped the agent: {reason}"));
            ctx.cancel().cancel();
        }
        if notes.is_empty() {
            return result;
        }
        let feedback = format!("\n\n[hook feedback]\n{}", notes.join("\n"));
        match result {
            Ok(mut out) => {
                out.content.push_str(&feedback);
                Ok(out)
            }
            Err(e) => Ok(ToolOutput::error(format!("{e}{feedback}"))),
        }
    }
}

// --- subagent lifecycle ---

/// The frontmatter `SubagentStart`/`SubagentStop` hooks of the agent that started this run:
/// they apply to its children, so the parent's run puts them into its context.
#[derive(Debug, Clone)]
pub(super) struct ParentHooks(HookRunner);

/// The hooks around one Markdown agent run: its own (frontmatter), the settings ones, and its
/// parent's `SubagentStart`/`SubagentStop`.
#[derive(Debug, Clone)]
pub(crate) struct RunHooks {
    /// Frontmatter hooks of this agent (tool hooks, own Stop).
    own: HookRunner,
    /// Settings hooks.
    settings: HookRunner,
    /// The parent's frontmatter subagent hooks, when there is a parent that has some.
    parent: Option<HookRunner>,
    /// True for a subagent (depth ≥ 1): `SubagentStart`/`SubagentStop` apply.
    is_subagent: bool,
    agent: String,
}

/// Where one run's hooks run: the project (`CLAUDE_PROJECT_DIR`), the run's root (their
/// working directory and the workspace their confinement is for) and the run's `Bash` policy.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RunPlace<'a> {
    pub project_dir: &'a Path,
    pub cwd: &'a Path,
    pub sandbox: &'a SandboxPolicy,
}

impl RunHooks {
    /// The runner of the agent's own hooks.
    #[cfg(test)]
    pub(super) fn own(&self) -> &HookRunner {
        &self.own
    }

    /// Builds the hooks of one run. `warnings` gets what the frontmatter value could not use.
    pub(crate) fn new(
        frontmatter: Option<&Value>,
        settings: &Hooks,
        ctx: &TaskContext,
        agent: &str,
        mode: PermissionMode,
        place: RunPlace<'_>,
    ) -> (Self, Vec<String>) {
        let RunPlace {
            project_dir,
            cwd,
            sandbox,
        } = place;
        let (own, mut warnings) = match frontmatter {
            Some(v) => Hooks::from_frontmatter(v),
            None => (Hooks::new(), Vec::new()),
        };
        let own = if settings.is_disabled() && !own.is_empty() {
            warnings.push(
                "`disableAllHooks` is set in the settings, so this agent's hooks do not run"
                    .to_string(),
            );
            Hooks::new()
        } else {
            own
        };
        let is_subagent = ctx.depth() > 0;
        let runner = |hooks: Hooks| {
            let r = HookRunner::new(hooks, project_dir)
                .with_cwd(cwd)
                .with_permission_mode(mode)
                .with_sandbox(sandbox.clone(), cwd);
            if is_subagent { r.with_agent(agent) } else { r }
        };
        let parent = ctx.extensions().get::<ParentHooks>().map(|p| {
            p.0.clone()
                .with_cwd(cwd)
                .with_sandbox(sandbox.clone(), cwd)
                .with_permission_mode(mode)
                .with_agent(agent)
        });
        (
            Self {
                own: runner(own),
                settings: runner(settings.clone()),
                parent,
                is_subagent,
                agent: agent.to_string(),
            },
            warnings,
        )
    }

    /// The context for this run: a hook session, and this agent's subagent hooks for its
    /// children (replacing its parent's).
    pub(crate) fn child_context(&self, ctx: TaskContext) -> TaskContext {
        let ctx = with_hook_session(ctx);
        let runner = self
            .own
            .clone()
            .replacing_hooks(self.own.hooks().subagent_hooks());
        ctx.with_extension(ParentHooks(runner))
    }

    /// Wraps the run's tools with the settings' and the agent's own tool hooks.
    pub(crate) fn wrap_tools(&self, tools: Vec<Arc<dyn Tool>>) -> Vec<Arc<dyn Tool>> {
        let own = self.own.hooks().tool_hooks();
        let mut all = self.settings.hooks().tool_hooks();
        let dropped = all.merge(own);
        if dropped > 0 {
            tracing::warn!(
                agent = %self.agent,
                "{dropped} of the agent's tool hooks dropped: at most {MAX_HOOKS} run per agent, \
                 settings hooks first"
            );
        }
        self.own.clone().replacing_hooks(all).wrap_tools(tools)
    }

    /// `SubagentStart`: the settings' and the parent's hooks for this agent. Returns the
    /// additional context they gave (for the system prompt).
    pub(crate) async fn start(&self, ctx: &TaskContext) -> Vec<String> {
        let mut context = Vec::new();
        for runner in self.subagent_runners() {
            let v = runner
                .fire(
                    HookEvent::SubagentStart,
                    &self.agent,
                    false,
                    Map::new(),
                    ctx,
                )
                .await;
            context.extend(v.context);
        }
        context
    }

    /// The runners of the `Subagent*` events beyond the agent's own: the settings' and the
    /// parent's, and only when the agent runs as a subagent.
    fn subagent_runners(&self) -> impl Iterator<Item = &HookRunner> {
        std::iter::once(&self.settings)
            .chain(self.parent.as_ref())
            .filter(|_| self.is_subagent)
    }

    /// `SubagentStop` (and the agent's own `Stop`) when the run is about to end with
    /// `last_message`. Returns the reason to continue, when a hook blocks the stop.
    pub(crate) async fn stop(
        &self,
        last_message: &str,
        stop_hook_active: bool,
        ctx: &TaskContext,
    ) -> Option<String> {
        let mut extra = Map::new();
        extra.insert("stop_hook_active".into(), json!(stop_hook_active));
        extra.insert("last_assistant_message".into(), json!(last_message));
        let mut reasons: Vec<String> = Vec::new();
        let mut stop = false;
        // The agent's own frontmatter `Stop` hooks first, then the settings' and the parent's.
        let runners = std::iter::once((&self.own, true))
            .chain(self.subagent_runners().map(|runner| (runner, false)));
        for (runner, own_stop) in runners {
            let v = runner
                .fire(
                    HookEvent::SubagentStop,
                    &self.agent,
                    own_stop,
                    extra.clone(),
                    ctx,
                )
                .await;
            stop |= v.stop.is_some();
            reasons.extend(v.block);
        }
        if stop || reasons.is_empty() {
            None
        } else {
            Some(reasons.join("\n"))
        }
    }
}
