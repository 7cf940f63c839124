//! The `subagents` command, run as a real process.

use crate::common;
use common::OutputOk;

use common::{fixtures, json_stdout, last_tool_result, spawn_serve, subagents, word};
use predicates::prelude::*;
use serde_json::Value;

#[test]
fn help_documents_every_subcommand_and_exit_code() {
    let out = subagents()
        .arg("--help")
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let text = String::from_utf8_lossy(&out);
    for sub in ["run", "task", "agents", "serve", "call", "mcp"] {
        assert!(
            text.contains(&format!("  {sub} ")),
            "--help lists `{sub}`:\n{text}"
        );
    }
    for code in [
        "0  success",
        "1  the agent failed",
        "2  usage or configuration",
        "3  incomplete",
        "130",
    ] {
        assert!(
            text.contains(code),
            "--help documents exit code `{code}`:\n{text}"
        );
    }
    subagents()
        .args(["agents", "validate", "--help"])
        .assert()
        .success()
        .stdout(predicate::str::contains("Exit codes"));
}

/// `subagents agents validate --json` on these fixtures, which fails (exit 1): its report.
fn validate_failing(fixtures_named: &[&str]) -> Value {
    let mut cmd = subagents();
    cmd.args(["agents", "validate", "--json"]);
    for name in fixtures_named {
        cmd.arg(fixtures().join(name));
    }
    json_stdout(cmd.assert().code(1))
}

/// Behaviour change (issue 27): the directory holds a broken agent file (no `description`),
/// which now fails validation (exit 1); the README is still only skipped.
#[test]
fn validate_scans_a_directory_like_claude_code() {
    let v = validate_failing(&["agents"]);
    let loaded = v["loaded"].as_array().expect("loaded");
    let names: Vec<&str> = loaded.iter().filter_map(|a| a["name"].as_str()).collect();
    assert!(names.contains(&"reviewer"), "{v}");
    assert!(names.contains(&"Release Notes Writer"), "{v}");
    assert_eq!(loaded.len(), 2, "{v}");
    for a in loaded {
        assert_eq!(a["kind"], "CLAUDE");
        assert!(a["path"].as_str().is_some_and(|p| p.ends_with(".md")));
        assert!(a["warnings"].is_array());
    }
    let lenient = loaded
        .iter()
        .find(|a| a["name"] == "Release Notes Writer")
        .expect("lenient file loaded");
    let warnings = lenient["warnings"].to_string().to_lowercase();
    assert!(
        warnings.contains("lenient"),
        "lenient reading is reported: {warnings}"
    );
    let skipped = v["skipped"].as_array().expect("skipped");
    let skipped_paths: Vec<&str> = skipped.iter().filter_map(|s| s["path"].as_str()).collect();
    assert!(
        skipped_paths.iter().any(|p| p.ends_with("README.md")),
        "{v}"
    );
    assert!(
        skipped_paths
            .iter()
            .any(|p| p.ends_with("no-description.md")),
        "{v}"
    );
    for s in skipped {
        assert!(
            !s["reason"].as_str().unwrap_or("").is_empty(),
            "each skip has a reason: {v}"
        );
    }
}

#[test]
fn validate_fails_when_a_named_file_does_not_load() {
    let v = validate_failing(&["broken.md", "agents/reviewer.md"]);
    assert_eq!(v["loaded"][0]["name"], "reviewer", "{v}");
    let reason = v["skipped"][0]["reason"].as_str().unwrap_or("");
    assert!(
        v["skipped"][0]["path"]
            .as_str()
            .unwrap_or("")
            .ends_with("broken.md"),
        "{v}"
    );
    assert!(
        reason.contains("description"),
        "the reason names the missing field: {reason}"
    );
    assert!(
        reason.contains("broken.md"),
        "the reason names the file: {reason}"
    );
}

/// Behaviour change (issue 27): the broken `no-description.md` counts as failed (exit 1).
#[test]
fn validate_text_output_summarises() {
    subagents()
        .args(["agents", "validate"])
        .arg(fixtures().join("agents"))
        .assert()
        .code(1)
        .stdout(predicate::str::contains("2 loaded, 1 skipped, 1 failed"));
}

#[test]
fn agents_list_includes_built_ins_and_given_dirs() {
    let v = subagents()
        .args(["agents", "list", "--json", "--agents"])
        .arg(fixtures().join("agents"))
        .json_ok();
    let names: Vec<&str> = v["loaded"]
        .as_array()
        .expect("loaded")
        .iter()
        .filter_map(|a| a["name"].as_str())
        .collect();
    for n in ["general-purpose", "Explore", "Plan", "Bash", "reviewer"] {
        assert!(names.contains(&n), "{n} listed: {names:?}");
    }
}

