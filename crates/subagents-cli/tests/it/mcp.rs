//! `subagents mcp` driven by a real MCP client (rmcp): over stdio (the command as a child
//! process) and over streamable HTTP (`--listen`).

use crate::common;

use std::time::Duration;

use common::{fixtures, free_port, process_in, tool_text as text, word};
use rmcp::model::{CallToolRequestParams, CallToolResult, JsonObject};
use rmcp::service::RunningService;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Value, json};
use subagent_testkit::{Reply, ScriptedModelServer};

fn command(model: &str, home: &std::path::Path, extra: &[&str]) -> tokio::process::Command {
    let mut cmd = process_in(home);
    cmd.args(["mcp", "--model", model, "--agents"])
        .arg(fixtures().join("local"))
        .arg("--workspace")
        .arg(home)
        .args(extra);
    let mut cmd = tokio::process::Command::from(cmd);
    cmd.kill_on_drop(true);
    cmd
}

async fn call(client: &RunningService<RoleClient, ()>, tool: &str, input: Value) -> CallToolResult {
    let Value::Object(args) = input else {
        panic!("tool input is an object")
    };
    let args: JsonObject = args;
    client
        .call_tool(CallToolRequestParams::new(tool.to_string()).with_arguments(args))
        .await
        .expect("tool call answered")
}

/// Lists the tools, runs Task in the foreground and in the background, reads TaskOutput.
async fn drive(client: &RunningService<RoleClient, ()>) {
    let tools = client.list_all_tools().await.expect("tools/list");
    let mut names: Vec<String> = tools.iter().map(|t| t.name.to_string()).collect();
    names.sort();
    assert_eq!(names, ["SendMessage", "Task", "TaskOutput", "TaskStop"]);
    let task = tools.iter().find(|t| t.name == "Task").expect("Task");
    let description = task.description.as_deref().unwrap_or_default();
    assert!(
        description.contains("- echo-agent:"),
        "agents are listed: {description}"
    );
    assert!(
        task.input_schema
            .get("properties")
            .is_some_and(|p| p.get("subagent_type").is_some())
    );

    let fg = call(
        client,
        "Task",
        json!({"description": "d", "prompt": "first", "subagent_type": "echo-agent"}),
    )
    .await;
    assert_ne!(fg.is_error, Some(true), "{}", text(&fg));
    assert!(text(&fg).starts_with("foreground answer"), "{}", text(&fg));

    let bg = call(client, "Task", json!({"description": "d", "prompt": "second", "subagent_type": "echo-agent", "run_in_background": true})).await;
    let started = text(&bg);
    let id = word(&started, "task_").expect("a task id");
    let out = call(
        client,
        "TaskOutput",
        json!({"task_id": id, "timeout_ms": 20000}),
    )
    .await;
    let out = text(&out);
    assert!(out.contains("status: completed"), "{out}");
    assert!(out.contains("background answer"), "{out}");

    let unknown = call(
        client,
        "Task",
        json!({"description": "d", "prompt": "x", "subagent_type": "nobody"}),
    )
    .await;
    assert_eq!(unknown.is_error, Some(true));
    assert!(text(&unknown).contains("Unknown agent `nobody`"));
}

async fn scripted() -> (ScriptedModelServer, String) {
    let server = ScriptedModelServer::start().await;
    server.push(Reply::text("foreground answer"));
    server.push(Reply::text("background answer"));
    let model = server.openai_model("m");
    (server, model)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_over_stdio_serves_the_task_tools() {
    let (server, model) = scripted().await;
    let home = tempfile::tempdir().expect("tmp");
    let transport = TokioChildProcess::new(command(&model, home.path(), &[])).expect("spawn");
    let client = ().serve(transport).await.expect("MCP handshake over stdio");
    drive(&client).await;
    client.cancel().await.expect("client closes");
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_over_streamable_http_serves_the_task_tools() {
    let (_server, model) = scripted().await;
    let home = tempfile::tempdir().expect("tmp");
    let listen = format!("127.0.0.1:{}", free_port());
    let mut cmd = command(&model, home.path(), &["--listen", &listen]);
    cmd.stderr(std::process::Stdio::null());
    let _child = cmd.spawn().expect("spawn");
    let url = format!("http://{listen}/mcp");
    let mut client = None;
    for _ in 0..200 {
        if let Ok(c) = ().serve(StreamableHttpClientTransport::from_uri(url.clone())).await {
            client = Some(c);
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let client = client.expect("the MCP HTTP server came up");
    drive(&client).await;
    client.cancel().await.expect("client closes");
}
