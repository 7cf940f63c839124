//! Where transcripts are kept so a later run can resume them.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use subagent_spi::chat::ChatMessage;

/// The full conversation of one session: what the caller never sees, kept so the session can be
/// resumed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Transcript {
    /// The system prompt the session ran with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system: Option<String>,
    /// Every message: user prompts, assistant replies (with tool calls) and tool results.
    pub messages: Vec<ChatMessage>,
}

/// Keeps transcripts by session id. Implementations must be cheap to call from async code (no
/// blocking I/O on the caller's thread) and should bound their memory.
#[async_trait]
pub trait TranscriptStore: Send + Sync {
    /// The transcript stored under `id`, if any.
    async fn load(&self, id: &str) -> Option<Transcript>;
    /// Stores `t` under `id`, replacing what was there.
    async fn save(&self, id: &str, t: Transcript);
}

/// An in-memory [`TranscriptStore`] holding at most `capacity` sessions; when full, the least
/// recently used (loaded or saved) session is evicted.
#[derive(Debug)]
pub struct InMemoryTranscriptStore {
    capacity: usize,
    inner: Mutex<Lru>,
}

#[derive(Debug, Default)]
struct Lru {
    tick: u64,
    entries: HashMap<String, (u64, Transcript)>,
    order: BTreeMap<u64, String>,
}

impl Lru {
    fn touch(&mut self, id: &str) -> Option<&Transcript> {
        self.tick += 1;
        let tick = self.tick;
        let entry = self.entries.get_mut(id)?;
        self.order.remove(&entry.0);
        entry.0 = tick;
        self.order.insert(tick, id.to_string());
        Some(&entry.1)
    }
}

impl InMemoryTranscriptStore {
    /// The default number of sessions kept.
    pub const DEFAULT_CAPACITY: usize = 1024;

    /// A store keeping [`DEFAULT_CAPACITY`](Self::DEFAULT_CAPACITY) sessions.
    pub fn new() -> Self {
        Self::with_capacity(Self::DEFAULT_CAPACITY)
    }

    /// A store keeping at most `capacity` sessions (at least one).
    pub fn with_capacity(capacity: usize) -> Self {
        Self {
            capacity: capacity.max(1),
            inner: Mutex::new(Lru::default()),
        }
    }

    /// The number of sessions held.
    pub fn len(&self) -> usize {
        self.lock().entries.len()
    }

    /// True when no session is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The maximum number of sessions held.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Lru> {
        // Every critical section leaves the maps consistent, so a poisoned lock is recovered.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Default for InMemoryTranscriptStore {
    fn default() -> Self {
        Self::new()
    }
}

#[async_trait]
impl TranscriptStore for InMemoryTranscriptStore {
    async fn load(&self, id: &str) -> Option<Transcript> {
        self.lock().touch(id).cloned()
    }

    async fn save(&self, id: &str, t: Transcript) {
        let mut g = self.lock();
        g.tick += 1;
        let tick = g.tick;
        if let Some((old_tick, _)) = g.entries.insert(id.to_string(), (tick, t)) {
            g.order.remove(&old_tick);
        }
        g.order.insert(tick, id.to_string());
        while g.entries.len() > self.capacity {
            let Some((_, victim)) = g.order.pop_first() else {
                break;
            };
            g.entries.remove(&victim);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(text: &str) -> Transcript {
        Transcript {
            system: None,
            messages: vec![ChatMessage::user(text)],
        }
    }

    #[tokio::test]
    async fn evicts_least_recently_used() {
        let s = InMemoryTranscriptStore::with_capacity(2);
        s.save("a", t("a")).await;
        s.save("b", t("b")).await;
        assert!(s.load("a").await.is_some()); // a is now newer than b
        s.save("c", t("c")).await;
        assert_eq!(s.len(), 2);
        assert!(s.load("b").await.is_none());
        assert_eq!(s.load("a").await, Some(t("a")));
        assert_eq!(s.load("c").await, Some(t("c")));
    }

    #[tokio::test]
    async fn save_replaces() {
        let s = InMemoryTranscriptStore::with_capacity(2);
        s.save("a", t("1")).await;
        s.save("a", t("2")).await;
        assert_eq!(s.len(), 1);
        assert_eq!(s.load("a").await, Some(t("2")));
    }
}