#[test]
fn no_reachable_model_exits_2_with_one_message() {
    let assert = subagents().args(["run", "hello"]).assert().code(2);
    let err = String::from_utf8_lossy(&assert.get_output().stderr).to_string();
    assert!(err.contains("no model is reachable"), "{err}");
    assert!(err.contains("SUBAGENTS_MODEL"), "{err}");
    common::assert_has(&err, &["OPENAI_API_KEY", "ANTHROPIC_API_KEY"]);
    assert!(err.contains("127.0.0.1:9"), "says where it looked: {err}");
    assert!(assert.get_output().stdout.is_empty());
}

#[test]
fn a_local_agent_without_a_model_exits_2_but_unknown_agents_are_named() {
    subagents()
        .args(["task", "reviewer", "look at this", "--agents"])
        .arg(fixtures().join("agents"))
        .assert()
        .code(2)
        .stderr(predicate::str::contains("no model is reachable"));
    subagents()
        .args([
            "task",
            "nobody",
            "x",
            "--model",
            "openai-compatible:m@http://127.0.0.1:9/v1",
            "--agents",
        ])
        .arg(fixtures().join("agents"))
        .assert()
        .code(2)
        .stderr(
            predicate::str::contains("unknown agent `nobody`")
                .and(predicate::str::contains("reviewer")),
        );
}

#[test]
fn a_bad_config_file_is_a_clear_error() {
    let dir = tempfile::tempdir().expect("tmp");
    let cfg = dir.path().join("subagents.toml");
    std::fs::write(&cfg, "model = 3\n").expect("write");
    subagents()
        .arg("--config")
        .arg(&cfg)
        .args(["agents", "list"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("subagents.toml"));
}

/// A multi-threaded runtime for the scripted model server while the CLI runs as a process.

#[test]
fn task_runs_one_local_agent_against_the_scripted_model() {
    use subagent_testkit::Reply;
    let (_rt, server) = common::scripted();
    server.push(Reply::text("the files look fine").with_usage(12, 5));
    let model = server.openai_model("test-model");
    let v = subagents()
        .args([
            "task",
            "echo-agent",
            "review src/",
            "--json",
            "--model",
            &model,
            "--agents",
        ])
        .arg(fixtures().join("local"))
        .json_ok();
    assert_eq!(v["agent"], "echo-agent", "{v}");
    assert_eq!(v["kind"], "CLAUDE", "{v}");
    assert_eq!(v["status"], "completed", "{v}");
    assert_eq!(v["text"], "the files look fine", "{v}");
    assert_eq!(v["usage"]["usage"]["input_tokens"], 12, "{v}");
    assert_eq!(v["usage"]["usage"]["output_tokens"], 5, "{v}");
    assert!(
        v["session_id"].as_str().is_some(),
        "a local run can be resumed: {v}"
    );

    let (req, body) = common::only_request(&server);
    assert!(
        body.contains("You are a test agent."),
        "system prompt is the agent body: {body}"
    );
    assert!(
        body.contains("review src/"),
        "the prompt is the user message: {body}"
    );
    assert_eq!(
        req.tool_names(),
        ["Read"],
        "the agent's `tools: Read` filters the tool set"
    );
}

#[test]
fn run_delegates_in_the_background_then_reads_the_output() {
    use subagent_testkit::Reply;
    let (_rt, server) = common::scripted();
    let script = server.script();
    // Turn 1: the main model starts a subagent in the background, on a model named in the
    // config file.
    script.push_for_model(
        "main-model",
        Reply::tool_calls(vec![(
            "Task",
            serde_json::json!({
                "description": "review",
                "prompt": "review the fixtures",
                "subagent_type": "echo-agent",
                "model": "child",
                "run_in_background": true
            }),
        )])
        .with_usage(100, 20),
    );
    // Turn 2: it reads the result with the task id it was given, as a model would.
    script.push_dynamic(Some("main-model"), |body| {
        let id = word(&last_tool_result(body), "task_").unwrap_or_else(|| "task_missing".into());
        Reply::tool_calls(vec![(
            "TaskOutput",
            serde_json::json!({"task_id": id, "timeout_ms": 10000}),
        )])
        .with_usage(150, 10)
    });
    // Turn 3: the final answer quotes what the subagent said.
    script.push_dynamic(Some("main-model"), |body| {
        let output = last_tool_result(body);
        let said = if output.contains("child says the fixtures are fine") {
            "the reviewer says the fixtures are fine"
        } else {
            "TaskOutput did not carry the child's answer"
        };
        Reply::text(said).with_usage(200, 8)
    });
    script.push_for_model(
        "child-model",
        Reply::text("child says the fixtures are fine").with_usage(40, 7),
    );

    let dir = tempfile::tempdir().expect("tmp");
    let cfg = common::child_model_config(dir.path(), &server);
    let model = server.openai_model("main-model");
    let assert = subagents()
        .arg("--config")
        .arg(&cfg)
        .args([
            "run",
            "check the fixtures",
            "--json",
            "--model",
            &model,
            "--agents",
        ])
        .arg(fixtures().join("local"))
        .arg("--workspace")
        .arg(dir.path())
        .assert()
        .success();
    let out = assert.get_output();
    let v: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(v["text"], "the reviewer says the fixtures are fine", "{v}");
    assert_eq!(v["status"], "completed");
    assert_eq!(v["usage"]["usage"]["turns"], 3, "{v}");
    assert_eq!(v["usage"]["usage"]["input_tokens"], 450, "{v}");
    let children = v["usage"]["children"].as_array().expect("usage tree");
    assert_eq!(children.len(), 1, "one subagent in the usage tree: {v}");
    assert_eq!(children[0]["agent"], "echo-agent");
    assert_eq!(children[0]["status"], "completed");
    assert_eq!(children[0]["usage"]["input_tokens"], 40);
    // Progress went to stderr as plain lines (not a terminal).
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("echo-agent: started: review"), "{err}");
    assert!(err.contains("echo-agent: finished completed"), "{err}");

    let reqs = server.requests();
    let main_first = reqs
        .iter()
        .find(|r| r.model() == Some("main-model"))
        .expect("main request");
    let tool_names = main_first.tool_names();
    for t in ["Task", "TaskOutput", "TaskStop", "Read", "Bash"] {
        assert!(
            tool_names.iter().any(|n| n == t),
            "main agent has {t}: {tool_names:?}"
        );
    }
    let child = reqs
        .iter()
        .find(|r| r.model() == Some("child-model"))
        .expect("child request");
    assert_eq!(
        child.tool_names(),
        ["Read"],
        "the child gets only its own tools, never Task"
    );
}

