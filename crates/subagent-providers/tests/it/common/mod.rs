//! Helpers shared by the provider integration tests.
#![allow(dead_code)]

use std::sync::Mutex;
use std::time::Duration;

use subagent_providers::{AnthropicModel, AnthropicModelBuilder, OpenAiModel, OpenAiModelBuilder};
use subagent_spi::ModelError;
use subagent_spi::ToolSpec;
use subagent_spi::chat::{ChatDelta, ChatMessage, ChatModel, ChatRequest, ChatResponse};
use subagent_testkit::ScriptedModelServer;

/// An OpenAI-format client of model `gpt-test` on `server`, with key `sk-test-123`.
pub(crate) fn openai(server: &ScriptedModelServer) -> OpenAiModel {
    openai_at(server.openai_base_url(), |b| {
        b.api_key("sk-test-123")
            .model("gpt-test")
            .base_delay(Duration::from_millis(5))
    })
}

/// An Anthropic client of model `claude-test` on `server`, with key `sk-ant-test`.
pub(crate) fn anthropic(server: &ScriptedModelServer) -> AnthropicModel {
    anthropic_at(server.base_url(), |b| {
        b.api_key("sk-ant-test")
            .model("claude-test")
            .base_delay(Duration::from_millis(5))
    })
}

/// An OpenAI-format client of model `m` at `base_url`, with `settings` applied.
pub(crate) fn openai_at(
    base_url: impl Into<String>,
    settings: impl FnOnce(OpenAiModelBuilder) -> OpenAiModelBuilder,
) -> OpenAiModel {
    settings(OpenAiModel::builder().base_url(base_url).model("m"))
        .build()
        .unwrap()
}

/// An Anthropic client of model `m` at `base_url`, with `settings` applied.
pub(crate) fn anthropic_at(
    base_url: impl Into<String>,
    settings: impl FnOnce(AnthropicModelBuilder) -> AnthropicModelBuilder,
) -> AnthropicModel {
    settings(AnthropicModel::builder().base_url(base_url).model("m"))
        .build()
        .unwrap()
}

pub(crate) fn user(text: &str) -> ChatRequest {
    ChatRequest::new(vec![ChatMessage::user(text)])
}

pub(crate) fn tool(name: &str) -> ToolSpec {
    ToolSpec::new(
        name,
        format!("the {name} tool"),
        serde_json::json!({
            "type": "object",
            "properties": {"path": {"type": "string"}},
        }),
    )
}

/// Run a streamed call, collecting the deltas.
pub(crate) async fn stream(
    model: &dyn ChatModel,
    request: ChatRequest,
) -> (Result<ChatResponse, ModelError>, Vec<ChatDelta>) {
    let deltas = Mutex::new(Vec::new());
    let cb = |d: ChatDelta| deltas.lock().unwrap().push(d);
    let r = model.chat_stream(request, &cb).await;
    (r, deltas.into_inner().unwrap())
}

/// Streams a `q` request to the client `model` builds for a server that answers with the raw
/// event stream `sse`.
pub(crate) async fn stream_raw_sse<M: ChatModel>(
    sse: &str,
    model: fn(&ScriptedModelServer) -> M,
) -> (Result<ChatResponse, ModelError>, Vec<ChatDelta>) {
    let server = ScriptedModelServer::start().await;
    server.push(subagent_testkit::Reply::raw_sse(sse));
    stream(&model(&server), user("q")).await
}

pub(crate) fn delta_text(deltas: &[ChatDelta]) -> String {
    deltas
        .iter()
        .filter_map(|d| match d {
            ChatDelta::Text(t) => Some(t.as_str()),
            _ => None,
        })
        .collect()
}

/// The argument fragments streamed for tool call `index`, joined.
pub(crate) fn delta_args(deltas: &[ChatDelta], index: usize) -> String {
    deltas
        .iter()
        .filter_map(|d| match d {
            ChatDelta::ToolCallArguments { index: i, fragment } if *i == index => {
                Some(fragment.as_str())
            }
            _ => None,
        })
        .collect()
}

pub(crate) fn starts(deltas: &[ChatDelta]) -> Vec<(usize, String, String)> {
    deltas
        .iter()
        .filter_map(|d| match d {
            ChatDelta::ToolCallStart { index, id, name } => {
                Some((*index, id.clone(), name.clone()))
            }
            _ => None,
        })
        .collect()
}

/// For each `(wire, expected)`: a reply whose stop reason is `wire` maps to `expected`, both
/// non-streamed and streamed.
pub(crate) async fn assert_stop_reasons(
    server: &ScriptedModelServer,
    model: &dyn ChatModel,
    cases: &[(&str, subagent_spi::chat::StopReason)],
) {
    for (wire, expected) in cases {
        server.push(subagent_testkit::Reply::text("x").with_stop_reason(*wire));
        server.push(subagent_testkit::Reply::text("x").with_stop_reason(*wire));
        assert_eq!(&model.chat(user("q")).await.unwrap().stop_reason, expected);
        let (r, _) = stream(model, user("q")).await;
        assert_eq!(&r.unwrap().stop_reason, expected, "streamed {wire}");
    }
}
