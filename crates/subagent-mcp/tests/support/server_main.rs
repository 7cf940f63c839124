//! `subagent-mcp-test-server`: the tests' MCP server over stdio (built with feature
//! `test-server`).

mod server;

use rmcp::ServiceExt;

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let running = match server::TestServer::from_env()
        .serve(rmcp::transport::stdio())
        .await
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("subagent-mcp-test-server: handshake failed: {e}");
            std::process::exit(1);
        }
    };
    if let Err(e) = running.waiting().await {
        eprintln!("subagent-mcp-test-server: {e}");
        std::process::exit(1);
    }
}
