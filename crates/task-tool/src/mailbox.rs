//! The messaging side of one background task ([`Mailbox`]: its name, its starter, its inbox)
//! and who may reach it ([`Scope`]).

use std::sync::Mutex;

use subagent_core::{Inbox, InboxError, InboxLimits};
use subagent_spi::{InboxMessage, SubagentError};

/// The longest `name` a `Task` call may give its agent, in characters.
pub const MAX_NAME_CHARS: usize = 64;

/// The messaging side of one background task.
pub(crate) struct Mailbox {
    /// The name its `Task` call gave it.
    name: Option<String>,
    /// The task id of the run that started it (`None`: the root).
    parent: Option<String>,
    /// How its kind takes messages; `None`: it cannot.
    delivery: Option<&'static str>,
    inbox: Inbox,
    /// Messages accepted but never read, once the task ended.
    unread: Mutex<Vec<InboxMessage>>,
}

impl Mailbox {
    /// The name its `Task` call gave it.
    pub(crate) fn name(&self) -> Option<&str> {
        self.name.as_deref()
    }

    /// The task id of the run that started it (`None`: the root).
    pub(crate) fn parent(&self) -> Option<&str> {
        self.parent.as_deref()
    }

    pub(crate) fn new(
        name: Option<String>,
        parent: Option<String>,
        delivery: Option<&'static str>,
        limits: InboxLimits,
    ) -> Self {
        Self {
            name,
            parent,
            delivery,
            inbox: Inbox::new(limits),
            unread: Mutex::new(Vec::new()),
        }
    }

    /// How its kind takes messages (`None`: it cannot).
    pub(crate) fn delivery(&self) -> Option<&'static str> {
        self.delivery
    }

    /// Puts a message in its inbox; see [`Inbox::send`].
    pub(crate) fn deliver(&self, message: InboxMessage) -> Result<usize, InboxError> {
        self.inbox.send(message)
    }

    /// The inbox to hand the run, when its kind reads one.
    pub(crate) fn inbox_for_run(&self) -> Option<Inbox> {
        self.delivery.map(|_| self.inbox.clone())
    }

    /// The run ended: later sends are refused, and what it never read is kept for `TaskOutput`.
    pub(crate) fn close(&self) {
        let left = self.inbox.close();
        if !left.is_empty() {
            lock(&self.unread).extend(left);
        }
    }

    /// Messages accepted but never read (empty while the task runs).
    pub(crate) fn unread(&self) -> Vec<InboxMessage> {
        lock(&self.unread).clone()
    }
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Checks the `name` a `Task` call gives its agent: at most [`MAX_NAME_CHARS`] characters,
/// ASCII letters, digits, `-`, `_` and `.` only.
pub(crate) fn check_name(name: &str) -> Result<(), SubagentError> {
    let ok = !name.is_empty()
        && name.chars().count() <= MAX_NAME_CHARS
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if ok {
        Ok(())
    } else {
        Err(SubagentError::InvalidInput(format!(
            "the name `{}` is not accepted: use 1 to {MAX_NAME_CHARS} ASCII letters, digits, \
             `-`, `_` or `.`",
            name.chars()
                .take(MAX_NAME_CHARS)
                .collect::<String>()
                .escape_debug()
        )))
    }
}

/// The tasks a sender may reach: any (the host), or those a run started (`None`: the root).
#[derive(Clone, Copy)]
pub(crate) enum Scope<'a> {
    Any,
    StartedBy(Option<&'a str>),
}

impl Scope<'_> {
    /// True when a task started by the run `parent` is in scope.
    pub(crate) fn admits(self, parent: Option<&str>) -> bool {
        match self {
            Scope::Any => true,
            Scope::StartedBy(p) => p == parent,
        }
    }
}
