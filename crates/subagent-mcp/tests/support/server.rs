//! A small MCP server built with rmcp, used by the tests: as a child process over stdio
//! (`subagent-mcp-test-server`) and in-process over streamable HTTP.
#![allow(dead_code)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use std::borrow::Cow;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CancelTaskParams, ContentBlock,
    CreateTaskResult, DiscoverResult, ElicitRequest, ElicitRequestParams, ElicitationSchema,
    GetTaskParams, GetTaskResult, InputRequest, InputRequests, InputRequiredResult, JsonObject,
    ListToolsResult, PaginatedRequestParams, ProgressNotificationParam, ProtocolVersion,
    ServerCapabilities, ServerConfig, Tool, UpdateTaskParams,
};
use rmcp::service::RequestContext;
use rmcp::task_manager::{TaskExit, TaskManager, TaskOptions};
use rmcp::{ErrorData, RoleServer, ServerHandler};

/// Counters the tests read.
#[derive(Default)]
pub(crate) struct TestState {
    /// Calls of the `wait` tool that observed their cancellation token.
    pub cancelled: AtomicUsize,
    /// Tool calls received.
    pub calls: AtomicUsize,
    /// Woken when `cancelled` changes.
    pub cancel_seen: tokio::sync::Notify,
    /// Tasks that ended because the client sent `tasks/cancel`.
    pub tasks_cancelled: AtomicUsize,
}

/// The environment variable that makes the stdio test server a 2025-11-25 server: it does not
/// know `server/discover` and speaks only the `initialize` era.
pub(crate) const LEGACY_ENV: &str = "SUBAGENT_MCP_TEST_LEGACY";

#[derive(Clone, Default)]
pub(crate) struct TestServer {
    pub state: Arc<TestState>,
    /// The tasks (SEP-2663) of the `task_*` tools.
    pub tasks: TaskManager,
    /// A 2025-11-25 server (see [`LEGACY_ENV`]).
    pub legacy: bool,
}

impl TestServer {
    /// The stdio server: legacy when [`LEGACY_ENV`] is set.
    pub(crate) fn from_env() -> Self {
        Self {
            legacy: std::env::var_os(LEGACY_ENV).is_some(),
            ..Self::default()
        }
    }
}

/// A form elicitation asking `message` with the given JSON schema.
fn form(message: &str, schema: serde_json::Value) -> InputRequest {
    let requested_schema: ElicitationSchema =
        serde_json::from_value(schema).expect("a valid elicitation schema");
    InputRequest::Elicitation(ElicitRequest::new(
        ElicitRequestParams::FormElicitationParams {
            meta: None,
            message: message.to_string(),
            requested_schema,
        },
    ))
}

fn confirm_form() -> InputRequest {
    form(
        "Deploy \u{1b}[31mnow\u{1b}[0m?",
        serde_json::json!({"type": "object", "properties": {"confirm": {"type": "boolean"}},
                           "required": ["confirm"]}),
    )
}

fn name_form() -> InputRequest {
    form(
        "Your name?",
        serde_json::json!({"type": "object", "properties": {"name": {"type": "string"}},
                           "required": ["name"]}),
    )
}

fn url_request() -> InputRequest {
    InputRequest::Elicitation(ElicitRequest::new(
        ElicitRequestParams::UrlElicitationParams {
            meta: None,
            message: "Sign in".to_string(),
            url: "https://example.com/login?session=1".to_string(),
            elicitation_id: String::new(),
        },
    ))
}

/// The answer to an elicitation as text: `ACTION CONTENT`.
fn answer_text(v: Option<&serde_json::Value>) -> String {
    match v {
        None => "no answer".to_string(),
        Some(v) => format!(
            "{} {}",
            v["action"].as_str().unwrap_or("?"),
            v.get("content").map(|c| c.to_string()).unwrap_or_default()
        ),
    }
}

fn schema(props: &[&str]) -> Arc<JsonObject> {
    let mut properties = serde_json::Map::new();
    for p in props {
        properties.insert(
            (*p).to_string(),
            serde_json::json!({"type": "string", "description": format!("the {p}")}),
        );
    }
    let v = serde_json::json!({"type": "object", "properties": properties, "required": props});
    match v {
        serde_json::Value::Object(m) => Arc::new(m),
        _ => Arc::new(JsonObject::new()),
    }
}

/// The argument of most tools.
const PROMPT: &[&str] = &["prompt"];

