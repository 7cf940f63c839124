//! MCP servers as agent tools: `mcp_tools` and `McpToolProvider` against the rmcp test server
//! (stdio child process) and an `McpToolServer` (streamable HTTP).

use crate::common::cancel_and_join;

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use subagent_mcp::{McpServerConfig, McpServerEntry, McpToolProvider, McpToolServer, mcp_tools};
use subagent_spi::{TaskContext, Tool, ToolEffect, ToolError, ToolOutput};
use subagent_testkit::{FnTool, ProgressRecorder};

const BIN: &str = env!("CARGO_BIN_EXE_subagent-mcp-test-server");

fn config() -> McpServerConfig {
    McpServerConfig::from_value(&json!({"mcpServers": {"test": {"command": BIN}}}), "test").unwrap()
}

fn err_text(r: Result<Vec<Arc<dyn Tool>>, subagent_mcp::McpError>) -> String {
    match r {
        Ok(t) => panic!("expected an error, got {} tools", t.len()),
        Err(e) => e.to_string(),
    }
}

fn find<'a>(tools: &'a [Arc<dyn Tool>], name: &str) -> &'a Arc<dyn Tool> {
    tools
        .iter()
        .find(|t| t.name() == name)
        .unwrap_or_else(|| panic!("no tool {name}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_tools_are_named_described_and_callable() {
    let tools = mcp_tools("test", &config()).await.unwrap();
    let mut names: Vec<&str> = tools.iter().map(|t| t.name()).collect();
    names.sort();
    assert_eq!(
        names,
        [
            "mcp__test__ask",
            "mcp__test__ask_forever",
            "mcp__test__ask_name",
            "mcp__test__ask_url",
            "mcp__test__echo",
            "mcp__test__era",
            "mcp__test__fail",
            "mcp__test__legacy_ask",
            "mcp__test__pair",
            "mcp__test__pid",
            "mcp__test__progress",
            "mcp__test__shout",
            "mcp__test__stats",
            "mcp__test__structured",
            "mcp__test__task_echo",
            "mcp__test__task_wait",
            "mcp__test__wait",
            "mcp__test__whoami",
        ]
    );
    let echo = find(&tools, "mcp__test__echo");
    assert_eq!(
        echo.description(),
        "Echoes the prompt back, prefixed with `echo: `."
    );
    assert_eq!(echo.effect(), ToolEffect::Execute);
    let schema = echo.input_schema();
    assert_eq!(schema["type"], "object");
    assert_eq!(schema["properties"]["prompt"]["type"], "string");
    assert_eq!(schema["required"], json!(["prompt"]));

    let ctx = TaskContext::new();
    let out = echo.call(json!({"prompt": "hi"}), &ctx).await.unwrap();
    assert_eq!(out, ToolOutput::text("echo: hi"));
    let out = find(&tools, "mcp__test__fail")
        .call(json!({"prompt": "bad"}), &ctx)
        .await
        .unwrap();
    assert!(out.is_error);
    assert_eq!(out.content, "failure: bad");
    let err = echo.call(json!("not an object"), &ctx).await.unwrap_err();
    assert!(matches!(err, ToolError::InvalidInput { .. }), "{err}");

    // Progress reaches the caller's context as status events.
    let events = Arc::new(ProgressRecorder::new());
    let pctx = TaskContext::new().with_progress(events.clone());
    let out = find(&tools, "mcp__test__progress")
        .call(json!({"prompt": "p"}), &pctx)
        .await
        .unwrap();
    assert_eq!(out.content, "done: p");
    assert_eq!(
        events.statuses(),
        ["step 1 (1/3)", "step 2 (2/3)", "step 3 (3/3)"]
    );

    // Cancelling the context ends the call with a cancellation error.
    let cctx = TaskContext::new();
    let cancel = cctx.cancel().clone();
    let wait = find(&tools, "mcp__test__wait").clone();
    let call = tokio::spawn(async move { wait.call(json!({"prompt": "w"}), &cctx).await });
    tokio::time::sleep(Duration::from_millis(100)).await;
    let err = cancel_and_join(&cancel, call).await.unwrap_err();
    assert!(matches!(err, ToolError::Cancelled { .. }), "{err}");

    let err = err_text(mcp_tools("nope", &config()).await);
    assert!(
        err.contains("unknown MCP server `nope`") && err.contains("test"),
        "{err}"
    );
}

/// An SPI tool served over MCP, for the HTTP side of the provider test.
fn add() -> Arc<dyn Tool> {
    Arc::new(FnTool::new(
        "add",
        "Adds a and b.",
        json!({"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}}),
        |input| {
            let n = |k: &str| {
                input[k]
                    .as_f64()
                    .ok_or_else(|| ToolError::invalid("add", format!("`{k}` must be a number")))
            };
            Ok(ToolOutput::text(format!("{}", n("a")? + n("b")?)))
        },
    ))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn provider_serves_named_and_inline_servers_from_one_pool() {
    let web = McpToolServer::new(vec![add()])
        .serve_streamable_http("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let provider = McpToolProvider::new(config());
    // An agent's frontmatter: one configured name and one inline server.
    let frontmatter = json!(["test", {"web": {"type": "http", "url": web.url()}}, "test"]);
    let entries = McpServerEntry::parse_list(&frontmatter, "agents/x.md").unwrap();
    let tools = provider.tools_for(&entries).await.unwrap();
    assert_eq!(tools.len(), 19, "the test server's 18 tools and `add`");
    let add = find(&tools, "mcp__web__add");
    assert_eq!(add.description(), "Adds a and b.");
    assert_eq!(add.input_schema()["properties"]["a"]["type"], "number");
    let ctx = TaskContext::new();
    assert_eq!(
        add.call(json!({"a": 2, "b": 3}), &ctx)
            .await
            .unwrap()
            .content,
        "5"
    );
    let bad = add.call(json!({"a": "x"}), &ctx).await.unwrap();
    assert!(
        bad.is_error && bad.content.contains("`a` must be a number"),
        "{bad:?}"
    );
    assert_eq!(
        find(&tools, "mcp__test__echo")
            .call(json!({"prompt": "x"}), &ctx)
            .await
            .unwrap()
            .content,
        "echo: x"
    );
    assert_eq!(provider.pool().len(), 2);

    // Another agent with the same servers reuses the connections.
    let again = provider.tools_for_server("test").await.unwrap();
    let pid1 = find(&tools, "mcp__test__pid")
        .call(json!({}), &ctx)
        .await
        .unwrap()
        .content;
    let pid2 = find(&again, "mcp__test__pid")
        .call(json!({}), &ctx)
        .await
        .unwrap()
        .content;
    assert_eq!(pid1, pid2);
    assert_eq!(provider.pool().len(), 2);

    // Straight from a frontmatter value, as the CLAUDE kind's hook receives it.
    let from_value = provider
        .tools_for_value(
            "agents/y.md",
            &json!({"web": {"type": "http", "url": web.url()}}),
        )
        .await
        .unwrap();
    assert_eq!(from_value.len(), 1);
    assert_eq!(from_value[0].name(), "mcp__web__add");
    let err = err_text(provider.tools_for_value("agents/y.md", &json!(7)).await);
    assert!(err.contains("agents/y.md"), "{err}");

    let err = err_text(
        provider
            .tools_for(&[McpServerEntry::Named("missing".into())])
            .await,
    );
    assert!(err.contains("missing") && err.contains("test"), "{err}");

    drop((tools, again, provider));
    web.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_past_its_timeout_fails_the_call_naming_server_method_and_limit() {
    // `timeout_secs` of a `.mcp.json` entry (or of an inline frontmatter server) bounds each
    // request to that server.
    let value = json!({"mcpServers": {"slow": {"command": BIN, "timeout_secs": 0.3}}});
    let config = McpServerConfig::from_value(&value, ".mcp.json").unwrap();
    let limit = Duration::from_millis(300);
    assert_eq!(config.request_timeout("slow"), Some(limit));
    let inline = McpServerEntry::parse_list(&value, "agents/x.md").unwrap();
    assert!(
        matches!(&inline[..], [McpServerEntry::Inline { request_timeout: Some(t), .. }] if *t == limit)
    );
    let provider = McpToolProvider::new(config);
    let tools = provider.tools_for_server("slow").await.unwrap();

    // `wait` answers only when cancelled.
    let ctx = TaskContext::new();
    let started = std::time::Instant::now();
    let err = tokio::time::timeout(
        Duration::from_secs(30),
        find(&tools, "mcp__slow__wait").call(json!({"prompt": "w"}), &ctx),
    )
    .await
    .expect("the call is bounded by the server's timeout")
    .unwrap_err();
    assert!(started.elapsed() >= limit, "{:?}", started.elapsed());
    assert_eq!(
        err.to_string(),
        format!(
            "tool `mcp__slow__wait` failed: MCP server `stdio:{BIN}` did not answer `tools/call` within 300 ms (its request timeout)"
        )
    );
    // The caller's shorter deadline still ends the call as the tool's timeout.
    let short = TaskContext::new().with_timeout(Duration::from_millis(100));
    let err = find(&tools, "mcp__slow__wait")
        .call(json!({"prompt": "w"}), &short)
        .await
        .unwrap_err();
    assert!(matches!(err, ToolError::TimedOut { .. }), "{err}");
    // The connection still serves.
    let out = find(&tools, "mcp__slow__echo")
        .call(json!({"prompt": "x"}), &ctx)
        .await
        .unwrap();
    assert_eq!(out.content, "echo: x");

    // A bad value is a configuration error naming the server.
    for bad in [json!(0), json!(-1), json!("soon"), json!(1e300)] {
        let err = McpServerConfig::from_value(
            &json!({"mcpServers": {"slow": {"command": BIN, "timeout_secs": bad}}}),
            ".mcp.json",
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("mcpServers.slow: `timeout_secs` must be a positive number"),
            "{err}"
        );
    }
}
