//! Budgets and cost through the command: `--budget-tokens` stops a run and names the budget;
//! `[prices]` of subagents.toml puts cost next to tokens in `--json`, and a model without a
//! price is reported rather than priced.

mod common;

use std::path::PathBuf;

use common::{rt, subagents};
use serde_json::Value;
use subagent_testkit::{Reply, ScriptedModelServer};

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

fn task_json(model: &str, config: &str, extra: &[&str]) -> Value {
    let dir = tempfile::tempdir().expect("tmp");
    let cfg = dir.path().join("subagents.toml");
    std::fs::write(&cfg, config).expect("write");
    let out = subagents()
        .arg("--config")
        .arg(&cfg)
        .args(["task", "echo-agent", "review", "--json", "--model", model])
        .args(extra)
        .arg("--agents")
        .arg(fixtures().join("local"))
        .output()
        .expect("runs");
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "JSON ({e}): {}\nstderr: {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

#[test]
fn json_shows_cost_next_to_tokens_when_the_price_is_known() {
    let rt = rt();
    let server = rt.block_on(ScriptedModelServer::start());
    server.push(
        Reply::text("ok")
            .with_usage(1_000_000, 500_000)
            .with_model("priced-model"),
    );
    let model = format!(
        "openai-compatible:priced-model@{}",
        server.openai_base_url()
    );
    let v = task_json(
        &model,
        "[prices]\n\"priced-model\" = { input = 2.0, output = 8.0 }\n",
        &[],
    );
    // 1M input at $2 + 0.5M output at $8.
    assert_eq!(v["usage"]["usage"]["cost_usd"], 6.0, "{v}");
    assert_eq!(v["cost_usd"], 6.0, "{v}");
    assert!(v.get("unpriced_models").is_none(), "{v}");
}

#[test]
fn a_model_without_a_price_is_reported_not_guessed() {
    let rt = rt();
    let server = rt.block_on(ScriptedModelServer::start());
    server.push(
        Reply::text("ok")
            .with_usage(100, 10)
            .with_model("mystery-model"),
    );
    let model = format!(
        "openai-compatible:mystery-model@{}",
        server.openai_base_url()
    );
    let v = task_json(
        &model,
        "[prices]\n\"other\" = { input = 2.0, output = 8.0 }\n",
        &[],
    );
    assert!(v["usage"]["usage"].get("cost_usd").is_none(), "{v}");
    assert_eq!(v["unpriced_models"][0], "mystery-model", "{v}");
}

#[test]
fn budget_tokens_stops_the_run_and_names_the_budget() {
    let rt = rt();
    let server = rt.block_on(ScriptedModelServer::start());
    server.push(
        Reply::tool_calls(vec![("Read", serde_json::json!({"file_path": "x"}))])
            .with_usage(900, 200),
    );
    server.push(Reply::text("never reached"));
    let model = format!("openai-compatible:m@{}", server.openai_base_url());
    let v = task_json(&model, "", &["--budget-tokens", "1000"]);
    assert_eq!(v["status"], "limit_reached", "{v}");
    assert_eq!(v["limit"], "budget_tokens=1000", "{v}");
    assert_eq!(
        server.request_count(),
        1,
        "no model call after the budget was spent"
    );
}

#[test]
fn an_agents_own_budget_from_the_config_stops_it_and_names_it() {
    let rt = rt();
    let server = rt.block_on(ScriptedModelServer::start());
    server.push(
        Reply::tool_calls(vec![("Read", serde_json::json!({"file_path": "x"}))])
            .with_usage(900, 200),
    );
    server.push(Reply::text("never reached"));
    let model = format!("openai-compatible:m@{}", server.openai_base_url());
    // The root budget is larger; the agent's own one is spent.
    let v = task_json(
        &model,
        "[budget]\ntokens = 1000000\n[budget.agents.echo-agent]\ntokens = 1000\n",
        &[],
    );
    assert_eq!(v["status"], "limit_reached", "{v}");
    assert_eq!(v["limit"], "budget_tokens=1000 (agent echo-agent)", "{v}");
    assert_eq!(server.request_count(), 1);
    // A bad value is a configuration error naming it.
    let dir = tempfile::tempdir().expect("tmp");
    let cfg = dir.path().join("subagents.toml");
    std::fs::write(&cfg, "[budget.agents.echo-agent]\ntime_secs = -1\n").expect("write");
    let out = subagents()
        .arg("--config")
        .arg(&cfg)
        .args(["task", "echo-agent", "review", "--model", &model])
        .arg("--agents")
        .arg(fixtures().join("local"))
        .output()
        .expect("runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("[budget.agents.echo-agent] time_secs must be a positive number"),
        "{err}"
    );
}
