//! Permission modes, rules and approval through the `subagents` binary, with the scripted model
//! server over real HTTP. Tests run without a terminal, so "ask" means "deny" unless `--yes`.

use crate::common;

use std::path::PathBuf;

use common::subagents_in;
use serde_json::{Value, json};
use subagent_testkit::{Reply, ScriptedModelServer};

struct Case {
    _rt: tokio::runtime::Runtime,
    server: ScriptedModelServer,
    home: tempfile::TempDir,
}

impl Case {
    fn new() -> Self {
        let (rt, server, home) = common::scripted_in_temp();
        // Confined Bash cannot create files directly in the workspace root (they could be its
        // protected control files): commands create theirs in `out/`.
        std::fs::create_dir_all(home.path().join("work/out")).unwrap();
        Self {
            _rt: rt,
            server,
            home,
        }
    }

    fn work(&self) -> PathBuf {
        self.home.path().join("work")
    }

    /// `subagents run PROMPT --model ... --workspace work` plus `extra`.
    fn run(&self, extra: &[&str]) -> assert_cmd::assert::Assert {
        let model = self.server.openai_model("m");
        subagents_in(self.home.path())
            .args(["run", "do it", "--model", &model, "--workspace"])
            .arg(self.work())
            .args(extra)
            .assert()
    }

    /// True when `rel` exists in the workspace (a command or an edit made it).
    fn made(&self, rel: &str) -> bool {
        self.work().join(rel).exists()
    }

    fn tool_results(&self, n: usize) -> Vec<String> {
        self.server.requests()[n].tool_results()
    }
}

fn calls(list: Vec<(&str, Value)>) -> Reply {
    Reply::tool_calls(list)
}

fn bash(cmd: &str) -> (&'static str, Value) {
    ("Bash", json!({"command": cmd}))
}

#[test]
fn default_mode_without_a_terminal_denies_bash_and_the_model_reads_why() {
    let c = Case::new();
    c.server.push(calls(vec![bash("touch out/FILE")]));
    c.server.push(Reply::text("I could not"));
    c.run(&[]).success();
    assert!(!c.made("out/FILE"), "the command did not run");
    let results = c.tool_results(1);
    assert_eq!(results.len(), 1);
    // The denial the model reads says why and how to approve.
    common::assert_has(&results[0], &["not approved", "--yes"]);
}

#[test]
fn yes_approves_what_would_ask() {
    let c = Case::new();
    c.server.push(calls(vec![bash("touch out/FILE")]));
    c.server.push(Reply::text("done"));
    c.run(&["--yes"]).success();
    assert!(c.made("out/FILE"), "--yes approved it");
}

#[test]
fn accept_edits_runs_write_and_asks_for_bash() {
    let c = Case::new();
    c.server.push(calls(vec![
        (
            "Write",
            json!({"file_path": "written.txt", "content": "hi"}),
        ),
        bash("touch out/FILE"),
    ]));
    c.server.push(Reply::text("done"));
    c.run(&["--permission-mode", "acceptEdits"]).success();
    assert_eq!(
        std::fs::read_to_string(c.work().join("written.txt")).unwrap(),
        "hi"
    );
    assert!(!c.made("out/FILE"));
    let results = c.tool_results(1);
    common::assert_has(&results[1], &["acceptEdits", "not approved"]);
}

#[test]
fn dont_ask_denies_even_with_yes() {
    let c = Case::new();
    c.server.push(calls(vec![
        ("Write", json!({"file_path": "w.txt", "content": "x"})),
        bash("touch out/FILE"),
    ]));
    c.server.push(Reply::text("done"));
    c.run(&["--permission-mode", "dontAsk", "--yes"]).success();
    assert!(!c.made("w.txt"));
    assert!(!c.made("out/FILE"));
    for r in c.tool_results(1) {
        assert!(r.contains("dontAsk"), "{r}");
    }
}

#[test]
fn an_allow_rule_allows_only_its_command() {
    let c = Case::new();
    std::fs::create_dir_all(c.work().join(".claude")).unwrap();
    std::fs::write(
        c.work().join(".claude/settings.json"),
        r#"{"permissions": {"allow": ["Bash(git status:*)"]}}"#,
    )
    .unwrap();
    // The workspace file's allow rule applies once the user approved the file.
    subagents_in(c.home.path())
        .args(["trust", "--workspace"])
        .arg(c.work())
        .assert()
        .success();
    c.server.push(calls(vec![
        bash("git status --short"),
        bash("git status && touch out/FILE"),
        bash("touch out/FILE"),
    ]));
    c.server.push(Reply::text("done"));
    c.run(&[]).success();
    assert!(!c.made("out/FILE"), "only git status may run");
    let results = c.tool_results(1);
    assert!(
        !results[0].contains("approv"),
        "git status ran: {}",
        results[0]
    );
    assert!(results[1].contains("not approved"), "{}", results[1]);
    assert!(results[2].contains("not approved"), "{}", results[2]);
}

