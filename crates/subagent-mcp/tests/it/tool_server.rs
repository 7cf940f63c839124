//! `McpToolServer` serving the Task / TaskOutput / TaskStop tools, driven by an rmcp client:
//! over streamable HTTP, and over a byte stream framed like stdio.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, ClientRequest, JsonObject,
    ProgressNotificationParam,
};
use rmcp::service::{NotificationContext, PeerRequestOptions, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::json;
use subagent_mcp::McpToolServer;
use subagent_spi::*;
use tokio::sync::Notify;

const KIND: &str = "LOCAL";

#[derive(Debug)]
struct Def {
    name: String,
    reference: SubagentReference,
}

impl SubagentDefinition for Def {
    fn name(&self) -> &str {
        &self.name
    }
    fn description(&self) -> &str {
        "a local test agent"
    }
    fn reference(&self) -> &SubagentReference {
        &self.reference
    }
}

/// A tiny in-process kind: `local:greeter` greets, `local:blocker` waits for cancellation,
/// `local:gated` waits for the test to open its gate (or for cancellation).
#[derive(Default)]
struct Local {
    gate: Notify,
    started: Notify,
    cancelled: AtomicUsize,
    cancel_seen: Notify,
}

#[async_trait]
impl SubagentKind for Local {
    type Agent = Def;

    fn kind(&self) -> Kind {
        Kind::from_static(KIND)
    }

    async fn resolve(&self, r: &SubagentReference) -> Result<Def, SubagentError> {
        let name = r
            .uri
            .strip_prefix("local:")
            .ok_or_else(|| SubagentError::resolution(&r.uri, "expected local:NAME"))?;
        Ok(Def {
            name: name.to_string(),
            reference: r.clone(),
        })
    }

    async fn run(
        &self,
        def: &Def,
        call: TaskCall,
        ctx: TaskContext,
    ) -> Result<TaskOutcome, SubagentError> {
        match def.name.as_str() {
            "greeter" => {
                ctx.emit(ProgressKind::Status {
                    message: "greeting".into(),
                });
                Ok(TaskOutcome::completed(format!("hello, {}", call.prompt)))
            }
            "gated" => tokio::select! {
                () = self.gate.notified() => Ok(TaskOutcome::completed("the gate opened")),
                () = ctx.cancel().cancelled() => {
                    Ok(TaskOutcome::with_status("cancelled at the gate", TaskStatus::Cancelled))
                }
            },
            "blocker" => {
                self.started.notify_one();
                ctx.cancel().cancelled().await;
                self.cancelled.fetch_add(1, Ordering::SeqCst);
                self.cancel_seen.notify_one();
                Ok(TaskOutcome::with_status("", TaskStatus::Cancelled))
            }
            other => Err(SubagentError::execution(other, "no such agent")),
        }
    }
}

async fn task_tools(local: Arc<Local>) -> Vec<Arc<dyn Tool>> {
    let task = task_tool::TaskTool::builder()
        .subagent_type(SubagentType::from_kind(local))
        .subagent_reference(SubagentReference::new("local:greeter", KIND))
        .subagent_reference(SubagentReference::new("local:blocker", KIND))
        .subagent_reference(SubagentReference::new("local:gated", KIND))
        .build()
        .await
        .unwrap();
    task.tools().to_vec()
}

/// Records progress messages the server sends.
#[derive(Clone, Default)]
struct Recorder {
    progress: Arc<Mutex<Vec<String>>>,
}

impl ClientHandler for Recorder {
    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        if let Some(m) = params.message {
            self.progress.lock().unwrap().push(m);
        }
    }
}

fn args(v: serde_json::Value) -> JsonObject {
    match v {
        serde_json::Value::Object(m) => m,
        _ => JsonObject::new(),
    }
}

