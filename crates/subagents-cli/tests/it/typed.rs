//! `subagents task --output-schema FILE` over real HTTP with the scripted model server: the
//! validated JSON alone on stdout, nested two deep (coordinator → leaf, both typed), errors fed
//! back, a bounded number of retries, and bad schema files refused before anything runs.

use crate::common;

use common::{report_schema, scripted, subagents, team};
use serde_json::{Value, json};
use subagent_testkit::Reply;

fn structured(value: Value) -> Reply {
    Reply::tool_calls(vec![("StructuredOutput", value)])
}

/// The content of the last message of an OpenAI request body, as JSON text.
fn last_message_text(body: &Value) -> String {
    body["messages"]
        .as_array()
        .and_then(|m| m.last())
        .map(|m| m["content"].to_string())
        .unwrap_or_default()
}

fn schema_file(dir: &std::path::Path, schema: &Value) -> std::path::PathBuf {
    let path = dir.join("schema.json");
    std::fs::write(&path, schema.to_string()).expect("schema file");
    path
}

/// `subagents task AGENT PROMPT --model MODEL --output-schema SCHEMA --agents TEAM`.
fn typed_task(
    agent: &str,
    prompt: &str,
    model: &str,
    schema: &std::path::Path,
) -> assert_cmd::Command {
    let mut cmd = subagents();
    cmd.args(["task", agent, prompt, "--model", model])
        .arg("--output-schema")
        .arg(schema)
        .arg("--agents")
        .arg(team());
    cmd
}

/// `subagents task AGENT "What is the answer?"` on `server`'s `team` model, typed by
/// [`report_schema`] (its file in a temporary directory): the outcome.
fn report_task(
    server: &subagent_testkit::ScriptedModelServer,
    agent: &str,
) -> assert_cmd::assert::Assert {
    let dir = tempfile::tempdir().expect("tmp");
    let schema = schema_file(dir.path(), &report_schema());
    typed_task(
        agent,
        "What is the answer?",
        &server.openai_model("team"),
        &schema,
    )
    .assert()
}

#[test]
fn task_output_schema_prints_the_validated_json_two_deep() {
    let (_rt, server) = scripted();
    server.push(Reply::tool_calls(vec![(
        "Task",
        json!({"description": "look up", "prompt": "the number", "subagent_type": "leaf",
               "output_schema": {"type": "array", "items": {"type": "integer"}}}),
    )]));
    server.push(structured(json!({"value": [4, "2"]})));
    server.push(structured(json!({"value": [4, 2]})));
    server.push(Reply::text("The answer is 42."));
    server.push(structured(json!({"answer": 42, "source": "leaf"})));
    let out = report_task(&server, "coordinator").success();
    let stdout = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    assert_eq!(stdout.trim(), r#"{"answer":42,"source":"leaf"}"#);
    let reqs = server.requests();
    assert_eq!(reqs.len(), 5);
    // the leaf's invalid item was reported at its place, and its value reached the coordinator
    assert!(
        reqs[2].tool_results().last().unwrap().contains("at /1:"),
        "{:?}",
        reqs[2].tool_results()
    );
    assert!(
        reqs[3].tool_results().last().unwrap().starts_with("[4,2]"),
        "{:?}",
        reqs[3].tool_results()
    );
    // the coordinator's plain text was sent back: it must end with the final tool
    assert!(last_message_text(&reqs[4].body).contains("StructuredOutput"));
}

#[test]
fn task_output_schema_fails_after_the_retries() {
    let (_rt, server) = scripted();
    for _ in 0..5 {
        server.push(Reply::text("no JSON here"));
    }
    let out = report_task(&server, "leaf").failure();
    let o = out.get_output();
    assert!(o.stdout.is_empty(), "stdout holds only a valid value");
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(stderr.contains("invalid output"), "{stderr}");
    assert_eq!(server.requests().len(), 3, "the first answer and 2 retries");
}

#[test]
fn a_bad_schema_file_is_refused_naming_it() {
    let (_rt, server) = scripted();
    let model = server.openai_model("team");
    let dir = tempfile::tempdir().expect("tmp");
    for (name, text) in [
        ("notjson.json", "{not json".to_string()),
        (
            "remote.json",
            r#"{"$ref": "https://example.com/s.json"}"#.to_string(),
        ),
        (
            "huge.json",
            format!(r#"{{"description": "{}"}}"#, "x".repeat(300_000)),
        ),
    ] {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        let out = typed_task("leaf", "hi", &model, &path).assert().code(2);
        let stderr = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
        assert!(stderr.contains(name), "{name}: {stderr}");
    }
    assert_eq!(server.requests().len(), 0, "nothing ran");
}
