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

/// A transcript store operation that failed (a database error, a full disk...). The runtime
/// reports it and keeps the run's result: see [`TranscriptStore`] for the policy.
pub type TranscriptStoreError = subagent_core::StoreError<TranscriptStoreKind>;

/// Names the transcript store in its errors (`transcript store: ...`).
#[derive(Debug)]
pub enum TranscriptStoreKind {}

impl subagent_core::StoreKind for TranscriptStoreKind {
    const NAME: &'static str = "transcript store";
}

/// Keeps transcripts by session id. Implementations must be cheap to call from async code (no
/// blocking I/O on the caller's thread) and should bound their memory.
///
/// [`load`](Self::load) and [`save`](Self::save) are the whole-transcript API every store
/// implements. The runtime uses the fallible, incremental methods
/// ([`try_load`](Self::try_load), [`append`](Self::append), [`replace`](Self::replace)),
/// whose defaults are built on the first two; a durable store overrides them so that a long
/// session is not rewritten on every turn and so that its errors are seen.
///
/// **Failure policy** (what the runtime does with an `Err`): a failed read on resume fails the
/// run with [`SubagentError::Resume`](subagent_spi::SubagentError::Resume) naming the error; a
/// failed write never loses the run's result: the run goes on, a warning is logged and a
/// `Status` progress event says the transcript was not saved, the whole transcript is written
/// once more at the end, and when that fails too the outcome carries no session id (the session
/// cannot be resumed, and nobody is told it can).
#[async_trait]
pub trait TranscriptStore: Send + Sync {
    /// The transcript stored under `id`, if any.
    async fn load(&self, id: &str) -> Option<Transcript>;
    /// Stores `t` under `id`, replacing what was there.
    async fn save(&self, id: &str, t: Transcript);

    /// [`load`](Self::load), with the store's errors.
    async fn try_load(&self, id: &str) -> Result<Option<Transcript>, TranscriptStoreError> {
        Ok(self.load(id).await)
    }

    /// Adds `messages` to the end of session `id`, creating it with `system` when it does not
    /// exist (an existing session keeps its system prompt). The default loads, extends and
    /// saves the whole transcript.
    async fn append(
        &self,
        id: &str,
        system: Option<&str>,
        messages: &[ChatMessage],
    ) -> Result<(), TranscriptStoreError> {
        let mut t = self.try_load(id).await?.unwrap_or_else(|| Transcript {
            system: system.map(str::to_string),
            messages: Vec::new(),
        });
        t.messages.extend_from_slice(messages);
        self.replace(id, t).await
    }

    /// [`save`](Self::save), with the store's errors.
    async fn replace(&self, id: &str, t: Transcript) -> Result<(), TranscriptStoreError> {
        self.save(id, t).await;
        Ok(())
    }
}

impl Transcript {
    /// An estimate of the memory the transcript's text takes, in bytes: system prompt, message
    /// texts, tool names and serialized tool-call arguments.
    pub fn approx_bytes(&self) -> usize {
        let messages: usize = self
            .messages
            .iter()
            .map(|m| match m {
                ChatMessage::System { content } | ChatMessage::User { content } => content.len(),
                ChatMessage::Assistant {
                    content,
                    tool_calls,
                } => {
                    content.len()
                        + tool_calls
                            .iter()
                            .map(|c| c.id.len() + c.name.len() + c.arguments.to_string().len())
                            .sum::<usize>()
                }
                ChatMessage::Tool {
                    call_id,
                    name,
                    content,
                    ..
                } => call_id.len() + name.len() + content.len(),
            })
            .sum();
        self.system.as_ref().map_or(0, String::len) + messages + 32 * self.messages.len()
    }
}

/// An in-memory [`TranscriptStore`] bounded by a number of sessions (default 1024) and by the
/// approximate bytes of all transcripts (default 256 MiB, see [`Transcript::approx_bytes`]);
/// past either bound the least recently used (loaded or saved) sessions are evicted. A single
/// transcript larger than the byte bound is not kept at all.
#[derive(Debug)]
pub struct InMemoryTranscriptStore {
    capacity: usize,
    max_bytes: usize,
    inner: Mutex<Lru>,
}

#[derive(Debug, Default)]
struct Lru {
    tick: u64,
    bytes: usize,
    entries: HashMap<String, (u64, usize, Transcript)>,
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
        Some(&entry.2)
    }
}

impl InMemoryTranscriptStore {
    /// The default number of sessions kept.
    pub const DEFAULT_CAPACITY: usize = 1024;
    /// The default bound on the approximate bytes of all transcripts kept (256 MiB).
    pub const DEFAULT_MAX_BYTES: usize = 256 * 1024 * 1024;

    /// A store keeping [`DEFAULT_CAPACITY`](Self::DEFAULT_CAPACITY) sessions.
    pub fn new() -> Self {
        Self::with_capacity(Self::DEFAULT_CAPACITY)
    }

