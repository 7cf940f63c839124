//! Background tasks on MCP agents whose server runs the call as a task (SEP-2663): the task
//! lives on the server, so it outlives the process that started it. After a restart,
//! [`Subagents::resume_background`](crate::Subagents::resume_background) follows it by its
//! stored handle (the session `mcp-task:ID`), and
//! [`Subagents::stop_background`](crate::Subagents::stop_background) of such an interrupted
//! task cancels it on the server (`tasks/cancel`) instead of only reporting its end.

use subagent_spi::TaskStatus;
use task_tool::BackgroundSnapshot;

use crate::Subagents;

impl Subagents {
    /// When `snap` is a task that ended with its process (`interrupted`) while its MCP
    /// server still held it as a task, sends `tasks/cancel` to that server (the agent must
    /// be one of this assembly's MCP agents, whose endpoint the record does not keep) and
    /// says in the snapshot's note what happened. Any other snapshot is returned as it is.
    pub(crate) async fn cancel_remote_mcp_task(
        &self,
        mut snap: BackgroundSnapshot,
    ) -> BackgroundSnapshot {
        if snap.status() != TaskStatus::Interrupted {
            return snap;
        }
        let Some(remote) = snap
            .session_id
            .as_deref()
            .and_then(subagent_mcp::task_of_session)
            .map(str::to_string)
        else {
            return snap;
        };
        let endpoint = self.task.find(&snap.agent).and_then(|def| {
            def.downcast_ref::<subagent_mcp::McpSubagentDefinition>()
                .map(|d| d.endpoint().clone())
        });
        let note = match endpoint {
            None => format!(
                "its MCP server may still run it as task {remote}: to cancel it there, name the \
                 MCP agent `{}` (e.g. with --mcp) when stopping it",
                snap.agent
            ),
            Some(endpoint) => {
                match subagent_mcp::McpPool::new()
                    .cancel_task(&endpoint, &remote)
                    .await
                {
                    Ok(()) => format!(
                        "cancelled on its MCP server ({}): tasks/cancel for task {remote} was \
                         acknowledged",
                        endpoint.label()
                    ),
                    Err(e) => format!("not cancelled on its MCP server: {e}"),
                }
            }
        };
        snap.note = Some(match snap.note.take() {
            Some(n) => format!("{n}; {note}"),
            None => note,
        });
        snap
    }
}
