//! Steering a running background task from the host (issue 28; the model's tool is
//! `SendMessage`).

use task_tool::{MessageReceipt, SendMessageError};

use crate::Subagents;

impl Subagents {
    /// Sends `text` to a running background task of this process: `task_id` is the id
    /// [`dispatch`](Self::dispatch) returned (or the `name` its `Task` call gave it). The task
    /// reads it as its kind allows ([`MessageReceipt::delivery`]: a Markdown agent at its next
    /// turn boundary, an A2A agent as the follow-up message when it next asks for input). A task
    /// that ends before reading it lists it in
    /// [`BackgroundSnapshot::unread_messages`](crate::BackgroundSnapshot::unread_messages).
    ///
    /// Refused, saying why, when the task is unknown or finished, its kind cannot receive
    /// messages, its inbox is full, or the text is empty or too large
    /// ([`inbox_limits`](crate::SubagentsBuilder::inbox_limits)).
    pub fn send(&self, task_id: &str, text: &str) -> Result<MessageReceipt, SendMessageError> {
        self.task.send_message(task_id, text)
    }
}
