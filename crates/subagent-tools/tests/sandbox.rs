//! `Bash` under its sandbox: writes confined to the workspace and the temp directory
//! (Landlock), an environment allow-list, optional TCP denial. Where Landlock is unavailable
//! the confinement tests say so on stderr ("SKIPPED: ...") instead of passing silently.

use std::io::Write as _;
use std::path::Path;

use serde_json::json;
use subagent_spi::{TaskContext, Tool, ToolOutput};
use subagent_tools::{BashTool, LandlockSupport, SandboxPolicy, Workspace, landlock_support};

/// Prints past the test harness's capture, so a skip is visible in every run.
fn skipped(why: &str) {
    let _ = writeln!(std::io::stderr(), "SKIPPED: {why}");
}

fn landlock_or_skip(test: &str) -> bool {
    match landlock_support() {
        LandlockSupport::Unavailable(why) => {
            skipped(&format!("{test}: Landlock is unavailable ({why})"));
            false
        }
        _ => true,
    }
}

async fn run(tool: &BashTool, cmd: &str) -> ToolOutput {
    tool.call(json!({"command": cmd}), &TaskContext::new())
        .await
        .expect("the tool runs")
}

/// A workspace whose temp directory is inside it, so nothing else on the machine is writable.
fn confined(ws: &Path) -> BashTool {
    std::fs::create_dir_all(ws.join("tmp")).unwrap();
    BashTool::with_sandbox(
        Workspace::new(ws).unwrap(),
        SandboxPolicy::default().temp_dir(ws.join("tmp")),
    )
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
    let out = run(
        &tool,
        &format!(
            "touch '{}'; echo inside > inside.txt; echo t > \"$TMPDIR/t.txt\"; echo ran",
            target.display()
        ),
    )
    .await;
    assert!(out.content.contains("ran"), "{}", out.content);
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
        std::fs::read_to_string(ws.path().join("inside.txt")).unwrap(),
        "inside\n"
    );
    assert!(
        ws.path().join("tmp/t.txt").exists(),
        "the temp dir is writable"
    );
    // Reads and /dev/null still work, and the rest of this process keeps its rights.
    let out = run(
        &tool,
        "cat /etc/hostname >/dev/null && ls / >/dev/null && echo ok",
    )
    .await;
    assert!(out.content.contains("ok"), "{}", out.content);
    std::fs::write(outside.path().join("from-the-test.txt"), "x").expect("the test may write");
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
    let out = run(&tool, &format!("touch '{}' && echo ok", target.display())).await;
    assert!(out.content.contains("ok"), "{}", out.content);
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
            .network(false),
    );
    let out = run(&closed, &connect).await;
    assert!(!out.content.contains("CONNECTED"), "{}", out.content);
    assert!(out.is_error, "{}", out.content);
    drop(listener);
}

fn which(name: &str) -> Option<std::path::PathBuf> {
    std::env::var_os("PATH")
        .map(|p| {
            std::env::split_paths(&p)
                .map(|d| d.join(name))
                .collect::<Vec<_>>()
        })
        .unwrap_or_default()
        .into_iter()
        .find(|p| p.is_file())
}
