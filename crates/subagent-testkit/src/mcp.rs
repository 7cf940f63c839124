//! Helpers for tests that drive an MCP server through rmcp's client (feature `mcp`): the text
//! of a tool result, and polling a task (`tasks/get`) until it reaches a status.

use std::time::Duration;

use rmcp::model::{CallToolResult, DetailedTask, GetTaskParams, TaskStatus};
use rmcp::{Peer, RoleClient};

/// The text parts of a tool result, one per line.
pub fn tool_text(r: &CallToolResult) -> String {
    r.content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Polls `tasks/get` for task `id` every 50 ms until `done` holds for its status, and returns
/// the task. Panics when `tasks/get` fails or after 30 s.
pub async fn poll_task(
    client: &Peer<RoleClient>,
    id: &str,
    done: impl Fn(TaskStatus) -> bool,
) -> DetailedTask {
    for _ in 0..600 {
        let got = client
            .get_task(GetTaskParams::new(id))
            .await
            .expect("tasks/get answers");
        if done(got.task.status()) {
            return got.task;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("task {id} did not reach the awaited status in 30 s");
}
