//! The README's first-run commands, run as a newcomer would type them: the shell block of
//! "First run: a local model" (it writes the calculator agent and runs `subagents run`), then
//! `agents list` and `task` from the block after it. The model spec the README names is
//! swapped for the scripted model server, and `--yes` answers the Bash approval a person would
//! give at the prompt; everything else is the README's own text.

use crate::common;

use std::path::Path;

use subagent_testkit::Reply;

const README: &str = include_str!("../../../../README.md");

/// The first ```sh block after the heading `heading`.
fn sh_block_after(heading: &str) -> String {
    let start = README
        .find(heading)
        .unwrap_or_else(|| panic!("README has no heading {heading:?}"));
    let rest = &README[start..];
    let open = rest.find("```sh\n").expect("a sh block after the heading") + "```sh\n".len();
    let close = rest[open..].find("\n```").expect("the block ends");
    rest[open..open + close].to_string()
}

/// The line of `block` that starts with `prefix` (comments after it removed).
fn line_starting(block: &str, prefix: &str) -> String {
    let line = block
        .lines()
        .find(|l| l.starts_with(prefix))
        .unwrap_or_else(|| panic!("no line starting with {prefix:?} in\n{block}"));
    match line.find("  #") {
        Some(i) => line[..i].trim_end().to_string(),
        None => line.to_string(),
    }
}

/// Runs `script` with `sh` in `home` (also its HOME), with `subagents` on the PATH, the
/// environment the CLI tests use and `SUBAGENTS_MODEL` set to `model`.
fn sh(home: &Path, script: &str, model: &str) -> std::process::Output {
    let bin = home.join(".bin");
    std::fs::create_dir_all(&bin).expect("bin dir");
    let link = bin.join("subagents");
    if !link.exists() {
        std::os::unix::fs::symlink(assert_cmd::cargo::cargo_bin("subagents"), &link)
            .expect("symlink");
    }
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut cmd = std::process::Command::new("sh");
    for var in common::CLEARED_VARS {
        cmd.env_remove(var);
    }
    cmd.env("HOME", home)
        .env("PATH", path)
        .env("SUBAGENTS_OLLAMA_URL", "http://127.0.0.1:9")
        .env("SUBAGENTS_MODEL", model)
        .env("XDG_DATA_HOME", home.join(".data"))
        .current_dir(home)
        .args(["-c", script])
        .output()
        .expect("sh runs")
}

#[test]
fn the_readme_first_run_works_as_written() {
    let (_rt, server) = common::scripted();
    let spec = server.openai_model("local");
    let script = server.script();
    // The main model delegates, the calculator runs python3 with Bash and answers, the main
    // model reports it.
    common::script_calculator_call(&script);
    script.push_dynamic(None, |body| {
        Reply::text(common::last_tool_result(body).trim().to_string())
    });
    script.push_dynamic(None, |body| {
        Reply::text(format!(
            "17 * 23 = {}",
            common::last_tool_result(body).trim()
        ))
    });

    let first = sh_block_after("## First run: a local model");
    let named = line_starting(&first, "subagents run ");
    let model_flag = named
        .split_whitespace()
        .skip_while(|w| *w != "--model")
        .nth(1)
        .expect("the README's run names a model")
        .to_string();
    let run = named.replace(&model_flag, &format!("{spec} --yes"));
    let setup: String = first
        .lines()
        .filter(|l| !l.starts_with("subagents ") && !l.starts_with('#'))
        .collect::<Vec<_>>()
        .join("\n");
    let home = tempfile::tempdir().expect("home");
    let out = sh(home.path(), &format!("{setup}\n{run}"), &spec);
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(
        out.status.success(),
        "{run}\nstdout: {stdout}\nstderr: {stderr}"
    );
    assert!(stdout.contains("391"), "{stdout}\n{stderr}");
    assert!(
        home.path().join(".claude/agents/calculator.md").is_file(),
        "the README writes the agent where Claude Code keeps them"
    );
    // The calculator ran its Bash command: its result reached the model.
    let requests = server.requests();
    assert!(
        requests
            .iter()
            .any(|r| common::last_tool_result(&r.body).trim() == "391"),
        "the calculator's Bash call ran"
    );
    // The last line of a text-mode run gives the totals.
    assert!(stderr.lines().any(|l| l.starts_with("done · ")), "{stderr}");

    // The everyday commands after it: `agents list` finds the agent, `task` runs it alone.
    let then = sh_block_after("The live tree (stderr)");
    let list = line_starting(&then, "subagents agents list");
    let out = sh(home.path(), &list, &spec);
    let listed = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{list}: {listed}");
    assert!(listed.contains("calculator"), "{listed}");
    assert!(listed.contains("general-purpose"), "{listed}");

    script.push(Reply::text("1099511627776"));
    let task = line_starting(&then, "subagents task calculator \"What");
    let out = sh(home.path(), &task, &spec);
    let answered = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{task}: {answered} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(answered.contains("1099511627776"), "{answered}");
}
