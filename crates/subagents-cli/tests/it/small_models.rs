//! What small local models do, scripted: call the agent instead of `Task`, write tool calls
//! as text, end with an empty reply; and the lean main agent (`--main-tools`).

use crate::common;
use common::MainModel as _;

use std::path::Path;

use common::{json_stdout, subagents, write_agent};
use serde_json::{Value, json};
use subagent_testkit::{Reply, ScriptedModelServer};

/// A calculator agent on the configured model `child`; returns (config, agents dir).
fn calculator(
    dir: &Path,
    server: &ScriptedModelServer,
) -> (std::path::PathBuf, std::path::PathBuf) {
    let config = common::child_model_config(dir, server);
    let agents = write_agent(
        dir,
        "calculator",
        "---\nname: calculator\ndescription: Does arithmetic.\nmodel: child\ntools: Read\n---\nAnswer with the number only.\n",
    );
    (config, agents)
}

/// `subagents run PROMPT --json` on `main-model` of `server` with the calculator agent.
fn run_main(
    server: &ScriptedModelServer,
    dir: &Path,
    extra: &[&str],
) -> assert_cmd::assert::Assert {
    let (config, agents) = calculator(dir, server);
    subagents()
        .arg("--config")
        .arg(&config)
        .args([
            "--store",
            "memory",
            "run",
            "Use the calculator agent to compute 17 * 23.",
        ])
        .args(["--json", "--model", &server.openai_model("main-model")])
        .arg("--agents")
        .arg(&agents)
        .arg("--workspace")
        .arg(dir)
        .args(extra)
        .assert()
}

/// The prompts the calculator's model received (its user messages), in order.
fn child_prompts(server: &ScriptedModelServer) -> Vec<String> {
    server
        .requests_for("child-model")
        .iter()
        .map(subagent_testkit::RecordedRequest::last_user_text)
        .collect()
}

#[test]
fn a_tool_call_named_like_an_agent_is_delegated_to_it() {
    let (_rt, server) = common::scripted();
    let script = server.script();
    // The model calls the agent itself, in another case, with arguments of its own making.
    script.push_for_model(
        "main-model",
        Reply::tool_calls(vec![("Calculator", json!({"expression": "17 * 23"}))]),
    );
    script.push_dynamic(Some("main-model"), |body| {
        let result = common::last_tool_result(body);
        Reply::text(if result.contains("391") {
            "17 * 23 = 391"
        } else {
            "the calculator was not reached"
        })
    });
    script.push_for_model("child-model", Reply::text("391"));
    let dir = tempfile::tempdir().expect("tmp");
    let assert = run_main(&server, dir.path(), &[]).success();
    let stderr = String::from_utf8_lossy(&assert.get_output().stderr).into_owned();
    let v = json_stdout(assert);
    assert_eq!(v["text"], "17 * 23 = 391", "{v}");
    let children = v["usage"]["children"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(children.len(), 1, "{v}");
    assert_eq!(children[0]["agent"], "calculator");
    assert_eq!(child_prompts(&server), ["17 * 23"]);
    assert!(
        stderr.contains("called agent `calculator` as a tool (`Calculator`)"),
        "the rewrite is said in the progress: {stderr}"
    );
    // The transcript the model sees next holds a `Task` call, an example of the right form.
    let second = server
        .requests_for("main-model")
        .into_iter()
        .nth(1)
        .expect("a second main turn");
    let assistant = second
        .messages()
        .iter()
        .find(|m| m["role"] == "assistant")
        .cloned()
        .unwrap_or(Value::Null);
    assert_eq!(
        assistant["tool_calls"][0]["function"]["name"], "Task",
        "{assistant}"
    );
}

#[test]
fn tool_calls_written_as_text_are_run_on_a_local_server() {
    let (_rt, server) = common::scripted();
    let script = server.script();
    let call = |n: u32| {
        json!({"name": "Task", "arguments": {
            "description": "multiply", "subagent_type": "calculator", "prompt": format!("form {n}")
        }})
        .to_string()
    };
    // The three forms small models write, one per turn, then the answer.
    script.push_for_model("main-model", Reply::text(call(1)));
    script.push_for_model(
        "main-model",
        Reply::text(format!("```json\n{}\n```", call(2))),
    );
    script.push_for_model(
        "main-model",
        Reply::text(format!(
            "I will ask it.\n<tool_call>\n{}\n</tool_call>",
            call(3)
        )),
    );
    script.push_for_model("main-model", Reply::text("391"));
    for _ in 0..3 {
        script.push_for_model("child-model", Reply::text("391"));
    }
    let dir = tempfile::tempdir().expect("tmp");
    let v = json_stdout(run_main(&server, dir.path(), &[]).success());
    assert_eq!(v["text"], "391", "{v}");
    assert_eq!(v["status"], "completed", "{v}");
    assert_eq!(child_prompts(&server), ["form 1", "form 2", "form 3"]);
    assert_eq!(
        v["usage"]["children"].as_array().map(Vec::len),
        Some(3),
        "{v}"
    );
}

#[test]
fn an_empty_final_answer_fails_and_says_why() {
    let (_rt, server) = common::scripted();
    // Asked once more after an empty reply, it replies empty again.
    for _ in 0..2 {
        server
            .script()
            .push_for_model("main-model", Reply::text("  \n"));
    }
    let dir = tempfile::tempdir().expect("tmp");
    let assert = run_main(&server, dir.path(), &[]).code(1);
    let stderr = String::from_utf8_lossy(&assert.get_output().stderr).into_owned();
    common::assert_has(&stderr, &["ended without an answer", "was empty"]);
    let v = json_stdout(assert);
    assert_eq!(v["status"], "failed", "{v}");
    assert!(
        v["text"]
            .as_str()
            .unwrap_or_default()
            .starts_with("no answer:"),
        "{v}"
    );

    // Without --json nothing is printed as the answer.
    for _ in 0..2 {
        server
            .script()
            .push_for_model("main-model", Reply::text(""));
    }
    let (config, agents) = calculator(dir.path(), &server);
    let out = subagents()
        .arg("--config")
        .arg(&config)
        .args(["--store", "memory", "run", "compute"])
        .main_model(&server, &agents)
        .assert()
        .code(1);
    assert!(out.get_output().stdout.is_empty());
}

#[test]
fn main_tools_offers_the_main_agent_only_the_named_tools() {
    let (_rt, server) = common::scripted();
    server
        .script()
        .push_for_model("main-model", Reply::text("ok"));
    let dir = tempfile::tempdir().expect("tmp");
    run_main(&server, dir.path(), &["--main-tools", "Task"]).success();
    let first = server.requests().remove(0);
    assert_eq!(first.tool_names(), ["Task"]);

    server
        .script()
        .push_for_model("main-model", Reply::text("ok"));
    run_main(&server, dir.path(), &["--main-tools", "delegation,Read"]).success();
    let second = server.requests().remove(1);
    assert_eq!(
        second.tool_names(),
        ["Read", "SendMessage", "Task", "TaskOutput", "TaskStop"]
    );

    let assert = run_main(&server, dir.path(), &["--main-tools", "Tsak"]).code(2);
    let stderr = String::from_utf8_lossy(&assert.get_output().stderr).into_owned();
    common::assert_has(&stderr, &["no tool `Tsak`", "Task"]);
}
