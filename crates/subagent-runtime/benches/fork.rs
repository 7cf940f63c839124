//! A fork's setup: what a `Task` call with `subagent_type: "fork"` costs beyond starting a
//! fresh one-turn child, after a parent conversation of 10 tool turns (23 messages). An instant
//! in-process model answers, so the time measured is our own: the conversation's snapshot, the
//! fork's messages (a copy of the parent's), its run's setup and its bigger first request.
//!
//! `fork/*` minus `fresh/*` is what a fork costs more than a fresh one-turn child, its larger
//! first request and transcript included; `fork/*` minus `same_size/*` (a child run on a
//! conversation as long as the fork's, given as [`RunInput::Messages`]) is the fork's setup
//! proper: the snapshot of the conversation, the fork's messages, the context it is offered in.

#[path = "support/runtime.rs"]
mod runtime;

use std::sync::Arc;

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;
use subagent_runtime::{AgentRuntime, RunInput, RunSpec};
use subagent_spi::chat::{
    ChatMessage, ChatRequest, ChatResponse, StopReason, TokenUsage, ToolCall,
};
use subagent_spi::{
    ChatModel, ForkSource, ModelError, SubagentDefinition, SubagentKind, TaskCall, TaskContext,
    TaskOutcome, Tool, ToolEffect, ToolError, ToolOutput, async_trait,
};
use subagent_testkit::{FnKind, FnTool, fn_ref};

const TOOL_TURNS: usize = 10;

/// Answers by what it is asked: a child (fresh or fork) answers at once; the parent calls
/// `noop` for 10 turns, then `Task`, then answers.
struct InstantModel;

fn reply(text: &str, calls: Vec<ToolCall>) -> ChatResponse {
    let stop = if calls.is_empty() {
        StopReason::EndTurn
    } else {
        StopReason::ToolUse
    };
    ChatResponse::new(text, stop, TokenUsage::new(10, 5), "instant").with_tool_calls(calls)
}

#[async_trait]
impl ChatModel for InstantModel {
    fn model_name(&self) -> &str {
        "instant"
    }

    async fn chat(&self, request: ChatRequest) -> Result<ChatResponse, ModelError> {
        let child = request.system.as_deref() == Some("child")
            || matches!(request.messages.last(),
                Some(ChatMessage::User { content }) if content.starts_with("You are a fork"));
        if child {
            return Ok(reply("child done", Vec::new()));
        }
        let results = request
            .messages
            .iter()
            .filter(|m| matches!(m, ChatMessage::Tool { .. }))
            .count();
        Ok(match results {
            n if n < TOOL_TURNS => reply(
                "",
                vec![ToolCall::new(format!("c{n}"), "noop", json!({"n": n}))],
            ),
            n if n == TOOL_TURNS => reply(
                "",
                vec![ToolCall::new(
                    "task",
                    "Task",
                    json!({"description": "d", "prompt": "do it", "subagent_type": "fork"}),
                )],
            ),
            _ => reply("final", Vec::new()),
        })
    }
}

/// How the bench's `Task` starts its child.
#[derive(Clone, Copy)]
enum Mode {
    /// A fork, from the loop's [`ForkSource`].
    Fork,
    /// A fresh child on one prompt.
    Fresh,
    /// A child on a conversation as long as a fork's.
    SameSize,
}

/// The messages a fork of the bench's parent starts from (same shape and sizes).
fn fork_sized_conversation() -> Vec<ChatMessage> {
    let mut m = vec![ChatMessage::user("go")];
    for n in 0..TOOL_TURNS {
        m.push(ChatMessage::assistant_with_tools(
            "",
            vec![ToolCall::new(format!("c{n}"), "noop", json!({"n": n}))],
        ));
        m.push(ChatMessage::tool_result(
            format!("c{n}"),
            "noop",
            "ok: a result of a realistic size ".repeat(8),
            false,
        ));
    }
    m.push(ChatMessage::assistant_with_tools(
        "",
        vec![ToolCall::new(
            "task",
            "Task",
            json!({"description": "d", "prompt": "do it", "subagent_type": "fork"}),
        )],
    ));
    m.push(ChatMessage::tool_result(
        "task",
        "Task",
        "placeholder",
        false,
    ));
    m.push(ChatMessage::user("You are a fork. Do it."));
    m
}

