//! Steering a running background task (issue 28, Claude Code's `SendMessage`): the `name` a
//! `Task` call may give its background agent, the inbox of each background task, and the
//! `SendMessage` tool that fills it.
//!
//! Who may send what to whom:
//! - a model reaches only the background tasks **its own run started** (by task id, or by the
//!   `name` the call gave them): a child cannot steer its siblings or its parent's other work;
//! - the host ([`TaskTool::send_message`], the facade's `send`) reaches any task of this
//!   process by task id or name;
//! - a message is at most [`InboxLimits::max_message_bytes`] bytes (default 16 KiB) and at most
//!   [`InboxLimits::max_messages`] (default 16) wait unread per task; a send over either is
//!   refused, saying which;
//! - the sender is told at once whether the message was accepted, and if not why (unknown,
//!   finished, the kind cannot receive, full inbox, too large, empty); an accepted message the
//!   task never read (it ended first) is listed in `TaskOutput`'s result for that task.

use std::fmt::Write as _;
use std::time::Duration;

use subagent_core::InboxError;
use subagent_spi::{InboxMessage, TaskContext, TaskStatus};

use crate::background::BackgroundRegistry;
use crate::background::BackgroundSnapshot;
use crate::mailbox::Scope;
use crate::offer::Companions;

pub use crate::mailbox::MAX_NAME_CHARS;

/// How many characters of each unread message `TaskOutput` shows.
const UNREAD_PREVIEW_CHARS: usize = 200;

/// Who the host's messages are from, as the receiving model reads it.
const HOST_SENDER: &str = "the application running you";

/// A message accepted for a running task.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct MessageReceipt {
    /// The task it went to.
    pub task_id: String,
    /// The task's agent.
    pub agent: String,
    /// The name its `Task` call gave it, if any.
    pub name: Option<String>,
    /// Messages now waiting unread for it, this one included.
    pub unread: usize,
    /// How its kind takes it ([`SubagentExecutor::message_delivery`]).
    ///
    /// [`SubagentExecutor::message_delivery`]: subagent_spi::SubagentExecutor::message_delivery
    pub delivery: &'static str,
}

/// Why a message was not accepted.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum SendMessageError {
    /// No background task of this process has that id or name (for a model: none its own run
    /// started).
    #[error(
        "no background task `{to}` (by task id or name) that you started is in this process; \
         your tasks: {}",
        if .yours.is_empty() { "(none)".to_string() } else { .yours.join(", ") }
    )]
    Unknown {
        /// The id or name asked for.
        to: String,
        /// The sender's tasks, running or recently finished (`id (name)`).
        yours: Vec<String>,
    },
    /// The task has ended.
    #[error("{}", finished_text(.task_id, .agent, *.status, .session_id.as_deref(), Companions::all()))]
    Finished {
        /// The task.
        task_id: String,
        /// Its agent.
        agent: String,
        /// How it ended (`running` when it was ending just then).
        status: TaskStatus,
        /// Its session, when it can be resumed.
        session_id: Option<String>,
    },
    /// The task's kind cannot take messages while it runs.
    #[error("{}", cannot_receive_text(.task_id, .agent, .kind, Companions::all()))]
    CannotReceive {
        /// The task.
        task_id: String,
        /// Its agent.
        agent: String,
        /// Its kind.
        kind: String,
    },
    /// The inbox refused it: full, too large, or empty.
    #[error("task `{task_id}` (agent `{agent}`) did not take it: {source}")]
    Refused {
        /// The task.
        task_id: String,
        /// Its agent.
        agent: String,
        /// Why.
        #[source]
        source: InboxError,
    },
}

impl SendMessageError {
    /// The text a model reads: as [`Display`](std::fmt::Display), naming only the `offered`
    /// companions of `Task` (crate::offer).
    pub(crate) fn text_for(&self, offered: Companions) -> String {
        match self {
            SendMessageError::Finished {
                task_id,
                agent,
                status,
                session_id,
            } => finished_text(task_id, agent, *status, session_id.as_deref(), offered),
            SendMessageError::CannotReceive {
                task_id,
                agent,
                kind,
            } => cannot_receive_text(task_id, agent, kind, offered),
            other => other.to_string(),
        }
    }
}

/// [`SendMessageError::Finished`]'s text, naming `TaskOutput` only when it is offered.
fn finished_text(
    task_id: &str,
    agent: &str,
    status: TaskStatus,
    session_id: Option<&str>,
    offered: Companions,
) -> String {
    let read = offered
        .output()
        .then_some("read its result with TaskOutput");
    let resume = session_id.map(|s| format!("continue it with Task and `resume`: \"{s}\""));
    let next = match (read, resume) {
        (Some(read), Some(resume)) => format!("; {read}, or {resume}"),
        (Some(read), None) => format!("; {read}"),
        (None, Some(resume)) => format!("; {resume}"),
        (None, None) => String::new(),
    };
    format!("task `{task_id}` (agent `{agent}`) has already finished (status {status}){next}")
}

