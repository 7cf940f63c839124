//! What a newcomer meets in the first hour: the lean main agent's texts name only the tools it
//! has (`--main-tools Task`), `agents list` shows the agents of subagents.toml, model routes
//! are told apart without the URL's query or credentials (and never print them), and Ctrl-C
//! during a foreground `tasks resume` of an MCP task.

use crate::common;

use std::path::Path;

use common::{rt, subagents_in, write_agent};
use serde_json::Value;
use subagent_testkit::{Reply, ScriptedModelServer};

/// `subagents run` on `main-model` of `server` with one agent, `helper`; returns the first
/// request the main model got.
fn first_main_request(
    server: &ScriptedModelServer,
    home: &Path,
    extra: &[&str],
) -> subagent_testkit::RecordedRequest {
    let agents = write_agent(
        home,
        "helper",
        "---\nname: helper\ndescription: Helps.\nbackground: true\n---\nHelp.\n",
    );
    let before = server.requests().len();
    server
        .script()
        .push_for_model("main-model", Reply::text("ok"));
    subagents_in(home)
        .args(["--store", "memory", "run", "hi", "--model"])
        .arg(server.openai_model("main-model"))
        .arg("--agents")
        .arg(&agents)
        .args(extra)
        .assert()
        .success();
    server.requests().remove(before)
}

/// The description and schema of the tool `name` in `request`.
fn tool(request: &subagent_testkit::RecordedRequest, name: &str) -> (String, Value) {
    let t = request
        .tools()
        .iter()
        .find(|t| t["function"]["name"] == name)
        .unwrap_or_else(|| panic!("no tool {name}: {:?}", request.tool_names()));
    (
        t["function"]["description"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
        t["function"]["parameters"].clone(),
    )
}

#[test]
fn the_lean_main_agent_reads_of_no_tool_it_does_not_have() {
    let rt = rt();
    let server = rt.block_on(ScriptedModelServer::start());
    let home = tempfile::tempdir().expect("home");

    let lean = first_main_request(&server, home.path(), &["--main-tools", "Task"]);
    assert_eq!(lean.tool_names(), ["Task"]);
    let (description, schema) = tool(&lean, "Task");
    let system = lean.system_prompt();
    for absent in ["TaskOutput", "TaskStop"] {
        assert!(!description.contains(absent), "{absent}: {description}");
        assert!(!system.contains(absent), "{absent}: {system}");
    }
    assert!(!description.contains("run_in_background"), "{description}");
    assert!(
        schema["properties"].get("run_in_background").is_none(),
        "{schema}"
    );

    // With every delegation tool, the texts name them as before.
    let full = first_main_request(&server, home.path(), &["--main-tools", "delegation"]);
    let (description, schema) = tool(&full, "Task");
    assert!(
        description.contains("Read the result with TaskOutput")
            && description.contains("cancel it with TaskStop"),
        "{description}"
    );
    assert!(schema["properties"].get("run_in_background").is_some());
    assert!(full.system_prompt().contains("then TaskOutput"));
}