fn text(r: &CallToolResult) -> String {
    r.content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

async fn call(
    client: &RunningService<RoleClient, Recorder>,
    tool: &str,
    input: serde_json::Value,
) -> CallToolResult {
    client
        .call_tool(CallToolRequestParams::new(tool.to_string()).with_arguments(args(input)))
        .await
        .unwrap()
}

/// Calls `Task`: `agent` on `prompt` (`description` shown for it), in the background when
/// `background`.
async fn call_task(
    client: &RunningService<RoleClient, Recorder>,
    description: &str,
    agent: &str,
    prompt: &str,
    background: bool,
) -> CallToolResult {
    let mut input = json!({"description": description, "prompt": prompt, "subagent_type": agent});
    if background {
        input["run_in_background"] = true.into();
    }
    call(client, "Task", input).await
}

async fn start_background(
    client: &RunningService<RoleClient, Recorder>,
    agent: &str,
    prompt: &str,
) -> String {
    let r = call_task(client, "bg", agent, prompt, true).await;
    let started = text(&r);
    started
        .split("task id ")
        .nth(1)
        .and_then(|rest| rest.split(|c: char| c.is_whitespace() || c == '.').next())
        .unwrap_or_else(|| panic!("no task id in {started}"))
        .to_string()
}

/// Lists the tools, runs Task in the foreground and the background, reads TaskOutput, and
/// cancels a running Task from the client.
async fn drive(client: &RunningService<RoleClient, Recorder>, local: &Local) {
    let tools = client.list_all_tools().await.unwrap();
    let mut names: Vec<String> = tools.iter().map(|t| t.name.to_string()).collect();
    names.sort();
    assert_eq!(names, ["SendMessage", "Task", "TaskOutput", "TaskStop"]);
    let task = tools.iter().find(|t| t.name == "Task").unwrap();
    assert!(task.description.as_deref().unwrap().contains("greeter"));
    assert!(
        task.input_schema["properties"]
            .get("subagent_type")
            .is_some()
    );

    // Foreground.
    let r = call_task(client, "greet", "greeter", "world", false).await;
    assert_ne!(r.is_error, Some(true), "{}", text(&r));
    assert!(text(&r).contains("hello, world"), "{}", text(&r));

    // Background, then TaskOutput.
    let id = start_background(client, "greeter", "later").await;
    let r = call(client, "TaskOutput", json!({"task_id": id})).await;
    assert_ne!(r.is_error, Some(true), "{}", text(&r));
    assert!(text(&r).contains("hello, later"), "{}", text(&r));

    // A background task outlives the MCP call that started it.
    let id = start_background(client, "gated", "x").await;
    local.gate.notify_one();
    let r = call(client, "TaskOutput", json!({"task_id": id})).await;
    assert!(text(&r).contains("the gate opened"), "{}", text(&r));

    // A failing call is an error result.
    let r = call_task(client, "x", "nobody", "x", false).await;
    assert_eq!(r.is_error, Some(true));
    assert!(text(&r).contains("nobody"), "{}", text(&r));

    // Cancelling the MCP request cancels the subagent's context.
    let before = local.cancelled.load(Ordering::SeqCst);
    let params = CallToolRequestParams::new("Task").with_arguments(args(
        json!({"description": "block", "prompt": "x", "subagent_type": "blocker"}),
    ));
    let request: ClientRequest = CallToolRequest::new(params).into();
    let started = local.started.notified();
    let handle = client
        .send_request_with_option(request, PeerRequestOptions::no_options())
        .await
        .unwrap();
    tokio::time::timeout(Duration::from_secs(20), started)
        .await
        .expect("the blocker starts");
    let seen = local.cancel_seen.notified();
    handle.cancel(Some("test cancels".into())).await.unwrap();
    tokio::time::timeout(Duration::from_secs(20), seen)
        .await
        .expect("the subagent sees the cancellation");
    assert_eq!(local.cancelled.load(Ordering::SeqCst), before + 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serves_task_tools_over_streamable_http() {
    let local = Arc::new(Local::default());
    let server = McpToolServer::new(task_tools(local.clone()).await)
        .serve_streamable_http("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    assert!(server.local_addr().port() > 0);
    let recorder = Recorder::default();
    let client = recorder
        .clone()
        .serve(StreamableHttpClientTransport::from_uri(server.url()))
        .await
        .unwrap();
    drive(&client, &local).await;
    // The greeter's status event reached the client as an MCP progress notification.
    let progress = recorder.progress.lock().unwrap().clone();
    assert!(
        progress.iter().any(|m| m.contains("greeting")),
        "{progress:?}"
    );
    drop(client);
    server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serves_task_tools_over_a_stdio_style_stream() {
    let local = Arc::new(Local::default());
    let server = McpToolServer::new(task_tools(local.clone()).await);
    let (client_io, server_io) = tokio::io::duplex(64 * 1024);
    let serving = tokio::spawn(async move {
        let running = server.serve(server_io).await.unwrap();
        running.waiting().await.unwrap();
    });
    let client = Recorder::default().serve(client_io).await.unwrap();
    drive(&client, &local).await;
    client.cancel().await.unwrap();
    tokio::time::timeout(Duration::from_secs(20), serving)
        .await
        .expect("the server stops when the client goes away")
        .unwrap();
}
