//! A scripted in-process chat model and small test tools.

#![allow(dead_code)]

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use subagent_spi::chat::{
    ChatDelta, ChatMessage, ChatRequest, ChatResponse, StopReason, TokenUsage, ToolCall,
};
use subagent_spi::{
    ChatModel, ModelError, ProgressEvent, ProgressKind, TaskContext, Tool, ToolError, ToolOutput,
    async_trait,
};

/// One scripted step of the model.
pub enum Step {
    /// Reply with this response.
    Reply(ChatResponse),
    /// Stream these text pieces, then wait forever (to be interrupted).
    StreamThenHang(Vec<String>),
    /// Fail with this error.
    Fail(ModelError),
}

/// A model that replays a script and records every request.
pub struct ScriptedModel {
    script: Mutex<VecDeque<Step>>,
    pub requests: Mutex<Vec<ChatRequest>>,
}

impl ScriptedModel {
    pub fn new(steps: Vec<Step>) -> Arc<Self> {
        Arc::new(Self {
            script: Mutex::new(steps.into()),
            requests: Mutex::new(Vec::new()),
        })
    }

    pub fn requests(&self) -> Vec<ChatRequest> {
        self.requests.lock().unwrap().clone()
    }

    fn next(&self, request: ChatRequest) -> Step {
        self.requests.lock().unwrap().push(request);
        self.script
            .lock()
            .unwrap()
            .pop_front()
            .unwrap_or_else(|| Step::Fail(ModelError::Config("script exhausted".into())))
    }
}

#[async_trait]
impl ChatModel for ScriptedModel {
    fn model_name(&self) -> &str {
        "scripted"
    }

    async fn chat(&self, request: ChatRequest) -> Result<ChatResponse, ModelError> {
        match self.next(request) {
            Step::Reply(r) => Ok(r),
            Step::Fail(e) => Err(e),
            Step::StreamThenHang(_) => std::future::pending().await,
        }
    }

    async fn chat_stream(
        &self,
        request: ChatRequest,
        on_delta: &(dyn Fn(ChatDelta) + Send + Sync),
    ) -> Result<ChatResponse, ModelError> {
        match self.next(request) {
            Step::Reply(r) => {
                for piece in r.content.split_inclusive(' ') {
                    on_delta(ChatDelta::Text(piece.to_string()));
                }
                Ok(r)
            }
            Step::Fail(e) => Err(e),
            Step::StreamThenHang(pieces) => {
                for p in pieces {
                    on_delta(ChatDelta::Text(p));
                }
                std::future::pending().await
            }
        }
    }
}

pub fn usage(input: u64, output: u64) -> TokenUsage {
    TokenUsage {
        input_tokens: input,
        output_tokens: output,
        ..TokenUsage::default()
    }
}

/// A final text reply.
pub fn text(t: &str) -> Step {
    Step::Reply(ChatResponse {
        content: t.to_string(),
        tool_calls: Vec::new(),
        stop_reason: StopReason::EndTurn,
        usage: usage(10, 5),
        model: "scripted-1".into(),
    })
}

/// A reply with tool calls: (id, name, args).
pub fn calls(content: &str, calls: &[(&str, &str, Value)]) -> Step {
    Step::Reply(ChatResponse {
        content: content.to_string(),
        tool_calls: calls
            .iter()
            .map(|(id, name, args)| ToolCall {
                id: id.to_string(),
                name: name.to_string(),
                arguments: args.clone(),
            })
            .collect(),
        stop_reason: StopReason::ToolUse,
        usage: usage(10, 5),
        model: "scripted-1".into(),
    })
}

/// Replaces a step's usage.
pub fn with_usage(step: Step, u: TokenUsage) -> Step {
    match step {
        Step::Reply(mut r) => {
            r.usage = u;
            Step::Reply(r)
        }
        s => s,
    }
}

/// The tool results of a request's last messages, as (call_id, content, is_error).
pub fn tool_results(req: &ChatRequest) -> Vec<(String, String, bool)> {
    req.messages
        .iter()
        .filter_map(|m| match m {
            ChatMessage::Tool {
                call_id,
                content,
                is_error,
                ..
            } => Some((call_id.clone(), content.clone(), *is_error)),
            _ => None,
        })
        .collect()
}

/// A tool made from a closure.
pub struct FnTool<F> {
    pub name: String,
    pub f: F,
}

pub fn tool<F, Fut>(name: &str, f: F) -> Arc<dyn Tool>
where
    F: Fn(Value) -> Fut + Send + Sync + 'static,
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
    F: Fn(Value) -> Fut + Send + Sync + 'static,
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
    async fn call(&self, input: Value, _ctx: &TaskContext) -> Result<ToolOutput, ToolError> {
        (self.f)(input).await
    }
}

/// A tool that sleeps for a long time (an hour) unless dropped.
pub fn slow_tool(name: &str, started: Arc<tokio::sync::Notify>) -> Arc<dyn Tool> {
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
pub struct Recorder(pub Mutex<Vec<ProgressEvent>>);

impl Recorder {
    pub fn kinds(&self) -> Vec<ProgressKind> {
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
