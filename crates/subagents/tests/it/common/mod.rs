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

/// A test's builder that must build: `builder.built().await` for
/// `builder.build().await.expect("builds")`.
pub(crate) trait Built {
    /// Builds, panicking with the error when it fails.
    async fn built(self) -> Subagents;
}

impl Built for SubagentsBuilder {
    async fn built(self) -> Subagents {
        self.build().await.expect("builds")
    }
}

/// Asserts that `outcome` stopped `limit_reached` on `limit` (e.g. `budget_tokens=1000`).
pub(crate) fn assert_limit(outcome: &subagents::TaskOutcome, limit: &str) {
    assert_eq!(
        outcome.status,
        subagents::TaskStatus::LimitReached,
        "{outcome:?}"
    );
    assert_eq!(
        outcome.limit.as_ref().map(ToString::to_string).as_deref(),
        Some(limit)
    );
}

/// [`assert_limit`], and that the main agent's model was asked only once: the limit stopped the
/// tree at its first delegation.
pub(crate) fn assert_limit_on_first_turn(
    outcome: &subagents::TaskOutcome,
    model: &ScriptedModelServer,
    limit: &str,
) {
    assert_limit(outcome, limit);
    assert_eq!(
        model.request_count(),
        1,
        "the main agent was not asked again"
    );
}

/// Scripts the chain main → coordinator → leaf on `model`: the main agent delegates
/// `prompts[0]` to the coordinator, the coordinator `prompts[1]` to the leaf, then the leaf,
/// the coordinator and the main agent answer `answers` in that order.
pub(crate) fn push_chain(model: &ScriptedModelServer, prompts: [&str; 2], answers: [Reply; 3]) {
    model.push(Reply::task_call("coordinator", prompts[0]));
    model.push(Reply::task_call("leaf", prompts[1]));
    model.push_all(answers);
}

/// A builder of the `worker` agent alone (Bash; `extra` frontmatter lines, each ending in a
/// newline), written in `dir` as [`write_agent`] does, with the workspace `DIR/work` and its
/// `out/`: confined Bash cannot create files directly in the workspace root (they could be its
/// protected control files), so commands create theirs in `out/`. The model is the caller's.
pub(crate) fn bash_worker(dir: &Path, extra: &str) -> SubagentsBuilder {
    let agents = write_agent(
        dir,
        "worker",
        &format!(
            "---\nname: worker\ndescription: Runs commands.\ntools: Bash\n{extra}---\nWork.\n"
        ),
    );
    std::fs::create_dir_all(dir.join("work/out")).expect("work/out");
    Subagents::builder()
        .agents_dir(&agents)
        .workspace(dir.join("work"))
        .builtin_agents(false)
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
    let url = serve_at(server.clone(), agent, registry).await;
    (url, server)
}

/// Serves `server` on a free 127.0.0.1 port until the test ends, holding `keep` as long;
/// returns the URL of `path`.
#[cfg(feature = "server")]
pub(crate) async fn serve_at(
    server: subagents::a2a::server::A2aServer,
    path: &str,
    keep: impl Send + 'static,
) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let url = format!("http://{}/{path}", listener.local_addr().expect("addr"));
    tokio::spawn(async move {
        let _keep = keep;
        let _ = server.serve(listener, std::future::pending::<()>()).await;
    });
    url
}

/// A reference to the remote A2A agent at `url`, named `name` here.
#[cfg(feature = "a2a")]
pub(crate) fn remote_reference(url: &str, name: &str) -> subagents::spi::SubagentReference {
    subagents::spi::SubagentReference::new(url, subagents::a2a::client::KIND)
        .with_metadata(subagents::a2a::client::keys::NAME, name)
}

