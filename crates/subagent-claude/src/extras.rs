//! What a Claude Code agent file asks of one run besides the loop itself: persistent memory,
//! worktree isolation, hooks and reasoning effort. The executor prepares a [`RunExtras`] per
//! run and lets it adjust the tools, the system prompt and the run.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use subagent_runtime::{AgentRuntime, RunInput, RunSpec};
use subagent_spi::{
    Effort, ProgressKind, SubagentError, TaskContext, TaskOutcome, TaskStatus, Tool,
};
use subagent_tools::{ToolSet, Workspace};

use crate::definition::{ClaudeAgentDefinition, PermissionMode};
use crate::hooks::{Hooks, MAX_STOP_CONTINUATIONS, RunHooks, RunPlace};
use crate::memory::{self, MemoryScope};
use crate::worktree::Worktree;

/// The built-in tools that work on files or run commands in a root directory.
const ROOTED_TOOLS: [&str; 6] = ["Read", "Write", "Edit", "Glob", "Grep", "Bash"];

/// The tools an agent with memory needs to keep it.
const MEMORY_TOOLS: [&str; 3] = ["Read", "Write", "Edit"];

/// Reads `effort`: Claude Code's levels, with `xhigh` read as `max`.
pub(crate) fn parse_effort(text: &str) -> Option<Effort> {
    if text.trim().eq_ignore_ascii_case("xhigh") {
        return Some(Effort::Max);
    }
    Effort::parse(text)
}

/// Reads `isolation`: `Ok(true)` for `worktree`, `Ok(false)` for none, an error text otherwise.
pub(crate) fn parse_isolation(value: Option<&str>) -> Result<bool, String> {
    match value.map(str::trim) {
        None | Some("") | Some("none") => Ok(false),
        Some(v) if v.eq_ignore_ascii_case("worktree") => Ok(true),
        Some(other) => Err(format!(
            "`isolation: {other}` is not supported (only `worktree`); the agent runs without \
             isolation"
        )),
    }
}

/// Per-run setup from the agent file's `memory`, `isolation`, `hooks` and `effort`.
pub(crate) struct RunExtras {
    worktree: Option<Worktree>,
    memory: Option<(MemoryScope, PathBuf, memory::MemoryText)>,
    hooks: RunHooks,
    run_root: PathBuf,
    effort: Option<Effort>,
}

fn setup_error(agent: &str, message: String) -> SubagentError {
    SubagentError::Execution {
        agent: agent.to_string(),
        message,
        source: None,
    }
}

impl RunExtras {
    /// Prepares a run of `def` in the project `project_root`: creates the memory directory and
    /// reads `MEMORY.md`, creates the worktree, reads the hooks.
    pub(crate) async fn prepare(
        def: &ClaudeAgentDefinition,
        mode: PermissionMode,
        ctx: &TaskContext,
        settings_hooks: &Hooks,
        sandbox: &subagent_tools::SandboxPolicy,
        project_root: &Path,
        home: Option<&Path>,
    ) -> Result<Self, SubagentError> {
        let agent = def.name.as_str();
        // Where the memory is, checked: a directory or `MEMORY.md` that symlinks lead out of
        // the workspace (or out of `~/.claude/agent-memory`) is refused. The same refusal was
        // a load warning (`agent_load_warnings`), shown by hosts before the run.
        let memory = match MemoryScope::from_value(def.memory.as_ref()) {
            Ok(Some(scope)) => {
                let (name, root, home) = (
                    agent.to_string(),
                    project_root.to_path_buf(),
                    home.map(Path::to_path_buf),
                );
                let located = tokio::task::spawn_blocking(move || {
                    memory::locate(scope, &name, &root, home.as_deref(), true)
                })
                .await
                .unwrap_or_else(|e| Err(format!("memory: {e}")));
                match located {
                    Ok(loc) if loc.create_failed.is_some() => {
                        return Err(setup_error(agent, loc.create_failed.unwrap_or_default()));
                    }
                    Ok(loc) => {
                        if let Some(why) = &loc.refused_md {
                            tracing::info!(agent, "{why}");
                        }
                        let text = match &loc.memory_md {
                            Some(md) => memory::load(md).await.unwrap_or_else(|e| {
                                tracing::info!(agent, "{e}");
                                memory::MemoryText::default()
                            }),
                            None => memory::MemoryText::default(),
                        };
                        Some((scope, loc.dir, text))
                    }
                    Err(e) => {
                        tracing::info!(agent, "{e}");
                        None
                    }
                }
            }
            Ok(None) => None,
            Err(e) => {
                tracing::debug!(agent, "{e}");
                None
            }
        };
        let isolate = parse_isolation(def.isolation.as_deref()).unwrap_or_else(|e| {
            tracing::debug!(agent, "{e}");
            false
        });
        let worktree = if isolate {
            let wt = Worktree::create(project_root, agent)
                .await
                .map_err(|e| setup_error(agent, e))?;
            ctx.emit(ProgressKind::Status {
                message: format!(
                    "isolated in worktree {} (branch {})",
                    wt.path.display(),
                    wt.branch
                ),
            });
            Some(wt)
        } else {
            None
        };
        let run_root = worktree
            .as_ref()
            .map_or_else(|| project_root.to_path_buf(), |w| w.run_root.clone());
        let (hooks, warnings) = RunHooks::new(
            def.hooks.as_ref(),
            settings_hooks,
            ctx,
            agent,
            mode,
            RunPlace {
                project_dir: project_root,
                cwd: &run_root,
                sandbox,
            },
        );
        // The same warnings were given when the file was loaded.
        for w in warnings {
            tracing::debug!(agent, "hooks: {w}");
        }
        let effort = def.effort.as_deref().and_then(|e| {
            let parsed = parse_effort(e);
            if parsed.is_none() {
                // A load warning already.
                tracing::debug!(
                    agent,
                    "unknown `effort: {e}`; the provider's default is used"
                );
            }
            parsed
        });
        Ok(Self {
            worktree,
            memory,
            hooks,
            run_root,
            effort,
        })
    }

