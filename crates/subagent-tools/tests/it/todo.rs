//! TodoWrite keeps and echoes a list.

use serde_json::json;
use subagent_spi::{TaskContext, Tool, ToolError};
use subagent_tools::{TodoStatus, TodoWriteTool};

#[tokio::test]
async fn todo_write_keeps_and_echoes_the_list() {
    let tool = TodoWriteTool::new();
    let ctx = TaskContext::new();
    let out = tool
        .call(
            json!({"todos": [
                {"content": "Read the code", "status": "completed"},
                {"content": "Fix the bug", "status": "in_progress", "activeForm": "Fixing the bug"},
                {"content": "Run the tests", "status": "pending"}
            ]}),
            &ctx,
        )
        .await
        .unwrap();
    assert_eq!(
        out.content,
        "Todo list (1/3 done):\n[x] Read the code\n[>] Fix the bug\n[ ] Run the tests\n"
    );
    let todos = tool.todos();
    assert_eq!(todos.len(), 3);
    assert_eq!(todos[1].status, TodoStatus::InProgress);
    assert_eq!(todos[1].active_form.as_deref(), Some("Fixing the bug"));

    let refused = async |item: serde_json::Value| {
        tool.call(json!({ "todos": [item] }), &ctx)
            .await
            .unwrap_err()
    };
    let err = refused(json!({"content": "x", "status": "maybe"})).await;
    assert!(matches!(err, ToolError::InvalidInput { .. }));
    let err = refused(json!({"content": " ", "status": "pending"})).await;
    assert!(err.to_string().contains("item 1"), "{err}");
    assert_eq!(
        tool.todos().len(),
        3,
        "a rejected update keeps the old list"
    );
}
