//! Shared by the facade's test targets.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use subagent_testkit::{ProgressRecorder, Reply, ScriptedModelServer};
use subagents::{Subagents, SubagentsBuilder};

/// `tests/fixtures/team`: main → coordinator → leaf.
pub(crate) fn team() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/team")
}

/// A builder of the team's agents on model `m` of `model`, in a fresh workspace.
pub(crate) fn team_builder(model: &ScriptedModelServer) -> SubagentsBuilder {
    team_builder_on(model, "m")
}

/// [`team_builder`] on the model named `name`.
pub(crate) fn team_builder_on(model: &ScriptedModelServer, name: &str) -> SubagentsBuilder {
    Subagents::builder()
        .model(model.openai_model(name))
        .agents_dir(team())
        .workspace(tempfile::tempdir().expect("tmp").keep())
}

/// Writes the agent file `DIR/agents/NAME.md` and creates `DIR/work` (a workspace); returns
/// the agents directory.
pub(crate) fn write_agent(dir: &Path, name: &str, text: &str) -> PathBuf {
    let agents = dir.join("agents");
    std::fs::create_dir_all(&agents).expect("mkdir agents");
    std::fs::create_dir_all(dir.join("work")).expect("mkdir work");
    std::fs::write(agents.join(format!("{name}.md")), text).expect("agent file");
    agents
}

/// The text of the last message of an OpenAI request body.
pub(crate) fn last_message(body: &Value) -> String {
    body["messages"]
        .as_array()
        .and_then(|m| m.last())
        .map(|m| m["content"].to_string())
        .unwrap_or_default()
}

/// A Task call to `agent` with `prompt` (also its description).
pub(crate) fn task(agent: &str, prompt: &str) -> (&'static str, Value) {
    (
        "Task",
        json!({"description": prompt, "prompt": prompt, "subagent_type": agent}),
    )
}

/// A model turn that calls Bash with `cmd`.
pub(crate) fn bash_call(cmd: &str) -> Reply {
    Reply::tool_calls(vec![("Bash", json!({"command": cmd}))])
}

/// The texts of an A2A message's parts, a line each.
pub(crate) fn texts(message: &Value) -> String {
    message["parts"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| p["text"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

/// An A2A 1.0 JSON-RPC request to `url`; the whole response.
pub(crate) async fn a2a_rpc(url: &str, method: &str, params: Value) -> Value {
    reqwest::Client::new()
        .post(url)
        .header("A2A-Version", "1.0")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}))
        .send()
        .await
        .expect("the server answers")
        .json()
        .await
        .expect("JSON")
}

/// Serves `registry` over A2A on a free 127.0.0.1 port until the test ends; returns the URL
/// of `agent` and the server (for its options and shutdown token).
#[cfg(feature = "server")]
pub(crate) async fn serve_a2a(
    registry: Subagents,
    options: &subagents::ServeOptions,
    agent: &str,
) -> (String, subagents::a2a::server::A2aServer) {
    let server = registry.a2a_server(options).expect("server");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let url = format!("http://{}/{agent}", listener.local_addr().expect("addr"));
    let serving = server.clone();
    tokio::spawn(async move {
        let _keep = registry;
        let _ = serving.serve(listener, std::future::pending::<()>()).await;
    });
    (url, server)
}

/// A reference to the remote A2A agent at `url`, named `name` here.
#[cfg(feature = "a2a")]
pub(crate) fn remote_reference(url: &str, name: &str) -> subagents::spi::SubagentReference {
    subagents::spi::SubagentReference::new(url, subagents::a2a::client::KIND)
        .with_metadata(subagents::a2a::client::keys::NAME, name)
}

/// The text contents of an MCP tool result, a line each.
#[cfg(feature = "mcp")]
pub(crate) fn text(r: &rmcp::model::CallToolResult) -> String {
    r.content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Serves a `worker` agent (Bash) in `dir` over MCP (streamable HTTP on 127.0.0.1); `replies`
/// are its model's turns, `tune` sets the tool server's options. Returns the registry, the
/// server and its URL.
#[cfg(feature = "mcp")]
pub(crate) async fn serve_mcp_worker(
    model: &ScriptedModelServer,
    dir: &Path,
    replies: Vec<Reply>,
    tune: impl FnOnce(subagents::mcp::McpToolServer) -> subagents::mcp::McpToolServer,
) -> (Subagents, subagents::mcp::McpHttpServer, String) {
    for r in replies {
        model.push(r);
    }
    let agents = write_agent(
        dir,
        "worker",
        "---\nname: worker\ndescription: Runs commands.\ntools: Bash\n---\nWork.\n",
    );
    // Confined Bash cannot create files directly in the workspace root (they could be its
    // protected control files): commands create theirs in `out/`.
    std::fs::create_dir_all(dir.join("work/out")).expect("work/out");
    let registry = Subagents::builder()
        .model(model.openai_model("worker-model"))
        .agents_dir(&agents)
        .workspace(dir.join("work"))
        .builtin_agents(false)
        .build()
        .await
        .expect("builds");
    let server = tune(registry.mcp_server())
        .serve_streamable_http("127.0.0.1:0".parse().unwrap())
        .await
        .expect("serves");
    let url = format!("http://{}/mcp", server.local_addr());
    (registry, server, url)
}

/// The MCP `Task` call [`serve_mcp_worker`]'s tests make: `worker`, to touch a file.
#[cfg(feature = "mcp")]
pub(crate) fn worker_task_call() -> rmcp::model::CallToolRequestParams {
    let Value::Object(m) = json!({
        "description": "touch a file",
        "prompt": "touch it",
        "subagent_type": "worker",
    }) else {
        unreachable!()
    };
    rmcp::model::CallToolRequestParams::new("Task").with_arguments(m)
}

/// Runs the main agent of `agents` on `prompt` with a fresh progress recorder: the outcome (it
/// must run) and what the recorder saw.
pub(crate) async fn run_recorded(
    agents: &Subagents,
    prompt: &str,
) -> (subagents::TaskOutcome, std::sync::Arc<ProgressRecorder>) {
    let recorder = std::sync::Arc::new(ProgressRecorder::new());
    let outcome = agents
        .main_agent()
        .progress(recorder.clone())
        .run(prompt)
        .await
        .expect("runs");
    (outcome, recorder)
}

/// A workspace holding `big.txt`: 100 lines of 59 `y`s (6,000 bytes).
pub(crate) fn big_file_workspace() -> tempfile::TempDir {
    let workspace = tempfile::tempdir().unwrap();
    let line = format!("{}\n", "y".repeat(59));
    std::fs::write(workspace.path().join("big.txt"), line.repeat(100)).unwrap();
    workspace
}
