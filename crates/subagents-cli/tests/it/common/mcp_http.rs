//! An rmcp server in the test process, over streamable HTTP on 127.0.0.1.

use std::sync::Arc;

use rmcp::ServerHandler;
use rmcp::model::{ListToolsResult, Tool};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::Value;

/// The one tool `name` (described by `description`) that takes a string `prompt`.
pub(crate) fn prompt_tool(name: &'static str, description: &'static str) -> ListToolsResult {
    let Value::Object(schema) = serde_json::json!({
        "type": "object",
        "properties": {"prompt": {"type": "string"}},
        "required": ["prompt"]
    }) else {
        unreachable!()
    };
    ListToolsResult::with_all_items(vec![Tool::new(name, description, Arc::new(schema))])
}

/// Serves `handler` at `http://127.0.0.1:PORT/mcp` on `rt`; its URL.
pub(crate) fn serve<H>(rt: &tokio::runtime::Runtime, handler: H) -> String
where
    H: ServerHandler + Clone + Send + Sync + 'static,
{
    rt.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let config = StreamableHttpServerConfig::default()
            .with_allowed_hosts(vec!["127.0.0.1".to_string(), "localhost".to_string()]);
        let service = StreamableHttpService::new(
            move || Ok(handler.clone()),
            Arc::new(LocalSessionManager::default()),
            config,
        );
        let router = axum::Router::new().nest_service("/mcp", service);
        tokio::spawn(async move { axum::serve(listener, router).await });
        format!("http://{addr}/mcp")
    })
}
