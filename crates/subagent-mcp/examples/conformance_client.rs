//! The client under test of the official MCP conformance suite's client scenarios
//! (`@modelcontextprotocol/conformance`, run by `.ci/mcp-conformance.sh client`).
//!
//! ```text
//! conformance_client URL      # MCP_CONFORMANCE_SCENARIO=tools_call (set by the suite)
//! ```
//!
//! It drives this crate's public client exactly as an agent's `mcpServers` tools do: the
//! server at URL becomes an [`McpToolProvider`]'s tools (`server/discover` first, the
//! 2025-11-25 `initialize` handshake as the fallback, `tools/list`), and each call is a
//! [`Tool::call`](subagent_spi::Tool::call) in a task context whose approver says yes, so a
//! server's questions (`input_required`, `elicitation/create`) are answered as `--yes` would
//! answer them. Which tools it calls with which arguments is the scenario's: the calls the
//! suite names in `MCP_CONFORMANCE_CONTEXT` (`toolCalls`), else the table below, else none
//! (connect and list only). It prints one line per call and exits 1 when a call fails.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value, json};
use subagent_core::FixedApprover;
use subagent_mcp::{McpEndpoint, McpServerConfig, McpToolProvider, mcp_tool_name};
use subagent_spi::{TaskContext, Tool};

/// The name the server has in the tool names (`mcp__conformance__TOOL`).
const SERVER: &str = "conformance";
/// Each call's time limit (the suite gives the whole run 30 s).
const CALL_LIMIT: Duration = Duration::from_secs(20);

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let Some(url) = std::env::args().nth(1) else {
        eprintln!("usage: conformance_client URL (scenario in MCP_CONFORMANCE_SCENARIO)");
        std::process::exit(2);
    };
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    let context: Value = std::env::var("MCP_CONFORMANCE_CONTEXT")
        .ok()
        .and_then(|c| serde_json::from_str(&c).ok())
        .unwrap_or(Value::Null);
    match run(&url, &scenario, &context).await {
        Ok(()) => {}
        Err(e) => {
            eprintln!("conformance_client: {scenario}: {e}");
            std::process::exit(1);
        }
    }
}

async fn run(url: &str, scenario: &str, context: &Value) -> Result<(), String> {
    let config = McpServerConfig::new().with_server(SERVER, McpEndpoint::http(url));
    let provider = McpToolProvider::new(config);
    let tools = provider
        .tools_for_server(SERVER)
        .await
        .map_err(|e| e.to_string())?;
    let listed: Vec<&str> = tools.iter().map(|t| short_name(t.as_ref())).collect();
    println!("tools: {listed:?}");

    let ctx = TaskContext::new()
        .with_approver(Arc::new(FixedApprover::allow_all()))
        .with_timeout(CALL_LIMIT);
    let mut failed = Vec::new();
    for (tool, arguments) in calls(scenario, context, &tools) {
        let name = mcp_tool_name(SERVER, &tool);
        let Some(t) = tools.iter().find(|t| t.name() == name) else {
            failed.push(format!("the server lists no tool `{tool}`"));
            continue;
        };
        match t.call(Value::Object(arguments), &ctx).await {
            Ok(out) if !out.is_error => println!("{tool}: {}", out.content),
            Ok(out) => failed.push(format!("{tool} answered an error: {}", out.content)),
            Err(e) => failed.push(e.to_string()),
        }
    }
    if failed.is_empty() {
        Ok(())
    } else {
        Err(failed.join("; "))
    }
}

/// The calls a scenario expects: the suite's `toolCalls` when it names them, else ours.
fn calls(
    scenario: &str,
    context: &Value,
    tools: &[Arc<dyn Tool>],
) -> Vec<(String, Map<String, Value>)> {
    if let Some(named) = context.get("toolCalls").and_then(Value::as_array) {
        return named
            .iter()
            .filter_map(|c| {
                let name = c.get("name")?.as_str()?.to_string();
                let args = c
                    .get("arguments")
                    .and_then(Value::as_object)
                    .cloned()
                    .unwrap_or_default();
                Some((name, args))
            })
            .collect();
    }
    let none = Map::new;
    let object = |v: Value| v.as_object().cloned().unwrap_or_default();
    match scenario {
        // The first tool (`add_numbers`), with two numbers.
        "tools_call" => tools
            .first()
            .map(|t| {
                let name = t
                    .name()
                    .trim_start_matches("mcp__conformance__")
                    .to_string();
                vec![(name, object(json!({"a": 2, "b": 3})))]
            })
            .unwrap_or_default(),
        // The schema we were given, echoed back as we hold it.
        "json-schema-2020-12-preservation" => {
            let focal = mcp_tool_name(SERVER, "json_schema_2020_12_tool");
            tools
                .iter()
                .find(|t| t.name() == focal)
                .map(|t| {
                    vec![(
                        "json_schema_echo".to_string(),
                        object(json!({"schema": t.input_schema()})),
                    )]
                })
                .unwrap_or_default()
        }
        "sep-2322-client-request-state" => [
            "test_mrtr_echo_state",
            "test_mrtr_unrelated",
            "test_mrtr_no_state",
            "test_mrtr_no_result_type",
        ]
        .into_iter()
        .map(|t| (t.to_string(), none()))
        .collect(),
        "elicitation-sep1034-client-defaults" => {
            vec![("test_client_elicitation_defaults".to_string(), none())]
        }
        "sse-retry" => vec![("test_reconnection".to_string(), none())],
        // Every tool we kept (the client drops tools whose `x-mcp-header`s are invalid), with
        // its required arguments filled in.
        "http-standard-headers" | "http-invalid-tool-headers" => tools
            .iter()
            .map(|t| {
                let name = short_name(t.as_ref()).to_string();
                (name, required_arguments(&t.input_schema()))
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// A value for each required argument of `schema` that has a simple type.
fn required_arguments(schema: &Value) -> Map<String, Value> {
    let props = schema.get("properties").and_then(Value::as_object);
    let required = schema.get("required").and_then(Value::as_array);
    let (Some(props), Some(required)) = (props, required) else {
        return Map::new();
    };
    required
        .iter()
        .filter_map(Value::as_str)
        .filter_map(|name| {
            let value = match props.get(name)?.get("type")?.as_str()? {
                "string" => json!("conformance"),
                "integer" | "number" => json!(1),
                "boolean" => json!(true),
                _ => return None,
            };
            Some((name.to_string(), value))
        })
        .collect()
}

/// A tool's name on the server (ours without the `mcp__conformance__` prefix).
fn short_name(tool: &dyn Tool) -> &str {
    tool.name().trim_start_matches("mcp__conformance__")
}
