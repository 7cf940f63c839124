//! A sandbox that lets work happen (issue 39, item 1), through the `subagents` binary and the
//! scripted model server driving Bash calls under the default sandbox with `--yes`: ordinary
//! work in the workspace root succeeds, every write and metadata change of a control file is
//! refused, and nothing a Bash call or a hook starts outlives it or the run. Where the binary
//! runs commands with Landlock alone (no user namespaces), these tests print SKIPPED; the
//! fallback keeps its old guarantees (`fallback_keeps_its_guarantees`).

use crate::common;

use std::io::Write as _;
use std::path::Path;
use std::time::{Duration, Instant};

use common::WorkCase as Case;
use serde_json::{Value, json};
use subagent_testkit::Reply;
use subagent_testkit::files::write_tree;
use subagent_testkit::process::{processes_with, reap};

fn bash(cmd: &str) -> (&'static str, Value) {
    ("Bash", json!({"command": cmd, "timeout": 600000}))
}

fn skipped(why: &str) {
    let _ = writeln!(std::io::stderr(), "SKIPPED: {why}");
}

/// True when the binary confines commands in namespaces here (`subagents doctor --json`); a
/// binary without `doctor` (older than this test) is taken to, so the test shows its failure.
fn namespaces(test: &str) -> bool {
    let out = common::subagents()
        .args(["doctor", "--json"])
        .output()
        .expect("subagents runs");
    let Ok(report) = serde_json::from_slice::<Value>(&out.stdout) else {
        return true;
    };
    if report["sandbox"] == "namespaces" {
        return true;
    }
    skipped(&format!(
        "{test}: the binary runs commands with {} here ({})",
        report["sandbox"], report["reason"]
    ));
    false
}

/// A new case where the binary confines commands in namespaces ([`namespaces`]).
fn confined(test: &str) -> Option<Case> {
    namespaces(test).then(Case::new)
}

/// Waits up to `limit` for `done`; true when it happened.
fn eventually(limit: Duration, done: impl Fn() -> bool) -> bool {
    let start = Instant::now();
    while start.elapsed() < limit {
        if done() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    done()
}

/// Shell that starts `sleep MARKER` in a session of its own (`setsid`) and returns once it has
/// left the command's process group (it writes `out/MARKER.pid` after `setsid`), so a test
/// does not depend on timing. `out/` must exist.
fn escaped_sleep(marker: u32) -> String {
    format!(
        "setsid sh -c 'echo $$ > out/{marker}.pid; exec sleep {marker}' >/dev/null 2>&1 \
         </dev/null & i=0; while [ ! -s out/{marker}.pid ] && [ $i -lt 400 ]; do sleep 0.05; \
         i=$((i+1)); done; "
    )
}

fn on_path(name: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(name).is_file()))
}

