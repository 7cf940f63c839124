//! The Bash tool: output capture, exit codes, caps, and killing whole process trees.

use std::path::Path;
use std::time::Duration;

use serde_json::json;
use subagent_spi::{TaskContext, Tool, ToolError};
use subagent_tools::{BashTool, Workspace};

fn setup() -> (tempfile::TempDir, BashTool) {
    let dir = tempfile::tempdir().unwrap();
    // Confined commands cannot create files directly in the workspace root (they could be its
    // protected control files): the tests' commands write under `out/`.
    std::fs::create_dir(dir.path().join("out")).unwrap();
    let tool = BashTool::new(Workspace::new(dir.path()).unwrap());
    (dir, tool)
}

/// Runs `input` to its result in a fresh context.
async fn run(tool: &BashTool, input: serde_json::Value) -> subagent_spi::ToolOutput {
    tool.call(input, &TaskContext::new()).await.unwrap()
}

/// True when `pid` no longer runs (gone, or a zombie waiting to be reaped).
fn is_dead(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        // the state follows the parenthesised command name
        Ok(stat) => stat
            .rsplit_once(") ")
            .is_some_and(|(_, rest)| rest.starts_with('Z') || rest.starts_with('X')),
    }
}

/// Waits (bounded) for the process to die; killing is asynchronous in the kernel.
async fn wait_dead(pid: u32) -> bool {
    for _ in 0..100 {
        if is_dead(pid) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    false
}

/// Asserts that `pid` (the test's `what`) dies (bounded wait), having outlived `event` else.
async fn assert_dies(pid: u32, what: &str, event: &str) {
    assert!(wait_dead(pid).await, "{what} {pid} survived {event}");
}

async fn read_pid(path: &Path) -> u32 {
    for _ in 0..200 {
        if let Ok(s) = std::fs::read_to_string(path)
            && let Ok(pid) = s.trim().parse()
        {
            return pid;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("the command never wrote {}", path.display());
}

/// The pid the test's command wrote to `out/pid` (`sleep 300 & echo $! > out/pid`).
async fn grandchild_pid(dir: &tempfile::TempDir) -> u32 {
    read_pid(&dir.path().join("out/pid")).await
}

#[tokio::test]
async fn captures_stdout_and_stderr_in_order_in_the_workspace() {
    let (dir, tool) = setup();
    let out = run(
        &tool,
        json!({"command": "echo out; echo err >&2; pwd", "description": "demo"}),
    )
    .await;
    assert!(!out.is_error);
    let root = std::fs::canonicalize(dir.path()).unwrap();
    assert_eq!(out.content, format!("out\nerr\n{}\n", root.display()));

    let out = run(&tool, json!({"command": "true"})).await;
    assert_eq!(out.content, "(no output)");
}

#[tokio::test]
async fn non_zero_exit_is_an_error_result_with_the_code() {
    let (_dir, tool) = setup();
    let out = run(&tool, json!({"command": "echo failing; exit 3"})).await;
    assert!(out.is_error);
    assert_eq!(out.content, "failing\n[exit code 3]");
}

#[tokio::test]
async fn output_is_capped_with_a_marker() {
    let (_dir, tool) = setup();
    let out = run(
        &tool,
        json!({"command": "head -c 100000 /dev/zero | tr '\\0' a"}),
    )
    .await;
    assert_eq!(
        out.content,
        format!(
            "{}\n[output truncated: 70000 characters cut]",
            "a".repeat(30_000)
        )
    );
}

#[tokio::test]
async fn bad_input_is_refused() {
    let (_dir, tool) = setup();
    let ctx = TaskContext::new();
    let err = tool
        .call(json!({"command": "true", "timeout": 600_001}), &ctx)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("600000"), "{err}");
    let err = tool.call(json!({"command": "  "}), &ctx).await.unwrap_err();
    assert!(matches!(err, ToolError::InvalidInput { .. }));
    let err = tool.call(json!({"cmd": "ls"}), &ctx).await.unwrap_err();
    assert!(matches!(err, ToolError::InvalidInput { .. }));
}

#[tokio::test]
async fn timeout_kills_the_whole_process_tree() {
    let (dir, tool) = setup();
    let out = run(
        &tool,
        json!({"command": "sleep 300 & echo $! > out/pid; echo started; wait", "timeout": 2000}),
    )
    .await;
    assert!(out.is_error);
    assert!(out.content.starts_with("started\n"), "{}", out.content);
    assert!(
        out.content.contains("timed out after 2000 ms"),
        "{}",
        out.content
    );
    let pid = grandchild_pid(&dir).await;
    assert_dies(pid, "grandchild", "the timeout").await;
}

#[tokio::test]
async fn cancel_kills_the_whole_process_tree() {
    let (dir, tool) = setup();
    let ctx = TaskContext::new();
    let call = {
        let ctx = ctx.clone();
        tokio::spawn(async move {
            tool.call(
                json!({"command": "sleep 300 & echo $! > out/pid; wait"}),
                &ctx,
            )
            .await
        })
    };
    let pid = grandchild_pid(&dir).await;
    assert!(!is_dead(pid));
    ctx.cancel().cancel();
    let r = tokio::time::timeout(Duration::from_secs(20), call)
        .await
        .expect("cancel stopped the command")
        .unwrap();
    assert!(matches!(r, Err(ToolError::Cancelled { .. })), "{r:?}");
    assert_dies(pid, "grandchild", "cancellation").await;
}

#[tokio::test]
async fn dropping_the_call_kills_the_tree() {
    let (dir, tool) = setup();
    let ctx = TaskContext::new();
    let mut fut = Box::pin(tool.call(
        json!({"command": "sleep 300 & echo $! > out/pid; wait"}),
        &ctx,
    ));
    // keep the call running until the grandchild exists, then drop it
    let pid = tokio::select! {
        r = &mut fut => panic!("the command cannot have finished: {r:?}"),
        pid = grandchild_pid(&dir) => pid,
    };
    assert!(!is_dead(pid));
    drop(fut);
    assert_dies(pid, "grandchild", "the drop").await;
}

#[tokio::test]
async fn background_jobs_do_not_outlive_the_command() {
    let (dir, tool) = setup();
    let out = tokio::time::timeout(
        Duration::from_secs(20),
        tool.call(
            json!({"command": "sleep 300 & echo $! > out/pid; echo done"}),
            &TaskContext::new(),
        ),
    )
    .await
    .expect("the call returns although a background job holds the output pipe")
    .unwrap();
    assert_eq!(out.content, "done\n");
    let pid = grandchild_pid(&dir).await;
    assert_dies(pid, "background job", "the command").await;
}

#[test]
fn credential_variables_are_recognised() {
    for name in [
        "OPENAI_API_KEY",
        "anthropic_api_key",
        "API_KEY",
        "GITHUB_AUTH_TOKEN",
        "AWS_SECRET_KEY",
    ] {
        assert!(subagent_tools::is_secret_env(name), "{name}");
    }
    for name in ["PATH", "HOME", "KEYBOARD", "API_KEYS_DIR"] {
        assert!(!subagent_tools::is_secret_env(name), "{name}");
    }
}
