//! The namespace sandbox (through this crate's `subagent-sandbox` helper): ordinary work in the
//! workspace root succeeds, every write and metadata change of a control file is refused, the
//! missing ones are reserved while a command runs and leave nothing behind, and everything a
//! command starts dies with it. Where user namespaces are unavailable these tests print
//! SKIPPED with the reason.

use std::path::Path;

use subagent_tools::{
    BashTool, ConfinedCommand, SandboxMode, SandboxPolicy, Workspace, sandbox_report,
};

use subagent_testkit::process::reap;

use super::{ran_to, refused, run, skipped, which};

fn policy(ws: &Path) -> SandboxPolicy {
    std::fs::create_dir_all(ws.join("tmp")).unwrap();
    SandboxPolicy::default()
        .temp_dir(ws.join("tmp"))
        .helper(env!("CARGO_BIN_EXE_subagent-sandbox"))
}

fn namespaces_or_skip(test: &str, policy: &SandboxPolicy) -> bool {
    let report = sandbox_report(policy);
    if report.mode == SandboxMode::Namespaces {
        return true;
    }
    skipped(&format!(
        "{test}: the namespace sandbox is unavailable ({}: {})",
        report.mode, report.reason
    ));
    false
}

fn bash(ws: &Path) -> BashTool {
    BashTool::with_sandbox(Workspace::new(ws).unwrap(), policy(ws))
}

/// A checked-out project with its control files, a nested repository and ordinary files: the
/// shared one, plus a command directory and a hook.
fn project(ws: &Path) {
    super::project(ws);
    std::fs::create_dir_all(ws.join(".claude/commands")).unwrap();
    std::fs::write(ws.join(".git/hooks/pre-push"), "#!/bin/sh\n").unwrap();
}

/// A fresh workspace when the namespace sandbox is available; `None` (having said why on
/// stderr) when it is not.
fn workspace_or_skip(test: &str) -> Option<tempfile::TempDir> {
    let ws = tempfile::tempdir().unwrap();
    namespaces_or_skip(test, &policy(ws.path())).then_some(ws)
}

