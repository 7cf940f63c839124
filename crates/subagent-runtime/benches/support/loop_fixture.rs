//! The loop bench's fixture, shared by `benches/loop_overhead.rs` and the callgrind driver
//! `examples/loop_count.rs`: an instant in-process model that asks for a no-op tool for 10
//! turns and then answers, so what is measured is the loop's own work (request building,
//! progress events, tool dispatch, transcript bookkeeping, store save, compaction's estimate).

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use serde_json::json;
use subagent_runtime::{AgentRuntime, RunSpec};
use subagent_spi::chat::{ChatRequest, ChatResponse, StopReason, TokenUsage, ToolCall};
use subagent_spi::{ChatModel, ModelError, TaskContext, Tool, ToolEffect, ToolOutput, async_trait};
use subagent_testkit::FnTool;

/// Tool turns per run; a run takes one more turn to answer.
pub(crate) const TOOL_TURNS: u32 = 10;

struct InstantModel {
    calls: AtomicU32,
}

#[async_trait]
impl ChatModel for InstantModel {
    fn model_name(&self) -> &str {
        "instant"
    }

    async fn chat(&self, _request: ChatRequest) -> Result<ChatResponse, ModelError> {
        let n = self.calls.fetch_add(1, Ordering::Relaxed) % (TOOL_TURNS + 1);
        let tool_calls = if n < TOOL_TURNS {
            vec![ToolCall::new(
                format!("call_{n}"),
                "noop".to_string(),
                json!({"n": n}),
            )]
        } else {
            Vec::new()
        };
        Ok(ChatResponse::new(
            if tool_calls.is_empty() {
                "done".into()
            } else {
                String::new()
            },
            if tool_calls.is_empty() {
                StopReason::EndTurn
            } else {
                StopReason::ToolUse
            },
            TokenUsage::new(10, 5),
            "instant",
        )
        .with_tool_calls(tool_calls))
    }
}

/// One runtime, model, tool list and context, reused by every run.
pub(crate) struct LoopFixture {
    runtime: AgentRuntime,
    model: Arc<dyn ChatModel>,
    tools: Vec<Arc<dyn Tool>>,
    ctx: TaskContext,
}

impl LoopFixture {
    pub(crate) fn new() -> Self {
        let noop = FnTool::new(
            "noop",
            "Does nothing.",
            json!({"type": "object", "properties": {"n": {"type": "integer"}}}),
            |_| Ok(ToolOutput::text("ok")),
        )
        .with_effect(ToolEffect::ReadOnly);
        Self {
            runtime: AgentRuntime::default(),
            model: Arc::new(InstantModel {
                calls: AtomicU32::new(0),
            }),
            tools: vec![Arc::new(noop)],
            ctx: TaskContext::new(),
        }
    }

    /// One run of `TOOL_TURNS + 1` turns; compaction as the bench switch says, with the model's
    /// window (the 32,768-token default, which the run's few hundred tokens never near).
    pub(crate) async fn run(&self) {
        let spec = RunSpec::new(self.model.clone(), "go")
            .with_system("You are a benchmark.")
            .with_tools(self.tools.clone());
        let out = self
            .runtime
            .run(spec, &self.ctx)
            .await
            .expect("run succeeds");
        assert_eq!(out.usage.turns, TOOL_TURNS + 1);
    }
}
