//! The third-party command (issue 29 item 5): `subagents-http` (`crates/subagent-http-cli/src/main.rs`, the
//! stock command as a library plus this crate's kind) lists an HTTP agent and runs a `task`
//! through it against a real endpoint on 127.0.0.1.

use std::path::Path;
use std::process::{Command, Output};

use axum::Json;
use axum::routing::post;
use serde_json::{Value, json};

/// An endpoint that answers `{"reply": {"text": UPPERCASED}, "usage": …}` to `{"text": …}`,
/// reporting 1200 input and 300 output tokens.
fn endpoint(rt: &tokio::runtime::Runtime) -> String {
    rt.block_on(async {
        let app = axum::Router::new().route(
            "/shout",
            post(|Json(body): Json<Value>| async move {
                let text = body["text"].as_str().unwrap_or_default().to_uppercase();
                Json(json!({"reply": {"text": text}, "usage": {"input_tokens": 1200, "output_tokens": 300}}))
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        format!("http://{addr}/shout")
    })
}

/// The command in an empty home and workspace, with `references` as its HTTP agents.
fn run(home: &Path, references: &[Value], args: &[&str]) -> Output {
    let mut files = Vec::new();
    for (i, r) in references.iter().enumerate() {
        let file = home.join(format!("agent{i}.json"));
        std::fs::write(&file, r.to_string()).unwrap();
        files.push(file.display().to_string());
    }
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_subagents-http"));
    for var in [
        "SUBAGENTS_MODEL",
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "OPENAI_BASE_URL",
        "ANTHROPIC_BASE_URL",
        "RUST_LOG",
        "SUBAGENTS_STORE",
        "XDG_DATA_HOME",
    ] {
        cmd.env_remove(var);
    }
    cmd.env("HOME", home)
        .env("SUBAGENTS_OLLAMA_URL", "http://127.0.0.1:9")
        .env("SUBAGENTS_HTTP_AGENTS", files.join(":"))
        .current_dir(home)
        .args(args)
        .output()
        .expect("subagents-http runs")
}

fn shouter(url: &str) -> Value {
    json!({
        "url": url,
        "name": "shouter",
        "description": "Repeats its prompt in capitals.",
        "body": {"text": "{{prompt}}"},
        "answer": "/reply/text"
    })
}

#[test]
fn the_third_party_command_lists_and_runs_an_http_agent() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let url = endpoint(&rt);
    let home = tempfile::tempdir().unwrap();

    let out = run(home.path(), &[shouter(&url)], &["agents", "list", "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let loaded = report["loaded"].as_array().expect("loaded");
    let agent = loaded
        .iter()
        .find(|a| a["name"] == "shouter")
        .unwrap_or_else(|| panic!("shouter listed: {report:#}"));
    assert_eq!(agent["kind"], "HTTP", "{agent}");
    assert!(
        loaded.iter().any(|a| a["name"] == "general-purpose"),
        "the stock agents are still there: {report:#}"
    );

    let out = run(
        home.path(),
        &[shouter(&url)],
        &[
            "--store",
            "memory",
            "task",
            "shouter",
            "hello \"quoted\" world",
            "--json",
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let outcome: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(outcome["status"], "completed", "{outcome:#}");
    assert_eq!(outcome["kind"], "HTTP", "{outcome:#}");
    assert_eq!(outcome["text"], "HELLO \"QUOTED\" WORLD", "{outcome:#}");
}

#[test]
fn a_bad_reference_file_is_a_usage_error_naming_the_file() {
    let home = tempfile::tempdir().unwrap();
    let bad = json!({"url": "http://127.0.0.1:1/x", "name": "bad", "auth_evn": "TOKEN"});
    let out = run(home.path(), &[bad], &["agents", "list"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("agent0.json") && err.contains("auth_evn"),
        "{err}"
    );
}

#[test]
fn the_reported_usage_spends_the_commands_token_budget() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let url = endpoint(&rt);
    let home = tempfile::tempdir().unwrap();
    let mut agent = shouter(&url);
    agent["usage_input"] = json!("/usage/input_tokens");
    agent["usage_output"] = json!("/usage/output_tokens");
    let task = |budget: &str| {
        let out = run(
            home.path(),
            std::slice::from_ref(&agent),
            &[
                "--store",
                "memory",
                "task",
                "shouter",
                "hi",
                "--budget-tokens",
                budget,
                "--json",
            ],
        );
        let outcome: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!("{e}: {}", String::from_utf8_lossy(&out.stderr));
        });
        outcome
    };
    let outcome = task("1000");
    assert_eq!(outcome["status"], "limit_reached", "{outcome:#}");
    assert_eq!(outcome["limit"], "budget_tokens=1000", "{outcome:#}");
    assert_eq!(outcome["text"], "HI", "the answer is kept: {outcome:#}");
    // The same call within the budget completes.
    let outcome = task("2000");
    assert_eq!(outcome["status"], "completed", "{outcome:#}");
}
