//! Issue 39: `subagents mcp --listen` keeps its clients apart. Two or three real MCP clients
//! (rmcp, each its own streamable-HTTP session, or stateless requests with their own
//! credential) talk to one real `subagents mcp` process on 127.0.0.1: none lists, reads,
//! stops, messages or answers another's tasks or questions, question keys cannot be guessed,
//! one client's background tasks leave room for the next, a model-chosen schema that would
//! cost seconds per check is refused, and a body that is not JSON gets HTTP 400.

use crate::common;

use std::process::Stdio;
use std::time::Duration;

use common::{free_port, process_in, tool_text as text, word, write_agent};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CancelTaskParams, ClientCapabilities,
    ClientConfig, GetTaskParams, Implementation, InputResponses, JsonObject, ProtocolVersion,
    TaskPayload, TaskStatus, UpdateTaskParams,
};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::{Value, json};
use subagent_testkit::{Reply, ScriptedModelServer};

/// A running `subagents mcp --listen`, killed when dropped.
struct Mcp {
    _child: tokio::process::Child,
    _home: tempfile::TempDir,
    url: String,
    /// The workspace the `worker` agent's Bash runs in (`out/` is writable).
    work: std::path::PathBuf,
}

/// Starts `subagents mcp --listen 127.0.0.1:PORT` in a temporary home with one agent, `worker` (Bash,
/// asking before it runs a command), on the scripted `model`; `extra` adds arguments. Waits
/// until the port accepts.
async fn serve(model: &ScriptedModelServer, extra: &[&str]) -> Mcp {
    let tmp = tempfile::tempdir().expect("tmp");
    let home = tmp.path();
    let agents = write_agent(
        home,
        "worker",
        "---\nname: worker\ndescription: Runs commands.\ntools: Bash\n---\nWork.\n",
    );
    let work = home.join("work");
    // Confined Bash creates files in existing subdirectories of the workspace.
    std::fs::create_dir_all(work.join("out")).expect("work/out");
    let listen = format!("127.0.0.1:{}", free_port());
    let mut cmd = process_in(home);
    cmd.args(["mcp", "--model", &model.openai_model("m"), "--agents"])
        .arg(&agents)
        .arg("--workspace")
        .arg(&work)
        .args(["--listen", &listen])
        .args(extra)
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let mut cmd = tokio::process::Command::from(cmd);
    cmd.kill_on_drop(true);
    let child = cmd.spawn().expect("subagents mcp starts");
    for _ in 0..600 {
        if tokio::net::TcpStream::connect(&listen).await.is_ok() {
            return Mcp {
                _child: child,
                _home: tmp,
                url: format!("http://{listen}/mcp"),
                work,
            };
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("subagents mcp never listened on {listen}");
}

/// A model server whose `worker` asks to `touch out/FILE`, then says it did not.
async fn touching(file: &str) -> ScriptedModelServer {
    let model = ScriptedModelServer::start().await;
    model.push(bash_call(&format!("touch out/{file}")));
    model.push(Reply::text("did not touch it"));
    model
}

/// A client declaring the tasks extension (or not), on protocol `version`.
struct Client {
    tasks: bool,
    version: ProtocolVersion,
}

impl ClientHandler for Client {
    fn get_info(&self) -> ClientConfig {
        let caps: ClientCapabilities = serde_json::from_value(if self.tasks {
            json!({"extensions": {"io.modelcontextprotocol/tasks": {}}})
        } else {
            json!({})
        })
        .expect("capabilities");
        ClientConfig::new(caps, Implementation::new("scope-test-client", "1.0"))
            .with_protocol_version(self.version.clone())
    }
}

/// A client of its own streamable-HTTP session (the 2025-11-25 revision).
async fn session(url: &str, tasks: bool) -> RunningService<RoleClient, Client> {
    Client {
        tasks,
        version: ProtocolVersion::V_2025_11_25,
    }
    .serve(StreamableHttpClientTransport::from_uri(url.to_string()))
    .await
    .expect("MCP handshake")
}

/// A 2026-07-28 client (stateless requests) sending `Authorization: Bearer KEY`.
async fn stateless(url: &str, key: &str) -> RunningService<RoleClient, Client> {
    let transport = StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(url.to_string()).auth_header(key),
    );
    Client {
        tasks: true,
        version: ProtocolVersion::V_2026_07_28,
    }
    .serve_with_lifecycle(
        transport,
        ClientLifecycleMode::Discover {
            preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        },
    )
    .await
    .expect("discovers")
}

fn params(tool: &str, input: Value) -> CallToolRequestParams {
    let Value::Object(args) = input else {
        panic!("tool input is an object")
    };
    let args: JsonObject = args;
    CallToolRequestParams::new(tool.to_string()).with_arguments(args)
}

/// Calls `tool` and returns its result (a plain call, answered in full).
async fn call(
    client: &RunningService<RoleClient, Client>,
    tool: &str,
    input: Value,
) -> CallToolResult {
    client
        .call_tool(params(tool, input))
        .await
        .expect("tool call answered")
}

/// `Task` for the `worker` agent, to touch `file` in `out/`.
fn worker(file: &str, background: bool) -> Value {
    json!({"description": "touch a file", "prompt": format!("touch out/{file}"),
           "subagent_type": "worker", "run_in_background": background})
}

fn bash_call(cmd: &str) -> Reply {
    Reply::tool_calls(vec![("Bash", json!({"command": cmd}))])
}

/// Starts the worker's `Task` (touching `file`, asking first) on `client` as an MCP task; its id.
async fn start_task(client: &RunningService<RoleClient, Client>, file: &str) -> String {
    let CallToolResponse::Task(handle) = client
        .call_tool_once(params("Task", worker(file, false)))
        .await
        .expect("answers")
    else {
        panic!("expected a task handle");
    };
    handle.task.task_id.clone()
}

/// Asserts that `tasks/get` and `tasks/cancel` of the task `id` are refused to `other` as an
/// unknown task.
async fn unknown_to(other: &RunningService<RoleClient, Client>, id: &str) {
    let got = other
        .get_task(GetTaskParams::new(id))
        .await
        .expect_err("not B's");
    assert!(got.to_string().contains("unknown task"), "{got}");
    let cancel = other
        .cancel_task(CancelTaskParams::new(id))
        .await
        .expect_err("not B's");
    assert!(cancel.to_string().contains("unknown task"), "{cancel}");
}

/// Polls `tasks/get` until the task is not `working` (bounded: 30 s).
async fn settle(
    client: &RunningService<RoleClient, Client>,
    id: &str,
) -> rmcp::model::DetailedTask {
    subagent_testkit::mcp::poll_task(client, id, |s| s != TaskStatus::Working).await
}

fn answer(key: &str, decision: &str) -> InputResponses {
    let mut r = InputResponses::new();
    r.insert(
        key.into(),
        json!({"action": "accept", "content": {"decision": decision}}),
    );
    r
}

/// B holds A's task id (as an attacker who saw it would) and its question's key: the task
/// tools answer as if it did not exist, list nothing of A's, and A's Bash call waits for A
/// alone. On the old code B's refused `SendMessage` listed A's id, and B's `approve: yes` ran
/// the command.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_reaches_none_of_another_clients_tasks() {
    let model = touching("a.txt").await;
    let mcp = serve(&model, &[]).await;
    let (a, b) = (
        session(&mcp.url, false).await,
        session(&mcp.url, false).await,
    );

    let started = call(&a, "Task", worker("a.txt", true)).await;
    let id = word(&text(&started), "task_").expect("a task id");
    let waiting = call(
        &a,
        "TaskOutput",
        json!({"task_id": id, "timeout_ms": 30000}),
    )
    .await;
    assert!(
        text(&waiting).contains("waiting_for_approval"),
        "{}",
        text(&waiting)
    );

    let listed = call(&b, "SendMessage", json!({"to": "nobody", "message": "hi"})).await;
    assert!(
        !text(&listed).contains(&id),
        "B sees A's id: {}",
        text(&listed)
    );
    assert!(
        text(&listed).contains("your tasks: (none)"),
        "{}",
        text(&listed)
    );
    let tries = [
        (
            "SendMessage",
            json!({"to": id, "message": "stop what you do"}),
        ),
        ("TaskOutput", json!({"task_id": id, "block": false})),
        (
            "TaskOutput",
            json!({"task_id": id, "approve": "yes", "block": false}),
        ),
        ("TaskStop", json!({"task_id": id})),
    ];
    for (tool, input) in tries {
        let out = call(&b, tool, input.clone()).await;
        let t = text(&out);
        assert_eq!(out.is_error, Some(true), "{tool} {input}: {t}");
        for leak in ["waiting_for_approval", "touch", "worker", "cancelled"] {
            assert!(!t.contains(leak), "{tool} {input} shows `{leak}`: {t}");
        }
    }
    // A's task still waits for A, and the command has not run.
    let still = call(&a, "TaskOutput", json!({"task_id": id, "block": false})).await;
    assert!(
        text(&still).contains("waiting_for_approval"),
        "{}",
        text(&still)
    );
    assert!(
        !mcp.work.join("out/a.txt").exists(),
        "B's yes ran A's command"
    );
    let done = call(
        &a,
        "TaskOutput",
        json!({"task_id": id, "approve": "no", "timeout_ms": 30000}),
    )
    .await;
    assert!(text(&done).contains("status: completed"), "{}", text(&done));
    assert!(!mcp.work.join("out/a.txt").exists());
    a.cancel().await.expect("a closes");
    b.cancel().await.expect("b closes");
}

