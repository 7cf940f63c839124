//! Hard links and special files in the workspace: a hard link whose other name is outside the
//! workspace must not let Read, Write, Edit or Grep reach the outside file.
#![cfg(unix)]

use std::path::Path;

use serde_json::{Value, json};
use subagent_spi::{TaskContext, Tool, ToolError, ToolOutput};
use subagent_tools::{EditTool, GrepTool, ReadTool, Workspace, WriteTool};

async fn call(tool: &dyn Tool, input: Value) -> Result<ToolOutput, ToolError> {
    tool.call(input, &TaskContext::new()).await
}

fn text(out: &ToolOutput) -> String {
    out.content.clone()
}

/// Asserts a refusal that explains the hard links.
fn assert_hard_link_refusal(r: Result<ToolOutput, ToolError>, links: u64) {
    match r {
        Err(ToolError::Denied { message, .. }) => {
            assert!(
                message.contains(&format!("{links} hard links")),
                "gives the count: {message}"
            );
            assert!(
                message.contains("outside the workspace"),
                "says why: {message}"
            );
            assert!(message.contains("linked.txt"), "names the file: {message}");
        }
        other => panic!("expected Denied for a hard-linked file, got {other:?}"),
    }
}

struct Linked {
    _ws_dir: tempfile::TempDir,
    _outside_dir: tempfile::TempDir,
    ws: Workspace,
    outside: std::path::PathBuf,
    inside: std::path::PathBuf,
}

const SECRET: &str = "secret outside the workspace\nline two\n";

/// `<outside>/secret.txt` hard-linked as `<ws>/linked.txt`. Both temporary directories live
/// under the same temporary root, so they share a file system.
fn linked() -> Linked {
    let ws_dir = tempfile::tempdir().unwrap();
    let outside_dir = tempfile::tempdir().unwrap();
    let outside = outside_dir.path().join("secret.txt");
    std::fs::write(&outside, SECRET).unwrap();
    let inside = ws_dir.path().join("linked.txt");
    std::fs::hard_link(&outside, &inside).unwrap();
    Linked {
        ws: Workspace::new(ws_dir.path()).unwrap(),
        _ws_dir: ws_dir,
        _outside_dir: outside_dir,
        outside,
        inside,
    }
}

fn unchanged(path: &Path) {
    assert_eq!(std::fs::read_to_string(path).unwrap(), SECRET);
}

#[tokio::test]
async fn read_write_and_edit_refuse_hard_linked_files() {
    let l = linked();
    let read = ReadTool::new(l.ws.clone());
    assert_hard_link_refusal(call(&read, json!({"file_path": "linked.txt"})).await, 2);
    let abs = l.inside.display().to_string();
    assert_hard_link_refusal(call(&read, json!({"file_path": abs})).await, 2);

    let write = WriteTool::new(l.ws.clone());
    assert_hard_link_refusal(
        call(
            &write,
            json!({"file_path": "linked.txt", "content": "pwned"}),
        )
        .await,
        2,
    );
    unchanged(&l.outside);

    let edit = EditTool::new(l.ws.clone());
    assert_hard_link_refusal(
        call(
            &edit,
            json!({"file_path": "linked.txt", "old_string": "secret", "new_string": "pwned"}),
        )
        .await,
        2,
    );
    unchanged(&l.outside);
    unchanged(&l.inside);
}

#[tokio::test]
async fn three_links_are_counted() {
    let l = linked();
    let third_dir = tempfile::tempdir().unwrap();
    std::fs::hard_link(&l.outside, third_dir.path().join("third.txt")).unwrap();
    let read = ReadTool::new(l.ws.clone());
    assert_hard_link_refusal(call(&read, json!({"file_path": "linked.txt"})).await, 3);
}

#[tokio::test]
async fn grep_does_not_search_hard_linked_files() {
    let l = linked();
    std::fs::write(
        l.inside.parent().unwrap().join("plain.txt"),
        "secret in plain\n",
    )
    .unwrap();
    let grep = GrepTool::new(l.ws.clone());
    for mode in ["files_with_matches", "content", "count"] {
        let out = call(&grep, json!({"pattern": "secret", "output_mode": mode}))
            .await
            .unwrap();
        let t = text(&out);
        assert!(t.contains("plain.txt"), "{mode}: {t}");
        assert!(!t.contains("linked.txt"), "{mode}: {t}");
        assert!(
            t.contains("1 file with more than one hard link"),
            "{mode}: {t}"
        );
    }
    // Naming the file directly is refused outright.
    assert_hard_link_refusal(
        call(&grep, json!({"pattern": "secret", "path": "linked.txt"})).await,
        2,
    );
}

#[tokio::test]
async fn a_file_whose_other_link_is_removed_is_usable_again() {
    let l = linked();
    std::fs::remove_file(&l.outside).unwrap();
    let read = ReadTool::new(l.ws.clone());
    let out = call(&read, json!({"file_path": "linked.txt"}))
        .await
        .unwrap();
    assert!(text(&out).contains("line two"));
    let write = WriteTool::new(l.ws.clone());
    call(&write, json!({"file_path": "linked.txt", "content": "new"}))
        .await
        .unwrap();
    assert_eq!(std::fs::read_to_string(&l.inside).unwrap(), "new");
}

#[tokio::test]
async fn write_still_creates_and_truncates() {
    let l = linked();
    let write = WriteTool::new(l.ws.clone());
    call(
        &write,
        json!({"file_path": "new/file.txt", "content": "long content here"}),
    )
    .await
    .unwrap();
    call(
        &write,
        json!({"file_path": "new/file.txt", "content": "short"}),
    )
    .await
    .unwrap();
    let p = l.ws.root().join("new/file.txt");
    assert_eq!(std::fs::read_to_string(&p).unwrap(), "short");
    let edit = EditTool::new(l.ws.clone());
    call(
        &edit,
        json!({"file_path": "new/file.txt", "old_string": "short", "new_string": "s"}),
    )
    .await
    .unwrap();
    assert_eq!(std::fs::read_to_string(&p).unwrap(), "s");
}

#[tokio::test]
async fn read_refuses_a_fifo_instead_of_hanging() {
    let l = linked();
    let fifo = l.ws.root().join("pipe");
    let status = std::process::Command::new("mkfifo").arg(&fifo).status();
    if !status.is_ok_and(|s| s.success()) {
        println!("NOTICE: mkfifo unavailable; skipped");
        return;
    }
    let read = ReadTool::new(l.ws.clone());
    let r = tokio::time::timeout(
        std::time::Duration::from_secs(5),
        call(&read, json!({"file_path": "pipe"})),
    )
    .await
    .expect("Read returns instead of blocking on the FIFO");
    match r {
        Err(ToolError::Failed { message, .. }) => {
            assert!(message.contains("not a regular file"), "{message}")
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
    let edit = EditTool::new(l.ws.clone());
    let r = tokio::time::timeout(
        std::time::Duration::from_secs(5),
        call(
            &edit,
            json!({"file_path": "pipe", "old_string": "a", "new_string": "b"}),
        ),
    )
    .await
    .expect("Edit returns instead of blocking on the FIFO");
    assert!(r.is_err());
}
