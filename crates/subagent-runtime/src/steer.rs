//! Messages sent to a running agent (Claude Code's `SendMessage`): the loop reads its
//! [`Inbox`](subagent_spi::Inbox) at each turn boundary and gives the model what arrived as a
//! user message.

use subagent_spi::chat::ChatMessage;
use subagent_spi::{InboxMessage, ProgressKind, TaskContext};

/// The text that starts the user message carrying messages sent to a running agent.
pub const STEER_MESSAGE_PREFIX: &str = "[While you were working, you received";

/// Takes the messages that arrived since the last turn and appends them to `messages` as one
/// user message (announced with a `Status` progress event). Returns how many were read.
pub(crate) fn deliver(ctx: &TaskContext, messages: &mut Vec<ChatMessage>) -> usize {
    let Some(inbox) = ctx.messages() else {
        return 0;
    };
    let taken = inbox.take();
    if taken.is_empty() {
        return 0;
    }
    let n = taken.len();
    ctx.emit(ProgressKind::Status {
        message: format!(
            "read {n} message{} sent to it while it ran",
            if n == 1 { "" } else { "s" }
        ),
    });
    messages.push(ChatMessage::user(render(&taken)));
    n
}

/// True when messages wait to be read: a run about to end takes one more turn for them.
pub(crate) fn pending(ctx: &TaskContext) -> bool {
    ctx.messages().is_some_and(|i| i.has_unread())
}

/// The user message carrying `messages`, oldest first.
fn render(messages: &[InboxMessage]) -> String {
    let mut out = format!(
        "{STEER_MESSAGE_PREFIX} {} message{} from the agent that started you. Take {} into \
         account and carry on with your task.]",
        messages.len(),
        if messages.len() == 1 { "" } else { "s" },
        if messages.len() == 1 { "it" } else { "them" },
    );
    for m in messages {
        out.push_str("\n\n[Message from ");
        out.push_str(if m.from.is_empty() {
            "the caller"
        } else {
            &m.from
        });
        out.push_str("]\n");
        out.push_str(&m.text);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use subagent_core::Inbox;

    #[test]
    fn delivery_takes_everything_once_as_one_user_message() {
        let inbox = Inbox::default();
        let ctx = TaskContext::new().with_messages(Arc::new(inbox.clone()));
        let mut messages = vec![ChatMessage::user("task")];
        assert_eq!(deliver(&ctx, &mut messages), 0);
        assert_eq!(messages.len(), 1);
        inbox
            .send(InboxMessage::new("main", "focus on src/"))
            .unwrap();
        inbox.send(InboxMessage::new("", "and skip tests")).unwrap();
        assert!(pending(&ctx));
        assert_eq!(deliver(&ctx, &mut messages), 2);
        assert!(!pending(&ctx));
        let ChatMessage::User { content } = &messages[1] else {
            panic!("a user message: {messages:?}");
        };
        assert!(content.starts_with(STEER_MESSAGE_PREFIX), "{content}");
        assert!(
            content.contains("[Message from main]\nfocus on src/"),
            "{content}"
        );
        assert!(
            content.contains("[Message from the caller]\nand skip tests"),
            "{content}"
        );
        assert_eq!(deliver(&ctx, &mut messages), 0);
        // A child's context does not read its parent's inbox.
        inbox.send(InboxMessage::new("main", "x")).unwrap();
        assert!(!pending(&ctx.child("c", None)));
    }
}