/// MCP tasks: another session's `tasks/get`, `tasks/update` (with the key it was shown, or
/// the old predictable `approval_1`) and `tasks/cancel` find no task.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_sessions_mcp_task_and_question_are_unknown() {
    let model = touching("t.txt").await;
    let mcp = serve(&model, &[]).await;
    let (a, b) = (session(&mcp.url, true).await, session(&mcp.url, true).await);
    let id = start_task(&a, "t.txt").await;
    let waiting = settle(&a, &id).await;
    let TaskPayload::InputRequired { input_requests } = &waiting.payload else {
        panic!("expected input_required, got {waiting:?}");
    };
    let key = input_requests.keys().next().expect("a question").clone();
    assert_ne!(key, "approval_1", "the key is not predictable");

    for k in [key.as_str(), "approval_1"] {
        let upd = b
            .update_task(UpdateTaskParams::new(&id, answer(k, "yes")))
            .await
            .expect_err("not B's");
        assert!(upd.to_string().contains("unknown task"), "{upd}");
    }
    unknown_to(&b, &id).await;

    assert_eq!(settle(&a, &id).await.status(), TaskStatus::InputRequired);
    assert!(
        !mcp.work.join("out/t.txt").exists(),
        "B's answer ran A's command"
    );
    a.update_task(UpdateTaskParams::new(&id, answer(&key, "no")))
        .await
        .expect("A answers its own question");
    let mut done = settle(&a, &id).await;
    for _ in 0..600 {
        if done.status().is_terminal() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        done = settle(&a, &id).await;
    }
    assert_eq!(done.status(), TaskStatus::Completed, "{done:?}");
    assert!(!mcp.work.join("out/t.txt").exists());
}

