//! The stock inbox of a running task (Claude Code's `SendMessage`): a bounded queue that the
//! sender fills and the run reads at its turn boundaries. Moved here from the SPI (issue 43):
//! the contract keeps the run's view ([`MessageInbox`]) and the record ([`InboxMessage`]); the
//! queue, its limits and the texts of its refusals are host policy.
//!
//! The host (the `Task` tool) makes one [`Inbox`] per background run whose kind can receive
//! messages ([`SubagentExecutor::message_delivery`](subagent_spi::SubagentExecutor::message_delivery))
//! and hands it to the run in its context
//! ([`TaskContext::with_messages`](subagent_spi::TaskContext::with_messages));
//! a child's context never inherits it. The run [`take`](Inbox::take)s what arrived whenever it
//! can act on it; when the run ends the host [`close`](Inbox::close)s the inbox, gets back what
//! was never read, and tells the sender. Nothing is lost silently: a send is refused with an
//! [`InboxError`] saying why, or accepted and later either read or reported unread.
//!
//! Messages are untrusted text (a model wrote them): both their number and their size are
//! bounded ([`InboxLimits`]).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use subagent_spi::{InboxMessage, MessageInbox};

/// Unread messages an inbox holds by default.
pub const DEFAULT_MAX_INBOX_MESSAGES: usize = 16;

/// Bytes (UTF-8) one message may have by default.
pub const DEFAULT_MAX_MESSAGE_BYTES: usize = 16 * 1024;

/// The bounds of an [`Inbox`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct InboxLimits {
    /// Unread messages held at once; a send beyond it is refused ([`InboxError::Full`]).
    pub max_messages: usize,
    /// Bytes one message may have; a longer one is refused ([`InboxError::TooLarge`]).
    pub max_message_bytes: usize,
}

impl Default for InboxLimits {
    fn default() -> Self {
        Self {
            max_messages: DEFAULT_MAX_INBOX_MESSAGES,
            max_message_bytes: DEFAULT_MAX_MESSAGE_BYTES,
        }
    }
}

#[allow(deprecated)]
impl From<subagent_spi::InboxLimits> for InboxLimits {
    /// The same bounds, from the 0.3 record the SPI used to carry.
    fn from(l: subagent_spi::InboxLimits) -> Self {
        Self::new(l.max_messages, l.max_message_bytes)
    }
}

impl InboxLimits {
    /// Limits of `max_messages` unread messages of at most `max_message_bytes` bytes each.
    pub fn new(max_messages: usize, max_message_bytes: usize) -> Self {
        Self {
            max_messages,
            max_message_bytes,
        }
    }
}

/// Why a message was not accepted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum InboxError {
    /// The run has ended: nothing reads this inbox any more.
    #[error("the task has already finished, so nothing reads its messages")]
    Closed,
    /// As many messages as the limit wait unread.
    #[error(
        "its inbox is full: {max} messages wait unread (the limit); it reads them at its next turn"
    )]
    Full {
        /// The limit ([`InboxLimits::max_messages`]).
        max: usize,
    },
    /// The message is longer than the limit.
    #[error("the message is {bytes} bytes, over the limit of {max} bytes per message")]
    TooLarge {
        /// The message's size.
        bytes: usize,
        /// The limit ([`InboxLimits::max_message_bytes`]).
        max: usize,
    },
    /// The message has no text (whitespace aside).
    #[error("the message is empty")]
    Empty,
}

/// A bounded queue of messages to one running task. Cheap to clone: clones share the queue.
#[derive(Clone)]
pub struct Inbox {
    inner: Arc<Shared>,
}

struct Shared {
    limits: InboxLimits,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    queue: VecDeque<InboxMessage>,
    closed: bool,
    /// Messages taken by the run so far.
    read: u64,
}

impl std::fmt::Debug for Inbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = self.state();
        f.debug_struct("Inbox")
            .field("limits", &self.inner.limits)
            .field("unread", &s.queue.len())
            .field("read", &s.read)
            .field("closed", &s.closed)
            .finish()
    }
}

impl Default for Inbox {
    fn default() -> Self {
        Self::new(InboxLimits::default())
    }
}

