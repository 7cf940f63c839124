//! [`ScriptedModel`]: an in-process [`ChatModel`] that replays a script, for tests of code that
//! takes a model as a value (use [`ScriptedModelServer`](crate::ScriptedModelServer) to test a
//! provider over HTTP).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use serde_json::Value;
use subagent_spi::chat::{
    ChatDelta, ChatMessage, ChatRequest, ChatResponse, StopReason, TokenUsage, ToolCall,
};
use subagent_spi::{ChatModel, ModelError, async_trait};

/// One scripted step of a [`ScriptedModel`].
#[derive(Debug)]
#[non_exhaustive]
pub enum Step {
    /// Reply with this response.
    Reply(ChatResponse),
    /// Stream these text pieces, then never finish (to be cancelled).
    StreamThenHang(Vec<String>),
    /// Fail with this error.
    Fail(ModelError),
}

impl Step {
    /// A final text reply (10 input, 5 output tokens).
    pub fn text(t: &str) -> Self {
        Step::Reply(ChatResponse::new(
            t,
            StopReason::EndTurn,
            TokenUsage::new(10, 5),
            "scripted-1",
        ))
    }

    /// A reply requesting tool calls, each `(id, name, arguments)`.
    pub fn calls(content: &str, calls: &[(&str, &str, Value)]) -> Self {
        Step::Reply(
            ChatResponse::new(
                content,
                StopReason::ToolUse,
                TokenUsage::new(10, 5),
                "scripted-1",
            )
            .with_tool_calls(
                calls
                    .iter()
                    .map(|(id, name, args)| ToolCall::new(*id, *name, args.clone()))
                    .collect(),
            ),
        )
    }

    /// Replaces the usage of a reply step (builder style).
    #[must_use]
    pub fn with_usage(self, usage: TokenUsage) -> Self {
        match self {
            Step::Reply(mut r) => {
                r.usage = usage;
                Step::Reply(r)
            }
            s => s,
        }
    }
}

/// A model that replays a script of [`Step`]s in order and records every request. When the
/// script runs out it fails with a configuration error saying so.
#[derive(Debug, Default)]
pub struct ScriptedModel {
    script: Mutex<VecDeque<Step>>,
    requests: Mutex<Vec<ChatRequest>>,
}

impl ScriptedModel {
    /// A model with this script.
    pub fn new(steps: Vec<Step>) -> Arc<Self> {
        Arc::new(Self {
            script: Mutex::new(steps.into()),
            requests: Mutex::new(Vec::new()),
        })
    }

    /// Appends a step.
    pub fn push(&self, step: Step) {
        crate::locked(&self.script).push_back(step);
    }

    /// Every request received so far.
    pub fn requests(&self) -> Vec<ChatRequest> {
        crate::locked(&self.requests).clone()
    }

    fn next(&self, request: ChatRequest) -> Step {
        crate::locked(&self.requests).push(request);
        crate::locked(&self.script)
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

/// The tool results in a request's messages, as `(call_id, content, is_error)`.
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
