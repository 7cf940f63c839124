//! Edit against inputs that would make it allocate without bound.

use serde_json::json;
use subagent_spi::{TaskContext, Tool, ToolError};
use subagent_tools::{EditTool, MAX_EDIT_FILE_BYTES, Workspace};

#[tokio::test]
async fn replace_all_that_would_grow_past_the_cap_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("a.txt");
    let original = "a".repeat(1000);
    std::fs::write(&file, &original).unwrap();
    let edit = EditTool::new(Workspace::new(dir.path()).unwrap());
    // 1,000 matches × 20 KiB = 20 MiB.
    let big = "b".repeat(20 * 1024);
    let r = edit
        .call(
            json!({"file_path": "a.txt", "old_string": "a", "new_string": big, "replace_all": true}),
            &TaskContext::new(),
        )
        .await;
    match r {
        Err(ToolError::Failed { message, .. }) => {
            assert!(
                message.contains(&MAX_EDIT_FILE_BYTES.to_string()),
                "{message}"
            )
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
    assert_eq!(std::fs::read_to_string(&file).unwrap(), original);
}

#[tokio::test]
async fn files_over_the_cap_are_not_read() {
    let dir = tempfile::tempdir().unwrap();
    let file = std::fs::File::create(dir.path().join("big.txt")).unwrap();
    // Sparse: no disk used.
    file.set_len(MAX_EDIT_FILE_BYTES + 1).unwrap();
    let edit = EditTool::new(Workspace::new(dir.path()).unwrap());
    let r = edit
        .call(
            json!({"file_path": "big.txt", "old_string": "x", "new_string": "y"}),
            &TaskContext::new(),
        )
        .await;
    match r {
        Err(ToolError::Failed { message, .. }) => {
            assert!(message.contains("more than Edit's limit"), "{message}")
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
}