    /// Undoes the setup when the run does not happen (removes an unchanged worktree).
    pub(crate) async fn discard(self) {
        if let Some(wt) = self.worktree {
            let _ = wt.finish().await;
        }
    }

    /// The reasoning effort for the run's requests.
    pub(crate) fn effort(&self) -> Option<Effort> {
        self.effort
    }

    /// The context the run uses (a hook session; this agent's subagent hooks for its children).
    pub(crate) fn run_context(&self, ctx: TaskContext) -> TaskContext {
        self.hooks.child_context(ctx)
    }

    fn memory_dir(&self) -> Option<&Path> {
        self.memory.as_ref().map(|(_, dir, _)| dir.as_path())
    }

    /// Re-roots the built-in file and shell tools of `tools` on the run's root (the worktree)
    /// and lets them reach the memory directory, when either needs it. Done before the agent's
    /// tool rules are applied, so the rules see the same names.
    pub(crate) fn reroot_tools(&self, tools: &mut [Arc<dyn Tool>]) -> Result<(), SubagentError> {
        let memory_outside = self
            .memory_dir()
            .is_some_and(|d| !d.starts_with(&self.run_root));
        if self.worktree.is_none() && !memory_outside {
            return Ok(());
        }
        let ws = Workspace::new(&self.run_root)
            .map_err(|e| setup_error("", format!("the run's workspace: {e}")))?;
        let ws = match self.memory_dir() {
            Some(dir) if memory_outside => ws
                .with_extra_root(dir)
                .map_err(|e| setup_error("", format!("the memory directory: {e}")))?,
            _ => ws,
        };
        for t in tools.iter_mut() {
            if ROOTED_TOOLS.contains(&t.name())
                && let Some(rooted) = ToolSet::get(&ws, t.name())
            {
                *t = rooted;
            }
        }
        Ok(())
    }

    /// Adds `Read`, `Write` and `Edit` confined to the memory directory when the agent has
    /// memory and its tools lack them (unless `disallowedTools` removes them).
    pub(crate) fn add_memory_tools(
        &self,
        def: &ClaudeAgentDefinition,
        mut tools: Vec<Arc<dyn Tool>>,
    ) -> Vec<Arc<dyn Tool>> {
        let Some(dir) = self.memory_dir() else {
            return tools;
        };
        let ws = match Workspace::new(dir) {
            Ok(ws) => ws,
            Err(e) => {
                tracing::warn!(agent = %def.name, "memory tools unavailable: {e}");
                return tools;
            }
        };
        for name in MEMORY_TOOLS {
            let present = tools.iter().any(|t| t.name() == name);
            let refused = def.disallowed_tools.iter().any(|r| r.matches(name));
            if !present
                && !refused
                && let Some(t) = ToolSet::get(&ws, name)
            {
                tools.push(t);
            }
        }
        tools
    }

    /// Wraps the tools with the settings' and the agent's tool hooks.
    pub(crate) fn wrap_tools(&self, tools: Vec<Arc<dyn Tool>>) -> Vec<Arc<dyn Tool>> {
        self.hooks.wrap_tools(tools)
    }

    /// What a fresh run adds to the system prompt: the memory section and the context
    /// `SubagentStart` hooks gave.
    pub(crate) async fn system_additions(&self, ctx: &TaskContext) -> String {
        let mut out = String::new();
        if let Some((scope, dir, text)) = &self.memory {
            out.push_str("\n\n");
            out.push_str(&memory::prompt_section(*scope, dir, text));
        }
        let context = self.hooks.start(ctx).await;
        if !context.is_empty() {
            out.push_str("\n\n# Context from hooks\n\n");
            out.push_str(&context.join("\n\n"));
        }
        out
    }