#[test]
fn ordinary_work_succeeds_under_the_default_sandbox() {
    let Some(c) = confined("ordinary_work_succeeds_under_the_default_sandbox") else {
        return;
    };
    let w = c.work();
    let mut steps = vec![
        ("mkdir", "mkdir build".to_string()),
        ("touch", "touch NOTES.md".to_string()),
        (
            "git",
            "git init -q && git add -A && GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@example.com \
             GIT_COMMITTER_NAME=t GIT_COMMITTER_EMAIL=t@example.com git commit -qm first && \
             git log --oneline"
                .to_string(),
        ),
    ];
    // The command's environment is an allow-list: the toolchains' homes travel in the
    // command, as a model would write them.
    // A step on a tool the machine lacks is left out, saying so.
    let mut step_on = |tool: &str, name: &'static str, cmd: String| {
        if on_path(tool) {
            steps.push((name, cmd));
        } else {
            skipped(&format!(
                "ordinary_work_succeeds_under_the_default_sandbox: no {tool}"
            ));
        }
    };
    step_on(
        "python3",
        "venv",
        "python3 -m venv .venv && test -x .venv/bin/python".into(),
    );
    let homes = ["CARGO_HOME", "RUSTUP_HOME"]
        .iter()
        .filter_map(|v| std::env::var(v).ok().map(|x| format!("{v}={x}")))
        .collect::<Vec<_>>()
        .join(" ");
    let real_home = std::env::var("HOME").unwrap_or_default();
    step_on(
        "cargo",
        "cargo",
        format!(
            "env {homes} CARGO_HOME=${{CARGO_HOME:-{real_home}/.cargo}} \
             RUSTUP_HOME=${{RUSTUP_HOME:-{real_home}/.rustup}} cargo new --vcs none -q x"
        ),
    );
    step_on(
        "npm",
        "npm",
        "npm_config_cache=\"$TMPDIR/npm\" npm init -y >/dev/null".into(),
    );
    for (_, cmd) in &steps {
        c.server.push(Reply::tool_calls(vec![bash(cmd)]));
    }
    c.server.push(Reply::text("done"));
    c.run(&["--yes"]).success();
    let results = c.last_results();
    assert_eq!(results.len(), steps.len(), "{results:?}");
    for ((name, cmd), r) in steps.iter().zip(&results) {
        assert!(
            !r.contains("[exit code") && !r.contains("sandbox:"),
            "{name}: `{cmd}` failed: {r}"
        );
    }
    assert!(w.join("build").is_dir());
    assert!(w.join("NOTES.md").is_file());
    assert!(w.join(".git/HEAD").is_file(), "git init");
    assert!(results[2].contains("first"), "git commit: {}", results[2]);
    for (name, path) in [
        ("venv", ".venv/bin/python"),
        ("cargo", "x/Cargo.toml"),
        ("npm", "package.json"),
    ] {
        if steps.iter().any(|(n, _)| *n == name) {
            assert!(w.join(path).exists(), "{name}: {path}");
        }
    }
    // The placeholders reserving the missing control files were not committed and are gone.
    let files = std::process::Command::new("git")
        .args(["ls-files"])
        .current_dir(&w)
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&files.stdout).trim(),
        "NOTES.md",
        "only the file the commit had"
    );
    for name in [
        "subagents.toml",
        ".mcp.json",
        ".gitmodules",
        ".vscode",
        ".idea",
        ".claude",
    ] {
        assert!(!w.join(name).exists(), "{name} was left behind");
    }
}

/// A project with every kind of control file, a nested repository and ordinary files.
fn project(w: &Path) {
    write_tree(
        w,
        &["src", "vendor/lib/.git/hooks"],
        &[
            ("subagents.toml", "max_depth = 2\n"),
            (".git/hooks/pre-push", "#!/bin/sh\nexit 0\n"),
            (".git/config", "[core]\n\tbare = false\n"),
            (".claude/settings.json", "{}\n"),
            (".vscode/settings.json", "{}\n"),
            (".gitmodules", "[submodule \"lib\"]\n"),
            ("vendor/lib/.git/config", "[core]\n\tbare = false\n"),
        ],
    );
}

const TARGETS: [&str; 7] = [
    "subagents.toml",
    ".git/hooks/pre-push",
    ".git/config",
    ".claude/settings.json",
    ".vscode/settings.json",
    ".gitmodules",
    "vendor/lib/.git/config",
];

/// Content, mode and modification time of each target.
fn state(w: &Path) -> Vec<(String, String, u32, i64)> {
    use std::os::unix::fs::MetadataExt as _;
    TARGETS
        .iter()
        .map(|t| {
            let m = std::fs::metadata(w.join(t)).unwrap();
            (
                t.to_string(),
                std::fs::read_to_string(w.join(t)).unwrap(),
                m.mode(),
                m.mtime(),
            )
        })
        .collect()
}