impl Inbox {
    /// An open, empty inbox with these limits.
    pub fn new(limits: InboxLimits) -> Self {
        Self {
            inner: Arc::new(Shared {
                limits,
                state: Mutex::new(State::default()),
            }),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.inner
            .state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The limits.
    pub fn limits(&self) -> InboxLimits {
        self.inner.limits
    }

    /// Queues a message for the run; returns how many messages now wait unread (this one
    /// included). Refused when the message is empty or too large, the inbox is full, or the run
    /// has ended.
    pub fn send(&self, message: InboxMessage) -> Result<usize, InboxError> {
        let limits = self.inner.limits;
        if message.text.trim().is_empty() {
            return Err(InboxError::Empty);
        }
        if message.text.len() > limits.max_message_bytes {
            return Err(InboxError::TooLarge {
                bytes: message.text.len(),
                max: limits.max_message_bytes,
            });
        }
        let mut s = self.state();
        if s.closed {
            return Err(InboxError::Closed);
        }
        if s.queue.len() >= limits.max_messages {
            return Err(InboxError::Full {
                max: limits.max_messages,
            });
        }
        s.queue.push_back(message);
        Ok(s.queue.len())
    }

    /// Takes every unread message, oldest first (the run calls it at a turn boundary).
    pub fn take(&self) -> Vec<InboxMessage> {
        let mut s = self.state();
        let taken: Vec<InboxMessage> = s.queue.drain(..).collect();
        s.read += taken.len() as u64;
        taken
    }

    /// True when messages wait unread.
    pub fn has_unread(&self) -> bool {
        !self.state().queue.is_empty()
    }

    /// Messages waiting unread.
    pub fn unread(&self) -> usize {
        self.state().queue.len()
    }

    /// Messages the run has taken so far.
    pub fn read(&self) -> u64 {
        self.state().read
    }

    /// Ends reception (the run has ended): later sends are refused with
    /// [`InboxError::Closed`]. Returns the messages that were never read, oldest first, for the
    /// host to report.
    pub fn close(&self) -> Vec<InboxMessage> {
        let mut s = self.state();
        s.closed = true;
        s.queue.drain(..).collect()
    }

    /// True once [`close`](Self::close) was called.
    pub fn is_closed(&self) -> bool {
        self.state().closed
    }
}

impl MessageInbox for Inbox {
    fn take(&self) -> Vec<InboxMessage> {
        Inbox::take(self)
    }

    fn unread(&self) -> usize {
        Inbox::unread(self)
    }

    fn is_closed(&self) -> bool {
        Inbox::is_closed(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sends_are_bounded_in_count_and_size_and_refused_once_closed() {
        let inbox = Inbox::new(InboxLimits::new(2, 8));
        assert_eq!(inbox.send(InboxMessage::new("a", "one")), Ok(1));
        assert_eq!(
            inbox.send(InboxMessage::new("a", "123456789")),
            Err(InboxError::TooLarge { bytes: 9, max: 8 })
        );
        assert_eq!(
            inbox.send(InboxMessage::new("a", " \n")),
            Err(InboxError::Empty)
        );
        assert_eq!(inbox.send(InboxMessage::new("a", "two")), Ok(2));
        assert_eq!(
            inbox.send(InboxMessage::new("a", "three")),
            Err(InboxError::Full { max: 2 })
        );
        let taken = inbox.take();
        assert_eq!(
            taken.iter().map(|m| m.text.as_str()).collect::<Vec<_>>(),
            ["one", "two"]
        );
        assert_eq!(inbox.read(), 2);
        assert!(!inbox.has_unread());
        // Room again once read; the clone shares the queue.
        inbox
            .clone()
            .send(InboxMessage::new("b", "four"))
            .expect("room");
        assert_eq!(inbox.unread(), 1);
        let unread = inbox.close();
        assert_eq!(unread, [InboxMessage::new("b", "four")]);
        assert!(inbox.is_closed());
        assert_eq!(
            inbox.send(InboxMessage::new("a", "late")),
            Err(InboxError::Closed)
        );
        assert!(inbox.take().is_empty());
        // The error texts name the limits.
        assert!(
            InboxError::Full { max: 2 }
                .to_string()
                .contains("2 messages")
        );
        assert!(
            InboxError::TooLarge { bytes: 9, max: 8 }
                .to_string()
                .contains("limit of 8 bytes")
        );
    }
}