#[test]
fn rules_and_mode_in_subagents_toml() {
    let c = Case::new();
    std::fs::write(
        c.home.path().join("subagents.toml"),
        "[permissions]\nmode = \"bypassPermissions\"\ndeny = [\"Bash(rm:*)\"]\n",
    )
    .unwrap();
    // Its mode applies once the user approved the file (found in the current directory).
    subagents_in(c.home.path())
        .args(["trust", "subagents.toml", "--workspace"])
        .arg(c.work())
        .assert()
        .success();
    std::fs::write(c.work().join("keep.txt"), "x").unwrap();
    c.server
        .push(calls(vec![bash("touch out/FILE"), bash("rm keep.txt")]));
    c.server.push(Reply::text("done"));
    c.run(&[]).success();
    assert!(c.made("out/FILE"), "bypassPermissions: nothing asks");
    assert!(c.made("keep.txt"), "the deny rule still holds");
    assert!(c.tool_results(1)[1].contains("deny rule `Bash(rm:*)`"));

    std::fs::write(
        c.home.path().join("subagents.toml"),
        "[permissions]\nmode = \"yolo\"\n",
    )
    .unwrap();
    let out = c.run(&[]).code(2).get_output().stderr.clone();
    let err = String::from_utf8_lossy(&out);
    common::assert_has(&err, &["subagents.toml", "yolo", "acceptEdits"]);
}

#[test]
fn an_unknown_mode_is_refused_on_the_command_line_and_in_agent_files() {
    let c = Case::new();
    let out = c
        .run(&["--permission-mode", "yolo"])
        .code(2)
        .get_output()
        .stderr
        .clone();
    let err = String::from_utf8_lossy(&out);
    common::assert_has(&err, &["yolo", "bypassPermissions"]);

    let agents = common::write_agent(
        c.home.path(),
        "reckless",
        "---\nname: reckless\ndescription: d\npermissionMode: yolo\n---\nbody\n",
    );
    let out = subagents_in(c.home.path())
        .args(["agents", "validate", "--json"])
        .arg(&agents)
        .assert()
        .get_output()
        .stdout
        .clone();
    let v: Value = serde_json::from_slice(&out).expect("JSON");
    assert_eq!(v["loaded"].as_array().map(Vec::len), Some(0), "{v}");
    let reason = v["skipped"][0]["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("reckless.md:4") && reason.contains("yolo") && reason.contains("dontAsk"),
        "file, line and valid modes: {reason}"
    );
}

#[test]
fn bypass_permissions_does_not_lift_confinement_only_no_sandbox_does() {
    use std::io::Write as _;
    if let subagents::tools::LandlockSupport::Unavailable(why) =
        subagents::tools::landlock_support()
    {
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED: bypass_permissions_does_not_lift_confinement: Landlock is unavailable ({why})"
        );
        return;
    }
    let c = Case::new();
    let outside = tempfile::tempdir().unwrap(); // a temp dir outside the workspace
    let target = outside.path().join("escaped.txt");
    let tmp = c.work().join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let touch = format!("touch '{}'", target.display());
    let model = format!("openai-compatible:m@{}", c.server.openai_base_url());
    let run = |extra: &[&str]| {
        subagents_in(c.home.path())
            .args(["run", "do it", "--model", &model, "--workspace"])
            .arg(c.work())
            .args(["--permission-mode", "bypassPermissions"])
            .args(extra)
            // The temp dir commands may write to lies inside the workspace here.
            .env("TMPDIR", &tmp)
            .assert()
            .success()
    };
    c.server.push(calls(vec![bash(&touch)]));
    c.server.push(Reply::text("done"));
    run(&[]);
    assert!(!target.exists(), "confined even under bypassPermissions");
    let results = c.tool_results(1);
    assert!(results[0].contains("Permission denied"), "{}", results[0]);

    c.server.push(calls(vec![bash(&touch)]));
    c.server.push(Reply::text("done"));
    run(&["--no-sandbox"]);
    assert!(target.exists(), "--no-sandbox lifts it");
}
