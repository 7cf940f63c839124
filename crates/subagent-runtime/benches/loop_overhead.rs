//! Loop overhead per turn: an instant in-process model that asks for a no-op tool for 10 turns
//! and then answers, so the time measured is the loop's own (request building, progress events,
//! tool dispatch, transcript bookkeeping, store save).

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use serde_json::json;
use subagent_runtime::{AgentRuntime, RunSpec};
use subagent_spi::chat::{ChatRequest, ChatResponse, StopReason, TokenUsage, ToolCall};
use subagent_spi::{ChatModel, ModelError, TaskContext, Tool, ToolEffect, ToolOutput, async_trait};
use subagent_testkit::FnTool;

const TOOL_TURNS: u32 = 10;

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

fn loop_overhead(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    let runtime = AgentRuntime::default();
    let model: Arc<dyn ChatModel> = Arc::new(InstantModel {
        calls: AtomicU32::new(0),
    });
    let noop = FnTool::new(
        "noop",
        "Does nothing.",
        json!({"type": "object", "properties": {"n": {"type": "integer"}}}),
        |_| Ok(ToolOutput::text("ok")),
    )
    .with_effect(ToolEffect::ReadOnly);
    let tools: Vec<Arc<dyn Tool>> = vec![Arc::new(noop)];
    let ctx = TaskContext::new();

    let mut group = c.benchmark_group("agent_loop");
    // One element = one turn: per-element time is the per-turn overhead.
    group.throughput(Throughput::Elements(u64::from(TOOL_TURNS + 1)));
    group.bench_function("11_turns_noop_tool", |b| {
        b.to_async(&rt).iter(|| {
            let spec = RunSpec::new(model.clone(), "go")
                .with_system("You are a benchmark.")
                .with_tools(tools.clone());
            let runtime = &runtime;
            let ctx = &ctx;
            async move {
                let out = runtime.run(spec, ctx).await.expect("run succeeds");
                assert_eq!(out.usage.turns, TOOL_TURNS + 1);
                out
            }
        });
    });
    group.finish();
}

criterion_group!(benches, loop_overhead);
criterion_main!(benches);