#[test]
fn every_protected_write_and_metadata_change_is_refused() {
    let Some(c) = confined("every_protected_write_and_metadata_change_is_refused") else {
        return;
    };
    let w = c.work();
    project(&w);
    let before = state(&w);
    // One turn per target, its attempts as parallel calls (all refused, so they cannot
    // interfere).
    let mut calls = Vec::new();
    for t in TARGETS {
        let turn = [
            format!("echo '[sandbox]' >> {t}"),
            format!("chmod 000 {t}"),
            format!("chmod +x {t}"),
            format!("touch -d 2001-01-01 {t}"),
            format!("mv {t} src/moved"),
            format!("rm -f {t}"),
        ];
        c.server
            .push(Reply::tool_calls(turn.iter().map(|t| bash(t)).collect()));
        calls.extend(turn);
    }
    let missing = [
        "echo '{\"mcpServers\":{}}' > .mcp.json".to_string(),
        "mkdir -p .claude/commands && echo x > .claude/commands/deploy.md".to_string(),
        // The nested repository cannot be moved away and replaced by one with another config.
        "mv vendor vendor-old".to_string(),
    ];
    c.server
        .push(Reply::tool_calls(missing.iter().map(|t| bash(t)).collect()));
    calls.extend(missing);
    c.server.push(Reply::text("done"));
    c.run(&["--yes"]).success();
    let results = c.last_results();
    assert_eq!(results.len(), calls.len());
    for (cmd, r) in calls.iter().zip(&results) {
        assert!(r.contains("[exit code"), "`{cmd}` must fail: {r}");
        assert!(
            r.contains("sandbox:"),
            "`{cmd}`: the model is told why: {r}"
        );
    }
    assert_eq!(state(&w), before, "content, mode and times unchanged");
    assert!(!w.join(".mcp.json").exists(), ".mcp.json was not created");
    assert!(!w.join(".claude/commands").exists());
    // (`mv` across the read-only mount falls back to copy and remove: a copy may be left in
    // src/, the original stays.)
}

/// Where commands run in namespaces (else `None`, SKIPPED for `test`): a case with `out/` in its
/// workspace whose model makes the Bash call `cmd`, then says "done".
fn one_bash_call(test: &str, cmd: &str) -> Option<Case> {
    let c = confined(test)?;
    std::fs::create_dir_all(c.work().join("out")).unwrap();
    c.server.push(Reply::tool_calls(vec![bash(cmd)]));
    c.server.push(Reply::text("done"));
    Some(c)
}

#[test]
fn nothing_a_bash_call_starts_outlives_it() {
    let Some(c) = one_bash_call(
        "nothing_a_bash_call_starts_outlives_it",
        &format!(
            "{} (sh -c 'sleep 3141592 >/dev/null 2>&1 </dev/null &' &); echo started",
            escaped_sleep(2718281)
        ),
    ) else {
        return;
    };
    c.run(&["--yes"]).success();
    assert!(c.last_results()[0].contains("started"));
    let left = reap(&["2718281", "3141592"]);
    assert!(left.is_empty(), "left running after the call: {left:?}");
}

#[test]
fn a_bash_call_dies_with_the_run_that_started_it() {
    let Some(c) = one_bash_call(
        "a_bash_call_dies_with_the_run_that_started_it",
        &format!("{} sleep 1414213", escaped_sleep(1618033)),
    ) else {
        return;
    };
    let model = c.server.openai_model("m");
    let mut child = common::process_in(c.home.path())
        .current_dir(c.work())
        .args(["run", "do it", "--yes", "--model", &model, "--workspace"])
        .arg(c.work())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let started = eventually(Duration::from_secs(60), || {
        !processes_with("1414213").is_empty() && !processes_with("1618033").is_empty()
    });
    // The run goes away without any chance to clean up.
    let _ = child.kill();
    let _ = child.wait();
    let gone = eventually(Duration::from_secs(30), || {
        processes_with("1414213").is_empty() && processes_with("1618033").is_empty()
    });
    let left = reap(&["1414213", "1618033"]);
    assert!(started, "the command started");
    assert!(gone, "left running after the run was killed: {left:?}");
    // The placeholders the run held for the missing control files were removed by the
    // sandbox it left behind.
    let w = c.work();
    let clean = eventually(Duration::from_secs(10), || {
        [
            ".mcp.json",
            "subagents.toml",
            ".claude",
            ".vscode",
            ".gitmodules",
        ]
        .iter()
        .all(|n| !w.join(n).exists())
    });
    assert!(
        clean,
        "placeholders left behind: {:?}",
        std::fs::read_dir(&w)
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .collect::<Vec<_>>()
    );
}