/// [`SendMessageError::CannotReceive`]'s text, naming only the companions offered.
fn cannot_receive_text(task_id: &str, agent: &str, kind: &str, offered: Companions) -> String {
    let next = match (offered.output(), offered.stop()) {
        (true, true) => "; wait for its result with TaskOutput, or stop it with TaskStop",
        (true, false) => "; wait for its result with TaskOutput",
        (false, true) => "; stop it with TaskStop",
        (false, false) => "",
    };
    format!(
        "task `{task_id}` runs agent `{agent}` of kind `{kind}`, which cannot receive messages \
         while it runs{next}"
    )
}

/// Who is sending: the host (any task), or a run (only the tasks it started).
#[derive(Clone, Copy)]
pub(crate) enum Sender<'a> {
    Host,
    Run(&'a TaskContext),
}

/// Sends `message` from `sender` to the task `to` names among `bg`'s (results kept `ttl`).
pub(crate) fn send(
    bg: &BackgroundRegistry,
    ttl: Duration,
    sender: Sender<'_>,
    to: &str,
    message: &str,
) -> Result<MessageReceipt, SendMessageError> {
    let scope = match sender {
        Sender::Host => Scope::Any,
        Sender::Run(ctx) => Scope::StartedBy(ctx.task_id()),
    };
    let Some((task_id, entry)) = bg.addressable(to, scope, ttl) else {
        return Err(SendMessageError::Unknown {
            to: to.to_string(),
            yours: bg.tasks_of(scope, ttl),
        });
    };
    let finished = |entry: &crate::background::Entry| {
        let snap = entry.snapshot(&task_id, false);
        SendMessageError::Finished {
            task_id: task_id.clone(),
            status: snap.status(),
            agent: snap.agent,
            session_id: snap.session_id,
        }
    };
    if !entry.is_running() {
        return Err(finished(&entry));
    }
    let mailbox = entry.mailbox();
    let Some(delivery) = mailbox.delivery() else {
        return Err(SendMessageError::CannotReceive {
            task_id,
            agent: entry.agent().to_string(),
            kind: entry.kind().to_string(),
        });
    };
    let from = match sender {
        Sender::Host => HOST_SENDER.to_string(),
        Sender::Run(ctx) if ctx.agent().is_empty() => String::new(),
        Sender::Run(ctx) => ctx.agent().to_string(),
    };
    match mailbox.deliver(InboxMessage::new(from, message)) {
        Ok(unread) => Ok(MessageReceipt {
            task_id,
            agent: entry.agent().to_string(),
            name: mailbox.name().map(str::to_string),
            unread,
            delivery,
        }),
        Err(InboxError::Closed) => Err(finished(&entry)),
        Err(source) => Err(SendMessageError::Refused {
            task_id,
            agent: entry.agent().to_string(),
            source,
        }),
    }
}

/// The lines `TaskOutput` adds for messages a task ended without reading.
pub(crate) fn unread_text(s: &BackgroundSnapshot) -> Option<String> {
    if s.unread_messages.is_empty() {
        return None;
    }
    let n = s.unread_messages.len();
    let mut t = format!(
        "Not read: {n} message{} sent to this task arrived after its last step, so it never \
         read {}:",
        if n == 1 { "" } else { "s" },
        if n == 1 { "it" } else { "them" },
    );
    for m in &s.unread_messages {
        let preview: String = m.text.chars().take(UNREAD_PREVIEW_CHARS).collect();
        let cut = if preview.len() < m.text.len() {
            "…"
        } else {
            ""
        };
        let from = if m.from.is_empty() {
            "the caller"
        } else {
            &m.from
        };
        let _ = write!(t, "\n- from {from}: {preview}{cut}");
    }
    Some(t)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mailbox::{Mailbox, check_name};
    use subagent_core::InboxLimits;

    #[test]
    fn names_are_short_and_plain() {
        assert!(check_name("worker-1.a_b").is_ok());
        for bad in [
            "",
            "a b",
            "ünï",
            "x\u{1b}[31m",
            &"n".repeat(MAX_NAME_CHARS + 1),
        ] {
            let e = check_name(bad).expect_err(bad);
            assert!(e.to_string().contains("1 to 64"), "{e}");
        }
    }

    #[test]
    fn a_closed_mailbox_keeps_what_was_never_read() {
        let m = Mailbox::new(None, None, Some("it reads it"), InboxLimits::new(4, 64));
        let inbox = m.inbox_for_run().expect("receives");
        inbox.send(InboxMessage::new("main", "one")).unwrap();
        inbox.take();
        inbox.send(InboxMessage::new("main", "two")).unwrap();
        m.close();
        assert_eq!(m.unread(), [InboxMessage::new("main", "two")]);
        assert_eq!(
            inbox.send(InboxMessage::new("main", "three")),
            Err(InboxError::Closed)
        );
        // A kind that cannot receive gets no inbox.
        assert!(
            Mailbox::new(None, None, None, InboxLimits::default())
                .inbox_for_run()
                .is_none()
        );
    }
}
