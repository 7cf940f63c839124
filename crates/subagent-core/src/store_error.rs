//! The one error type of the durable-store contracts (the runtime's transcript store, the Task
//! tool's background-task ledger): a message for people and the error that caused it.

use std::error::Error;
use std::fmt;
use std::marker::PhantomData;

/// Names the store a [`StoreError`] comes from; its [`NAME`](Self::NAME) starts the error's
/// message (`transcript store: ...`, `task ledger: ...`).
pub trait StoreKind {
    /// The store's name, for people.
    const NAME: &'static str;
}

/// An operation of the store `K` that failed (a database error, a full disk...). Each store
/// contract names its own: `subagent_runtime::TranscriptStoreError`, `task_tool::LedgerError`.
#[non_exhaustive]
pub struct StoreError<K> {
    /// What failed, for people.
    pub message: String,
    /// The underlying error, when there is one.
    pub source: Option<Box<dyn Error + Send + Sync>>,
    kind: PhantomData<fn() -> K>,
}

impl<K> StoreError<K> {
    /// An error with a message and the error that caused it.
    pub fn new(
        message: impl Into<String>,
        source: impl Into<Box<dyn Error + Send + Sync>>,
    ) -> Self {
        Self {
            message: message.into(),
            source: Some(source.into()),
            kind: PhantomData,
        }
    }

    /// An error with a message only.
    pub fn msg(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            source: None,
            kind: PhantomData,
        }
    }
}

impl<K: StoreKind> fmt::Display for StoreError<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", K::NAME, self.message)
    }
}

impl<K: StoreKind> fmt::Debug for StoreError<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StoreError")
            .field("store", &K::NAME)
            .field("message", &self.message)
            .field("source", &self.source)
            .finish()
    }
}

impl<K: StoreKind> Error for StoreError<K> {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        self.source.as_deref().map(|e| e as &(dyn Error + 'static))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Things;
    impl StoreKind for Things {
        const NAME: &'static str = "thing store";
    }

    #[test]
    fn the_message_names_the_store_and_the_source_is_kept() {
        let io = std::io::Error::other("disk full");
        let e = StoreError::<Things>::new("write failed", io);
        assert_eq!(e.to_string(), "thing store: write failed");
        assert_eq!(
            e.source().map(ToString::to_string).as_deref(),
            Some("disk full")
        );
        let e = StoreError::<Things>::msg("cannot list");
        assert_eq!(e.to_string(), "thing store: cannot list");
        assert!(e.source().is_none());
    }
}
