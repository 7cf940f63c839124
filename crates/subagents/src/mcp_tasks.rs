//! MCP tasks (`io.modelcontextprotocol/tasks`) as the `Task` tool's background tasks: a
//! `Task` call a client wants as a task starts a background task, and `tasks/get`,
//! `tasks/update` and `tasks/cancel` read it, answer its approval question and stop it, as
//! `TaskOutput` and `TaskStop` do (the same tasks, limits, retention and ledger).

use std::time::Duration;

use subagent_mcp::{McpTaskBackend, McpTaskState};
use subagent_spi::{
    ApprovalDecision, TaskCall, TaskContext, TaskStatus, Tool, ToolError, ToolOutput, async_trait,
};
use task_tool::{BackgroundState, Dispatch, TaskTool};

/// The [`McpTaskBackend`] of [`Subagents::mcp_server`](crate::Subagents::mcp_server).
pub(crate) struct TaskBackend {
    task: TaskTool,
}

impl TaskBackend {
    pub(crate) fn new(task: TaskTool) -> Self {
        Self { task }
    }

    /// A finished task's result as `TaskOutput` renders it (read as the host: the MCP server
    /// answers only the caller that created the task).
    async fn rendered(&self, task_id: &str, fallback: &str) -> ToolOutput {
        match self.task.output(task_id, None).await {
            Ok(snapshot) => self.task.output_tool().render(&snapshot),
            Err(_) => ToolOutput::error(fallback.to_string()),
        }
    }
}

#[async_trait]
impl McpTaskBackend for TaskBackend {
    fn runs_as_task(&self, tool: &str) -> bool {
        tool == self.task.name()
    }

    async fn start(
        &self,
        tool: &str,
        input: serde_json::Value,
        ctx: TaskContext,
    ) -> Result<String, ToolError> {
        let mut call: TaskCall =
            serde_json::from_value(input).map_err(|e| ToolError::InvalidInput {
                tool: tool.to_string(),
                message: format!("{e}. Required fields: description, prompt, subagent_type."),
            })?;
        call.run_in_background = Some(true);
        match self.task.dispatch(call, &ctx).await {
            Ok(Dispatch::Background { task_id, .. }) => Ok(task_id),
            Ok(_) => Err(ToolError::Failed {
                tool: tool.to_string(),
                message: "the call ran in the foreground instead of starting a task".into(),
            }),
            Err(e) => Err(ToolError::Failed {
                tool: tool.to_string(),
                message: e.to_string(),
            }),
        }
    }

    async fn state(&self, task_id: &str) -> Result<McpTaskState, String> {
        let snapshot = self
            .task
            .output(task_id, None)
            .await
            .map_err(|e| e.to_string())?;
        Ok(match &snapshot.state {
            BackgroundState::Queued => McpTaskState::Working {
                message: Some("queued: waiting for a place under the concurrency cap".into()),
            },
            BackgroundState::WaitingForApproval(q) => McpTaskState::WaitingForApproval(q.clone()),
            BackgroundState::Finished(o) if o.status == TaskStatus::Cancelled => {
                McpTaskState::Cancelled
            }
            BackgroundState::Finished(o) => {
                McpTaskState::Completed(self.rendered(task_id, &o.text).await)
            }
            BackgroundState::Failed(why) => {
                McpTaskState::Completed(self.rendered(task_id, why).await)
            }
            _ => McpTaskState::Working {
                message: Some(format!("{} is working", snapshot.agent)),
            },
        })
    }

    fn answer(&self, task_id: &str, decision: ApprovalDecision) -> Result<(), String> {
        self.task
            .answer_approval(task_id, decision)
            .map(|_| ())
            .map_err(|e| e.to_string())
    }

    async fn cancel(&self, task_id: &str) -> Result<(), String> {
        // Known here? Then stop it without waiting for it to wind down.
        self.task
            .output(task_id, None)
            .await
            .map_err(|e| e.to_string())?;
        let task = self.task.clone();
        let id = task_id.to_string();
        tokio::spawn(async move {
            let _ = task.stop(&id).await;
        });
        Ok(())
    }

    fn ttl(&self) -> Option<Duration> {
        Some(self.task.config().result_ttl)
    }

    async fn changed(&self, task_id: &str, within: Duration) {
        // Returns when the task ends or waits for an approval answer (or after `within`).
        let _ = self.task.watch_background(task_id, within).await;
    }
}
