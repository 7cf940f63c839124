//! A third-party `subagents` command (issue 29 item 5): `examples/custom_cli.rs`, ten lines over
//! `subagents_cli::Cli` adding the testkit's `FN` kind with one agent (`shout`, which answers
//! its prompt in capitals), runs every subcommand with that kind registered. It is built as
//! the package's `custom_cli` binary (feature `custom-cli-example`; this test needs it too).

use crate::common;
use common::OutputOk;

use std::path::Path;

use assert_cmd::Command;
use common::{CLEARED_VARS, stdout_of, subagents_in};
use serde_json::json;
use subagent_testkit::Reply;

/// The example's executable: the `custom_cli` binary target (feature `custom-cli-example`),
/// which Cargo builds before this test.
fn custom_cli() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_custom_cli"))
}

/// The custom command with the clean environment of the stock one's tests, in `home`.
fn custom_in(home: &Path) -> Command {
    let mut cmd = Command::new(custom_cli());
    for var in CLEARED_VARS {
        cmd.env_remove(var);
    }
    cmd.env("HOME", home)
        .env("SUBAGENTS_OLLAMA_URL", "http://127.0.0.1:9")
        .current_dir(home);
    cmd
}

#[test]
fn agents_list_of_the_custom_command_lists_the_added_kind() {
    let home = tempfile::tempdir().unwrap();
    let report = custom_in(home.path())
        .args(["agents", "list", "--json"])
        .json_ok();
    let loaded = report["loaded"].as_array().expect("loaded");
    let shout = loaded
        .iter()
        .find(|a| a["name"] == "shout")
        .unwrap_or_else(|| panic!("shout listed: {report:#}"));
    assert_eq!(shout["kind"], "FN");
    assert_eq!(shout["description"], "Shouts its prompt");
    assert_eq!(shout["path"], "fn:shout?Shouts its prompt");
    assert!(
        loaded.iter().any(|a| a["name"] == "general-purpose"),
        "the stock agents are still there: {report:#}"
    );
    // The text listing too.
    let text = stdout_of(
        custom_in(home.path())
            .args(["agents", "list"])
            .assert()
            .success(),
    );
    let line = text
        .lines()
        .find(|l| l.starts_with("shout "))
        .unwrap_or_else(|| panic!("{text}"));
    common::assert_has(line, &["FN", "Shouts its prompt"]);
}

#[test]
fn task_of_the_custom_command_runs_the_added_kind() {
    let home = tempfile::tempdir().unwrap();
    // No model anywhere: the FN kind needs none.
    let out = stdout_of(
        custom_in(home.path())
            .args(["--store", "memory", "task", "shout", "hello from a test"])
            .assert()
            .success(),
    );
    assert!(out.contains("HELLO FROM A TEST"), "{out}");
    let outcome = custom_in(home.path())
        .args(["--store", "memory", "task", "shout", "json too", "--json"])
        .json_ok();
    assert_eq!(outcome["status"], "completed", "{outcome:#}");
    assert_eq!(outcome["kind"], "FN", "{outcome:#}");
    common::assert_has(outcome["text"].as_str().unwrap_or_default(), &["JSON TOO"]);
    // The stock command has no such agent: a usage error naming it.
    let stock = subagents_in(home.path())
        .args(["--store", "memory", "task", "shout", "hello"])
        .assert()
        .code(2);
    let err = String::from_utf8_lossy(&stock.get_output().stderr).into_owned();
    assert!(err.contains("unknown agent `shout`"), "{err}");
}

#[test]
fn run_of_the_custom_command_delegates_to_the_added_kind() {
    let (_rt, server) = common::scripted();
    server.push(Reply::task_call("shout", "delegated words"));
    server.push(Reply::text("the child answered"));
    let home = tempfile::tempdir().unwrap();
    let out = stdout_of(
        custom_in(home.path())
            .args(["--store", "memory", "run", "--model"])
            .arg(server.openai_model("main-model"))
            .arg("ask shout")
            .assert()
            .success(),
    );
    assert!(out.contains("the child answered"), "{out}");
    let requests = server.requests();
    let second = requests.get(1).expect("a second model turn");
    let results = second.tool_results();
    assert!(
        results.iter().any(|r| r.contains("DELEGATED WORDS")),
        "the Task call ran the FN agent: {results:?}"
    );
    let tools = requests[0].tools();
    let task = tools
        .iter()
        .find(|t| t["function"]["name"] == "Task")
        .expect("the Task tool offered");
    assert!(
        task.to_string().contains("shout"),
        "the Task tool names the added agent: {}",
        json!(task)
    );
}

/// A command built on `subagents_cli::Cli` is the namespace sandbox's helper too (`Cli::run`
/// calls `sandbox_helper_main` first): it confines commands the way the stock one does here.
#[test]
fn the_custom_command_gets_the_same_sandbox_as_the_stock_one() {
    let home = tempfile::tempdir().unwrap();
    let custom = custom_in(home.path()).args(["doctor", "--json"]).json_ok();
    let stock = subagents_in(home.path())
        .args(["doctor", "--json"])
        .json_ok();
    assert_eq!(custom["sandbox"], stock["sandbox"], "{custom} vs {stock}");
    if stock["sandbox"] == "namespaces" {
        assert_eq!(
            custom["user_namespaces"]["helper"],
            json!(
                std::fs::canonicalize(custom_cli())
                    .unwrap()
                    .display()
                    .to_string()
            ),
            "the custom command is its own helper"
        );
    }
}