/// Serves a `worker` agent (Bash) in `dir` over MCP (streamable HTTP on 127.0.0.1); `replies`
/// are its model's turns, `tune` sets the tool server's options. Returns the registry, the
/// server and its URL.
#[cfg(feature = "mcp")]
async fn serve_mcp_worker(
    model: &ScriptedModelServer,
    dir: &Path,
    replies: Vec<Reply>,
    tune: impl FnOnce(subagents::mcp::McpToolServer) -> subagents::mcp::McpToolServer,
) -> (Subagents, subagents::mcp::McpHttpServer, String) {
    model.push_all(replies);
    let registry = bash_worker(dir, "")
        .model(model.openai_model("worker-model"))
        .built()
        .await;
    let server = tune(registry.mcp_server())
        .serve_streamable_http("127.0.0.1:0".parse().unwrap())
        .await
        .expect("serves");
    let url = format!("http://{}/mcp", server.local_addr());
    (registry, server, url)
}

/// A `worker` agent served over MCP by [`serve_mcp_worker`], in a fresh directory, with its
/// scripted model; the server runs as long as this lives.
#[cfg(feature = "mcp")]
pub(crate) struct McpWorker {
    /// The served registry's directory (`work/` is the workspace).
    pub dir: tempfile::TempDir,
    /// The server's MCP endpoint.
    pub url: String,
    /// The worker's model.
    pub model: ScriptedModelServer,
    _served: (Subagents, subagents::mcp::McpHttpServer),
}

/// Starts a scripted model and serves the worker on it (see [`serve_mcp_worker`]).
#[cfg(feature = "mcp")]
pub(crate) async fn mcp_worker(
    replies: Vec<Reply>,
    tune: impl FnOnce(subagents::mcp::McpToolServer) -> subagents::mcp::McpToolServer,
) -> McpWorker {
    let model = ScriptedModelServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let (registry, server, url) = serve_mcp_worker(&model, dir.path(), replies, tune).await;
    McpWorker {
        dir,
        url,
        model,
        _served: (registry, server),
    }
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

/// The team on model `team-model` of a server scripted with `replies`, its builder passed
/// through `tune`: runs the main agent on `go` (it must run); what the model was asked, in order.
pub(crate) async fn team_requests(
    replies: impl IntoIterator<Item = Reply>,
    tune: impl FnOnce(SubagentsBuilder) -> SubagentsBuilder,
) -> Vec<subagent_testkit::RecordedRequest> {
    let server = ScriptedModelServer::start().await;
    server.push_all(replies);
    let agents = tune(team_builder_on(&server, "team-model")).built().await;
    run_main(&agents, "go").await;
    server.requests()
}

/// Runs the main agent of `agents` on `prompt`; the outcome (it must run).
pub(crate) async fn run_main(agents: &Subagents, prompt: &str) -> subagents::TaskOutcome {
    agents.main_agent().run(prompt).await.expect("runs")
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

/// The team on model `name`, in a [`big_file_workspace`] and with a context window of `window`
/// tokens: runs its main agent on `prompt` as [`run_recorded`] does; the run must complete.
pub(crate) async fn run_windowed_team(
    model: &ScriptedModelServer,
    name: &str,
    window: u64,
    prompt: &str,
) -> (subagents::TaskOutcome, std::sync::Arc<ProgressRecorder>) {
    let workspace = big_file_workspace();
    let agents = team_builder_on(model, name)
        .workspace(workspace.path())
        .context_window(window)
        .built()
        .await;
    let (outcome, recorder) = run_recorded(&agents, prompt).await;
    assert_eq!(
        outcome.status,
        subagents::TaskStatus::Completed,
        "{}",
        outcome.text
    );
    (outcome, recorder)
}

/// A workspace holding `big.txt`: 100 lines of 59 `y`s (6,000 bytes).
pub(crate) fn big_file_workspace() -> tempfile::TempDir {
    let workspace = tempfile::tempdir().unwrap();
    let line = format!("{}\n", "y".repeat(59));
    std::fs::write(workspace.path().join("big.txt"), line.repeat(100)).unwrap();
    workspace
}
