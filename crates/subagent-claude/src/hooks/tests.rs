//! Unit tests of hook parsing, matching and running.

use std::path::Path;

use serde_json::{Map, Value, json};
use subagent_spi::TaskContext;
use subagent_tools::SandboxPolicy;

use super::*;
use crate::definition::PermissionMode;

#[path = "../../tests/it/common/landlock.rs"]
mod landlock;

#[test]
fn matchers_follow_claude_code() {
    let all = Matcher::compile(None).unwrap();
    assert!(all.matches("Bash"));
    assert!(Matcher::compile(Some("*")).unwrap().matches("x"));
    let names = Matcher::compile(Some("Edit|Write")).unwrap();
    assert!(names.matches("Write") && names.matches("Edit"));
    assert!(!names.matches("WriteFile"), "plain names match exactly");
    assert!(!Matcher::compile(Some("Bash")).unwrap().matches("bash"));
    let re = Matcher::compile(Some("mcp__gh__.*")).unwrap();
    assert!(re.matches("mcp__gh__issue") && !re.matches("mcp__x__y"));
    assert!(
        Matcher::compile(Some("^Notebook"))
            .unwrap()
            .matches("NotebookEdit")
    );
    assert!(Matcher::compile(Some("Agent")).unwrap().matches("Task"));
    assert!(Matcher::compile(Some("(")).is_err());
    assert!(Matcher::compile(Some(&"a".repeat(MAX_MATCHER_BYTES + 1))).is_err());
}

#[test]
fn parses_and_warns() {
    let v: Value = serde_json::json!({
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "x", "timeout": 5}]}],
        "Stop": [{"hooks": [{"type": "command", "command": "done"}]}],
        "UserPromptSubmit": [{"hooks": [{"type": "command", "command": "y"}]}],
        "PostToolUse": [{"matcher": "(", "hooks": [{"type": "command", "command": "z"}]},
                        {"hooks": [{"type": "prompt", "prompt": "p"}]}]
    });
    let (h, w) = Hooks::from_frontmatter(&v);
    assert_eq!(h.count(HookEvent::PreToolUse), 1);
    assert_eq!(h.count(HookEvent::SubagentStop), 1);
    assert_eq!(h.count(HookEvent::PostToolUse), 0);
    assert_eq!(
        h.matching(HookEvent::PreToolUse, "Bash", false)[0]
            .0
            .timeout,
        Duration::from_secs(5)
    );
    assert_eq!(h.matching(HookEvent::SubagentStop, "any", true).len(), 1);
    assert!(w.iter().any(|w| w.contains("UserPromptSubmit")), "{w:?}");
    assert!(w.iter().any(|w| w.contains("regular expression")), "{w:?}");
    assert!(w.iter().any(|w| w.contains("`prompt`")), "{w:?}");
    let (_, w) = Hooks::from_settings_value(&v);
    assert!(w.iter().any(|w| w.contains("`Stop`")), "{w:?}");
}

#[test]
fn hook_count_is_bounded() {
    let many: Vec<Value> = (0..MAX_HOOKS + 5)
        .map(|i| serde_json::json!({"type": "command", "command": format!("echo {i}")}))
        .collect();
    let v = serde_json::json!({"PreToolUse": [{"hooks": many}]});
    let (h, w) = Hooks::from_settings_value(&v);
    assert_eq!(h.count(HookEvent::PreToolUse), MAX_HOOKS);
    assert!(w.iter().any(|w| w.contains("more than")));
    let mut merged = h.clone();
    assert_eq!(merged.merge(h), MAX_HOOKS);
}

#[tokio::test]
async fn a_command_gets_the_event_and_a_scrubbed_environment() {
    let dir = tempfile::tempdir().unwrap();
    // Settings hooks run confined like `Bash`, which cannot create files directly in the
    // workspace root: they write into a subdirectory.
    std::fs::create_dir(dir.path().join("out")).unwrap();
    let v = serde_json::json!({"PreToolUse": [{"hooks": [{"type": "command",
        "command": "cat > out/event.json; env > out/env.txt; echo nope >&2; exit 2"}]}]});
    let (hooks, _) = Hooks::from_settings_value(&v);
    let runner = HookRunner::new(hooks, dir.path()).with_agent("worker");
    let ctx = with_hook_session(TaskContext::new().with_task_id("task_1").with_depth(1));
    let mut extra = Map::new();
    extra.insert("tool_name".into(), json!("Bash"));
    let verdict = runner
        .fire(HookEvent::PreToolUse, "Bash", false, extra, &ctx)
        .await;
    assert_eq!(verdict.block.as_deref(), Some("nope"));
    let event: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("out/event.json")).unwrap())
            .unwrap();
    assert_eq!(event["hook_event_name"], "PreToolUse");
    assert_eq!(event["tool_name"], "Bash");
    assert_eq!(event["agent_type"], "worker");
    assert_eq!(event["agent_id"], "task_1");
    assert!(event["session_id"].as_str().unwrap().starts_with("hooks_"));
    let env = std::fs::read_to_string(dir.path().join("out/env.txt")).unwrap();
    assert!(env.contains("CLAUDE_PROJECT_DIR="), "{env}");
    for line in env.lines() {
        let name = line.split('=').next().unwrap_or("");
        assert!(
            KEPT_ENV.contains(&name)
                || matches!(
                    name,
                    "CLAUDE_PROJECT_DIR" | "PWD" | "SHLVL" | "_" | "OLDPWD"
                ),
            "unexpected variable {name}"
        );
    }
}