    /// A store keeping at most `capacity` sessions (at least one) and the default byte bound.
    pub fn with_capacity(capacity: usize) -> Self {
        Self::with_limits(capacity, Self::DEFAULT_MAX_BYTES)
    }

    /// A store keeping at most `capacity` sessions (at least one) of at most `max_bytes`
    /// approximate bytes in all.
    pub fn with_limits(capacity: usize, max_bytes: usize) -> Self {
        Self {
            capacity: capacity.max(1),
            max_bytes,
            inner: Mutex::new(Lru::default()),
        }
    }

    /// The approximate bytes of all transcripts held.
    pub fn approx_bytes(&self) -> usize {
        self.lock().bytes
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
        self.put(id, t);
    }

    async fn append(
        &self,
        id: &str,
        system: Option<&str>,
        messages: &[ChatMessage],
    ) -> Result<(), TranscriptStoreError> {
        // Extends in place (no copy of the session), then re-applies the bounds.
        let mut g = self.lock();
        let Some(entry) = g.entries.get_mut(id) else {
            drop(g);
            self.put(
                id,
                Transcript {
                    system: system.map(str::to_string),
                    messages: messages.to_vec(),
                },
            );
            return Ok(());
        };
        entry.2.messages.extend_from_slice(messages);
        let size = entry.2.approx_bytes();
        let old = std::mem::replace(&mut entry.1, size);
        g.bytes = g.bytes - old + size;
        g.touch(id);
        if size > self.max_bytes {
            if let Some((tick, size, _)) = g.entries.remove(id) {
                g.order.remove(&tick);
                g.bytes -= size;
            }
            return Ok(());
        }
        self.evict(&mut g);
        Ok(())
    }
}

impl InMemoryTranscriptStore {
    fn evict(&self, g: &mut Lru) {
        while g.entries.len() > self.capacity || g.bytes > self.max_bytes {
            let Some((_, victim)) = g.order.pop_first() else {
                break;
            };
            if let Some((_, victim_size, _)) = g.entries.remove(&victim) {
                g.bytes -= victim_size;
            }
        }
    }

    fn put(&self, id: &str, t: Transcript) {
        let size = t.approx_bytes();
        let mut g = self.lock();
        if size > self.max_bytes {
            // Too big to keep: drop it (and an older version) without flushing the others.
            if let Some((old_tick, old_size, _)) = g.entries.remove(id) {
                g.order.remove(&old_tick);
                g.bytes -= old_size;
            }
            return;
        }
        g.tick += 1;
        let tick = g.tick;
        if let Some((old_tick, old_size, _)) = g.entries.insert(id.to_string(), (tick, size, t)) {
            g.order.remove(&old_tick);
            g.bytes -= old_size;
        }
        g.bytes += size;
        g.order.insert(tick, id.to_string());
        self.evict(&mut g);
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
    async fn byte_bound_evicts_oldest() {
        let size = t("x".repeat(100).as_str()).approx_bytes();
        let s = InMemoryTranscriptStore::with_limits(100, size * 2);
        s.save("a", t(&"x".repeat(100))).await;
        s.save("b", t(&"y".repeat(100))).await;
        assert_eq!(s.approx_bytes(), size * 2);
        s.save("c", t(&"z".repeat(100))).await;
        assert!(s.load("a").await.is_none());
        assert_eq!(s.len(), 2);
        assert_eq!(s.approx_bytes(), size * 2);
        // a transcript over the whole bound is not kept
        s.save("huge", t(&"h".repeat(1000))).await;
        assert!(s.load("huge").await.is_none());
        assert_eq!(s.len(), 2, "the others stay");
        assert!(s.load("b").await.is_some());
    }

    #[tokio::test]
    async fn append_extends_creates_and_keeps_the_bounds() {
        let s = InMemoryTranscriptStore::with_limits(10, 10_000);
        s.append("a", Some("sys"), &[ChatMessage::user("1")])
            .await
            .unwrap();
        s.append("a", Some("other"), &[ChatMessage::user("2")])
            .await
            .unwrap();
        let t = s.load("a").await.unwrap();
        assert_eq!(t.system.as_deref(), Some("sys"));
        assert_eq!(
            t.messages,
            vec![ChatMessage::user("1"), ChatMessage::user("2")]
        );
        assert_eq!(s.approx_bytes(), t.approx_bytes());
        // growing past the byte bound drops the session rather than the others
        s.append("b", None, &[ChatMessage::user("b")])
            .await
            .unwrap();
        s.append("a", None, &[ChatMessage::user("x".repeat(20_000))])
            .await
            .unwrap();
        assert!(s.load("a").await.is_none());
        assert!(s.load("b").await.is_some());
        assert_eq!(s.approx_bytes(), s.load("b").await.unwrap().approx_bytes());
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
