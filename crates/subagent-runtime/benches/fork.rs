//! A fork's setup: what a `Task` call with `subagent_type: "fork"` costs beyond starting a
//! fresh one-turn child, after a parent conversation of 10 tool turns (23 messages). An instant
//! in-process model answers, so the time measured is our own: the conversation's snapshot, the
//! fork's messages (a copy of the parent's), its run's setup and its bigger first request.
//!
//! `fork/*` minus `fresh/*` is the fork's own overhead.

use std::sync::Arc;

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;
use subagent_runtime::{AgentRuntime, RunSpec};
use subagent_spi::chat::{
    ChatMessage, ChatRequest, ChatResponse, StopReason, TokenUsage, ToolCall,
};
use subagent_spi::{
    ChatModel, ForkSource, ModelError, SubagentDefinition, SubagentReference, TaskCall,
    TaskContext, Tool, ToolEffect, ToolError, ToolOutput, async_trait, impl_subagent_definition,
};
use subagent_testkit::FnTool;

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

#[derive(Debug)]
struct Def {
    name: String,
    description: String,
    reference: SubagentReference,
}

impl_subagent_definition!(Def);

/// A `Task` tool that starts a fork (from the loop's [`ForkSource`]) or a fresh child.
struct Task {
    fork: bool,
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
        let outcome = if self.fork {
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
            let spec = RunSpec::new(self.model.clone(), "do it").with_system("child");
            self.runtime.run(spec, &child).await
        };
        let outcome = outcome.map_err(|e| ToolError::failed("Task", e.to_string()))?;
        Ok(ToolOutput::text(outcome.text))
    }
}

fn fork_setup(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
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
    let def: Arc<dyn SubagentDefinition> = Arc::new(Def {
        name: "fork".into(),
        description: "a fork".into(),
        reference: SubagentReference::new("fork:", "FORK"),
    });
    let ctx = TaskContext::new();

    let mut group = c.benchmark_group("fork_setup");
    for fork in [true, false] {
        let task: Arc<dyn Tool> = Arc::new(Task {
            fork,
            runtime: runtime.clone(),
            model: model.clone(),
            def: def.clone(),
        });
        let tools = vec![noop.clone(), task];
        let name = if fork {
            "fork/after_10_turns"
        } else {
            "fresh/after_10_turns"
        };
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