/// The tools: name, description, string arguments.
const TOOLS: [(&str, &str, &[&str]); 18] = [
    ("pair", "Joins its `a` and `b` arguments.", &["a", "b"]),
    (
        "ask",
        "Asks a yes/no question (SEP-2322 input_required), then answers with the reply.",
        PROMPT,
    ),
    ("ask_name", "Asks for a name (a free-text form).", PROMPT),
    ("ask_url", "Asks the user to open a URL.", PROMPT),
    ("ask_forever", "Asks for input on every round.", PROMPT),
    (
        "legacy_ask",
        "Asks with a server-to-client elicitation/create (2025-11-25).",
        PROMPT,
    ),
    ("era", "Returns the protocol version of the call.", &[]),
    (
        "task_echo",
        "Runs as a task (SEP-2663) that echoes the prompt.",
        PROMPT,
    ),
    (
        "task_wait",
        "Runs as a task that waits until it is cancelled.",
        PROMPT,
    ),
    (
        "echo",
        "Echoes the prompt back, prefixed with `echo: `.",
        PROMPT,
    ),
    (
        "fail",
        "Always fails with the prompt as the error text.",
        PROMPT,
    ),
    (
        "progress",
        "Reports three progress steps, then answers.",
        PROMPT,
    ),
    ("wait", "Waits until the request is cancelled.", PROMPT),
    ("shout", "Upper-cases its `text` argument.", &["text"]),
    ("pid", "Returns the server's process id.", &[]),
    ("stats", "Returns counters as JSON.", &[]),
    ("structured", "Returns structured content only.", &[]),
    (
        "whoami",
        "Returns the `x-test` and `authorization` HTTP headers.",
        &[],
    ),
];

pub(crate) fn tools() -> Vec<Tool> {
    TOOLS
        .iter()
        .map(|(name, description, args)| Tool::new(*name, *description, schema(args)))
        .collect()
}

fn text(s: impl Into<String>) -> Vec<ContentBlock> {
    vec![ContentBlock::text(s)]
}

