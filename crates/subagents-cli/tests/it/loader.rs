//! How the command finds and names Markdown agents, through the real binary with a fake HOME:
//! memory that a cloned repository symlinks out of the workspace, Claude Code's precedence
//! (project over user), names with `/`, and load warnings where a person reads them.

use crate::common;
use common::OutputOk;

use std::io::BufRead as _;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use common::{Killed, free_port, process_in};
use serde_json::Value;
use subagent_testkit::{Reply, ScriptedModelServer};

/// A fake home and a project directory next to it (not inside it).
struct Layout {
    _tmp: tempfile::TempDir,
    home: PathBuf,
    project: PathBuf,
    outside: PathBuf,
}

fn layout() -> Layout {
    let tmp = tempfile::tempdir().expect("tmp");
    subagent_testkit::files::write_tree(tmp.path(), &["home", "project", "outside"], &[]);
    Layout {
        home: tmp.path().join("home"),
        project: tmp.path().join("project"),
        outside: tmp.path().join("outside"),
        _tmp: tmp,
    }
}

/// Writes `DIR/.claude/agents/FILE`.
fn agent(dir: &Path, file: &str, text: &str) {
    let agents = dir.join(".claude/agents");
    std::fs::create_dir_all(&agents).expect("mkdir agents");
    std::fs::write(agents.join(file), text).expect("agent file");
}

/// The project agent `keeper` with memory in `scope`.
fn keeper(l: &Layout, scope: &str) {
    agent(
        &l.project,
        "keeper.md",
        &format!(
            "---\nname: keeper\ndescription: Keeps notes\nmemory: {scope}\n---\nYou keep notes.\n"
        ),
    );
}

impl Layout {
    /// The command with HOME = the fake home, working in the project.
    fn cmd(&self) -> assert_cmd::Command {
        let mut cmd = process_in(&self.home);
        cmd.current_dir(&self.project);
        assert_cmd::Command::from_std(cmd)
    }
}

