//! The Landlock-only fallback (the policy turns namespaces off): writes confined to the
//! workspace, granted entry by entry around its control files, and the temp directory; the
//! old guarantees, kept where namespaces are unavailable.

use std::path::Path;

use subagent_tools::{BashTool, LandlockSupport, SandboxPolicy, Workspace, landlock_support};

use super::{assert_contents, landlock_or_skip, project, ran_to, refused, run, skipped, which};

/// A workspace whose temp directory is inside it, so nothing else on the machine is writable.
fn confined(ws: &Path) -> BashTool {
    std::fs::create_dir_all(ws.join("tmp")).unwrap();
    BashTool::with_sandbox(
        Workspace::new(ws).unwrap(),
        SandboxPolicy::default()
            .temp_dir(ws.join("tmp"))
            .namespaces(false),
    )
}

/// A fresh workspace holding [`project`], or `None` (the test is skipped) without Landlock.
fn project_or_skip(test: &str) -> Option<tempfile::TempDir> {
    if !landlock_or_skip(test) {
        return None;
    }
    let ws = tempfile::tempdir().unwrap();
    project(ws.path());
    Some(ws)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn confined_bash_cannot_write_outside_the_workspace() {
    if !landlock_or_skip("confined_bash_cannot_write_outside_the_workspace") {
        return;
    }
    let ws = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap(); // a temp dir outside the workspace
    let tool = confined(ws.path());
    let target = outside.path().join("escaped.txt");
    // (A new file directly in the root is refused since the protected paths: see below.)
    std::fs::create_dir(ws.path().join("sub")).unwrap();
    let out = ran_to(
        &tool,
        &format!(
            "touch '{}'; echo inside > sub/inside.txt; echo t > \"$TMPDIR/t.txt\"; echo ran",
            target.display()
        ),
        "ran",
    )
    .await;
    assert!(
        out.content.contains("Permission denied"),
        "the write outside is refused: {}",
        out.content
    );
    assert!(
        !target.exists(),
        "nothing was written outside the workspace"
    );
    assert_eq!(
        std::fs::read_to_string(ws.path().join("sub/inside.txt")).unwrap(),
        "inside\n"
    );
    assert!(
        ws.path().join("tmp/t.txt").exists(),
        "the temp dir is writable"
    );
    // Reads and /dev/null still work, and the rest of this process keeps its rights.
    ran_to(
        &tool,
        "cat /etc/hostname >/dev/null && ls / >/dev/null && echo ok",
        "ok",
    )
    .await;
    std::fs::write(outside.path().join("from-the-test.txt"), "x").expect("the test may write");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn confined_bash_cannot_write_the_projects_control_files() {
    let Some(ws) = project_or_skip("confined_bash_cannot_write_the_projects_control_files") else {
        return;
    };
    let root = ws.path();
    let tool = confined(root);
    let attempts = [
        "printf '[sandbox]\\nenabled = false\\n' > subagents.toml",
        "echo x >> subagents.toml",
        "echo '{}' > .mcp.json",
        "echo '{\"hooks\":{}}' > .claude/settings.json",
        "echo '{\"hooks\":{}}' > .claude/settings.local.json",
        "echo evil > .claude/agents/a.md",
        "echo evil > .claude/agents/b.md",
        "mkdir -p .claude/skills/x",
        "printf '#!/bin/sh\\ntouch PWNED\\n' > .git/hooks/pre-commit",
        "printf '[core]\\nhooksPath = /tmp\\n' >> .git/config",
        "mv subagents.toml src/moved.toml",
        "rm -f subagents.toml",
        "rm -rf .claude/agents",
        "mv .claude src/claude",
        "ln -s src/x.toml subagents2.toml",
        "ln src/../subagents.toml src/hard.toml",
        "echo x >> .gitmodules",
        "echo '{}' > .vscode/tasks.json",
        "echo x > .vscode/settings.json",
        "mkdir .idea",
        "mkdir -p .claude/commands",
        "printf '[core]\\nfsmonitor = x\\n' >> vendor/lib/.git/config",
        "echo x > vendor/lib/.git/hooks/pre-commit",
        "echo x > vendor/lib/.gitmodules",
    ];
    for cmd in attempts {
        let out = refused(&tool, cmd).await;
        assert!(
            out.content.contains("sandbox:") && out.content.contains("Write tool"),
            "`{cmd}`: the model is told why: {}",
            out.content
        );
    }
    assert_contents(
        root,
        &[
            ("subagents.toml", "model = \"m\"\n"),
            (".claude/settings.json", "{}"),
            (".claude/agents/a.md", "agent"),
            (".git/config", "[core]\n"),
            ("vendor/lib/.git/config", "[core]\n"),
        ],
    );
    for absent in [
        ".mcp.json",
        ".vscode/tasks.json",
        ".idea",
        ".claude/commands",
        "vendor/lib/.git/hooks/pre-commit",
        "vendor/lib/.gitmodules",
        ".claude/settings.local.json",
        ".claude/agents/b.md",
        ".claude/skills",
        ".git/hooks/pre-commit",
        "src/moved.toml",
        "src/claude",
        "src/hard.toml",
        "subagents2.toml",
    ] {
        assert!(!root.join(absent).exists(), "{absent} was not created");
    }
    // Everything else still works: existing files anywhere but the protected ones,
    // subdirectories, .claude's and .git's other entries.
    let out = run(
        &tool,
        "echo more >> README.md && echo n > .claude/notes.md && echo i > .git/index && \
         mkdir -p src/a/b && echo code > src/a/b/c.rs && echo m > .claude/memory/m.md && \
         echo o > .git/objects/o && mv src/a src/z && rm -r src/z && echo ok",
    )
    .await;
    assert!(
        !out.is_error && out.content.contains("ok"),
        "{}",
        out.content
    );
    assert_contents(root, &[("README.md", "readmemore\n")]);
    assert!(root.join(".claude/memory/m.md").exists());
    // A new top-level file is not possible (it could be a protected name); the note says to
    // use Write.
    let out = run(&tool, "touch NEW.md").await;
    assert!(
        out.is_error && out.content.contains("Write tool"),
        "{}",
        out.content
    );
}

#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn symlinks_inside_the_workspace_do_not_reach_protected_paths() {
    let Some(ws) = project_or_skip("symlinks_inside_the_workspace_do_not_reach_protected_paths")
    else {
        return;
    };
    let root = ws.path();
    // A repository may ship symlinks; the model cannot make new ones in the root.
    std::os::unix::fs::symlink(".git", root.join("g")).unwrap();
    std::os::unix::fs::symlink("subagents.toml", root.join("conf.toml")).unwrap();
    std::os::unix::fs::symlink("../.claude", root.join("src/c")).unwrap();
    let tool = confined(root);
    for cmd in [
        "echo x > g/hooks/pre-commit",
        "echo x > g/config",
        "echo x > conf.toml",
        "echo x > src/c/settings.json",
    ] {
        refused(&tool, cmd).await;
    }
    assert!(!root.join(".git/hooks/pre-commit").exists());
    assert!(!root.join(".claude/settings.local.json").exists());
    assert_contents(root, &[("subagents.toml", "model = \"m\"\n")]);
    // Through the symlink, the non-protected parts of .git stay writable.
    ran_to(&tool, "echo i > g/index && echo ok", "ok").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_workspace_inside_the_temp_dir_gets_a_private_temp_dir() {
    if !landlock_or_skip("a_workspace_inside_the_temp_dir_gets_a_private_temp_dir") {
        return;
    }
    let temp = tempfile::tempdir().unwrap();
    let root = temp.path().join("ws");
    project(&root);
    let tool = BashTool::with_sandbox(
        Workspace::new(&root).unwrap(),
        SandboxPolicy::default()
            .temp_dir(temp.path())
            .namespaces(false),
    );
    let out = ran_to(
        &tool,
        "echo t > \"$TMPDIR/t.txt\" && echo \"[$TMPDIR]\"; echo x > subagents.toml; \
         echo y > ../sibling.txt; echo done",
        "done",
    )
    .await;
    assert!(
        out.content.contains("subagents-bash-"),
        "TMPDIR is private: {}",
        out.content
    );
    assert_eq!(
        std::fs::read_to_string(root.join("subagents.toml")).unwrap(),
        "model = \"m\"\n",
        "granting the temp dir did not grant the workspace"
    );
    assert!(!temp.path().join("sibling.txt").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unconfined_bash_writes_anywhere() {
    let ws = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let tool = BashTool::with_sandbox(
        Workspace::new(ws.path()).unwrap(),
        SandboxPolicy::unconfined(),
    );
    let target = outside.path().join("written.txt");
    ran_to(
        &tool,
        &format!("touch '{}' && echo ok", target.display()),
        "ok",
    )
    .await;
    assert!(target.exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_allow_listed_variables_reach_the_command() {
    // Cargo sets CARGO_PKG_NAME for test processes; it is not on the allow-list.
    assert!(std::env::var("CARGO_PKG_NAME").is_ok());
    let ws = tempfile::tempdir().unwrap();
    let tool = confined(ws.path());
    let out = run(
        &tool,
        "echo \"[$CARGO_PKG_NAME] [$TMPDIR] [${PATH:+path}] [${HOME:+home}]\"",
    )
    .await;
    let tmp = ws.path().join("tmp");
    assert!(
        out.content
            .contains(&format!("[] [{}] [path] [home]", tmp.display())),
        "{}",
        out.content
    );
    let allowed = BashTool::with_sandbox(
        Workspace::new(ws.path()).unwrap(),
        SandboxPolicy::default().allow_env("CARGO_PKG_NAME"),
    );
    let out = run(&allowed, "echo \"[$CARGO_PKG_NAME]\"").await;
    assert!(out.content.contains("[subagent-tools]"), "{}", out.content);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn network_can_be_denied() {
    if !landlock_or_skip("network_can_be_denied") {
        return;
    }
    if let LandlockSupport::Partial(why) = landlock_support() {
        skipped(&format!("network_can_be_denied: {why}"));
        return;
    }
    if which("bash").is_none() {
        skipped("network_can_be_denied: no bash for /dev/tcp");
        return;
    }
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let ws = tempfile::tempdir().unwrap();
    let connect = format!("bash -c 'echo hi > /dev/tcp/127.0.0.1/{port}' && echo CONNECTED");
    let open = confined(ws.path());
    let out = run(&open, &connect).await;
    assert!(
        out.content.contains("CONNECTED"),
        "allowed by default: {}",
        out.content
    );
    let closed = BashTool::with_sandbox(
        Workspace::new(ws.path()).unwrap(),
        SandboxPolicy::default()
            .temp_dir(ws.path().join("tmp"))
            .namespaces(false)
            .network(false),
    );
    let out = run(&closed, &connect).await;
    assert!(!out.content.contains("CONNECTED"), "{}", out.content);
    assert!(out.is_error, "{}", out.content);
    drop(listener);
}
