//! Forks: a `Task` call with `subagent_type: "fork"` starts a copy of the calling agent that
//! inherits its conversation so far. Which `subagent_type` asks for a fork is the host's naming
//! rule (`subagent_core::is_fork`); the contract is the [`ForkSource`] below.
//!
//! The agent loop that runs the caller knows the conversation; the delegation tool that starts
//! the fork does not. The loop hands it over, for the tool calls of one turn, as a
//! [`ForkSource`] in the [`TaskContext`]'s extensions: an executor that runs the fork from the
//! caller's system prompt, tools, model and messages. The delegation tool runs that executor
//! like any other child (depth + 1, the concurrency cap, the budget, background runs).

use std::fmt;
use std::sync::Arc;

use crate::{SubagentExecutor, TaskContext};

/// The `subagent_type` that starts a fork (matched ignoring ASCII case; see [`is_fork`]).
#[deprecated(
    since = "0.3.1",
    note = "the host's naming rule: use subagent_core::FORK_SUBAGENT_TYPE"
)]
pub const FORK_SUBAGENT_TYPE: &str = "fork";

/// True when a `Task` call's `subagent_type` asks for a fork: `fork`, ASCII case aside.
#[deprecated(
    since = "0.3.1",
    note = "the host's naming rule: use subagent_core::is_fork"
)]
#[allow(deprecated)]
pub fn is_fork(subagent_type: &str) -> bool {
    subagent_type
        .trim()
        .eq_ignore_ascii_case(FORK_SUBAGENT_TYPE)
}

/// A run's conversation at the point where it calls tools, offered to the delegation tool so a
/// `Task` call with `subagent_type: "fork"` can start a copy of the run.
///
/// Put into the context of a turn's tool calls by the agent loop (only for a turn that asks
/// for a fork). It belongs to one run: [`is_for`](Self::is_for) is true only for a context of
/// that run (same depth and task id), so a child that inherits the extension (every child
/// context copies its parent's extensions) cannot fork its parent's conversation.
#[derive(Clone)]
pub struct ForkSource {
    executor: Arc<dyn SubagentExecutor>,
    depth: u32,
    task_id: Option<String>,
}

impl fmt::Debug for ForkSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ForkSource")
            .field("depth", &self.depth)
            .field("task_id", &self.task_id)
            .finish_non_exhaustive()
    }
}

impl ForkSource {
    /// The conversation of the run of `ctx`, run as a fork by `executor`.
    pub fn new(executor: Arc<dyn SubagentExecutor>, ctx: &TaskContext) -> Self {
        Self {
            executor,
            depth: ctx.depth(),
            task_id: ctx.task_id().map(str::to_string),
        }
    }

    /// Runs a fork: `execute(call, definition, child_context)` where `call.prompt` is the
    /// fork's task.
    pub fn executor(&self) -> &Arc<dyn SubagentExecutor> {
        &self.executor
    }

    /// True when `ctx` is a context of the run this conversation belongs to (same depth and
    /// task id), not one of its children's.
    pub fn is_for(&self, ctx: &TaskContext) -> bool {
        self.depth == ctx.depth() && self.task_id.as_deref() == ctx.task_id()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::SubagentType;
    use crate::typed::tests::Notes;

    #[test]
    fn a_fork_source_belongs_to_its_run_only() {
        let run = TaskContext::new().with_task_id("t1");
        let source = ForkSource::new(SubagentType::from(Notes).executor().clone(), &run);
        assert!(source.is_for(&run));
        assert!(source.is_for(&run.clone().with_agent("renamed")));
        // A child copies the extension but is not the run it belongs to.
        let child = run.child("c", Some("t2".into()));
        assert!(!source.is_for(&child));
        assert!(!source.is_for(&run.child("c", Some("t1".into()))));
        assert!(!source.is_for(&TaskContext::new()));
    }
}
