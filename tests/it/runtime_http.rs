//! End to end over real HTTP: the agent loop drives the OpenAI and Anthropic providers against
//! the scripted model server, with the real `Read` tool on a temporary workspace.

use std::sync::Arc;

use serde_json::json;
use subagent_providers::{AnthropicModel, OpenAiModel};
use subagent_runtime::{AgentRuntime, RunSpec};
use subagent_spi::{ChatModel, TaskContext, TaskStatus};
use subagent_testkit::{Reply, ScriptedModelServer};
use subagent_tools::{ToolSet, Workspace};

fn workspace() -> (tempfile::TempDir, Workspace) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), "the answer is 42\n").unwrap();
    let ws = Workspace::new(dir.path()).unwrap();
    (dir, ws)
}

#[tokio::test]
async fn streamed_openai_run_reads_a_file_and_answers() {
    let server = ScriptedModelServer::start().await;
    server.push_all([
        Reply::text_and_tool_calls(
            "Let me look.",
            vec![("Read", json!({"file_path": "notes.txt"}))],
        )
        .with_fragment_chars(3)
        .with_usage(100, 20),
        Reply::text("The file says the answer is 42.").with_usage(150, 10),
    ]);
    let model: Arc<dyn ChatModel> = Arc::new(
        OpenAiModel::builder()
            .base_url(server.openai_base_url())
            .api_key("sk-test")
            .model("gpt-test")
            .build()
            .unwrap(),
    );
    let (_dir, ws) = workspace();
    let spec = RunSpec::new(model, "What does notes.txt say?")
        .with_system("You are an explorer.")
        .with_tools(ToolSet::read_only(ws))
        .streaming(true);
    let out = AgentRuntime::default()
        .run(spec, &TaskContext::new())
        .await
        .unwrap();

    assert_eq!(out.status, TaskStatus::Completed);
    assert_eq!(out.text, "The file says the answer is 42.");
    assert_eq!(out.usage.turns, 2);
    assert_eq!(out.usage.input_tokens, 250);
    assert_eq!(out.usage.output_tokens, 30);

    let reqs = server.requests();
    assert_eq!(reqs.len(), 2);
    assert!(reqs[0].is_stream());
    assert_eq!(reqs[0].model(), Some("gpt-test"));
    let tool_names: Vec<&str> = reqs[0]
        .tools()
        .iter()
        .filter_map(|t| t["function"]["name"].as_str())
        .collect();
    assert_eq!(tool_names, vec!["Read", "Glob", "Grep"]);
    // the second request carries the assistant's tool call and the Read result
    let msgs = reqs[1].messages();
    let tool_msg = msgs
        .iter()
        .find(|m| m["role"] == "tool")
        .expect("a tool message was sent");
    assert_eq!(tool_msg["content"], "     1\tthe answer is 42\n");
    let call_id = tool_msg["tool_call_id"].as_str().unwrap();
    assert!(msgs.iter().any(|m| m["role"] == "assistant"
        && m["tool_calls"][0]["id"] == call_id
        && m["tool_calls"][0]["function"]["name"] == "Read"));
}

#[tokio::test]
async fn anthropic_run_resumes_a_session_over_http() {
    let server = ScriptedModelServer::start().await;
    server.push_all([Reply::text("First."), Reply::text("Second.")]);
    let model: Arc<dyn ChatModel> = Arc::new(
        AnthropicModel::builder()
            .base_url(server.base_url())
            .api_key("sk-ant-test")
            .model("claude-test")
            .build()
            .unwrap(),
    );
    let runtime = AgentRuntime::default();
    let first = runtime
        .run(
            RunSpec::new(model.clone(), "one").with_system("sys"),
            &TaskContext::new(),
        )
        .await
        .unwrap();
    let second = runtime
        .run(
            RunSpec::resume(model, first.session_id.clone().unwrap(), "two"),
            &TaskContext::new(),
        )
        .await
        .unwrap();
    assert_eq!(second.text, "Second.");
    let last = server.last_request().unwrap();
    // The system prompt as one text block, marked for the prompt cache.
    assert_eq!(last.body["system"][0]["text"], "sys");
    assert_eq!(last.body["system"][0]["cache_control"]["type"], "ephemeral");
    let roles: Vec<&str> = last
        .messages()
        .iter()
        .filter_map(|m| m["role"].as_str())
        .collect();
    assert_eq!(roles, vec!["user", "assistant", "user"]);
}
