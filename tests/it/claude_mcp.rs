//! A Markdown agent with `mcpServers` gets exactly the `mcp__<server>__<tool>` tools its
//! `tools` / `disallowedTools` patterns allow, from a real MCP server (rmcp over streamable
//! HTTP on 127.0.0.1), and can call them. Asserted on the scripted model server's requests.

use std::sync::Arc;

use serde_json::json;
use subagent_claude::{ClaudeSubagentReferences, ClaudeSubagentType};
use subagent_mcp::{McpServerConfig, McpToolProvider, McpToolServer};
use subagent_providers::OpenAiModel;
use subagent_runtime::ModelRegistry;
use subagent_spi::{TaskContext, Tool, ToolEffect, ToolOutput};
use subagent_testkit::{FnTool, Reply, ScriptedModelServer};
use task_tool::TaskTool;

/// A knowledge-base tool `name` served over MCP.
fn kb(name: &'static str) -> Arc<dyn Tool> {
    Arc::new(
        FnTool::new(
            name,
            format!("Knowledge base: {name}"),
            json!({"type": "object", "properties": {"key": {"type": "string"}}, "required": ["key"]}),
            move |input| {
                Ok(ToolOutput::text(format!(
                    "{name} of {}: 42",
                    input["key"].as_str().unwrap_or("?")
                )))
            },
        )
        .with_effect(ToolEffect::ReadOnly),
    )
}

fn names(req: &subagent_testkit::RecordedRequest) -> Vec<String> {
    let mut n: Vec<String> = req
        .tools()
        .iter()
        .filter_map(|t| t["function"]["name"].as_str().map(str::to_string))
        .collect();
    n.sort();
    n
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_servers_give_agents_exactly_the_tools_their_patterns_allow() {
    let kb = McpToolServer::new(vec![kb("lookup"), kb("save"), kb("delete")])
        .serve_streamable_http("127.0.0.1:0".parse().expect("addr"))
        .await
        .expect("MCP server");
    let url = kb.url();

    let dir = tempfile::tempdir().expect("tmp");
    let agents = dir.path().join("agents");
    std::fs::create_dir_all(&agents).expect("mkdir");
    let inline = format!("mcpServers:\n  - kb:\n      type: http\n      url: {url}\n");
    std::fs::write(
        agents.join("librarian.md"),
        format!("---\nname: librarian\ndescription: Uses the knowledge base.\ntools: Read, mcp__kb__*\ndisallowedTools: mcp__kb__delete\n{inline}---\nYou look things up.\n"),
    )
    .expect("agent");
    std::fs::write(
        agents.join("reader.md"),
        format!("---\nname: reader\ndescription: Only looks up.\ntools: mcp__kb__lookup\n{inline}---\nRead only.\n"),
    )
    .expect("agent");
    std::fs::write(
        agents.join("plain.md"),
        "---\nname: plain\ndescription: No MCP.\ntools: Read, mcp__kb__lookup\n---\nPlain.\n",
    )
    .expect("agent");

    let model_server = ScriptedModelServer::start().await;
    let model = OpenAiModel::builder()
        .base_url(model_server.openai_base_url())
        .model("m")
        .build()
        .expect("model");
    let (kind, _) = ClaudeSubagentType::builder()
        .models(
            ModelRegistry::new()
                .with_model("m", Arc::new(model))
                .with_default("m"),
        )
        .workspace(dir.path())
        .mcp_tools(Arc::new(McpToolProvider::new(McpServerConfig::new())))
        .build_with_executor();
    let (refs, _) = ClaudeSubagentReferences::from_dir(&agents)
        .await
        .expect("scan");
    let task = TaskTool::builder()
        .subagent_type(kind)
        .subagent_references(refs)
        .build()
        .await
        .expect("Task");
    // MCP tools ask in the `default` mode; this host approves everything.
    let ctx = TaskContext::new().with_approver(Arc::new(subagent_core::FixedApprover::allow_all()));

    // librarian: calls an MCP tool, then answers with what it returned.
    model_server.push(Reply::tool_calls(vec![(
        "mcp__kb__lookup",
        json!({"key": "answer"}),
    )]));
    model_server.push(Reply::text("found it"));
    let out = task
        .call(json!({"description": "d", "prompt": "look up the answer", "subagent_type": "librarian"}), &ctx)
        .await
        .expect("call");
    assert!(out.content.starts_with("found it"), "{}", out.content);
    // reader and plain: one turn each.
    model_server.push(Reply::text("ok"));
    model_server.push(Reply::text("ok"));
    for agent in ["reader", "plain"] {
        task.call(
            json!({"description": "d", "prompt": "p", "subagent_type": agent}),
            &ctx,
        )
        .await
        .expect("call");
    }

    let reqs = model_server.requests();
    assert_eq!(reqs.len(), 4);
    assert_eq!(
        names(&reqs[0]),
        ["Read", "mcp__kb__lookup", "mcp__kb__save"],
        "pattern minus disallowed"
    );
    let tool_result = reqs[1]
        .messages()
        .iter()
        .find(|m| m["role"] == "tool")
        .map(|m| m["content"].to_string())
        .unwrap_or_default();
    assert!(
        tool_result.contains("lookup of answer: 42"),
        "the MCP tool ran: {tool_result}"
    );
    assert_eq!(
        names(&reqs[2]),
        ["mcp__kb__lookup"],
        "exactly the one tool named"
    );
    assert_eq!(names(&reqs[3]), ["Read"], "no mcpServers, no MCP tools");
    kb.shutdown().await.expect("shutdown");
}
