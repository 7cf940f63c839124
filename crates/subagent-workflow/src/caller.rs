//! [`AgentCaller`]: how a workflow's `agent()` calls reach agents. The Task tool is one (its
//! public [`dispatch`](task_tool::TaskTool::dispatch): every registered agent of every kind,
//! under the tree's concurrency cap and budgets, with typed results), so kinds need no change
//! to be called from a workflow.

use subagent_spi::{SubagentError, TaskCall, TaskContext, TaskOutcome, async_trait};

/// A finished agent call.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct CallDone {
    /// The agent's registered name.
    pub agent: String,
    /// Its kind (`CLAUDE`, `A2A`, `MCP`, …).
    pub kind: String,
    /// The child run's task id.
    pub task_id: Option<String>,
    /// How it ended.
    pub outcome: TaskOutcome,
}

impl CallDone {
    /// A finished call.
    pub fn new(
        agent: impl Into<String>,
        kind: impl Into<String>,
        task_id: Option<String>,
        outcome: TaskOutcome,
    ) -> Self {
        Self {
            agent: agent.into(),
            kind: kind.into(),
            task_id,
            outcome,
        }
    }
}

/// Runs one agent call for a workflow, in the foreground, as a child of `ctx`.
#[async_trait]
pub trait AgentCaller: Send + Sync {
    /// Runs `call` (never in the background) as a child of `ctx`: its progress goes to `ctx`'s
    /// sink, its usage to `ctx`'s budget. An unknown agent is
    /// [`SubagentError::UnknownSubagent`] naming the available ones.
    async fn call(&self, call: TaskCall, ctx: &TaskContext) -> Result<CallDone, SubagentError>;
}

#[async_trait]
impl AgentCaller for task_tool::TaskTool {
    async fn call(&self, call: TaskCall, ctx: &TaskContext) -> Result<CallDone, SubagentError> {
        let call = call.in_background(false);
        match self.dispatch(call, ctx).await? {
            task_tool::Dispatch::Foreground {
                agent,
                kind,
                task_id,
                outcome,
            } => Ok(CallDone::new(agent, kind.as_str(), Some(task_id), outcome)),
            task_tool::Dispatch::Background { agent, .. } => Err(SubagentError::execution(
                agent,
                "started in the background, which a workflow call never asks for",
            )),
            other => Err(SubagentError::execution(
                "workflow",
                format!("unexpected dispatch result {other:?}"),
            )),
        }
    }
}