#[tokio::test]
async fn timeouts_and_json_decisions() {
    let dir = tempfile::tempdir().unwrap();
    let v = serde_json::json!({"PreToolUse": [
        {"matcher": "Slow", "hooks": [{"type": "command", "command": "sleep 30", "timeout": 0.2}]},
        {"matcher": "Json", "hooks": [{"type": "command", "command":
            "echo '{\"hookSpecificOutput\": {\"hookEventName\": \"PreToolUse\", \"permissionDecision\": \"deny\", \"permissionDecisionReason\": \"not today\"}}'"}]}
    ]});
    let (hooks, w) = Hooks::from_settings_value(&v);
    assert!(w.is_empty(), "{w:?}");
    let runner = HookRunner::new(hooks, dir.path());
    let ctx = TaskContext::new();
    let started = std::time::Instant::now();
    let slow = runner
        .fire(HookEvent::PreToolUse, "Slow", false, Map::new(), &ctx)
        .await;
    assert!(slow.block.is_none(), "a timeout does not block");
    assert!(started.elapsed() < Duration::from_secs(20));
    let json = runner
        .fire(HookEvent::PreToolUse, "Json", false, Map::new(), &ctx)
        .await;
    assert_eq!(json.block.as_deref(), Some("not today"));
}

/// A directory outside the workspace and outside the temp directory the sandbox grants:
/// under the build's `target/`, else (a checkout inside the temp directory, such as a
/// `mktemp -d` clone) under `$HOME/.cache`; `None` when both are inside the temp directory.
fn outside_dir() -> Option<tempfile::TempDir> {
    let temp = std::env::temp_dir().canonicalize().unwrap();
    let candidates = [
        Some(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/hook-tests")),
        std::env::var_os("HOME").map(|h| Path::new(&h).join(".cache/subagents-hook-tests")),
    ];
    candidates.into_iter().flatten().find_map(|base| {
        std::fs::create_dir_all(&base).ok()?;
        let dir = tempfile::tempdir_in(&base).ok()?;
        (!dir.path().canonicalize().ok()?.starts_with(&temp)).then_some(dir)
    })
}

/// A workspace with an `out/` directory and a directory outside the temp directory, or `None`
/// (after printing SKIPPED for `test`) when there is no such outside directory.
fn workspace_and_outside(test: &str) -> Option<(tempfile::TempDir, tempfile::TempDir)> {
    let ws = tempfile::tempdir().unwrap();
    std::fs::create_dir(ws.path().join("out")).unwrap();
    let Some(outside) = outside_dir() else {
        eprintln!("SKIPPED {test}: no directory outside the temp directory to write to");
        return None;
    };
    Some((ws, outside))
}

/// A hook that writes a marker outside the workspace and one in its `out/` subdirectory.
fn writer_hooks(outside: &Path) -> Value {
    let command = format!(
        "echo x > '{}/marker'; echo y > out/inside",
        outside.display()
    );
    json!({"PreToolUse": [{"hooks": [{"type": "command", "command": command}]}]})
}

#[test]
fn only_the_users_own_settings_hooks_are_unconfined() {
    let v = json!({"PreToolUse": [{"hooks": [{"type": "command", "command": "x"}]}]});
    let confined = |h: &Hooks| h.matching(HookEvent::PreToolUse, "Bash", false)[0].1;
    assert!(confined(&Hooks::from_frontmatter(&v).0));
    assert!(confined(&Hooks::from_settings_value(&v).0));
    assert!(!confined(&parse(&v, Origin::UserSettings).0));
    // The same command from the user's file and a workspace file runs confined.
    let mut both = parse(&v, Origin::UserSettings).0;
    both.merge(Hooks::from_settings_value(&v).0);
    assert!(confined(&both));
}

#[tokio::test]
async fn settings_files_mark_the_users_file_unconfined() {
    let dir = tempfile::tempdir().unwrap();
    let user = dir.path().join("user.json");
    let project = dir.path().join("project.json");
    let body = |cmd: &str| {
        json!({"hooks": {"PreToolUse": [{"hooks": [{"type": "command", "command": cmd}]}]}})
            .to_string()
    };
    std::fs::write(&user, body("from-user")).unwrap();
    std::fs::write(&project, body("from-project")).unwrap();
    let (h, w) = Hooks::from_settings_files_with_user(&user, std::slice::from_ref(&project)).await;
    assert!(w.is_empty(), "{w:?}");
    let found = h.matching(HookEvent::PreToolUse, "Bash", false);
    let by = |c: &str| found.iter().find(|(h, _)| h.command == c).unwrap().1;
    assert!(!by("from-user"), "the user's own hooks run unconfined");
    assert!(by("from-project"), "workspace settings hooks run confined");
    // Without the explicit user file, every file's hooks are confined.
    let (h, _) = Hooks::from_settings_files(&[user, project]).await;
    assert!(
        h.matching(HookEvent::PreToolUse, "Bash", false)
            .iter()
            .all(|(_, confined)| *confined)
    );
}

#[tokio::test]
async fn frontmatter_hooks_run_confined_like_bash() {
    if !landlock::confines("frontmatter_hooks_run_confined_like_bash") {
        return;
    }
    let Some((ws, outside)) = workspace_and_outside("frontmatter_hooks_run_confined_like_bash")
    else {
        return;
    };
    let (hooks, w) = Hooks::from_frontmatter(&writer_hooks(outside.path()));
    assert!(w.is_empty(), "{w:?}");
    let ctx = TaskContext::new();
    // Through a run's hooks, with the run's Bash policy, and through a bare runner (the
    // default policy).
    let (run, _) = RunHooks::new(
        Some(&writer_hooks(outside.path())),
        &Hooks::new(),
        &ctx,
        "worker",
        PermissionMode::Default,
        RunPlace {
            project_dir: ws.path(),
            cwd: ws.path(),
            sandbox: &SandboxPolicy::default(),
        },
    );
    let runners = [run.own().clone(), HookRunner::new(hooks, ws.path())];
    for runner in runners {
        let _ = std::fs::remove_file(ws.path().join("out/inside"));
        runner
            .fire(HookEvent::PreToolUse, "Bash", false, Map::new(), &ctx)
            .await;
        assert!(
            !outside.path().join("marker").exists(),
            "a confined hook wrote outside the workspace"
        );
        assert_eq!(
            std::fs::read_to_string(ws.path().join("out/inside")).unwrap(),
            "y\n",
            "a confined hook still writes in the workspace"
        );
    }
}

#[tokio::test]
async fn a_users_hook_runs_confined_once_a_workspace_file_it_names_changed() {
    let ws = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(ws.path()).unwrap();
    std::fs::create_dir_all(root.join("out")).unwrap();
    std::fs::create_dir_all(root.join("tools")).unwrap();
    // The script says where it may write temporary files: a confined hook gets the
    // sandbox's temp directory, an unconfined one ours.
    let script = "printf '%s' \"$TMPDIR\" > \"$CLAUDE_PROJECT_DIR/out/tmpdir\"\n";
    std::fs::write(root.join("tools/h.sh"), script).unwrap();
    let v = json!({"PreToolUse": [{"hooks": [{"type": "command",
        "command": "sh \"$CLAUDE_PROJECT_DIR/tools/h.sh\""}]}]});
    let hooks = parse(&v, Origin::UserSettings)
        .0
        .pin_workspace_scripts(&root);
    let policy = SandboxPolicy::default();
    let runner = HookRunner::new(hooks, &root).with_sandbox(policy.clone(), &root);
    let ctx = TaskContext::new();
    let tmpdir = || runner.fire(HookEvent::PreToolUse, "Bash", false, Map::new(), &ctx);
    tmpdir().await;
    let unconfined = std::env::var("TMPDIR").unwrap_or_default();
    let wrote = || std::fs::read_to_string(root.join("out/tmpdir")).unwrap();
    assert_eq!(
        wrote(),
        unconfined,
        "unchanged: the user's hook runs unconfined"
    );
    std::fs::write(root.join("tools/h.sh"), format!("# edited\n{script}")).unwrap();
    tmpdir().await;
    assert_eq!(
        wrote(),
        policy.temp_dir_for(&root).display().to_string(),
        "changed since pinned: the hook runs confined"
    );
}

#[tokio::test]
async fn unconfined_hooks_write_anywhere() {
    let Some((ws, outside)) = workspace_and_outside("unconfined_hooks_write_anywhere") else {
        return;
    };
    let v = writer_hooks(outside.path());
    let ctx = TaskContext::new();
    // The user's own settings hooks, and any hook with the sandbox off (`--no-sandbox`).
    let runners = [
        HookRunner::new(parse(&v, Origin::UserSettings).0, ws.path()),
        HookRunner::new(Hooks::from_frontmatter(&v).0, ws.path())
            .with_sandbox(SandboxPolicy::unconfined(), ws.path()),
    ];
    for runner in runners {
        let _ = std::fs::remove_file(outside.path().join("marker"));
        runner
            .fire(HookEvent::PreToolUse, "Bash", false, Map::new(), &ctx)
            .await;
        assert!(outside.path().join("marker").exists());
        assert!(ws.path().join("out/inside").exists());
    }
}
