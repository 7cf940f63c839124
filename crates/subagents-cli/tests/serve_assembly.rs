//! `subagents serve` assembles its agents exactly as `run` does: a served agent gets its
//! preloaded skills and its `mcpServers` tools (a real MCP server over streamable HTTP).

use std::sync::Arc;

use serde_json::{Value, json};
use subagent_testkit::{Reply, ScriptedModelServer};
use subagents::spi::{TaskContext, Tool, ToolError, ToolOutput, async_trait};

/// The tool the MCP server offers.
struct Ping;

#[async_trait]
impl Tool for Ping {
    fn name(&self) -> &str {
        "ping"
    }
    fn description(&self) -> String {
        "Answers pong.".into()
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object"})
    }
    async fn call(&self, _: Value, _: &TaskContext) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text("pong"))
    }
}

struct Killed(std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn a_served_agent_gets_its_skills_and_mcp_servers_tools() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let mcp = rt
        .block_on(
            subagents::mcp::McpToolServer::new(vec![Arc::new(Ping) as Arc<dyn Tool>])
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
    std::fs::create_dir_all(root.join("agents")).expect("mkdir");
    std::fs::write(
        root.join("agents/helper.md"),
        "---\nname: helper\ndescription: Helps.\nskills: house-style\nmcpServers: [probe]\n---\nYou help.\n",
    )
    .expect("agent");
    std::fs::write(
        root.join(".mcp.json"),
        json!({"mcpServers": {"probe": {"type": "http", "url": mcp.url()}}}).to_string(),
    )
    .expect(".mcp.json");

    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port");
    let base = format!("http://127.0.0.1:{port}");
    let model = format!("openai-compatible:m@{}", model_server.openai_base_url());
    let serve = std::process::Command::new(assert_cmd::cargo::cargo_bin("subagents"))
        .args([
            "serve",
            "--listen",
            &format!("127.0.0.1:{port}"),
            "--model",
            &model,
        ])
        .arg("--agents")
        .arg(root.join("agents"))
        .env("HOME", root)
        .env_remove("ANTHROPIC_API_KEY")
        .current_dir(root)
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("serve starts");
    let _serve = Killed(serve);
    rt.block_on(async {
        for _ in 0..200 {
            if reqwest::get(format!("{base}/")).await.is_ok() {
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        panic!("serve did not come up on {base}");
    });

    let out = assert_cmd::Command::cargo_bin("subagents")
        .expect("binary")
        .args(["call", &format!("{base}/helper"), "hello", "--json"])
        .env("HOME", root)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let v: Value = serde_json::from_slice(&out).expect("JSON");
    assert_eq!(v["text"], "served with skills and tools", "{v}");

    let reqs = model_server.requests();
    assert_eq!(reqs.len(), 1);
    let body = reqs[0].body.to_string();
    assert!(
        body.contains("Always answer in haiku."),
        "the skill is preloaded into the system prompt: {body}"
    );
    let tools: Vec<String> = reqs[0]
        .tools()
        .iter()
        .filter_map(|t| t["function"]["name"].as_str().map(str::to_string))
        .collect();
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
