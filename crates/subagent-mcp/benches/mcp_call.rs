//! Round trips through MCP: an `MCP`-kind agent call to the stdio test server (one reused
//! child process), and an `mcp__...` tool call to an `McpToolServer` over streamable HTTP.
#![allow(missing_docs)]

use std::sync::Arc;

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;
use subagent_mcp::{KIND, McpServerConfig, McpToolServer, mcp_subagent_type, mcp_tools};
use subagent_spi::*;
use subagent_testkit::FnTool;

const BIN: &str = env!("CARGO_BIN_EXE_subagent-mcp-test-server");

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");

    // MCP kind over stdio: the process starts once (during resolve), then each iteration is one
    // tools/call round trip through the executor.
    let kind = mcp_subagent_type();
    let reference =
        SubagentReference::new(format!("stdio:'{BIN}'"), KIND).with_metadata("name", "echo");
    let def = rt
        .block_on(kind.resolver().resolve(&reference))
        .expect("resolve the test server");
    c.bench_function("mcp_kind_stdio_execute", |b| {
        b.to_async(&rt).iter(|| async {
            let out = kind
                .executor()
                .execute(
                    TaskCall::new("echo", "bench", "hi"),
                    def.clone(),
                    TaskContext::new(),
                )
                .await
                .expect("execute");
            assert_eq!(out.text, "echo: hi");
        })
    });

    // An SPI tool served by McpToolServer over streamable HTTP, called as `mcp__web__echo`.
    let server = rt
        .block_on(
            McpToolServer::new(vec![Arc::new(FnTool::new(
                "echo",
                "Echoes `text`.",
                json!({"type": "object", "properties": {"text": {"type": "string"}}}),
                |input| Ok(ToolOutput::text(input["text"].as_str().unwrap_or_default())),
            )) as Arc<dyn Tool>])
            .serve_streamable_http("127.0.0.1:0".parse().expect("addr")),
        )
        .expect("serve");
    let config = McpServerConfig::from_value(
        &json!({"mcpServers": {"web": {"type": "http", "url": server.url()}}}),
        "bench",
    )
    .expect("config");
    let tools = rt.block_on(mcp_tools("web", &config)).expect("tools");
    let tool = tools[0].clone();
    c.bench_function("mcp_tool_http_call", |b| {
        b.to_async(&rt).iter(|| async {
            let out = tool
                .call(json!({"text": "hi"}), &TaskContext::new())
                .await
                .expect("call");
            assert_eq!(out.content, "hi");
        })
    });
    drop(tools);
    rt.block_on(async move {
        let _ = server.shutdown().await;
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
