//! Interop with the official A2A Python SDK: our `A2A` client kind, driven through the `Task`
//! tool, against small agents built on `a2a-sdk` 1.x (JSON-RPC and HTTP+JSON) and 0.3.26
//! (JSON-RPC), each running as a real server on 127.0.0.1.
//!
//! The venvs come from `.ci/setup-python.sh` (`target/py/a2a-1x`, `target/py/a2a-03`, or the
//! interpreters named by `SUBAGENTS_A2A_PY_1X` / `SUBAGENTS_A2A_PY_03`). Without them a test
//! is `#[ignore]`d, so `cargo test` reports it as ignored; `.ci/run` sets the venvs up and runs
//! these with `-- --ignored`, where a missing venv fails.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use subagent_a2a::A2aError;
use subagent_a2a::client::{KIND, a2a_subagent_type};
use subagent_a2a::types::jsonrpc::codes;
use subagent_a2a::types::v1;
use subagent_spi::{
    CancellationToken, ProgressEvent, ProgressKind, SubagentReference, TaskContext,
};
use task_tool::TaskTool;

/// The Python peers of `subagent-a2a`'s own interop tests: venvs, scripts, servers.
#[path = "../../crates/subagent-a2a/tests/it/python/mod.rs"]
mod python;

use python::{PyServer, Venv};

#[derive(Clone, Copy, Debug)]
enum Sdk {
    V1,
    V03,
}

impl Sdk {
    /// The venv, the server script (under `crates/subagent-a2a/tests/`) and the agent's name.
    fn parts(self) -> (Venv, &'static str, &'static str) {
        match self {
            Sdk::V1 => (python::SDK_1X, "py/server_v1.py", "py-v1-agent"),
            Sdk::V03 => (python::SDK_03, "py/server_v03.py", "py-v03-agent"),
        }
    }
    fn agent(self) -> &'static str {
        self.parts().2
    }
}

/// Starts the `sdk`'s agent server, with `extra` arguments, on a free port.
async fn start(sdk: Sdk, extra: &[&str]) -> PyServer {
    let (venv, script, _) = sdk.parts();
    PyServer::start(
        &python::interpreter(venv),
        script,
        python::free_port(),
        extra,
    )
    .await
}