impl ServerHandler for TestServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tasks()
                .build(),
        )
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        if self.legacy {
            Cow::Borrowed(ProtocolVersion::known_up_to(&ProtocolVersion::V_2025_11_25))
        } else {
            Cow::Borrowed(ProtocolVersion::KNOWN_VERSIONS)
        }
    }

    async fn discover(
        &self,
        _context: RequestContext<RoleServer>,
    ) -> Result<DiscoverResult, ErrorData> {
        if self.legacy {
            return Err(ErrorData::method_not_found::<
                rmcp::model::DiscoverRequestMethod,
            >());
        }
        Ok(DiscoverResult::from_server_info(
            self.supported_protocol_versions().into_owned(),
            self.get_info(),
        ))
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        Ok(GetTaskResult::new(self.tasks.get_task(&request.task_id)?))
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.tasks
            .update_task(&request.task_id, request.input_responses)
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.tasks.cancel_task(&request.task_id)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(tools()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        self.state.calls.fetch_add(1, Ordering::SeqCst);
        let args = request.arguments.unwrap_or_default();
        let arg = |k: &str| {
            args.get(k)
                .and_then(|v| v.as_str())
                .unwrap_or("")
                .to_string()
        };
        let responses = request.input_responses.clone().unwrap_or_default();
        let result = match request.name.as_ref() {
            name @ ("ask" | "ask_name" | "ask_url") => {
                if let Some(answer) = responses.get("q") {
                    if request.request_state.as_deref() != Some("state-1") {
                        return Err(ErrorData::invalid_params("requestState not echoed", None));
                    }
                    CallToolResult::success(text(format!("answer: {}", answer_text(Some(answer)))))
                } else {
                    let question = match name {
                        "ask" => confirm_form(),
                        "ask_name" => name_form(),
                        _ => url_request(),
                    };
                    let mut asked = InputRequests::new();
                    asked.insert("q".to_string(), question);
                    return Ok(
                        InputRequiredResult::new(Some(asked), Some("state-1".into())).into(),
                    );
                }
            }
            "ask_forever" => {
                let mut asked = InputRequests::new();
                asked.insert(format!("q{}", responses.len()), confirm_form());
                return Ok(InputRequiredResult::new(Some(asked), None).into());
            }
            "legacy_ask" => {
                let ElicitRequestParams::FormElicitationParams {
                    message,
                    requested_schema,
                    ..
                } = (match confirm_form() {
                    InputRequest::Elicitation(r) => r.params,
                    _ => unreachable!(),
                })
                else {
                    unreachable!()
                };
                let asked = context
                    .peer
                    .create_elicitation(ElicitRequestParams::FormElicitationParams {
                        meta: None,
                        message,
                        requested_schema,
                    })
                    .await
                    .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
                let v = serde_json::to_value(asked).unwrap_or_default();
                CallToolResult::success(text(format!("answer: {}", answer_text(Some(&v)))))
            }
            "era" => CallToolResult::success(text(
                context
                    .protocol_version()
                    .map(|v| v.to_string())
                    .unwrap_or_else(|| "none".into()),
            )),
            "task_echo" | "task_wait" => {
                let waits = request.name == "task_wait";
                let prompt = arg("prompt");
                let state = self.state.clone();
                let task = self.tasks.spawn(
                    TaskOptions::new()
                        .with_poll_interval_ms(100)
                        .with_status_message("started"),
                    move |cx| {
                        Box::pin(async move {
                            if prompt == "ask" {
                                let answer = cx.request_input("confirm", confirm_form()).await?;
                                return Ok(CallToolResult::success(text(format!(
                                    "task answer: {}",
                                    answer_text(Some(&answer))
                                ))));
                            }
                            if waits {
                                tokio::select! {
                                    () = cx.cancelled() => {
                                        state.tasks_cancelled.fetch_add(1, Ordering::SeqCst);
                                        return Err(TaskExit::Cancelled);
                                    }
                                    () = tokio::time::sleep(Duration::from_secs(120)) => {}
                                }
                            } else {
                                tokio::time::sleep(Duration::from_millis(150)).await;
                            }
                            Ok(CallToolResult::success(text(format!("task: {prompt}"))))
                        })
                    },
                );
                return Ok(CreateTaskResult::new(task).into());
            }
            "echo" => CallToolResult::success(text(format!("echo: {}", arg("prompt")))),
            "fail" => CallToolResult::error(text(format!("failure: {}", arg("prompt")))),
            "shout" => CallToolResult::success(text(arg("text").to_uppercase())),
            "pair" => CallToolResult::success(text(format!("{}+{}", arg("a"), arg("b")))),
            "progress" => {
                if let Some(token) = context.meta.get_progress_token() {
                    for i in 1..=3 {
                        let p = ProgressNotificationParam::new(token.clone(), f64::from(i))
                            .with_total(3.0)
                            .with_message(format!("step {i}"));
                        let _ = context.peer.notify_progress(p).await;
                        // rmcp clients handle each notification on its own task; spacing
                        // them keeps their order and lets them land before the answer.
                        tokio::time::sleep(Duration::from_millis(100)).await;
                    }
                }
                CallToolResult::success(text(format!("done: {}", arg("prompt"))))
            }
            "wait" => {
                // Tell the caller the call is running, so it can cancel it deterministically.
                if let Some(token) = context.meta.get_progress_token() {
                    let p = ProgressNotificationParam::new(token, 0.0).with_message("waiting");
                    let _ = context.peer.notify_progress(p).await;
                }
                tokio::select! {
                    () = context.ct.cancelled() => {
                        self.state.cancelled.fetch_add(1, Ordering::SeqCst);
                        self.state.cancel_seen.notify_waiters();
                        CallToolResult::error(text("cancelled"))
                    }
                    () = tokio::time::sleep(Duration::from_secs(120)) => {
                        CallToolResult::success(text("waited without a cancellation"))
                    }
                }
            }
            "pid" => CallToolResult::success(text(std::process::id().to_string())),
            "stats" => CallToolResult::success(text(
                serde_json::json!({
                    "cancelled": self.state.cancelled.load(Ordering::SeqCst),
                    "calls": self.state.calls.load(Ordering::SeqCst),
                    "tasks_cancelled": self.state.tasks_cancelled.load(Ordering::SeqCst),
                })
                .to_string(),
            )),
            "whoami" => {
                let parts = context.extensions.get::<http::request::Parts>();
                let header = |name: &str| {
                    parts
                        .and_then(|p| p.headers.get(name))
                        .and_then(|v| v.to_str().ok())
                        .unwrap_or("-")
                        .to_string()
                };
                CallToolResult::success(text(format!(
                    "x-test={} authorization={}",
                    header("x-test"),
                    header("authorization")
                )))
            }
            "structured" => {
                let mut r = CallToolResult::success(vec![]);
                r.structured_content = Some(serde_json::json!({"answer": 42}));
                r
            }
            other => {
                return Err(ErrorData::invalid_params(format!("no tool {other}"), None));
            }
        };
        Ok(result.into())
    }
}