/// 2026-07-28 clients have no session: each is told apart by the credential it sends, and a
/// request without an accepted one gets nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stateless_clients_are_told_apart_by_their_credential() {
    let model = touching("s.txt").await;
    let mcp = serve(&model, &["--api-key", "key-of-a", "--api-key", "key-of-b"]).await;
    let a = stateless(&mcp.url, "key-of-a").await;
    let b = stateless(&mcp.url, "key-of-b").await;
    let id = start_task(&a, "s.txt").await;
    assert_eq!(settle(&a, &id).await.status(), TaskStatus::InputRequired);
    unknown_to(&b, &id).await;
    // A again, in a new connection with the same credential: still its task.
    let a_again = stateless(&mcp.url, "key-of-a").await;
    assert_eq!(
        settle(&a_again, &id).await.status(),
        TaskStatus::InputRequired
    );
    a_again
        .cancel_task(CancelTaskParams::new(&id))
        .await
        .expect("A cancels its own task");
    assert!(!mcp.work.join("out/s.txt").exists());
}

/// One client starting background tasks until it is refused leaves places for the next
/// clients: alone it gets half the limit (8 of 16), the next a share too. On the old code the
/// first took all 16 and the second was refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_clients_background_tasks_leave_room_for_the_next() {
    let model = ScriptedModelServer::start().await;
    // Every model call stalls: background tasks keep running.
    model.set_fallback(Some(Reply::text("never").with_hang_after(0)));
    let mcp = serve(&model, &[]).await;
    let b = session(&mcp.url, false).await;
    let c = session(&mcp.url, false).await;
    let mut started = 0;
    let refusal = loop {
        let out = call(&b, "Task", worker("b.txt", true)).await;
        if out.is_error == Some(true) {
            break text(&out);
        }
        started += 1;
        assert!(started <= 16, "never refused");
    };
    assert_eq!(started, 8, "alone, a client gets half the limit: {refusal}");
    assert!(refusal.contains("your share"), "{refusal}");
    let c_started = call(&c, "Task", worker("c.txt", true)).await;
    assert_ne!(
        c_started.is_error,
        Some(true),
        "C is locked out: {}",
        text(&c_started)
    );
    assert!(
        word(&text(&c_started), "task_").is_some(),
        "{}",
        text(&c_started)
    );
    // A third client finds a share too.
    let d = session(&mcp.url, false).await;
    let d_started = call(&d, "Task", worker("d.txt", true)).await;
    assert_ne!(d_started.is_error, Some(true), "{}", text(&d_started));
}

