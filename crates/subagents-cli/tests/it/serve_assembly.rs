//! `subagents serve` assembles its agents exactly as `run` does: a served agent gets its
//! preloaded skills and its `mcpServers` tools (a real MCP server over streamable HTTP).

use crate::common;
use common::OutputOk;

use std::sync::Arc;

use common::{rt, spawn_serve, subagents_in, write_agent};
use serde_json::json;
use subagent_testkit::{FnTool, Reply, ScriptedModelServer};
use subagents::spi::{Tool, ToolOutput};

#[test]
fn a_served_agent_gets_its_skills_and_mcp_servers_tools() {
    let rt = rt();
    let mcp = rt
        .block_on(
            subagents::mcp::McpToolServer::new(vec![Arc::new(FnTool::new(
                "ping",
                "Answers pong.",
                json!({"type": "object"}),
                |_| Ok(ToolOutput::text("pong")),
            )) as Arc<dyn Tool>])
            .serve_streamable_http("127.0.0.1:0".parse().expect("addr")),
        )
        .expect("MCP server starts");
    let model_server = rt.block_on(ScriptedModelServer::start());
    model_server.push(Reply::text("served with skills and tools"));

    let dir = tempfile::tempdir().expect("tmp");
    let root = dir.path();
    let skill = root.join(".claude/skills/house-style");
    std::fs::create_dir_all(&skill).expect("mkdir");
    std::fs::write(
        skill.join("SKILL.md"),
        "---\nname: house-style\ndescription: How we write.\n---\nAlways answer in haiku.\n",
    )
    .expect("skill");
    let agents = write_agent(
        root,
        "helper",
        "---\nname: helper\ndescription: Helps.\nskills: house-style\nmcpServers: [probe]\n---\nYou help.\n",
    );
    std::fs::write(
        root.join(".mcp.json"),
        json!({"mcpServers": {"probe": {"type": "http", "url": mcp.url()}}}).to_string(),
    )
    .expect(".mcp.json");

    // The workspace's .mcp.json starts servers only once its user approved it. The home is
    // the workspace here, so approvals are kept in a data directory outside it.
    let data = tempfile::tempdir().expect("data dir");
    subagents_in(root)
        .env("XDG_DATA_HOME", data.path())
        .args(["trust", ".mcp.json"])
        .assert()
        .success();
    let serve = spawn_serve(&rt, root, |cmd| {
        cmd.env("XDG_DATA_HOME", data.path())
            .args(["--model", &model_server.openai_model("m")])
            .arg("--agents")
            .arg(agents);
    });
    let base = &serve.base;

    let v = subagents_in(root)
        .args(["call", &format!("{base}/helper"), "hello", "--json"])
        .json_ok();
    assert_eq!(v["text"], "served with skills and tools", "{v}");

    let (req, body) = common::only_request(&model_server);
    assert!(
        body.contains("Always answer in haiku."),
        "the skill is preloaded into the system prompt: {body}"
    );
    let tools = req.tool_names();
    assert!(
        tools.iter().any(|t| t == "mcp__probe__ping"),
        "the mcpServers tool is offered: {tools:?}"
    );
    assert!(
        tools.iter().any(|t| t == "Task"),
        "a served agent may delegate (it is the root of its own tree): {tools:?}"
    );
    rt.block_on(mcp.shutdown()).expect("MCP server stops");
}
