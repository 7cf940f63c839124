//! Any MCP server's tools as agents through the facade (issue 32, item 5), against our own MCP
//! server over streamable HTTP on 127.0.0.1: a server with several tools gives one agent per
//! tool whose schema can take the prompt, a spec can name the tool and the argument, and a
//! malformed spec is a build error naming it.
#![cfg(feature = "mcp")]

use std::path::Path;
use std::sync::Arc;

use serde_json::json;
use subagent_testkit::FnTool;
use subagents::Subagents;
use subagents::spi::{TaskCall, TaskContext, Tool, ToolOutput};
use task_tool::Dispatch;

fn tool(name: &str, schema: serde_json::Value) -> Arc<dyn Tool> {
    let name_owned = name.to_string();
    Arc::new(FnTool::new(name, "A test tool.", schema, move |input| {
        Ok(ToolOutput::text(format!("{name_owned} got {input}")))
    }))
}

async fn server() -> subagents::mcp::McpHttpServer {
    subagents::mcp::McpToolServer::new(vec![
        tool(
            "ask_expert",
            json!({"type": "object", "properties": {"question": {"type": "string"},
                   "depth": {"type": "integer"}}, "required": ["question"]}),
        ),
        tool(
            "echo",
            json!({"type": "object", "properties": {"prompt": {"type": "string"}}}),
        ),
        tool(
            "add",
            json!({"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}}),
        ),
    ])
    .serve_streamable_http("127.0.0.1:0".parse().unwrap())
    .await
    .unwrap()
}

fn builder() -> subagents::SubagentsBuilder {
    Subagents::builder().workspace(Path::new(env!("CARGO_MANIFEST_DIR")))
}

/// The MCP agents (the built-in ones left out).
fn names(agents: &Subagents) -> Vec<String> {
    let mut n: Vec<String> = agents
        .agents()
        .iter()
        .filter(|a| {
            a.downcast_ref::<subagents::mcp::McpSubagentDefinition>()
                .is_some()
        })
        .map(|a| a.name().to_string())
        .collect();
    n.sort();
    n
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_gives_one_agent_per_tool_that_can_take_the_prompt() {
    let web = server().await;
    let agents = builder().mcp_agent(web.url()).build().await.unwrap();
    assert_eq!(
        names(&agents),
        ["ask_expert", "echo"],
        "`add` has no string argument"
    );

    let call = TaskCall::new("ask_expert", "ask", "why is the sky blue?");
    let out = match agents.dispatch(call, &TaskContext::new()).await.unwrap() {
        Dispatch::Foreground { outcome, .. } => outcome,
        other => panic!("expected a foreground run, got {other:?}"),
    };
    assert_eq!(
        out.text, r#"ask_expert got {"question":"why is the sky blue?"}"#,
        "the prompt went to the only string argument"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_spec_names_the_tool_the_agent_and_the_argument() {
    let web = server().await;
    let spec = format!(
        "{}#tool=ask_expert&name=expert&argument=question",
        web.url()
    );
    let agents = builder().mcp_agent(spec).build().await.unwrap();
    assert_eq!(names(&agents), ["expert"]);

    let bad = format!("{}#tool=echo&bogus=1", web.url());
    let err = builder()
        .mcp_agent(bad.clone())
        .build()
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("unknown option `bogus`") && err.contains(&bad),
        "{err}"
    );
}