    /// Runs the agent: the loop, then `SubagentStop` hooks (which may send it back to work, at
    /// most [`MAX_STOP_CONTINUATIONS`] times), then the worktree's end (removed when unchanged,
    /// else reported in the answer).
    pub(crate) async fn run(
        self,
        runtime: &AgentRuntime,
        spec: RunSpec,
        ctx: &TaskContext,
    ) -> Result<TaskOutcome, SubagentError> {
        let result = self.run_with_stop_hooks(runtime, spec, ctx).await;
        let note = match self.worktree {
            Some(wt) => wt.finish().await.note(),
            None => None,
        };
        match (result, note) {
            (Ok(mut o), Some(note)) => {
                o.text = format!("{}\n\n{note}", o.text.trim_end());
                Ok(o)
            }
            (Err(e), Some(note)) => {
                tracing::warn!(agent = %ctx.agent(), "{note}");
                Err(e)
            }
            (result, None) => result,
        }
    }

    async fn run_with_stop_hooks(
        &self,
        runtime: &AgentRuntime,
        spec: RunSpec,
        ctx: &TaskContext,
    ) -> Result<TaskOutcome, SubagentError> {
        let mut outcome = runtime.run(spec.clone(), ctx).await?;
        let mut rounds = 0u32;
        loop {
            if ctx.cancel().is_cancelled() {
                break;
            }
            let Some(reason) = self.hooks.stop(&outcome.text, rounds > 0, ctx).await else {
                break;
            };
            if outcome.status != TaskStatus::Completed {
                break;
            }
            let Some(session) = outcome.session_id.clone() else {
                break;
            };
            if rounds >= MAX_STOP_CONTINUATIONS {
                tracing::warn!(
                    agent = %ctx.agent(),
                    "SubagentStop hooks blocked the stop {rounds} times; stopping anyway"
                );
                break;
            }
            rounds += 1;
            ctx.emit(ProgressKind::Status {
                message: format!(
                    "a stop hook sent the agent back to work: {}",
                    reason.lines().next().unwrap_or("")
                ),
            });
            let mut next_spec = spec.clone();
            next_spec.system = None;
            next_spec.input = RunInput::Resume {
                session_id: session,
                prompt: reason,
            };
            let next = runtime.run(next_spec, ctx).await?;
            outcome = continued(outcome, next);
        }
        Ok(outcome)
    }
}

/// The outcome of a run sent back to work by a stop hook: `next`, with the usage and children
/// of what came `before` it. Durations add up saturating (like the token counts): the sum of
/// hostile ones must not overflow.
fn continued(mut before: TaskOutcome, mut next: TaskOutcome) -> TaskOutcome {
    next.usage.add_tokens(&before.usage);
    next.usage.duration_ms = next
        .usage
        .duration_ms
        .saturating_add(before.usage.duration_ms);
    let mut children = std::mem::take(&mut before.children);
    children.append(&mut next.children);
    next.children = children;
    next
}

#[cfg(test)]
mod tests {
    use super::*;
    use subagent_spi::{Usage, UsageNode};

    #[test]
    fn a_continued_run_adds_up_usage_and_hostile_durations_saturate() {
        let node = |a: &str| UsageNode::new(a, "K", TaskStatus::Completed, Usage::new());
        let before = TaskOutcome::completed("first")
            .with_usage(
                Usage::new()
                    .with_tokens(10, 5)
                    .with_turns(1)
                    .with_duration_ms(u64::MAX - 1),
            )
            .with_children(vec![node("a")]);
        let next = TaskOutcome::completed("second")
            .with_usage(
                Usage::new()
                    .with_tokens(u64::MAX, 1)
                    .with_turns(2)
                    .with_duration_ms(u64::MAX),
            )
            .with_children(vec![node("b")]);
        let o = continued(before, next);
        assert_eq!(o.text, "second");
        assert_eq!(o.usage.duration_ms, u64::MAX, "saturated, no overflow");
        assert_eq!(
            (o.usage.input_tokens, o.usage.output_tokens, o.usage.turns),
            (u64::MAX, 6, 3)
        );
        let agents: Vec<&str> = o.children.iter().map(|c| c.agent.as_str()).collect();
        assert_eq!(agents, ["a", "b"], "in order");
        // Ordinary durations add up.
        let o = continued(
            TaskOutcome::completed("").with_usage(Usage::new().with_duration_ms(40)),
            TaskOutcome::completed("").with_usage(Usage::new().with_duration_ms(2)),
        );
        assert_eq!(o.usage.duration_ms, 42);
    }
}