/// A schema a model (here: an MCP client) chooses is compiled under the strict profile: a
/// counted repetition that compiles to megabytes (matching 256 KiB against it took seconds)
/// and too many patterns are refused before anything runs; on the old code both were
/// accepted and the agent ran. And a body that is not JSON gets HTTP 400 with a JSON-RPC
/// parse error (it was 415).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_schemas_are_refused_and_a_parse_error_is_400() {
    let model = ScriptedModelServer::start().await;
    let mcp = serve(&model, &[]).await;
    let a = session(&mcp.url, false).await;
    let many: Vec<Value> = (0..65)
        .map(|i| json!({"pattern": format!("^{i}$")}))
        .collect();
    let cases = [
        (
            json!({"type": "string", "pattern": "^(.{0,1000})*$"}),
            "compiles to more than",
        ),
        (
            json!({"type": "string", "anyOf": many}),
            "more than 64 patterns",
        ),
        (
            json!({"type": "string", "pattern": "a".repeat(2000)}),
            "over the 1024 accepted",
        ),
    ];
    for (schema, why) in cases {
        let mut input = worker("x.txt", false);
        input["output_schema"] = schema;
        let out = call(&a, "Task", input).await;
        assert_eq!(out.is_error, Some(true), "{}", text(&out));
        assert!(text(&out).contains(why), "{why}: {}", text(&out));
    }
    assert_eq!(model.request_count(), 0, "no agent ran");

    let http = reqwest::Client::new();
    let post = |content_type: &'static str| {
        http.post(&mcp.url)
            .header("content-type", content_type)
            .header("accept", "application/json, text/event-stream")
            .body("{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": ")
            .send()
    };
    let bad = post("application/json").await.expect("answered");
    assert_eq!(bad.status(), 400);
    let body: Value = bad.json().await.expect("a JSON-RPC error");
    assert_eq!(body["error"]["code"], -32700, "{body}");
    assert_eq!(body["id"], Value::Null, "{body}");
    // A body of another type keeps its 415.
    assert_eq!(post("text/plain").await.expect("answered").status(), 415);
}