/// Every regular file and directory beneath `root` with its mode, size and modification
/// time (of files: a directory holding a reserved name was changed by the reservation), for
/// "nothing changed" checks.
fn snapshot(root: &Path) -> Vec<(String, u32, u64, i64)> {
    use std::os::unix::fs::MetadataExt as _;
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap().flatten() {
            let m = std::fs::symlink_metadata(e.path()).unwrap();
            let rel = e.path().strip_prefix(root).unwrap().display().to_string();
            let mtime = if m.is_dir() { 0 } else { m.mtime() };
            out.push((rel, m.mode(), m.size(), mtime));
            if m.is_dir() {
                stack.push(e.path());
            }
        }
    }
    out.sort();
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ordinary_work_succeeds_in_the_workspace_root() {
    let Some(ws) = workspace_or_skip("ordinary_work_succeeds_in_the_workspace_root") else {
        return;
    };
    let root = ws.path();
    let tool = bash(root);
    let out = run(
        &tool,
        "mkdir build && touch NOTES.md && echo hi > build/x && git init -q && git add -A && \
         git -c user.name=t -c user.email=t@example.com commit -qm first && \
         git log --oneline | wc -l && echo DONE",
    )
    .await;
    assert!(
        !out.is_error && out.content.contains("DONE"),
        "{}",
        out.content
    );
    assert!(root.join("build/x").exists() && root.join("NOTES.md").exists());
    assert!(root.join(".git/HEAD").exists());
    // The placeholders reserving the missing control files were not committed, and are gone.
    let files = std::process::Command::new("git")
        .args(["ls-files"])
        .current_dir(root)
        .output()
        .unwrap();
    let files = String::from_utf8_lossy(&files.stdout);
    assert_eq!(
        files.lines().collect::<Vec<_>>(),
        ["NOTES.md", "build/x"],
        "{files}"
    );
    // Nothing else was left behind: the root holds what the command made and the temp
    // directory.
    let mut entries: Vec<String> = std::fs::read_dir(root)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    entries.sort();
    assert_eq!(entries, [".git", "NOTES.md", "build", "tmp"]);
    // The repository it created is protected from the next command on.
    let out = run(&tool, "echo evil >> .git/config").await;
    assert!(
        out.is_error && out.content.contains("sandbox:"),
        "{}",
        out.content
    );
    if which("cargo").is_some() {
        ran_to(&tool, "cargo new --vcs none -q x && echo CARGO", "CARGO").await;
        assert!(root.join("x/Cargo.toml").exists());
    } else {
        skipped("ordinary_work_succeeds_in_the_workspace_root: no cargo for `cargo new`");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_write_and_metadata_change_of_a_control_file_is_refused() {
    let Some(ws) =
        workspace_or_skip("every_write_and_metadata_change_of_a_control_file_is_refused")
    else {
        return;
    };
    let root = ws.path();
    project(root);
    let before = snapshot(root);
    let tool = bash(root);
    let targets = [
        "subagents.toml",
        ".gitmodules",
        ".claude/settings.json",
        ".claude/agents/a.md",
        ".git/config",
        ".git/hooks/pre-push",
        ".vscode/settings.json",
        "vendor/lib/.git/config",
    ];
    for t in targets {
        for cmd in [
            format!("echo x >> {t}"),
            format!("printf x > {t}"),
            format!("chmod 000 {t}"),
            format!("chmod +x {t}"),
            format!("touch -d 2001-01-01 {t}"),
            format!("mv {t} src/moved"),
            format!("rm -f {t}"),
            format!("truncate -s 0 {t}"),
        ] {
            let out = refused(&tool, &cmd).await;
            assert!(
                out.content.contains("sandbox:"),
                "`{cmd}`: the model is told why: {}",
                out.content
            );
        }
    }
    // Missing ones cannot be created, nor the directories holding protected names replaced.
    for cmd in [
        "echo '{}' > .mcp.json",
        "mkdir -p .idea && echo x > .idea/workspace.xml",
        "echo '{}' > .claude/settings.local.json",
        "echo x > .claude/commands/deploy.md",
        "mkdir .claude/skills",
        "echo x > .claude/new.md",
        "echo x > .git/hooks/post-checkout",
        "mv .git .git-old",
        "mv .claude src/claude",
        "rm -rf .git/hooks",
        "mv vendor/lib/.git vendor/lib/git-old",
        // Renaming a nested repository (or a directory above it) away, to make a new one with
        // another config in its place.
        "mv vendor/lib vendor/lib-old",
        "mv vendor vendor-old",
        "echo x > vendor/lib/.gitmodules",
        "echo x > vendor/lib/.git/hooks/pre-commit",
        "ln src/../subagents.toml src/hard",
    ] {
        refused(&tool, cmd).await;
    }
    // Nothing changed: content, modes, times, and no new entry among the control files.
    let mut after = snapshot(root);
    after.retain(|(p, ..)| !p.starts_with("src") && !p.starts_with("tmp"));
    let mut expected = before.clone();
    expected.retain(|(p, ..)| !p.starts_with("src") && !p.starts_with("tmp"));
    assert_eq!(after, expected);
    // The rest of the workspace, .claude's other entries and .git's others stay writable.
    let out = run(
        &tool,
        "echo more >> README.md && echo n > .claude/notes.md && echo m > .claude/memory/m.md \
         && echo i > .git/index && echo o > .git/objects/o && mkdir -p vendor/lib/src && \
         echo v > vendor/lib/src/v.rs && mv README.md README.txt && echo ok",
    )
    .await;
    assert!(
        !out.is_error && out.content.contains("ok"),
        "{}",
        out.content
    );
    super::assert_contents(root, &[("README.txt", "readmemore\n")]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_outside_the_workspace_are_still_refused() {
    let Some(ws) = workspace_or_skip("writes_outside_the_workspace_are_still_refused") else {
        return;
    };
    let outside = tempfile::tempdir().unwrap();
    let root = ws.path();
    let target = outside.path().join("escaped.txt");
    ran_to(
        &bash(root),
        &format!(
            "touch '{}'; echo t > \"$TMPDIR/t\"; mount -t tmpfs none src 2>&1; \
             umount .git 2>&1; echo ran",
            target.display()
        ),
        "ran",
    )
    .await;
    assert!(
        !target.exists(),
        "nothing was written outside the workspace"
    );
    assert!(
        root.join("tmp/t").exists(),
        "the temp directory is writable"
    );
    std::fs::write(outside.path().join("from-the-test"), "x").expect("the test may write");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn setsid_and_double_forked_children_die_with_the_command() {
    let Some(ws) = workspace_or_skip("setsid_and_double_forked_children_die_with_the_command")
    else {
        return;
    };
    let root = ws.path();
    ran_to(
        &bash(root),
        // Returns once the first has left the process group (it wrote its pid after
        // `setsid`), so the test does not depend on timing.
        "setsid sh -c 'echo $$ > escaped.pid; exec sleep 271828' >/dev/null 2>&1 </dev/null & \
         (sh -c 'sleep 314159 >/dev/null 2>&1 </dev/null &' &) ; i=0; \
         while [ ! -s escaped.pid ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i+1)); done; \
         echo started",
        "started",
    )
    .await;
    let left = reap(&["271828", "314159"]);
    assert!(left.is_empty(), "left running: {left:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_confined_command_keeps_its_streams_and_environment() {
    let Some(ws) = workspace_or_skip("a_confined_command_keeps_its_streams_and_environment") else {
        return;
    };
    let root = ws.path();
    let policy = policy(root);
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let mut child = ConfinedCommand::new("sh")
        .args([
            "-c",
            "read line; echo \"$line $GREETING $(id -u) $(pwd)\"; exit 7",
        ])
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap())
        .env("GREETING", "hello")
        .current_dir(root)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn(&policy, root)
        .await
        .unwrap();
    assert_eq!(child.mode(), SandboxMode::Namespaces);
    let mut stdin = child.child().stdin.take().unwrap();
    stdin.write_all(b"ping\n").await.unwrap();
    drop(stdin);
    let mut out = String::new();
    child
        .child()
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .await
        .unwrap();
    let status = child.wait().await.unwrap();
    assert_eq!(status.code(), Some(7));
    let uid = rustix::process::getuid().as_raw();
    assert_eq!(
        out.trim(),
        format!(
            "ping hello {uid} {}",
            std::fs::canonicalize(root).unwrap().display()
        )
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_commondir_or_worktree_config_a_command_creates_is_removed_when_it_ends() {
    let Some(ws) = workspace_or_skip(
        "a_commondir_or_worktree_config_a_command_creates_is_removed_when_it_ends",
    ) else {
        return;
    };
    let root = ws.path();
    project(root);
    // `commondir` would point git at `evil/config` (and its fsmonitor) on the user's next
    // `git status`; a placeholder there would break git, so the name is sealed instead.
    let out = ran_to(
        &bash(root),
        "mkdir -p evil && printf '[core]\\n\\tfsmonitor = touch PWNED\\n' > evil/config && \
         echo \"$PWD/evil\" > .git/commondir && echo \"$PWD/evil\" > vendor/lib/.git/commondir \
         && echo x > .git/config.worktree && echo written",
        "written",
    )
    .await;
    assert!(
        out.content.contains(".git/commondir") && out.content.contains("has been removed"),
        "the model is told: {}",
        out.content
    );
    for sealed in [
        ".git/commondir",
        "vendor/lib/.git/commondir",
        ".git/config.worktree",
    ] {
        assert!(!root.join(sealed).exists(), "{sealed} was removed");
    }
    // An existing one is read-only like the config.
    std::fs::write(root.join(".git/commondir"), ".\n").unwrap();
    let out = run(&bash(root), "echo ../evil > .git/commondir").await;
    assert!(out.is_error, "{}", out.content);
    super::assert_contents(root, &[(".git/commondir", ".\n")]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timed_out_command_takes_its_setsid_children_with_it() {
    let Some(ws) = workspace_or_skip("a_timed_out_command_takes_its_setsid_children_with_it")
    else {
        return;
    };
    let root = ws.path();
    use subagent_spi::{TaskContext, Tool as _};
    let out = bash(root)
        .call(
            serde_json::json!({
                "command": "setsid sh -c 'echo $$ > escaped.pid; exec sleep 161803' \
                            >/dev/null 2>&1 </dev/null & while [ ! -s escaped.pid ]; \
                            do sleep 0.05; done; sleep 600",
                "timeout": 3000,
            }),
            &TaskContext::new(),
        )
        .await
        .expect("the tool runs");
    assert!(out.is_error, "timed out: {}", out.content);
    assert!(
        root.join("escaped.pid").exists(),
        "the child had left the group before the timeout"
    );
    let left = reap(&["161803"]);
    assert!(left.is_empty(), "left running after the timeout: {left:?}");
}
