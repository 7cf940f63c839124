//! A local model first, and errors that name their cause (issue 41, items 4 and 6): a main
//! model on a local server gets `Task` alone by default (said once; `--main-tools all` gives
//! every tool); the window the server reports (llama.cpp's `/props`) sizes the run and a
//! prompt near it is warned of; the Task description stays bounded however many agents are
//! installed; a dead server, a model without its provider, a mistyped agent, a slug, denied
//! calls and a second server on the default store each get one clear line.

use crate::common;
use common::MainModel as _;
use common::OutputOk;

use std::path::{Path, PathBuf};

use common::{MAIN_TOOLS_VAR, free_port, subagents, subagents_in, write_agent};
use serde_json::json;
use subagent_testkit::{RecordedRequest, Reply, ScriptedModelServer};

/// The line the command prints when it chooses the lean tool set by itself.
const LEAN_NOTICE: &str = "the main model runs on a local server";

/// One agent, `helper`, in `home/agents`.
fn helper(home: &Path) -> PathBuf {
    write_agent(
        home,
        "helper",
        "---\nname: helper\ndescription: Helps.\n---\nHelp.\n",
    )
}

/// `run "hi"` on `main-model` of `server` (which answers "ok") with `agents`, the main agent's
/// tools left to the command's default; returns the output and the first request the main
/// model got.
fn run_once(
    server: &ScriptedModelServer,
    home: &Path,
    agents: &Path,
    extra: &[&str],
) -> (std::process::Output, RecordedRequest) {
    let before = server.requests().len();
    server
        .script()
        .push_for_model("main-model", Reply::text("ok"));
    let out = subagents_in(home)
        .env_remove(MAIN_TOOLS_VAR)
        .args(["--store", "memory", "run", "hi"])
        .main_model(server, agents)
        .args(extra)
        .output()
        .expect("the command runs");
    let request = server
        .requests()
        .get(before)
        .cloned()
        .unwrap_or_else(|| panic!("no model request: {}", stderr(&out)));
    (out, request)
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn stdout(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// No line of `text` is a raw tracing line (`  WARN `, ` INFO `, an ISO timestamp first).
fn assert_no_tracing(text: &str) {
    for l in text.lines() {
        assert!(
            !(l.contains(" WARN ")
                || l.contains(" INFO ")
                || l.contains(" ERROR ")
                || l.starts_with("20")),
            "a raw tracing line: {l}\n{text}"
        );
    }
}

#[test]
fn a_local_main_model_is_offered_task_alone_by_default_and_told_so_once() {
    let (_rt, server, home) = common::scripted_in_temp();
    let agents = helper(home.path());

    let (out, lean) = run_once(&server, home.path(), &agents, &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(lean.tool_names(), ["Task"]);
    let text = stderr(&out);
    assert_eq!(text.matches(LEAN_NOTICE).count(), 1, "{text}");
    assert!(text.contains("--main-tools all"), "{text}");

    // A flag restores every tool, and nothing is said.
    let (out, full) = run_once(&server, home.path(), &agents, &["--main-tools", "all"]);
    assert!(out.status.success(), "{}", stderr(&out));
    for tool in ["Read", "Bash", "Task", "TaskOutput"] {
        assert!(
            full.tool_names().iter().any(|t| t == tool),
            "{tool}: {:?}",
            full.tool_names()
        );
    }
    assert!(!stderr(&out).contains(LEAN_NOTICE), "{}", stderr(&out));

    // A list of its own is the user's word: no notice either.
    let (out, chosen) = run_once(
        &server,
        home.path(),
        &agents,
        &["--main-tools", "Task,Read"],
    );
    assert_eq!(chosen.tool_names(), ["Read", "Task"]);
    assert!(!stderr(&out).contains(LEAN_NOTICE), "{}", stderr(&out));
}

#[test]
fn the_window_a_local_server_reports_is_named_when_the_prompt_nears_it() {
    let (_rt, server, home) = common::scripted_in_temp();
    let agents = helper(home.path());

    // Without a window on the server nothing is said (32,768 assumed, far away).
    let (out, _) = run_once(&server, home.path(), &agents, &[]);
    assert!(!stderr(&out).contains("context window"), "{}", stderr(&out));

    // The server runs a small window (llama.cpp's /props says so): every tool's schema takes
    // most of it.
    server.set_context_window(Some(4_000));
    let (out, _) = run_once(&server, home.path(), &agents, &["--main-tools", "all"]);
    let text = stderr(&out);
    let warning = text
        .lines()
        .find(|l| l.contains("context window"))
        .unwrap_or_else(|| panic!("no window warning: {text}"));
    assert!(warning.contains("4000-token context window"), "{warning}");
    assert!(
        warning.contains("read from the server: llama.cpp /props"),
        "{warning}"
    );
    assert!(warning.contains("--main-tools Task"), "{warning}");
    assert_eq!(text.matches("context window").count(), 1, "{text}");

    // The lean prompt fits well within it: no warning.
    let (out, _) = run_once(&server, home.path(), &agents, &[]);
    assert!(!stderr(&out).contains("context window"), "{}", stderr(&out));
}

#[test]
fn the_task_description_stays_bounded_however_many_agents_are_installed() {
    let (_rt, server, home) = common::scripted_in_temp();
    let long = "Reviews code for one concern of its own. ".to_string() + &"Details. ".repeat(40);
    let mut agents = PathBuf::new();
    for i in 0..150 {
        agents = write_agent(
            home.path(),
            &format!("agent-{i:03}"),
            &format!("---\nname: agent-{i:03}\ndescription: {long}\n---\nWork.\n"),
        );
    }
    let description = |r: &RecordedRequest| {
        r.tools()
            .iter()
            .find(|t| t["function"]["name"] == "Task")
            .and_then(|t| t["function"]["description"].as_str())
            .unwrap_or_default()
            .to_string()
    };
    let (out, first) = run_once(&server, home.path(), &agents, &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = description(&first);
    // 150 full descriptions would be about 60,000 characters.
    assert!(text.len() < 9_000, "{} characters:\n{text}", text.len());
    assert!(
        text.contains("- agent-000: Reviews code for one concern of its own.\n"),
        "{text}"
    );
    assert!(text.contains("empty `prompt`"), "{text}");
    assert!(
        text.contains("agent-149") || text.contains("more"),
        "{text}"
    );

    // The full text on demand: a Task call with an empty prompt returns it, starting nothing.
    let script = server.script();
    script.push_for_model(
        "main-model",
        Reply::tool_calls(vec![(
            "Task",
            json!({"subagent_type": "agent-140", "description": "look", "prompt": ""}),
        )]),
    );
    script.push_for_model("main-model", Reply::text("read it"));
    subagents_in(home.path())
        .env_remove(MAIN_TOOLS_VAR)
        .args(["--store", "memory", "run", "which agent?"])
        .main_model(&server, &agents)
        .output_ok();
    let last = server.last_request().expect("the second turn");
    let result = common::last_tool_result(&last.body);
    assert!(result.contains(long.trim()), "{result}");
    assert!(result.contains("was not started"), "{result}");
}

#[test]
fn a_dead_model_server_is_named_with_its_fix_and_nothing_else() {
    let home = tempfile::tempdir().expect("home");
    let agents = helper(home.path());
    let base = format!("http://127.0.0.1:{}/v1", free_port());
    let out = subagents_in(home.path())
        .args(["--store", "memory", "run", "hi", "--model"])
        .arg(format!("openai-compatible:local@{base}"))
        .arg("--agents")
        .arg(&agents)
        .output();
    let text = common::stderr_on_exit(out, 2);
    assert_eq!(
        text.matches(&format!("is the server at {base} running?"))
            .count(),
        1,
        "{text}"
    );
    assert!(
        !text.contains("SUBAGENTS_MODEL"),
        "--model was given: {text}"
    );
    assert_no_tracing(&text);
}

#[test]
fn a_model_without_its_provider_gets_a_did_you_mean() {
    for (given, meant) in [
        ("gpt-4.1", "openai:gpt-4.1"),
        ("qwen2.5", "ollama:qwen2.5"),
        ("openai/gpt-4.1", "openai:gpt-4.1"),
    ] {
        let out = subagents()
            .args(["--store", "memory", "run", "hi", "--model", given])
            .output()
            .expect("runs");
        let text = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{given}: {text}");
        assert!(
            text.contains(&format!("did you mean `{meant}`?")),
            "{given}: {text}"
        );
        assert!(!text.contains("no model is reachable"), "{given}: {text}");
    }
}

#[test]
fn without_a_model_the_help_is_printed_once() {
    let out = subagents()
        .args(["--store", "memory", "run", "hi"])
        .output();
    let text = common::stderr_on_exit(out, 2);
    assert_eq!(text.matches("no model is reachable").count(), 1, "{text}");
    assert_eq!(text.matches("SUBAGENTS_MODEL=ollama").count(), 1, "{text}");
}

#[test]
fn task_takes_the_slug_agents_list_prints_and_suggests_names_for_typos() {
    let (_rt, server, home) = common::scripted_in_temp();
    write_agent(
        home.path(),
        "calculator",
        "---\nname: calculator\ndescription: Computes.\n---\nCompute.\n",
    );
    let agents = write_agent(
        home.path(),
        "pm",
        "---\nname: Product Manager\ndescription: Plans products.\n---\nPlan.\n",
    );
    let model = server.openai_model("child-model");
    let listed = subagents_in(home.path())
        .args(["agents", "list", "--agents"])
        .arg(&agents)
        .output()
        .expect("lists");
    let listed = stdout(&listed);
    let slug = listed
        .lines()
        .find(|l| l.contains("pm.md") && l.contains(" slug "))
        .and_then(|l| l.split(" slug ").nth(1))
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("agents list prints a slug: {listed}"))
        .to_string();
    for name in [slug.as_str(), "product-manager", "product manager"] {
        server
            .script()
            .push_for_model("child-model", Reply::text("planned"));
        let out = subagents_in(home.path())
            .args([
                "--store", "memory", "task", name, "plan it", "--model", &model,
            ])
            .arg("--agents")
            .arg(&agents)
            .output()
            .expect("runs");
        assert!(out.status.success(), "{name}: {}", stderr(&out));
        assert!(stdout(&out).contains("planned"), "{name}");
    }
    let out = subagents_in(home.path())
        .args([
            "--store",
            "memory",
            "task",
            "calculater",
            "2+2",
            "--model",
            &model,
        ])
        .arg("--agents")
        .arg(&agents)
        .output();
    let text = common::stderr_on_exit(out, 2);
    assert!(text.contains("did you mean `calculator`?"), "{text}");
}

#[test]
fn denied_calls_are_counted_on_a_closing_line_that_says_how_to_allow_them() {
    let (_rt, server, home) = common::scripted_in_temp();
    // The README's first run: the calculator computes with Bash, which asks first.
    let agents = write_agent(
        home.path(),
        "calculator",
        "---\nname: calculator\ndescription: Computes arithmetic exactly.\ntools: Bash\n---\n\
         Compute with python3 -c and answer with the number only.\n",
    );
    let script = server.script();
    common::script_calculator_call(&script);
    script.push(Reply::text("391"));
    script.push(Reply::text("17 * 23 is 391."));
    let out = subagents_in(home.path())
        .env_remove(MAIN_TOOLS_VAR)
        .args(["--store", "memory", "run", "compute 17 * 23", "--model"])
        .arg(server.openai_model("local"))
        .arg("--agents")
        .arg(&agents)
        .output()
        .expect("runs");
    let text = stderr(&out);
    assert!(out.status.success(), "{text}");
    let last = text.lines().last().unwrap_or_default();
    assert!(
        last.contains("1 tool call was denied (Bash)") && last.contains("--yes"),
        "the closing line: {text}"
    );
}

#[test]
fn several_servers_share_the_default_store() {
    let (rt, server, home) = common::scripted_in_temp();
    let agents = helper(home.path());
    let model = server.openai_model("child-model");
    let configure = |cmd: &mut std::process::Command| {
        cmd.args(["--model", &model]).arg("--agents").arg(&agents);
    };
    // Both on the default store of one home: the second no longer finds it locked.
    let first = common::spawn_serve(&rt, home.path(), configure);
    let second = common::spawn_serve(&rt, home.path(), configure);
    assert_ne!(first.base, second.base);
    // Each answers: a served call on the second completes.
    server
        .script()
        .push_for_model("child-model", Reply::text("from the second"));
    let out = subagents_in(home.path())
        .args(["call", &format!("{}/helper", second.base), "hi", "--json"])
        .output_ok();
    assert!(stdout(&out).contains("from the second"), "{}", stdout(&out));
}
