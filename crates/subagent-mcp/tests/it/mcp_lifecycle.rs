//! The client's lifecycle against hand-written streamable-HTTP servers of the 2025-11-25 era
//! that do not answer `server/discover` with an error (as the conformance suite's 2025-era
//! client fixtures do: every unknown method gets an empty result).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::{Value, json};
use subagent_mcp::{McpEndpoint, McpError, McpServerConfig, mcp_tools};
use subagent_spi::{TaskContext, Tool};

/// How the legacy server answers `initialize`.
#[derive(Clone, Copy)]
enum Initialize {
    /// A proper 2025-11-25 initialize result.
    Answer,
    /// An empty result, like every other method.
    Empty,
}

#[derive(Clone)]
struct Legacy {
    initialize: Initialize,
    /// The methods received, in order.
    seen: Arc<Mutex<Vec<String>>>,
}

async fn handle(State(server): State<Legacy>, Json(body): Json<Value>) -> Response {
    let method = body["method"].as_str().unwrap_or_default().to_string();
    server.seen.lock().unwrap().push(method.clone());
    let Some(id) = body.get("id").cloned() else {
        return StatusCode::ACCEPTED.into_response();
    };
    let result = match (method.as_str(), server.initialize) {
        ("initialize", Initialize::Answer) => json!({
            "protocolVersion": "2025-11-25",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "legacy", "version": "1.0.0"}
        }),
        ("tools/list", _) => json!({"tools": [{
            "name": "era",
            "inputSchema": {"type": "object", "properties": {"prompt": {"type": "string"}}}
        }]}),
        ("tools/call", _) => json!({"content": [{"type": "text", "text": "legacy answer"}]}),
        // `server/discover` included: not an error, an empty result.
        _ => json!({}),
    };
    Json(json!({"jsonrpc": "2.0", "id": id, "result": result})).into_response()
}

/// Serves `server` on 127.0.0.1; the URL of its endpoint.
async fn serve(server: Legacy) -> String {
    let app = axum::Router::new()
        .route("/mcp", post(handle))
        .with_state(server);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://{addr}/mcp")
}

/// Serves a legacy server answering `initialize` so, and connects to it (bounded): the
/// server, its URL and what connecting gave.
async fn connect(initialize: Initialize) -> (Legacy, String, Result<Vec<Arc<dyn Tool>>, McpError>) {
    let server = Legacy {
        initialize,
        seen: Arc::default(),
    };
    let url = serve(server.clone()).await;
    let config = McpServerConfig::new().with_server("legacy", McpEndpoint::http(&url));
    let tools = tokio::time::timeout(Duration::from_secs(20), mcp_tools("legacy", &config))
        .await
        .expect("connecting is bounded");
    (server, url, tools)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_legacy_server_answering_discover_with_an_empty_result_is_reached_by_initialize() {
    let (server, _, tools) = connect(Initialize::Answer).await;
    let tools = tools.expect("the server is reached with the initialize handshake");
    assert_eq!(tools.len(), 1);
    let out = tools[0]
        .call(json!({"prompt": "hi"}), &TaskContext::new())
        .await
        .unwrap();
    assert_eq!(out.content, "legacy answer");
    let seen = server.seen.lock().unwrap().clone();
    assert_eq!(
        seen.iter()
            .filter(|m| !m.starts_with("notifications/"))
            .map(String::as_str)
            .collect::<Vec<_>>(),
        ["server/discover", "initialize", "tools/list", "tools/call"],
        "one discover probe, then the handshake: {seen:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_answering_neither_lifecycle_fails_naming_it_after_one_retry() {
    let (server, url, tools) = connect(Initialize::Empty).await;
    let err = tools.err().expect("neither lifecycle works");
    let text = err.to_string();
    assert!(text.contains(&url), "names the server: {text}");
    let seen = server.seen.lock().unwrap().clone();
    assert_eq!(
        seen,
        ["server/discover", "initialize"],
        "one attempt of each lifecycle, no loop"
    );
}
