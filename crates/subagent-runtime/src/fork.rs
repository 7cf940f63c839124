//! Forks (Claude Code's fork subagent): a `Task` call with `subagent_type: "fork"` starts a copy
//! of the calling run that inherits its conversation.
//!
//! When a turn's calls include such a call, the loop puts a [`ForkSource`] into the context of
//! that turn's tool calls: a [`ForkRun`] holding the run's system prompt, tools (the very
//! `Arc`s, with their permission and hook wrappers), model, limits and messages up to and
//! including the reply that made the call. The `Task` tool runs it as a child like any agent.
//!
//! The fork's first request repeats the caller's last one byte for byte (same system prompt,
//! same tool list in the same order, same messages: after a compaction, the compacted ones the
//! caller sent, not its whole transcript) and appends the caller's reply, one
//! placeholder result per call of that reply (the same text for every call, so sibling forks
//! share their prefix too) and the fork's task: a provider's prompt cache serves the prefix.
//! So the tool list is not trimmed for the fork: `Task` stays offered, and the nesting limit
//! refuses a fork's delegation once the fork's depth reaches it.

use std::sync::Arc;

use subagent_core::is_fork;
use subagent_spi::chat::{ChatMessage, ToolCall};
use subagent_spi::{
    CacheScope, ChatModel, Effort, ForkSource, SubagentDefinition, SubagentError, SubagentExecutor,
    TaskCall, TaskContext, TaskOutcome, Tool, async_trait,
};

use crate::cache_scope::ForkStart;
use crate::{AgentRuntime, Limits, RunInput, RunSpec};

/// The name of the delegation tool whose calls may ask for a fork.
const TASK_TOOL: &str = "Task";

/// The result every call of the forking reply shows in the fork's copy of the conversation
/// (the same for all calls, so forks started by one reply share their prompt prefix).
pub(crate) const FORK_PLACEHOLDER_RESULT: &str =
    "[forked here: this call runs in the parent conversation, not in the fork]";

/// What starts the fork's task message, before the `prompt` of its `Task` call.
pub(crate) const FORK_DIRECTIVE: &str = "You are a fork: a copy of the agent of the \
conversation above, started by its `Task` call with `subagent_type: \"fork\"`. You have its \
tools. What you do stays out of its conversation: only your final answer goes back to it. Do \
the task below yourself with your tools (do not hand it on to another fork), then answer with \
the result.\n\nYour task:\n";

/// A run's conversation at one turn, runnable as a fork (the executor of its [`ForkSource`]).
pub(crate) struct ForkRun {
    pub(crate) runtime: AgentRuntime,
    /// The caller's conversation, which the fork continues (see `cache_scope`).
    pub(crate) scope: CacheScope,
    pub(crate) system: Option<String>,
    /// The messages of the caller's last request (its compacted view when the run compacted)
    /// and the reply to it, whose calls are being run.
    pub(crate) messages: Vec<ChatMessage>,
    pub(crate) tools: Vec<Arc<dyn Tool>>,
    pub(crate) model: Arc<dyn ChatModel>,
    pub(crate) model_name: Option<String>,
    pub(crate) limits: Limits,
    pub(crate) stream: bool,
    pub(crate) effort: Option<Effort>,
}

/// The context for a turn's tool calls: `ctx` with a [`ForkSource`] when a call asks for a
/// fork (`run` is only built then), else `None` (use `ctx` itself).
pub(crate) fn tool_context(
    ctx: &TaskContext,
    calls: &[ToolCall],
    run: impl FnOnce() -> ForkRun,
) -> Option<TaskContext> {
    if !calls.iter().any(asks_for_fork) {
        return None;
    }
    let source = ForkSource::new(Arc::new(run()), ctx);
    Some(ctx.clone().with_extension(source))
}

/// True for a `Task` call with `subagent_type: "fork"`.
fn asks_for_fork(call: &ToolCall) -> bool {
    call.name == TASK_TOOL
        && call
            .arguments
            .get("subagent_type")
            .and_then(serde_json::Value::as_str)
            .is_some_and(is_fork)
}

