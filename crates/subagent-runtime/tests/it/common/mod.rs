//! A scripted in-process chat model and small test tools.

#![allow(dead_code)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use subagent_spi::chat::TokenUsage;
use subagent_spi::{
    ProgressEvent, ProgressKind, TaskContext, Tool, ToolError, ToolOutput, async_trait,
};

pub(crate) use subagent_testkit::{ScriptedModel, Step, tool_results};

pub(crate) fn usage(input: u64, output: u64) -> TokenUsage {
    TokenUsage::new(input, output)
}

/// A final text reply.
pub(crate) fn text(t: &str) -> Step {
    Step::text(t)
}

/// A reply with tool calls: (id, name, args).
pub(crate) fn calls(content: &str, calls: &[(&str, &str, Value)]) -> Step {
    Step::calls(content, calls)
}

/// Replaces a step's usage.
pub(crate) fn with_usage(step: Step, u: TokenUsage) -> Step {
    step.with_usage(u)
}

/// A tool made from a closure of its input and the call's context.
pub(crate) struct FnTool<F> {
    pub name: String,
    pub f: F,
}

/// A tool made from a closure of its input.
pub(crate) fn tool<F, Fut>(name: &str, f: F) -> Arc<dyn Tool>
where
    F: Fn(Value) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = Result<ToolOutput, ToolError>> + Send + 'static,
{
    ctx_tool(name, move |input, _ctx| f(input))
}

/// A tool made from a closure of its input and the call's context (to report progress or run
/// a child).
pub(crate) fn ctx_tool<F, Fut>(name: &str, f: F) -> Arc<dyn Tool>
where
    F: Fn(Value, TaskContext) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = Result<ToolOutput, ToolError>> + Send + 'static,
{
    Arc::new(FnTool {
        name: name.to_string(),
        f,
    })
}

#[async_trait]
impl<F, Fut> Tool for FnTool<F>
where
    F: Fn(Value, TaskContext) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = Result<ToolOutput, ToolError>> + Send + 'static,
{
    fn name(&self) -> &str {
        &self.name
    }
    fn description(&self) -> String {
        format!("test tool {}", self.name)
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object"})
    }
    async fn call(&self, input: Value, ctx: &TaskContext) -> Result<ToolOutput, ToolError> {
        (self.f)(input, ctx.clone()).await
    }
}

/// A tool that sleeps for a long time (an hour) unless dropped.
pub(crate) fn slow_tool(name: &str, started: Arc<tokio::sync::Notify>) -> Arc<dyn Tool> {
    tool(name, move |_| {
        let started = started.clone();
        async move {
            started.notify_one();
            tokio::time::sleep(Duration::from_secs(3600)).await;
            Ok(ToolOutput::text("finished"))
        }
    })
}

/// A progress sink recording events.
#[derive(Default)]
pub(crate) struct Recorder(pub Mutex<Vec<ProgressEvent>>);

impl Recorder {
    pub(crate) fn kinds(&self) -> Vec<ProgressKind> {
        self.0
            .lock()
            .unwrap()
            .iter()
            .map(|e| e.kind.clone())
            .collect()
    }
}

impl subagent_spi::ProgressSink for Recorder {
    fn emit(&self, event: ProgressEvent) {
        self.0.lock().unwrap().push(event);
    }
}