#[test]
fn serve_then_call_round_trip_with_streaming_progress() {
    use subagent_testkit::Reply;
    let (rt, model_server) = common::scripted();
    model_server.push(Reply::text("served answer one").with_usage(5, 3));
    model_server.push(Reply::text("served answer two").with_usage(5, 3));
    let model = model_server.openai_model("test-model");
    let home = tempfile::tempdir().expect("tmp");
    let serve = spawn_serve(&rt, home.path(), |cmd| {
        cmd.args(["--model", &model, "--agent", "echo-agent", "--agents"])
            .arg(fixtures().join("local"))
            .arg("--workspace")
            .arg(home.path());
    });
    let base = &serve.base;
    let listing: Value = rt.block_on(async {
        reqwest::get(format!("{base}/"))
            .await
            .expect("GET / answers")
            .json()
            .await
            .expect("GET / lists the agents")
    });
    assert_eq!(listing["agents"][0]["name"], "echo-agent", "{listing}");
    assert_eq!(
        listing["agents"][0]["url"],
        format!("{base}/echo-agent"),
        "{listing}"
    );

    let v = subagents()
        .args([
            "call",
            &format!("{base}/echo-agent"),
            "hello there",
            "--json",
        ])
        .json_ok();
    assert_eq!(v["text"], "served answer one", "{v}");
    assert_eq!(v["kind"], "A2A");
    assert_eq!(v["status"], "completed");

    let streamed = subagents()
        .args(["call", &format!("{base}/echo-agent"), "again", "--stream"])
        .assert()
        .success();
    let o = streamed.get_output();
    assert_eq!(
        String::from_utf8_lossy(&o.stdout).trim(),
        "served answer two"
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("[echo-agent]"),
        "streamed progress on stderr: {err}"
    );
    assert!(
        err.contains("served answer two"),
        "the streamed artifact is shown: {err}"
    );

    let sent = model_server.requests();
    assert_eq!(sent.len(), 2);
    assert!(sent[0].body.to_string().contains("hello there"));
}