/// The fork's messages: the caller's, a placeholder result for each call of its last reply,
/// and the fork's task.
pub(crate) fn fork_messages(parent: &[ChatMessage], prompt: &str) -> Vec<ChatMessage> {
    let calls = match parent.last() {
        Some(ChatMessage::Assistant { tool_calls, .. }) => tool_calls.as_slice(),
        _ => &[],
    };
    let mut messages = Vec::with_capacity(parent.len() + calls.len() + 1);
    messages.extend_from_slice(parent);
    messages.extend(calls.iter().map(|c| ChatMessage::Tool {
        call_id: c.id.clone(),
        name: c.name.clone(),
        content: FORK_PLACEHOLDER_RESULT.to_string(),
        is_error: false,
    }));
    let mut task = String::with_capacity(FORK_DIRECTIVE.len() + prompt.len());
    task.push_str(FORK_DIRECTIVE);
    task.push_str(prompt);
    messages.push(ChatMessage::user(task));
    messages
}

#[async_trait]
impl SubagentExecutor for ForkRun {
    async fn execute(
        &self,
        call: TaskCall,
        _definition: Arc<dyn SubagentDefinition>,
        ctx: TaskContext,
    ) -> Result<TaskOutcome, SubagentError> {
        if let Some(session) = call.resume {
            return Err(SubagentError::Resume {
                session,
                reason: "a fork cannot be resumed: start a new fork with the task in `prompt` \
                         (it inherits the conversation as it is now)"
                    .to_string(),
            });
        }
        if let Some(model) = call.model {
            return Err(SubagentError::InvalidInput(format!(
                "a fork runs on its caller's model (that is what lets the provider's prompt \
                 cache serve the conversation it inherits), so `model` (`{model}`) cannot be \
                 set with subagent_type \"fork\""
            )));
        }
        // A typed fork answers with JSON text valid under the schema (checked by the Task
        // tool), given in its task: no `StructuredOutput` tool and no system prompt of its own,
        // which would change the prefix it shares with its caller (the tools come first in a
        // provider's cache, so one more tool would leave nothing of it cached).
        let output_schema = call
            .output_schema
            .as_ref()
            .map(|s| {
                subagent_schema::OutputSchema::compile(s, subagent_schema::Profile::host())
                    .map_err(|e| SubagentError::InvalidInput(format!("output_schema: {e}")))
            })
            .transpose()?;
        let task = match &output_schema {
            Some(schema) => format!(
                "{}{}",
                call.prompt,
                crate::structured::Structured::text_instruction(schema)
            ),
            None => call.prompt.clone(),
        };
        let fork = ForkStart {
            scope: self.scope.clone(),
            // The caller's last request: its messages but the reply that made this call.
            continues: self.messages.len().saturating_sub(1),
        };
        let spec = RunSpec {
            output_schema,
            system: self.system.clone(),
            input: RunInput::Messages(fork_messages(&self.messages, &task)),
            tools: self.tools.clone(),
            model: self.model.clone(),
            model_name: self.model_name.clone(),
            limits: self.limits.clone(),
            stream: self.stream,
            effort: self.effort,
        };
        self.runtime.run_with(spec, &ctx, Some(fork)).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(name: &str, args: serde_json::Value) -> ToolCall {
        ToolCall::new("c1", name, args)
    }

    #[test]
    fn only_task_calls_naming_fork_ask_for_one() {
        assert!(asks_for_fork(&call(
            "Task",
            serde_json::json!({"subagent_type": "Fork", "prompt": "p"})
        )));
        assert!(!asks_for_fork(&call(
            "Task",
            serde_json::json!({"subagent_type": "explorer"})
        )));
        assert!(!asks_for_fork(&call(
            "Read",
            serde_json::json!({"subagent_type": "fork"})
        )));
        assert!(!asks_for_fork(&call("Task", serde_json::json!("fork"))));
    }

    #[test]
    fn the_fork_keeps_the_conversation_and_answers_every_pending_call_alike() {
        let parent = vec![
            ChatMessage::user("hi"),
            ChatMessage::assistant_with_tools(
                "",
                vec![
                    ToolCall::new("a", "Task", serde_json::json!({"subagent_type": "fork"})),
                    ToolCall::new("b", "Read", serde_json::json!({"path": "x"})),
                ],
            ),
        ];
        let forked = fork_messages(&parent, "count the files");
        assert_eq!(&forked[..2], &parent[..]);
        for (m, id) in forked[2..4].iter().zip(["a", "b"]) {
            assert!(
                matches!(m, ChatMessage::Tool { call_id, content, is_error: false, .. }
                if call_id == id && content == FORK_PLACEHOLDER_RESULT)
            );
        }
        assert!(matches!(&forked[4], ChatMessage::User { content }
            if content.starts_with(FORK_DIRECTIVE) && content.ends_with("count the files")));
        assert_eq!(forked.len(), 5);
    }
}
