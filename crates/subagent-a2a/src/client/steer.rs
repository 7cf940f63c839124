//! Messages sent to a running A2A child (Claude Code's `SendMessage`, issue 28).
//!
//! A2A has no way to add a message to a task while it works: a client may send a message on a
//! task only when the task waits for one (`input-required`). So messages sent to this run wait
//! in its inbox, and when the remote task next asks for input they are sent, all together, as
//! the follow-up message on the same task and context, before the caller's approver is asked.
//! A message that arrives while the caller's approver is still being asked (a background run
//! whose question waits in `TaskOutput`) answers the question too: the task is asking now.
//! An approval question of one of our servers (an [`ApprovalQuestion`] in the status metadata)
//! is never answered with them: it needs a yes or a no. What the run never sent is reported to
//! the sender as unread when the run ends.

use std::time::Duration;

use subagent_spi::{ProgressKind, TaskContext};

use crate::types::JsonObject;
use crate::types::approval::ApprovalQuestion;

/// How an A2A child takes messages, as the sender is told.
pub(super) const DELIVERY: &str = "the remote A2A agent gets it as the follow-up message on the \
     same task when it next asks for input (A2A cannot add to a task while it works)";

/// The follow-up text made of the messages waiting for this run, when the remote task asks for
/// input (`waiting_for_input`) with a question that is not an approval question.
pub(super) fn follow_up_text(
    waiting_for_input: bool,
    question_metadata: Option<&JsonObject>,
    ctx: &TaskContext,
) -> Option<String> {
    if !waiting_for_input || ApprovalQuestion::from_metadata(question_metadata).is_some() {
        return None;
    }
    let taken = ctx.messages()?.take();
    if taken.is_empty() {
        return None;
    }
    ctx.emit(ProgressKind::Status {
        message: format!(
            "sent {} message{} to the remote agent as the input it asked for",
            taken.len(),
            if taken.len() == 1 { "" } else { "s" }
        ),
    });
    let texts: Vec<String> = taken.into_iter().map(|m| m.text).collect();
    Some(texts.join("\n\n"))
}

/// How often a run waiting for its approver's answer to a remote question looks for messages.
const INBOX_POLL: Duration = Duration::from_millis(50);

/// Waits until a message is sent to this run while the remote task asks a plain question (not
/// an approval question, `question_metadata`; the caller checks it is `input-required`), then
/// takes the waiting messages as the follow-up text ([`follow_up_text`]). Never completes
/// without an inbox, for an approval question, or once the inbox is closed.
pub(super) async fn arrival(question_metadata: Option<&JsonObject>, ctx: &TaskContext) -> String {
    let Some(inbox) = ctx
        .messages()
        .filter(|_| ApprovalQuestion::from_metadata(question_metadata).is_none())
    else {
        return std::future::pending().await;
    };
    while !inbox.is_closed() {
        if inbox.has_unread()
            && let Some(text) = follow_up_text(true, question_metadata, ctx)
        {
            return text;
        }
        tokio::time::sleep(INBOX_POLL).await;
    }
    std::future::pending().await
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use subagent_core::Inbox;
    use subagent_spi::InboxMessage;

    #[test]
    fn messages_answer_a_plain_question_but_never_an_approval_question() {
        let inbox = Inbox::default();
        let ctx = TaskContext::new().with_messages(Arc::new(inbox.clone()));
        assert_eq!(follow_up_text(true, None, &ctx), None);
        inbox.send(InboxMessage::new("main", "use v2")).unwrap();
        inbox
            .send(InboxMessage::new("main", "and be brief"))
            .unwrap();
        // Not waiting for input: the messages wait.
        assert_eq!(follow_up_text(false, None, &ctx), None);
        let approval = ApprovalQuestion::from_request(&subagent_spi::ApprovalRequest::new(
            vec!["a".into()],
            "Bash",
            "rm -rf x",
            "asks",
        ))
        .to_metadata();
        assert_eq!(follow_up_text(true, Some(&approval), &ctx), None);
        assert_eq!(inbox.unread(), 2);
        assert_eq!(
            follow_up_text(true, None, &ctx).as_deref(),
            Some("use v2\n\nand be brief")
        );
        assert_eq!(inbox.unread(), 0);
    }
}
