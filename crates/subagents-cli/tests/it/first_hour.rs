//! What a newcomer meets in the first hour: the lean main agent's texts name only the tools it
//! has (`--main-tools Task`), `agents list` shows the agents of subagents.toml, model routes
//! are told apart without the URL's query or credentials (and never print them), and Ctrl-C
//! during a foreground `tasks resume` of an MCP task.

use crate::common;
use common::MainModel as _;
use common::OutputOk;

use std::path::Path;

use common::{stdout_of, subagents_in, write_agent};
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
        .args(["--store", "memory", "run", "hi"])
        .main_model(server, &agents)
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
    let (_rt, server, home) = common::scripted_in_temp();

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
    common::assert_has(
        &description,
        &["read the result with TaskOutput", "cancel with TaskStop"],
    );
    assert!(schema["properties"].get("run_in_background").is_some());
    assert!(full.system_prompt().contains("then TaskOutput"));
}

/// A subagents.toml with two A2A agents (one a bare URL, one a table with a name and a
/// credential variable) and two MCP entries (a stdio command that would leave a mark if it
/// ran, and an HTTP server with credentials in its URL); nothing listens on any of them.
fn remote_agents_config(dir: &Path) -> std::path::PathBuf {
    let mark = dir.join("the-mcp-command-ran");
    let config = dir.join("remote.toml");
    std::fs::write(
        &config,
        format!(
            "a2a = [\n  \"http://127.0.0.1:9/a2a\",\n  {{ url = \"http://127.0.0.1:9/other\", \
             name = \"reviewer\", bearer_env = \"REVIEWER_TOKEN\" }},\n]\n\
             mcp = [\n  \"stdio:touch {}#tool=ask&name=asker\",\n  \
             \"http://user:hunter2@127.0.0.1:9/mcp\",\n]\n",
            mark.display()
        ),
    )
    .expect("config");
    config
}