/// Waits for `server` to log `CANCELLED <task id>` and returns the id.
async fn cancelled_task_id(server: &PyServer) -> String {
    for _ in 0..200 {
        if let Some(id) = server
            .stderr()
            .lines()
            .find_map(|l| l.strip_prefix("CANCELLED ").map(str::trim))
            .filter(|id| !id.is_empty())
        {
            return id.to_string();
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!(
        "the Python server never logged a cancel: {}",
        server.stderr()
    );
}

async fn task_tool(refs: Vec<SubagentReference>) -> Arc<TaskTool> {
    let tool = TaskTool::builder()
        .subagent_type(a2a_subagent_type())
        .subagent_references(refs)
        .build()
        .await
        .unwrap_or_else(|e| panic!("building the Task tool failed: {e}"));
    Arc::new(tool)
}

fn call(agent: &str, prompt: &str, resume: Option<&str>) -> serde_json::Value {
    let mut v = serde_json::json!({
        "description": "interop test",
        "prompt": prompt,
        "subagent_type": agent,
    });
    if let Some(r) = resume {
        v["resume"] = r.into();
    }
    v
}

fn session_of(content: &str) -> String {
    let start = content
        .find("session: ")
        .unwrap_or_else(|| panic!("no session in: {content}"))
        + "session: ".len();
    content[start..]
        .split([' ', ']'])
        .next()
        .unwrap_or_default()
        .to_string()
}

type Events = Arc<Mutex<Vec<ProgressEvent>>>;

fn recording_ctx() -> (TaskContext, Events) {
    let events: Events = Arc::default();
    let sink = events.clone();
    let ctx = TaskContext::new().with_progress(Arc::new(move |e: ProgressEvent| {
        sink.lock().unwrap_or_else(|p| p.into_inner()).push(e);
    }));
    (ctx, events)
}

async fn run(tool: &TaskTool, agent: &str, prompt: &str, resume: Option<&str>) -> (bool, String) {
    let out = tool
        .call_tool(call(agent, prompt, resume), &TaskContext::new())
        .await;
    (out.is_error, out.content)
}

/// Runs `prompt` (resuming `session`), which must complete with a text containing `expected`.
async fn completes_with(
    tool: &TaskTool,
    agent: &str,
    prompt: &str,
    session: Option<&str>,
    expected: &str,
) {
    let (err, text) = run(tool, agent, prompt, session).await;
    assert!(!err, "{text}");
    assert!(text.contains(expected), "{text}");
    assert!(text.contains("status: completed"), "{text}");
}

async fn message_reply(tool: &TaskTool, agent: &str) {
    completes_with(
        tool,
        agent,
        "message hello there",
        None,
        "echo: hello there",
    )
    .await;
}

async fn artifact_task(tool: &TaskTool, agent: &str) {
    let expected = "artifact: quarterly report";
    completes_with(tool, agent, "artifact quarterly report", None, expected).await;
}

/// Starts the `sdk` agent with `flags` and runs every scenario through its card's default
/// interface (streaming unless `--no-streaming`).
async fn default_agent_passes(sdk: Sdk, flags: &[&str]) {
    let server = start(sdk, flags).await;
    let tool = task_tool(vec![SubagentReference::new(&server.base, KIND)]).await;
    let streaming = !flags.contains(&"--no-streaming");
    every_scenario(&tool, &server, sdk.agent(), streaming).await;
}

/// Every scenario an agent passes; with `streaming`, the streaming and cancellation ones too.
async fn every_scenario(tool: &Arc<TaskTool>, server: &PyServer, agent: &str, streaming: bool) {
    message_reply(tool, agent).await;
    artifact_task(tool, agent).await;
    if streaming {
        streaming_progress(tool, agent).await;
    }
    failed_task(tool, agent).await;
    input_required_then_resume(tool, agent).await;
    input_required_answered_by_the_approver(tool, agent).await;
    if streaming {
        cancellation_reaches_remote(tool.clone(), server, agent).await;
    }
}

async fn failed_task(tool: &TaskTool, agent: &str) {
    let (err, text) = run(tool, agent, "fail the impossible", None).await;
    assert!(err, "a failed remote task must be an error: {text}");
    assert!(text.contains("cannot do that: the impossible"), "{text}");
}

async fn input_required_then_resume(tool: &TaskTool, agent: &str) {
    let (err, text) = run(tool, agent, "ask colour", None).await;
    assert!(!err, "{text}");
    assert!(text.contains("What is your favourite colour?"), "{text}");
    assert!(text.contains("needs_input"), "{text}");
    let session = session_of(&text);
    assert!(session.starts_with("a2a:"), "{session}");
    completes_with(
        tool,
        agent,
        "blue",
        Some(&session),
        "favourite colour: blue",
    )
    .await;
}

/// With an approver that can answer (here `--yes`'s), the remote question is answered with a
/// follow-up on the same task, which completes in the same call.
async fn input_required_answered_by_the_approver(tool: &TaskTool, agent: &str) {
    let ctx = TaskContext::new().with_approver(Arc::new(subagent_core::FixedApprover::allow_all()));
    let out = tool.call_tool(call(agent, "ask colour", None), &ctx).await;
    assert!(!out.is_error, "{}", out.content);
    assert!(
        out.content.contains("favourite colour: yes"),
        "{}",
        out.content
    );
    assert!(out.content.contains("status: completed"), "{}", out.content);
}

async fn streaming_progress(tool: &TaskTool, agent: &str) {
    let (ctx, events) = recording_ctx();
    let out = tool
        .call_tool(call(agent, "stream the news", None), &ctx)
        .await;
    assert!(!out.is_error, "{}", out.content);
    assert!(
        out.content.contains("streamed: the news"),
        "{}",
        out.content
    );
    let events = events.lock().unwrap_or_else(|p| p.into_inner()).clone();
    let statuses: Vec<String> = events
        .iter()
        .filter_map(|e| match &e.kind {
            ProgressKind::Status { message } => Some(message.clone()),
            _ => None,
        })
        .collect();
    let steps: Vec<&String> = statuses.iter().filter(|s| s.starts_with("step ")).collect();
    assert_eq!(
        steps,
        ["step 1", "step 2", "step 3"],
        "all statuses: {statuses:?}"
    );
    assert!(
        events.iter().any(|e| matches!(&e.kind,
            ProgressKind::TextDelta { text } if text.contains("streamed: the news"))),
        "no artifact text delta in {events:?}"
    );
}

async fn cancellation_reaches_remote(tool: Arc<TaskTool>, server: &PyServer, agent: &str) {
    let token = CancellationToken::new();
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let tx = Mutex::new(Some(tx));
    let ctx = TaskContext::new()
        .with_cancel(token.clone())
        .with_progress(Arc::new(move |e: ProgressEvent| {
            if matches!(&e.kind, ProgressKind::Status { message } if message == "working slowly")
                && let Some(tx) = tx.lock().unwrap_or_else(|p| p.into_inner()).take()
            {
                let _ = tx.send(());
            }
        }));
    let t = tool.clone();
    let agent_name = agent.to_string();
    let handle =
        tokio::spawn(async move { t.call_tool(call(&agent_name, "slow job", None), &ctx).await });
    tokio::time::timeout(Duration::from_secs(30), rx)
        .await
        .expect("the slow task reported it is working")
        .expect("progress sender kept");
    token.cancel();
    let out = tokio::time::timeout(Duration::from_secs(30), handle)
        .await
        .expect("the Task call returned after cancel")
        .expect("task joined");
    assert!(out.content.contains("cancelled"), "{}", out.content);
    let id = cancelled_task_id(server).await;
    let (err, text) = run(&tool, agent, &format!("was-cancelled {id}"), None).await;
    assert!(!err, "{text}");
    assert!(
        text.starts_with("yes"),
        "remote did not record the cancel of {id}: {text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the official Python A2A SDK venvs: bash .ci/setup-python.sh, then cargo test --workspace --all-features -- --ignored (CI does)"]
async fn v1_jsonrpc_streaming_agent() {
    let server = start(Sdk::V1, &[]).await;
    let tool = task_tool(vec![SubagentReference::new(&server.base, KIND)]).await;
    let description = subagent_spi::Tool::description(&*tool);
    assert!(
        description.contains("py-v1-agent: Test agent on the official A2A 1.x Python SDK.")
            && description.contains("Echo: Echoes and exercises A2A task states."),
        "card description or skills missing from the Task description: {description}"
    );
    let agent = Sdk::V1.agent();
    every_scenario(&tool, &server, agent, true).await;
}

/// Asserts that `err` is the JSON-RPC error `code`, or the HTTP+JSON `status` with `reason`.
#[track_caller]
fn assert_a2a_error(err: &A2aError, code: i32, status: u16, reason: &str) {
    assert!(
        err.rpc_code() == Some(code)
            || matches!(err, A2aError::Rest { status: s, reason: Some(r), .. } if *s == status && r == reason),
        "{err}"
    );
}

/// The typed client on its own: get, list and cancel against the 1.x SDK, on both bindings.
async fn client_calls(base: &str, binding: &str) {
    let def = subagent_a2a::A2aResolver::new()
        .resolve_a2a(&SubagentReference::new(base, KIND).with_metadata("binding", binding))
        .await
        .expect("resolve");
    let client = def.client(reqwest::Client::new());
    let sent = client
        .send_message(v1::SendMessageRequest::new(v1::Message::new(
            v1::Role::User,
            format!("list-{binding}"),
            vec![v1::Part::text("artifact listed")],
        )))
        .await
        .expect("send");
    let v1::SendMessageResponse::Task(task) = sent else {
        panic!("expected a task, got {sent:?}")
    };
    assert_eq!(task.status.state, v1::TaskState::Completed);
    let got = client.get_task(&task.id, None).await.expect("get");
    assert_eq!(got.id, task.id);
    assert_eq!(
        got.artifacts[0].parts[0].as_text(),
        Some("artifact: listed")
    );
    let listed = client
        .list_tasks(v1::ListTasksRequest {
            context_id: task.context_id.clone(),
            ..Default::default()
        })
        .await
        .expect("list");
    assert!(listed.tasks.iter().any(|t| t.id == task.id), "{listed:?}");
    let err = client
        .cancel_task(&task.id)
        .await
        .expect_err("a completed task cannot be canceled");
    assert_a2a_error(&err, codes::TASK_NOT_CANCELABLE, 400, "TASK_NOT_CANCELABLE");
    let err = client
        .get_task("no-such-task", None)
        .await
        .expect_err("unknown task");
    assert_a2a_error(&err, codes::TASK_NOT_FOUND, 404, "TASK_NOT_FOUND");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the official Python A2A SDK venvs: bash .ci/setup-python.sh, then cargo test --workspace --all-features -- --ignored (CI does)"]
async fn v1_typed_client_get_list_cancel() {
    let server = start(Sdk::V1, &[]).await;
    client_calls(&server.base, "JSONRPC").await;
    client_calls(&server.base, "HTTP+JSON").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the official Python A2A SDK venvs: bash .ci/setup-python.sh, then cargo test --workspace --all-features -- --ignored (CI does)"]
async fn v1_jsonrpc_blocking_agent() {
    default_agent_passes(Sdk::V1, &["--no-streaming"]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the official Python A2A SDK venvs: bash .ci/setup-python.sh, then cargo test --workspace --all-features -- --ignored (CI does)"]
async fn v1_http_json_agent() {
    let server = start(Sdk::V1, &[]).await;
    let agent = "py-v1-rest";
    let reference = SubagentReference::new(&server.base, KIND)
        .with_metadata("binding", "HTTP+JSON")
        .with_metadata("name", agent);
    let tool = task_tool(vec![reference]).await;
    every_scenario(&tool, &server, agent, true).await;
}

/// Our 0.3 client against the 1.x SDK's 0.3 compatibility layer (same agent, same endpoint).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the official Python A2A SDK venvs: bash .ci/setup-python.sh, then cargo test --workspace --all-features -- --ignored (CI does)"]
async fn v03_client_against_the_1x_sdk_compat_layer() {
    let server = start(Sdk::V1, &["--compat"]).await;
    let agent = "py-v1-as-03";
    let reference = SubagentReference::new(&server.base, KIND)
        .with_metadata("protocol_version", "0.3")
        .with_metadata("name", agent);
    let def = subagent_a2a::A2aResolver::new()
        .resolve_a2a(&reference)
        .await
        .expect("resolve");
    assert_eq!(
        def.endpoint().version,
        subagent_a2a::types::ProtocolVersion::V03
    );
    let tool = task_tool(vec![reference]).await;
    every_scenario(&tool, &server, agent, true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the official Python A2A SDK venvs: bash .ci/setup-python.sh, then cargo test --workspace --all-features -- --ignored (CI does)"]
async fn v03_jsonrpc_streaming_agent() {
    default_agent_passes(Sdk::V03, &[]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the official Python A2A SDK venvs: bash .ci/setup-python.sh, then cargo test --workspace --all-features -- --ignored (CI does)"]
async fn v03_jsonrpc_blocking_agent() {
    default_agent_passes(Sdk::V03, &["--no-streaming"]).await;
}

/// The same executor, called directly through the SPI (no `Task` tool).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the official Python A2A SDK venvs: bash .ci/setup-python.sh, then cargo test --workspace --all-features -- --ignored (CI does)"]
async fn spi_executor_directly_against_v03() {
    let server = start(Sdk::V03, &[]).await;
    let kind = a2a_subagent_type();
    let def = kind
        .resolver()
        .resolve(&SubagentReference::new(&server.base, KIND))
        .await
        .expect("resolve the 0.3 card");
    let a2a = def
        .downcast_ref::<subagent_a2a::A2aSubagentDefinition>()
        .expect("an A2A definition");
    assert_eq!(
        a2a.endpoint().version,
        subagent_a2a::types::ProtocolVersion::V03
    );
    assert!(a2a.uses_streaming());
    let (ctx, _events) = recording_ctx();
    let out = kind
        .executor()
        .execute(
            subagent_spi::TaskCall::new(def.name(), "echo", "message direct"),
            def.clone(),
            ctx,
        )
        .await
        .expect("message reply");
    assert_eq!(out.text, "echo: direct");
    assert_eq!(out.status, subagent_spi::TaskStatus::Completed);
}