/// A `Task` tool that starts a fork (from the loop's [`ForkSource`]) or another child.
struct Task {
    mode: Mode,
    conversation: Vec<ChatMessage>,
    runtime: AgentRuntime,
    model: Arc<dyn ChatModel>,
    def: Arc<dyn SubagentDefinition>,
}

#[async_trait]
impl Tool for Task {
    fn name(&self) -> &str {
        "Task"
    }
    fn description(&self) -> String {
        "Starts a subagent.".into()
    }
    fn input_schema(&self) -> serde_json::Value {
        json!({"type": "object"})
    }
    fn effect(&self) -> ToolEffect {
        ToolEffect::Delegate
    }
    async fn call(
        &self,
        _input: serde_json::Value,
        ctx: &TaskContext,
    ) -> Result<ToolOutput, ToolError> {
        let child = ctx.child("child", None);
        let outcome = if let Mode::Fork = self.mode {
            let source = ctx
                .extensions()
                .get::<ForkSource>()
                .filter(|s| s.is_for(ctx))
                .expect("the loop offers its conversation");
            source
                .executor()
                .execute(TaskCall::new("fork", "d", "do it"), self.def.clone(), child)
                .await
        } else {
            let mut spec = RunSpec::new(self.model.clone(), "do it").with_system("child");
            if let Mode::SameSize = self.mode {
                spec.input = RunInput::Messages(self.conversation.clone());
            }
            self.runtime.run(spec, &child).await
        };
        let outcome = outcome.map_err(|e| ToolError::failed("Task", e.to_string()))?;
        Ok(ToolOutput::text(outcome.text))
    }
}

fn fork_setup(c: &mut Criterion) {
    let rt = runtime::current_thread();
    let runtime = AgentRuntime::default();
    let model: Arc<dyn ChatModel> = Arc::new(InstantModel);
    let noop: Arc<dyn Tool> = Arc::new(
        FnTool::new(
            "noop",
            "Does nothing.",
            json!({"type": "object", "properties": {"n": {"type": "integer"}}}),
            |_| {
                Ok(ToolOutput::text(
                    "ok: a result of a realistic size ".repeat(8),
                ))
            },
        )
        .with_effect(ToolEffect::ReadOnly),
    );
    // The definition the fork is started with (its executor is the loop's, not this kind's).
    let def: Arc<dyn SubagentDefinition> = Arc::new(
        rt.block_on(
            FnKind::new()
                .agent("fork", |_, _| async {
                    Ok(TaskOutcome::completed("unused"))
                })
                .resolve(&fn_ref("fork?a fork")),
        )
        .expect("resolves"),
    );
    let ctx = TaskContext::new();

    let mut group = c.benchmark_group("fork_setup");
    for (mode, name) in [
        (Mode::Fork, "fork/after_10_turns"),
        (Mode::Fresh, "fresh/after_10_turns"),
        (Mode::SameSize, "same_size/after_10_turns"),
    ] {
        let task: Arc<dyn Tool> = Arc::new(Task {
            mode,
            conversation: fork_sized_conversation(),
            runtime: runtime.clone(),
            model: model.clone(),
            def: def.clone(),
        });
        let tools = vec![noop.clone(), task];
        group.bench_function(name, |b| {
            b.to_async(&rt).iter(|| {
                let spec = RunSpec::new(model.clone(), "go")
                    .with_system("You are a benchmark.")
                    .with_tools(tools.clone());
                let runtime = &runtime;
                let ctx = &ctx;
                async move {
                    let out = runtime.run(spec, ctx).await.expect("run succeeds");
                    assert_eq!(out.text, "final");
                    out
                }
            });
        });
    }
    group.finish();
}

criterion_group!(benches, fork_setup);
criterion_main!(benches);
