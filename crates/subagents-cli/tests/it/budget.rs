//! Budgets and cost through the command: `--budget-tokens` stops a run and names the budget;
//! `[prices]` of subagents.toml puts cost next to tokens in `--json`, and a model without a
//! price is reported rather than priced.

use crate::common;

use common::{fixtures, rt, subagents};
use serde_json::Value;
use subagent_testkit::{Reply, ScriptedModelServer};

/// `subagents --config CFG task echo-agent review ARGS...`, CFG holding `config`.
fn task(config: &str, args: &[&str]) -> std::process::Output {
    let dir = tempfile::tempdir().expect("tmp");
    let cfg = dir.path().join("subagents.toml");
    std::fs::write(&cfg, config).expect("write");
    subagents()
        .arg("--config")
        .arg(&cfg)
        .args(["task", "echo-agent", "review"])
        .args(args)
        .arg("--agents")
        .arg(fixtures().join("local"))
        .output()
        .expect("runs")
}

fn task_json(model: &str, config: &str, extra: &[&str]) -> Value {
    let out = task(config, &[&["--json", "--model", model], extra].concat());
    common::json_of(&out)
}

/// `task --json` with `config` after one model reply of `model` that used `usage` tokens.
fn priced_run(model: &str, usage: (u64, u64), config: &str) -> Value {
    let (_rt, server) = common::scripted();
    server.push(
        Reply::text("ok")
            .with_usage(usage.0, usage.1)
            .with_model(model),
    );
    task_json(&server.openai_model(model), config, &[])
}

/// A server whose first reply (a Read call) spends 1,100 tokens; a second one is never
/// reached when a budget of 1,000 stops the run.
fn spends_1100_tokens(rt: &tokio::runtime::Runtime) -> ScriptedModelServer {
    let server = rt.block_on(ScriptedModelServer::start());
    server.push(
        Reply::tool_calls(vec![("Read", serde_json::json!({"file_path": "x"}))])
            .with_usage(900, 200),
    );
    server.push(Reply::text("never reached"));
    server
}

#[test]
fn json_shows_cost_next_to_tokens_when_the_price_is_known() {
    let v = priced_run(
        "priced-model",
        (1_000_000, 500_000),
        "[prices]\n\"priced-model\" = { input = 2.0, output = 8.0 }\n",
    );
    // 1M input at $2 + 0.5M output at $8.
    assert_eq!(v["usage"]["usage"]["cost_usd"], 6.0, "{v}");
    assert_eq!(v["cost_usd"], 6.0, "{v}");
    assert!(v.get("unpriced_models").is_none(), "{v}");
}

#[test]
fn a_model_without_a_price_is_reported_not_guessed() {
    let v = priced_run(
        "mystery-model",
        (100, 10),
        "[prices]\n\"other\" = { input = 2.0, output = 8.0 }\n",
    );
    assert_eq!(v["unpriced_models"][0], "mystery-model", "{v}");
    // Unknown, not free: `null`, never `0.0`, for the node and for the tree.
    assert!(v["usage"]["usage"]["cost_usd"].is_null(), "{v}");
    assert!(
        v.get("cost_usd").is_some_and(Value::is_null),
        "the tree's cost is null: {v}"
    );
}

#[test]
fn budget_tokens_stops_the_run_and_names_the_budget() {
    let rt = rt();
    let server = spends_1100_tokens(&rt);
    let v = task_json(&server.openai_model("m"), "", &["--budget-tokens", "1000"]);
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
    let server = spends_1100_tokens(&rt);
    let model = server.openai_model("m");
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
    let out = task(
        "[budget.agents.echo-agent]\ntime_secs = -1\n",
        &["--model", &model],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("[budget.agents.echo-agent] time_secs must be a positive number"),
        "{err}"
    );
}