#[test]
fn doctor_and_the_first_line_at_v_say_which_sandbox_is_active() {
    let doctor = |fallback: bool| {
        let mut cmd = common::subagents();
        cmd.arg("doctor");
        if fallback {
            cmd.env("SUBAGENTS_SANDBOX", "landlock");
        }
        let out = cmd.assert().success();
        String::from_utf8_lossy(&out.get_output().stdout).into_owned()
    };
    let report = doctor(false);
    let first = report.lines().next().unwrap_or_default().to_string();
    assert!(first.starts_with("sandbox: "), "{report}");
    assert!(report.contains("\nlandlock: "), "{report}");
    assert!(report.contains("\nuser namespaces: "), "{report}");
    if subagents::tools::landlock_support().confines() {
        assert!(
            doctor(true).starts_with("sandbox: landlock (SUBAGENTS_SANDBOX=landlock)"),
            "the fallback can be forced"
        );
    }
    // `-v`: the run says it first.
    let c = Case::new();
    c.server.push(Reply::text("done"));
    let out = c.run(&["-v"]).success();
    let stderr = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
    let mode = first.split_whitespace().nth(1).unwrap_or_default();
    let line = stderr.lines().next().unwrap_or_default();
    assert!(
        line.contains(&format!("sandbox: {mode} ")),
        "the first line says `{mode}`: {stderr}"
    );
}

#[test]
fn nothing_a_hook_starts_outlives_it() {
    let Some(c) = confined("nothing_a_hook_starts_outlives_it") else {
        return;
    };
    let w = c.work();
    // `out/` exists, so the hook's mark needs no new entry in the workspace root (which the
    // Landlock fallback, and the code before the namespace sandbox, refuse).
    std::fs::create_dir_all(w.join(".claude")).unwrap();
    std::fs::create_dir_all(w.join("out")).unwrap();
    std::fs::write(
        w.join(".claude/settings.json"),
        json!({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{
            "type": "command",
            "command": format!("{} echo hooked > out/hook-ran", escaped_sleep(1732050))
        }]}]}})
        .to_string(),
    )
    .unwrap();
    c.trust();
    c.server.push(Reply::tool_calls(vec![bash("echo call")]));
    c.server.push(Reply::text("done"));
    c.run(&["--yes"]).success();
    assert!(w.join("out/hook-ran").exists(), "the hook ran");
    let left = reap(&["1732050"]);
    assert!(left.is_empty(), "left running after the hook: {left:?}");
}

#[test]
fn fallback_keeps_its_guarantees() {
    if !subagents::tools::landlock_support().confines() {
        skipped("fallback_keeps_its_guarantees: Landlock is unavailable");
        return;
    }
    let c = Case::new();
    let w = c.work();
    project(&w);
    let content = |w: &Path| -> Vec<String> { state(w).into_iter().map(|s| s.1).collect() };
    let before = content(&w);
    let calls = [
        "echo '[sandbox]' >> subagents.toml",
        "echo x >> .git/hooks/pre-push",
        "echo x >> .git/config",
        "echo x >> .claude/settings.json",
        "echo x >> .vscode/settings.json",
        "echo x >> .gitmodules",
        "echo x >> vendor/lib/.git/config",
        "echo '{}' > .mcp.json",
        "rm -f subagents.toml",
        "mv .git/config src/moved",
        // Landlock alone: no new entries directly in the workspace root.
        "touch NOTES.md",
    ];
    for cmd in calls {
        c.server.push(Reply::tool_calls(vec![bash(cmd)]));
    }
    c.server.push(Reply::text("done"));
    let mut run = c.run_cmd(&["--yes"]);
    run.env("SUBAGENTS_SANDBOX", "landlock");
    run.assert().success();
    let results = c.last_results();
    assert_eq!(results.len(), calls.len());
    for (cmd, r) in calls.iter().zip(&results) {
        assert!(
            r.contains("Permission denied") && r.contains("Write tool"),
            "`{cmd}` must be refused by Landlock: {r}"
        );
    }
    assert_eq!(content(&w), before, "the control files' content unchanged");
    assert!(!w.join(".mcp.json").exists() && !w.join("NOTES.md").exists());
}
