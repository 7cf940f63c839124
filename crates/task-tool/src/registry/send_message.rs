//! The `SendMessage` tool: a model's way to message a background task it started (the
//! delivery itself is `crate::steer`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use subagent_spi::{TaskContext, ToolError, ToolOutput};

use crate::offer::Companions;

use super::TaskTool;
use crate::steer::{MessageReceipt, Sender};

/// Input of `SendMessage`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct SendMessageInput {
    /// The task id Task returned, or the `name` you gave it.
    pub to: String,
    /// New instructions, a correction, or information the task needs.
    pub message: String,
}

/// `SendMessage`: sends a message to a running background task the caller started.
#[derive(Debug, Clone)]
pub struct SendMessageTool {
    task: TaskTool,
}

impl SendMessageTool {
    pub(crate) fn new(task: TaskTool) -> Self {
        Self { task }
    }

    /// Its description: background tasks are named only when `TaskOutput` is offered (without
    /// it `Task` starts none, see `crate::offer`).
    pub(crate) fn description_text(&self) -> String {
        let which = if self.task.companions().output() {
            "a background task you started with Task"
        } else {
            "a task you started with Task"
        };
        format!("Send a message to {which} while it runs; it reads it at its next step.")
    }

    pub(crate) async fn run(
        &self,
        input: SendMessageInput,
        ctx: &TaskContext,
    ) -> Result<ToolOutput, ToolError> {
        Ok(
            match self
                .task
                .send_as(Sender::Run(ctx), &input.to, &input.message)
            {
                Ok(r) => ToolOutput::text(receipt_text(&r, self.task.companions())),
                Err(e) => ToolOutput::error(format!(
                    "Message not delivered: {}.",
                    e.text_for(self.task.companions())
                )),
            },
        )
    }
}

/// What the sender reads when a message was accepted; `TaskOutput` is named only when it is
/// offered (crate::offer).
fn receipt_text(r: &MessageReceipt, offered: Companions) -> String {
    let name = r
        .name
        .as_deref()
        .map(|n| format!(", name `{n}`"))
        .unwrap_or_default();
    let unread = if offered.output() {
        " If the task ends before reading it, TaskOutput lists it as unread."
    } else {
        ""
    };
    format!(
        "Message delivered to task `{}` (agent `{}`{name}): {}. {} message{} now wait{} \
         unread.{unread}",
        r.task_id,
        r.agent,
        r.delivery,
        r.unread,
        if r.unread == 1 { "" } else { "s" },
        if r.unread == 1 { "s" } else { "" },
    )
}