fn stderr_of(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// `task AGENT hi` on the scripted model `m` of `server`, with an in-memory store, saying
/// every load note (`-v`).
fn task(l: &Layout, server: &ScriptedModelServer, agent: &str) -> std::process::Output {
    l.cmd()
        .args(["-v", "task", agent, "hi", "--store", "memory", "--model"])
        .arg(server.openai_model("m"))
        .output()
        .expect("runs")
}

/// Runs `task AGENT` on a scripted model answering `replies` and checks it exits 0; returns
/// the runtime the model serves on, the model and the command's stderr.
fn task_ok(
    l: &Layout,
    agent: &str,
    replies: Vec<Reply>,
) -> (tokio::runtime::Runtime, ScriptedModelServer, String) {
    let (rt, server) = common::scripted();
    for reply in replies {
        server.push(reply);
    }
    let out = task(l, &server, agent);
    let stderr = stderr_of(&out);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    (rt, server, stderr)
}

/// Runs `reviewer` (it answers "reviewed"): the system prompt it ran with, and the stderr.
fn reviewer_prompt(l: &Layout) -> (String, String) {
    let (_rt, server, stderr) = task_ok(l, "reviewer", vec![Reply::text("reviewed")]);
    (server.requests()[0].system_prompt(), stderr)
}

/// Every request body the scripted model received, as one text.
fn all_requests(server: &ScriptedModelServer) -> String {
    server
        .requests()
        .iter()
        .map(|r| r.raw_body.clone())
        .collect::<Vec<_>>()
        .join("\n")
}

const SECRET: &str = "SECRET-KEY-MATERIAL-4242";

// --- (A) memory that leaves the workspace ---

#[cfg(unix)]
#[test]
fn a_symlinked_memory_md_never_puts_an_outside_file_into_the_prompt() {
    let l = layout();
    let key = l.outside.join("id_ed25519");
    std::fs::write(
        &key,
        format!("-----BEGIN OPENSSH PRIVATE KEY-----\n{SECRET}\n"),
    )
    .unwrap();
    keeper(&l, "project");
    let mem = l.project.join(".claude/agent-memory/keeper");
    std::fs::create_dir_all(&mem).unwrap();
    std::os::unix::fs::symlink(&key, mem.join("MEMORY.md")).unwrap();

    let (_rt, server, stderr) = task_ok(&l, "keeper", vec![Reply::text("done")]);
    let sent = all_requests(&server);
    assert!(!sent.is_empty(), "the model was asked");
    assert!(
        !sent.contains(SECRET),
        "the secret reached the model: {sent}"
    );
    assert!(
        stderr.contains("warning") && stderr.contains("MEMORY.md"),
        "a warning names the file: {stderr}"
    );
}

#[cfg(unix)]
#[test]
fn a_memory_directory_symlinked_out_of_the_workspace_is_refused() {
    let l = layout();
    std::fs::write(l.outside.join("MEMORY.md"), SECRET).unwrap();
    keeper(&l, "local");
    let root = l.project.join(".claude/agent-memory-local");
    std::fs::create_dir_all(&root).unwrap();
    std::os::unix::fs::symlink(&l.outside, root.join("keeper")).unwrap();

    // The model tries to write through the memory directory.
    let (_rt, server, stderr) = task_ok(
        &l,
        "keeper",
        vec![
            Reply::tool_calls(vec![(
                "Write",
                serde_json::json!({"file_path": l.outside.join("planted.md"), "content": "x"}),
            )]),
            Reply::text("done"),
        ],
    );
    let sent = all_requests(&server);
    assert!(
        !sent.contains(SECRET),
        "the secret reached the model: {sent}"
    );
    assert!(
        !l.outside.join("planted.md").exists(),
        "a file was written outside the workspace"
    );
    assert!(
        stderr.contains("warning") && stderr.contains("agent-memory-local"),
        "a warning names the directory: {stderr}"
    );
}

// --- (B) Claude Code's precedence ---

#[test]
fn a_project_agent_shadows_the_user_agent_of_the_same_name() {
    let l = layout();
    agent(
        &l.home,
        "reviewer.md",
        "---\nname: reviewer\ndescription: user reviewer\n---\nUSER-BODY\n",
    );
    agent(
        &l.project,
        "reviewer.md",
        "---\nname: Reviewer\ndescription: project reviewer\n---\nPROJECT-BODY\n",
    );
    let (system, _) = reviewer_prompt(&l);
    assert!(system.contains("PROJECT-BODY"), "{system}");
    assert!(!system.contains("USER-BODY"), "{system}");

    // `agents list` names the shadowed file and the one that wins.
    let v = l.cmd().args(["agents", "list", "--json"]).json_ok();
    let loaded: Vec<&Value> = v["loaded"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["name"].as_str().unwrap().eq_ignore_ascii_case("reviewer"))
        .collect();
    assert_eq!(loaded.len(), 1, "{v}");
    assert!(
        loaded[0]["path"].as_str().unwrap().contains("project"),
        "{v}"
    );
    let shadowed = v["shadowed"].as_array().expect("shadowed list");
    assert_eq!(shadowed.len(), 1, "{v}");
    assert!(
        shadowed[0]["path"].as_str().unwrap().contains("home"),
        "{v}"
    );
    assert!(
        shadowed[0]["by"].as_str().unwrap().contains("project"),
        "{v}"
    );
    let text = common::stdout_of(l.cmd().args(["agents", "list"]).assert().success());
    assert!(text.contains("shadowed by"), "{text}");

    // `agents validate` without paths checks the discovered directories and says so too.
    let v = l.cmd().args(["agents", "validate", "--json"]).json_ok();
    assert_eq!(v["shadowed"].as_array().map(Vec::len), Some(1), "{v}");
}

#[test]
fn two_agents_of_one_name_in_one_directory_run_the_first_and_strict_validation_fails() {
    let l = layout();
    agent(
        &l.project,
        "one.md",
        "---\nname: reviewer\ndescription: a\n---\nONE-BODY\n",
    );
    agent(
        &l.project,
        "two.md",
        "---\nname: Reviewer\ndescription: b\n---\nTWO-BODY\n",
    );
    // The first in path order runs, and one line says so, naming both files.
    let (system, stderr) = reviewer_prompt(&l);
    assert!(
        system.contains("ONE-BODY") && !system.contains("TWO-BODY"),
        "{system}"
    );
    let said = common::the_line_with(&stderr, "defined twice in one scope: using");
    assert!(
        said.contains("one.md") && said.contains("two.md"),
        "{stderr}"
    );
    let dir = l.project.join(".claude/agents");
    let out = l
        .cmd()
        .args(["agents", "validate"])
        .arg(&dir)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let out = l
        .cmd()
        .args(["agents", "validate", "--strict"])
        .arg(&dir)
        .output()
        .unwrap();
    let all = common::all_output(&out);
    assert_eq!(out.status.code(), Some(1), "{all}");
    common::assert_has(&all, &["one.md", "two.md"]);
}

// --- (C) names real collections use ---

#[test]
fn names_with_slashes_load_and_get_one_safe_slug_everywhere() {
    let l = layout();
    agent(
        &l.project,
        "metal.md",
        "---\nname: macOS Spatial/Metal Engineer\ndescription: Metal\nmemory: project\n---\nMetal.\n",
    );
    agent(
        &l.project,
        "lsp.md",
        "---\nname: LSP/Index Engineer\ndescription: LSP\n---\nLSP.\n",
    );
    let v = l.cmd().args(["agents", "list", "--json"]).json_ok();
    let metal = v["loaded"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["name"] == "macOS Spatial/Metal Engineer")
        .unwrap_or_else(|| panic!("loaded: {v}"))
        .clone();
    let slug = metal["slug"].as_str().expect("slug shown").to_string();
    assert!(slug.starts_with("macos-spatial-metal-engineer-"), "{slug}");
    assert!(
        slug.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'),
        "{slug}"
    );

    let (rt, server) = common::scripted();
    server.push(Reply::text("indexed"));
    let out = task(&l, &server, "LSP/Index Engineer");
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));

    // Its memory directory is one path segment: the slug.
    server.push(Reply::text("rendered"));
    let out = task(&l, &server, "macOS Spatial/Metal Engineer");
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let entries: Vec<String> = std::fs::read_dir(l.project.join(".claude/agent-memory"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(entries, vec![slug.clone()]);

    // `serve` prints the URL it serves, and the card answers there.
    let listen = format!("127.0.0.1:{}", free_port());
    let mut cmd = process_in(&l.home);
    cmd.current_dir(&l.project)
        .args(["serve", "--store", "memory", "--listen", &listen, "--model"])
        .arg(server.openai_model("m"))
        .stderr(Stdio::piped());
    let mut child = Killed(cmd.spawn().expect("serve starts"));
    let stderr = child.0.stderr.take().expect("stderr");
    let line = std::io::BufReader::new(stderr)
        .lines()
        .map_while(Result::ok)
        .find(|l| l.contains("macOS Spatial/Metal Engineer:"))
        .unwrap_or_default();
    assert!(
        line.ends_with(&format!("http://{listen}/{slug}")),
        "banner line: {line}"
    );
    let card = rt.block_on(async {
        reqwest::get(format!(
            "http://{listen}/{slug}/.well-known/agent-card.json"
        ))
        .await
        .expect("GET card")
        .json::<Value>()
        .await
        .expect("card JSON")
    });
    assert_eq!(card["name"], "macOS Spatial/Metal Engineer", "{card}");
}

// --- (D) warnings where a person reads them ---

const SCOUT: &str = "---\nname: scout\ndescription: Scouts\ntools: Read, WebSearch, LS, mcp__ctx__docs\nmodel: fable\n---\nScout.\n";

#[test]
fn load_warnings_are_one_grouped_line_per_agent_at_v_and_validate_reports_the_same() {
    let l = layout();
    agent(&l.project, "scout.md", SCOUT);
    let (_rt, _, stderr) = task_ok(&l, "scout", vec![Reply::text("scouted")]);
    let lines: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("warning: agent scout ("))
        .collect();
    assert_eq!(lines.len(), 1, "one grouped line: {stderr}");
    for word in ["scout.md:", "WebSearch", "LS", "mcp__ctx__docs", "fable"] {
        assert!(lines[0].contains(word), "{word} in {}", lines[0]);
    }
    assert!(!stderr.contains("WARN"), "no tracing WARN lines: {stderr}");

    // `validate` reports what the run warned about.
    let file = l.project.join(".claude/agents/scout.md");
    let v = l
        .cmd()
        .args(["agents", "validate", "--json"])
        .arg(&file)
        .json_ok();
    let warnings = v["loaded"][0]["warnings"].to_string();
    for word in ["WebSearch", "LS", "mcp__ctx__docs", "fable"] {
        assert!(warnings.contains(word), "{word} in {warnings}");
    }
    // --strict: warnings fail.
    l.cmd()
        .args(["agents", "validate", "--strict"])
        .arg(&file)
        .assert()
        .code(1);
}

#[test]
fn an_invalid_agent_fails_validate_of_its_directory_and_is_named_once_by_a_run() {
    let l = layout();
    agent(
        &l.project,
        "good.md",
        "---\nname: good\ndescription: fine\n---\nGood.\n",
    );
    agent(
        &l.project,
        "bad.md",
        "---\nname: bad\npermissionMode: sideways\n---\nBad.\n",
    );
    std::fs::write(l.project.join(".claude/agents/README.md"), "# notes\n").unwrap();
    let out = l
        .cmd()
        .args(["agents", "validate"])
        .arg(l.project.join(".claude/agents"))
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );

    let (_rt, _, stderr) = task_ok(&l, "good", vec![Reply::text("ok")]);
    assert_eq!(stderr.matches("bad.md").count(), 1, "{stderr}");
    assert!(!stderr.contains("README.md"), "{stderr}");
}
