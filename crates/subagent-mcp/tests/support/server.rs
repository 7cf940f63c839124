//! A small MCP server built with rmcp, used by the tests: as a child process over stdio
//! (`subagent-mcp-test-server`) and in-process over streamable HTTP.
#![allow(dead_code)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, JsonObject,
    ListToolsResult, PaginatedRequestParams, ProgressNotificationParam, ServerCapabilities,
    ServerConfig, Tool,
};
use rmcp::service::RequestContext;
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
}

#[derive(Clone, Default)]
pub(crate) struct TestServer {
    pub state: Arc<TestState>,
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

/// The tools: name, description, string arguments.
const TOOLS: [(&str, &str, &[&str]); 9] = [
    (
        "echo",
        "Echoes the prompt back, prefixed with `echo: `.",
        &["prompt"],
    ),
    (
        "fail",
        "Always fails with the prompt as the error text.",
        &["prompt"],
    ),
    (
        "progress",
        "Reports three progress steps, then answers.",
        &["prompt"],
    ),
    ("wait", "Waits until the request is cancelled.", &["prompt"]),
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
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
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
        let result = match request.name.as_ref() {
            "echo" => CallToolResult::success(text(format!("echo: {}", arg("prompt")))),
            "fail" => CallToolResult::error(text(format!("failure: {}", arg("prompt")))),
            "shout" => CallToolResult::success(text(arg("text").to_uppercase())),
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