#[test]
fn agents_list_shows_the_a2a_and_mcp_agents_of_the_configuration_without_contacting_them() {
    let home = tempfile::tempdir().expect("home");
    let config = remote_agents_config(home.path());
    let empty = home.path().join("no-agents");
    std::fs::create_dir_all(&empty).expect("mkdir");
    let listed = subagents_in(home.path())
        .arg("--config")
        .arg(&config)
        .args(["agents", "list", "--json", "--agents"])
        .arg(&empty)
        .json_ok();
    let loaded = listed["loaded"].as_array().expect("loaded");
    let remote: Vec<&Value> = loaded
        .iter()
        .filter(|a| a["kind"] == "A2A" || a["kind"] == "MCP")
        .collect();
    let summary: Vec<(String, String, String)> = remote
        .iter()
        .map(|a| {
            (
                a["kind"].as_str().unwrap_or_default().to_string(),
                a["name"].as_str().unwrap_or_default().to_string(),
                a["url"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect();
    let mark = home.path().join("the-mcp-command-ran");
    assert_eq!(
        summary,
        [
            (
                "A2A".into(),
                "http://127.0.0.1:9/a2a".into(),
                "http://127.0.0.1:9/a2a".into()
            ),
            (
                "A2A".into(),
                "reviewer".into(),
                "http://127.0.0.1:9/other".into()
            ),
            (
                "MCP".into(),
                "asker".into(),
                format!("stdio:touch {}#tool=ask&name=asker", mark.display())
            ),
            (
                "MCP".into(),
                "http://***@127.0.0.1:9/mcp".into(),
                "http://***@127.0.0.1:9/mcp".into()
            ),
        ],
        "{listed:#}"
    );
    for a in &remote {
        assert_eq!(a["path"], config.display().to_string().as_str(), "{a}");
        // A file given with --config is the user's word: nothing is flagged.
        assert_eq!(a["warnings"], serde_json::json!([]), "{a}");
    }
    assert!(
        remote[0]["description"]
            .as_str()
            .unwrap_or_default()
            .contains("from its agent card"),
        "{}",
        remote[0]
    );
    // The Markdown built-ins are still listed, as before.
    assert!(loaded.iter().any(|a| a["kind"] == "CLAUDE"), "{listed:#}");
    assert!(!mark.exists(), "agents list started the MCP command");

    // The text listing names them too, and never the password.
    let text = stdout_of(
        subagents_in(home.path())
            .arg("--config")
            .arg(&config)
            .args(["agents", "list", "--agents"])
            .arg(&empty)
            .assert()
            .success(),
    );
    assert!(
        text.lines()
            .any(|l| l.starts_with("reviewer") && l.contains("A2A")),
        "{text}"
    );
    assert!(text.contains("url http://127.0.0.1:9/other"), "{text}");
    assert!(
        text.lines()
            .any(|l| l.starts_with("asker") && l.contains("MCP")),
        "{text}"
    );
    assert!(!text.contains("hunter2") && !listed.to_string().contains("hunter2"));
    assert!(!mark.exists(), "agents list started the MCP command");
}

#[test]
fn agents_list_flags_the_mcp_entries_of_an_unapproved_workspace_file() {
    let home = tempfile::tempdir().expect("home");
    let written = remote_agents_config(home.path());
    std::fs::rename(&written, home.path().join("subagents.toml")).expect("rename");
    let listed = subagents_in(home.path())
        .args(["agents", "list", "--json"])
        .json_ok();
    let loaded = listed["loaded"].as_array().expect("loaded");
    let a2a: Vec<&Value> = loaded.iter().filter(|a| a["kind"] == "A2A").collect();
    assert_eq!(a2a.len(), 2, "{listed:#}");
    // The bare URL is used as it is; the table's credential variable is not.
    assert_eq!(a2a[0]["warnings"], serde_json::json!([]), "{}", a2a[0]);
    assert!(
        a2a[1]["warnings"]
            .to_string()
            .contains("credential settings are not used"),
        "{}",
        a2a[1]
    );
    let mcp: Vec<&Value> = loaded.iter().filter(|a| a["kind"] == "MCP").collect();
    assert_eq!(mcp.len(), 2, "{listed:#}");
    for a in mcp {
        let warnings = a["warnings"].to_string();
        assert!(
            warnings.contains("not approved") && warnings.contains("subagents trust"),
            "{a}"
        );
    }
    assert!(!home.path().join("the-mcp-command-ran").exists());
}

/// A config routing the agent `helper` (model `child`) to `child_spec`.
fn routed(home: &Path, child_spec: &str) -> (std::path::PathBuf, std::path::PathBuf) {
    let config = home.join("routes.toml");
    std::fs::write(&config, format!("[models]\nchild = \"{child_spec}\"\n")).expect("config");
    let agents = write_agent(
        home,
        "helper",
        "---\nname: helper\ndescription: Helps.\nmodel: child\n---\nHelp.\n",
    );
    (config, agents)
}

/// `run` on `main_spec` with `config` and `agents`; returns stdout and stderr.
fn run_routed(
    server: &ScriptedModelServer,
    home: &Path,
    main_spec: &str,
    config: &Path,
    agents: &Path,
) -> String {
    server
        .script()
        .push_for_model("main-model", Reply::text("main done"));
    let out = subagents_in(home)
        .arg("--config")
        .arg(config)
        .args(["--store", "memory", "run", "go", "--model", main_spec])
        .arg("--agents")
        .arg(agents)
        .output()
        .expect("run");
    let all = common::all_output(&out);
    assert!(out.status.success(), "{all}");
    all
}

#[test]
fn model_routes_ignore_the_query() {
    // (Credentials in a model URL are refused where the spec is read: hostile.rs.)
    let (rt, server) = common::scripted();
    let elsewhere = rt.block_on(ScriptedModelServer::start());
    let home = tempfile::tempdir().expect("home");
    let with_query =
        |s: &ScriptedModelServer, model: &str, query: &str| s.openai_model(model) + query;
    let main = with_query(&server, "main-model", "?temperature=0.2");

    // The same server with another query: the same provider, no notice.
    let (config, agents) = routed(
        home.path(),
        &with_query(&server, "child-model", "?temperature=0.7"),
    );
    let all = run_routed(&server, home.path(), &main, &config, &agents);
    assert!(!all.contains("another provider"), "{all}");

    // Another server: the notice names it.
    let (config, agents) = routed(
        home.path(),
        &with_query(&elsewhere, "child-model", "?temperature=0.7"),
    );
    let all = run_routed(&server, home.path(), &main, &config, &agents);
    common::assert_has(&all, &["another provider", "helper →"]);

    // `agents list` shows the route.
    let listed = stdout_of(
        subagents_in(home.path())
            .arg("--config")
            .arg(&config)
            .args(["agents", "list", "--model", &main, "--agents"])
            .arg(&agents)
            .assert()
            .success(),
    );
    assert!(listed.contains("helper"), "{listed}");
}

#[test]
fn ctrl_c_during_tasks_resume_of_a_local_agent_says_how_to_continue_and_exits_130() {
    let (_rt, server, home) = common::scripted_in_temp();
    let agents = write_agent(
        home.path(),
        "helper",
        "---\nname: helper\ndescription: Helps.\n---\nHelp.\n",
    );
    let model = server.openai_model("main-model");
    server
        .script()
        .push_for_model("main-model", Reply::text("first answer"));
    let out = subagents_in(home.path())
        .args(["task", "helper", "do it", "--background", "--model", &model])
        .arg("--agents")
        .arg(&agents)
        .output()
        .expect("task");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stderr}");
    let task_id = common::word(&stderr, "task_").expect("the task id");
    // `--background` returns at once: wait until its worker has ended the task, so the request
    // counted below is the resumed run's, not the worker's.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let shown = subagents_in(home.path())
            .args(["tasks", "show", &task_id, "--json"])
            .output()
            .expect("tasks show");
        if String::from_utf8_lossy(&shown.stdout).contains("\"completed\"") {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the background task did not complete within 30 s"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }

    // The resumed run waits on a slow reply; Ctrl-C cancels it.
    server.script().push_for_model(
        "main-model",
        Reply::text("late").with_delay(std::time::Duration::from_secs(120)),
    );
    let before = server.requests().len();
    let resumed = common::process_in(home.path())
        .args(["tasks", "resume", &task_id, "go on", "--model", &model])
        .arg("--agents")
        .arg(&agents)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn tasks resume");
    let mut resumed = common::Killed(resumed);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while server.requests().len() == before {
        assert!(
            std::time::Instant::now() < deadline,
            "no request within 30 s"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let sent = std::process::Command::new("kill")
        .args(["-INT", &resumed.0.id().to_string()])
        .status()
        .expect("kill -INT");
    assert!(sent.success());
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while resumed.0.try_wait().expect("try_wait").is_none() {
        assert!(
            std::time::Instant::now() < deadline,
            "not ended within 60 s"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let mut stderr = String::new();
    std::io::Read::read_to_string(resumed.0.stderr.as_mut().expect("stderr"), &mut stderr)
        .expect("read stderr");
    assert_eq!(
        resumed.0.try_wait().unwrap().unwrap().code(),
        Some(130),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!(
            "Continue it with: subagents tasks resume {task_id} MESSAGE"
        )),
        "{stderr}"
    );
}
