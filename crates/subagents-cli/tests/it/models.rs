//! Which model runs, and what it cost, through the binary: `agents list` shows each agent's
//! resolved model; `run` says when an alias sends an agent to another provider than
//! `--model`; `--agent-model` (and `CLAUDE_CODE_SUBAGENT_MODEL`) sends every agent to one
//! model; the last line of a text-mode run gives the tree's tokens, cost (from the built-in
//! price table) and session.

use crate::common;
use common::MainModel as _;
use common::OutputOk;

use std::path::Path;

use common::{fixtures, subagents_in, write_agent};
use subagent_testkit::{Reply, ScriptedModelServer};

/// An agent written for Claude Code: `model: haiku`.
const HAIKU_AGENT: &str = "---\nname: quick-agent\ndescription: Answers fast.\nmodel: haiku\ntools: Read\n---\nYou answer quickly.\n";

/// An agent without a model of its own.
const PLAIN_AGENT: &str =
    "---\nname: plain-agent\ndescription: Uses the default.\ntools: Read\n---\nYou answer.\n";

/// A home with both agents; returns the agents directory.
fn agents_in(home: &Path) -> std::path::PathBuf {
    write_agent(home, "quick-agent", HAIKU_AGENT);
    write_agent(home, "plain-agent", PLAIN_AGENT)
}

/// The Anthropic key is set (so `haiku` goes to Anthropic), its API pointed at a closed port.
fn with_anthropic_key(cmd: &mut assert_cmd::Command) -> &mut assert_cmd::Command {
    cmd.env("ANTHROPIC_API_KEY", "sk-test-not-used")
        .env("ANTHROPIC_BASE_URL", "http://127.0.0.1:9")
}

fn listed_models(out: &std::process::Output) -> Vec<(String, String)> {
    let v = common::json_of(out);
    v["loaded"]
        .as_array()
        .expect("loaded")
        .iter()
        .map(|a| {
            (
                a["name"].as_str().unwrap_or_default().to_string(),
                a["model"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

fn model_of<'a>(models: &'a [(String, String)], agent: &str) -> &'a str {
    models
        .iter()
        .find(|(n, _)| n == agent)
        .map(|(_, m)| m.as_str())
        .unwrap_or_else(|| panic!("{agent} listed: {models:?}"))
}

#[test]
fn agents_list_shows_each_agents_resolved_model() {
    let home = tempfile::tempdir().expect("home");
    let dir = agents_in(home.path());
    let local = "openai-compatible:local-model@http://127.0.0.1:9/v1";
    let out = with_anthropic_key(&mut subagents_in(home.path()))
        .args(["agents", "list", "--json", "--model", local, "--agents"])
        .arg(&dir)
        .output_ok();
    let models = listed_models(&out);
    assert_eq!(
        model_of(&models, "quick-agent"),
        "anthropic:claude-haiku-4-5",
        "the alias goes to Anthropic, not to --model"
    );
    assert_eq!(model_of(&models, "plain-agent"), local);

    // Text output shows it too.
    let out = with_anthropic_key(&mut subagents_in(home.path()))
        .args(["agents", "list", "--model", local, "--agents"])
        .arg(&dir)
        .output()
        .expect("agents list");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("model anthropic:claude-haiku-4-5"), "{text}");

    // Without the key the alias stays on the default model.
    let out = subagents_in(home.path())
        .args(["agents", "list", "--json", "--model", local, "--agents"])
        .arg(&dir)
        .output()
        .expect("agents list");
    assert_eq!(model_of(&listed_models(&out), "quick-agent"), local);

    // Forced: every agent shows the forced model (flag, then Claude Code's variable).
    let forced = "openai-compatible:forced@http://127.0.0.1:9/v1";
    let out = with_anthropic_key(&mut subagents_in(home.path()))
        .args([
            "agents",
            "list",
            "--json",
            "--model",
            local,
            "--agent-model",
            forced,
        ])
        .arg("--agents")
        .arg(&dir)
        .output()
        .expect("agents list");
    let models = listed_models(&out);
    assert_eq!(model_of(&models, "quick-agent"), forced);
    assert_eq!(model_of(&models, "plain-agent"), forced);
    let out = with_anthropic_key(&mut subagents_in(home.path()))
        .env("CLAUDE_CODE_SUBAGENT_MODEL", forced)
        .args(["agents", "list", "--json", "--model", local, "--agents"])
        .arg(&dir)
        .output()
        .expect("agents list");
    assert_eq!(model_of(&listed_models(&out), "quick-agent"), forced);
}

/// `run` whose main agent (model `main-model` of `server`) delegates to `quick-agent` and then
/// answers; returns stderr.
fn run_delegating(
    server: &ScriptedModelServer,
    home: &Path,
    dir: &Path,
    configure: impl FnOnce(&mut assert_cmd::Command),
) -> String {
    let script = server.script();
    script.push_for_model("main-model", Reply::task_call("quick-agent", "be quick"));
    script.push_for_model("main-model", Reply::text("main done"));
    let mut cmd = subagents_in(home);
    with_anthropic_key(&mut cmd)
        .args(["--store", "memory", "run", "go"])
        .main_model(server, dir);
    configure(&mut cmd);
    let out = cmd.output().expect("run");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stderr}");
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "main done");
    stderr
}

#[test]
fn run_says_when_an_alias_goes_elsewhere_and_agent_model_sends_every_agent_to_one_model() {
    let (_rt, server, home) = common::scripted_in_temp();
    let dir = agents_in(home.path());

    // Without the force flag: said once, at the start, naming the agent and where it goes.
    let stderr = run_delegating(&server, home.path(), &dir, |_| {});
    let notices = common::the_line_with(&stderr, "another provider");
    assert!(
        notices.contains("quick-agent → anthropic:claude-haiku-4-5")
            && !notices.contains("plain-agent")
            && notices.contains("--agent-model"),
        "{stderr}"
    );
    assert!(
        !server
            .requests()
            .iter()
            .any(|r| r.model() == Some("forced-model")),
        "the agent went to Anthropic (the closed port), not to the local server"
    );

    // With --agent-model the agent's request reaches the given server, as the forced model.
    let forced = server.openai_model("forced-model");
    server
        .script()
        .push_for_model("forced-model", Reply::text("quick answer"));
    let stderr = run_delegating(&server, home.path(), &dir, |cmd| {
        cmd.args(["--agent-model", &forced]);
    });
    assert!(!stderr.contains("another provider"), "{stderr}");
    let to_forced = server.requests_for("forced-model");
    assert_eq!(to_forced.len(), 1, "the agent ran on the forced model");
    assert!(
        to_forced[0].system_prompt().contains("You answer quickly."),
        "it was quick-agent's request"
    );

    // Claude Code's variable does the same.
    server
        .script()
        .push_for_model("forced-model", Reply::text("quick answer"));
    run_delegating(&server, home.path(), &dir, |cmd| {
        cmd.env("CLAUDE_CODE_SUBAGENT_MODEL", &forced);
    });
    let n = server.requests_for("forced-model").len();
    assert_eq!(n, 2);
}

#[test]
fn the_last_line_gives_tokens_cost_from_the_built_in_prices_and_the_session() {
    let (_rt, server) = common::scripted();
    // A hosted model's dated snapshot, priced by the built-in table (no [prices]).
    server.push(
        Reply::text("reviewed")
            .with_usage(1_000_000, 100_000)
            .with_model("gpt-4.1-2025-04-14"),
    );
    let home = tempfile::tempdir().expect("home");
    let out = subagents_in(home.path())
        .args([
            "--store",
            "memory",
            "task",
            "echo-agent",
            "review",
            "--model",
        ])
        .arg(server.openai_model("gpt-4.1"))
        .arg("--agents")
        .arg(fixtures().join("local"))
        .output_ok();
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "reviewed");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let last = stderr.lines().last().unwrap_or_default();
    // 1M input at $2 + 100k output at $8 per million.
    assert!(
        last.starts_with("done · 1.0M in / 100.0k out tokens · $2.8000 · session sess_"),
        "{stderr}"
    );

    // --json carries the same cost; an unpriced local model is named, never priced.
    server.push(
        Reply::text("reviewed")
            .with_usage(1000, 10)
            .with_model("qwen2.5-local"),
    );
    let out = subagents_in(home.path())
        .args(["--store", "memory", "task", "echo-agent", "review"])
        .args(["--model"])
        .arg(server.openai_model("qwen2.5-local"))
        .arg("--agents")
        .arg(fixtures().join("local"))
        .output()
        .expect("task");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr
            .lines()
            .last()
            .is_some_and(|l| l.contains("cost unknown (unpriced: qwen2.5-local)")),
        "{stderr}"
    );
}
