//! Where tasks live between requests: the [`TaskStore`] trait and its bounded in-memory
//! default, [`InMemoryTaskStore`].

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use subagent_spi::async_trait;

use crate::types::v1;

/// A store failure. Messages name the task and the cause.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The backend failed.
    #[error("task store failed for task `{task_id}`: {message}")]
    Backend {
        /// The task concerned (empty for listing).
        task_id: String,
        /// What went wrong.
        message: String,
    },
}

/// Which tasks [`TaskStore::list`] returns.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct TaskFilter {
    /// Only tasks of this context.
    pub context_id: Option<String>,
    /// Only tasks in this state.
    pub state: Option<v1::TaskState>,
    /// Only tasks whose status timestamp is later than this ISO 8601 instant.
    pub status_timestamp_after: Option<String>,
}

impl TaskFilter {
    /// True when `task` passes the filter.
    pub fn matches(&self, task: &v1::Task) -> bool {
        if let Some(c) = &self.context_id
            && task.context_id.as_deref() != Some(c.as_str())
        {
            return false;
        }
        if let Some(s) = self.state
            && task.status.state != s
        {
            return false;
        }
        if let Some(after) = &self.status_timestamp_after {
            match &task.status.timestamp {
                Some(ts) if ts.as_str() > after.as_str() => {}
                _ => return false,
            }
        }
        true
    }
}

/// Persists tasks. The server writes a task on every change (status, artifact, new message)
/// and reads it for `GetTask`, `ListTasks`, `CancelTask`, `SubscribeToTask` and for messages
/// continuing a task. Implementations must be bounded or backed by durable storage.
#[async_trait]
pub trait TaskStore: Send + Sync + 'static {
    /// Inserts or replaces a task (keyed by its id).
    async fn save(&self, task: v1::Task) -> Result<(), StoreError>;

    /// Reads a task.
    async fn get(&self, task_id: &str) -> Result<Option<v1::Task>, StoreError>;

    /// Every task matching the filter, latest status first.
    async fn list(&self, filter: &TaskFilter) -> Result<Vec<v1::Task>, StoreError>;
}

struct Stored {
    task: v1::Task,
    updated: Instant,
    seq: u64,
}

struct Inner {
    tasks: HashMap<String, Stored>,
    seq: u64,
}

/// The default [`TaskStore`]: a map in memory holding at most `max_tasks` tasks. Terminal
/// tasks expire `terminal_ttl` after their last change; when the map is full, expired tasks go
/// first, then the oldest terminal ones, then the oldest of all.
pub struct InMemoryTaskStore {
    inner: Mutex<Inner>,
    max_tasks: usize,
    terminal_ttl: Duration,
}

impl std::fmt::Debug for InMemoryTaskStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InMemoryTaskStore")
            .field("len", &self.len())
            .field("max_tasks", &self.max_tasks)
            .field("terminal_ttl", &self.terminal_ttl)
            .finish()
    }
}

impl Default for InMemoryTaskStore {
    fn default() -> Self {
        Self::new(10_000, Duration::from_secs(3600))
    }
}

impl InMemoryTaskStore {
    /// A store keeping at most `max_tasks` tasks (at least 1), terminal ones for `terminal_ttl`.
    pub fn new(max_tasks: usize, terminal_ttl: Duration) -> Self {
        Self {
            inner: Mutex::new(Inner {
                tasks: HashMap::new(),
                seq: 0,
            }),
            max_tasks: max_tasks.max(1),
            terminal_ttl,
        }
    }

    /// The number of tasks held.
    pub fn len(&self) -> usize {
        self.lock().tasks.len()
    }

    /// True when no task is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // A poisoned lock only means another thread panicked mid-update of a plain map; the
        // map itself is still consistent, so keep serving.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn expired(&self, s: &Stored, now: Instant) -> bool {
        s.task.status.state.is_terminal() && now.duration_since(s.updated) >= self.terminal_ttl
    }

    fn evict(&self, inner: &mut Inner, now: Instant) {
        inner.tasks.retain(|_, s| !self.expired(s, now));
        if inner.tasks.len() <= self.max_tasks {
            return;
        }
        // Free about a tenth of the capacity at once so eviction stays amortized O(1).
        let target = self.max_tasks - self.max_tasks / 10;
        let mut order: Vec<(bool, u64, String)> = inner
            .tasks
            .iter()
            .map(|(k, s)| (!s.task.status.state.is_terminal(), s.seq, k.clone()))
            .collect();
        order.sort_unstable();
        let excess = inner.tasks.len().saturating_sub(target);
        for (_, _, k) in order.into_iter().take(excess) {
            inner.tasks.remove(&k);
        }
    }
}

#[async_trait]
impl TaskStore for InMemoryTaskStore {
    async fn save(&self, task: v1::Task) -> Result<(), StoreError> {
        let now = Instant::now();
        let mut inner = self.lock();
        inner.seq += 1;
        let seq = inner.seq;
        inner.tasks.insert(
            task.id.clone(),
            Stored {
                task,
                updated: now,
                seq,
            },
        );
        if inner.tasks.len() > self.max_tasks {
            self.evict(&mut inner, now);
        }
        Ok(())
    }

    async fn get(&self, task_id: &str) -> Result<Option<v1::Task>, StoreError> {
        let now = Instant::now();
        let mut inner = self.lock();
        match inner.tasks.get(task_id) {
            Some(s) if self.expired(s, now) => {
                inner.tasks.remove(task_id);
                Ok(None)
            }
            Some(s) => Ok(Some(s.task.clone())),
            None => Ok(None),
        }
    }

    async fn list(&self, filter: &TaskFilter) -> Result<Vec<v1::Task>, StoreError> {
        let now = Instant::now();
        let inner = self.lock();
        let mut found: Vec<(&Stored, &str)> = inner
            .tasks
            .values()
            .filter(|s| !self.expired(s, now) && filter.matches(&s.task))
            .map(|s| (s, s.task.status.timestamp.as_deref().unwrap_or("")))
            .collect();
        found.sort_by(|a, b| b.1.cmp(a.1).then(b.0.seq.cmp(&a.0.seq)));
        Ok(found.into_iter().map(|(s, _)| s.task.clone()).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(id: &str, ctx: &str, state: v1::TaskState, ts: &str) -> v1::Task {
        v1::Task {
            id: id.into(),
            context_id: Some(ctx.into()),
            status: v1::TaskStatus {
                state,
                message: None,
                timestamp: Some(ts.into()),
            },
            artifacts: vec![],
            history: vec![],
            metadata: None,
        }
    }

    #[tokio::test]
    async fn bounded_store_evicts_terminal_tasks_first() {
        let store = InMemoryTaskStore::new(10, Duration::from_secs(3600));
        store
            .save(task(
                "live",
                "c",
                v1::TaskState::Working,
                "2026-01-01T00:00:00.000Z",
            ))
            .await
            .unwrap();
        for i in 0..30 {
            store
                .save(task(
                    &format!("t{i}"),
                    "c",
                    v1::TaskState::Completed,
                    "2026-01-01T00:00:01.000Z",
                ))
                .await
                .unwrap();
        }
        assert!(store.len() <= 10, "len {}", store.len());
        assert!(store.get("live").await.unwrap().is_some());
        assert!(store.get("t29").await.unwrap().is_some());
        assert!(store.get("t0").await.unwrap().is_none());
    }

    #[tokio::test]
    async fn terminal_tasks_expire_after_ttl() {
        let store = InMemoryTaskStore::new(10, Duration::ZERO);
        store
            .save(task("done", "c", v1::TaskState::Completed, "x"))
            .await
            .unwrap();
        store
            .save(task("wait", "c", v1::TaskState::InputRequired, "x"))
            .await
            .unwrap();
        assert!(store.get("done").await.unwrap().is_none());
        assert!(store.get("wait").await.unwrap().is_some());
    }

    #[tokio::test]
    async fn list_filters_and_sorts_latest_first() {
        let store = InMemoryTaskStore::default();
        store
            .save(task(
                "a",
                "c1",
                v1::TaskState::Completed,
                "2026-01-01T00:00:01.000Z",
            ))
            .await
            .unwrap();
        store
            .save(task(
                "b",
                "c1",
                v1::TaskState::Working,
                "2026-01-01T00:00:03.000Z",
            ))
            .await
            .unwrap();
        store
            .save(task(
                "c",
                "c2",
                v1::TaskState::Completed,
                "2026-01-01T00:00:02.000Z",
            ))
            .await
            .unwrap();
        let all = store.list(&TaskFilter::default()).await.unwrap();
        let ids: Vec<_> = all.iter().map(|t| t.id.as_str()).collect();
        assert_eq!(ids, ["b", "c", "a"]);
        let f = TaskFilter {
            context_id: Some("c1".into()),
            state: Some(v1::TaskState::Completed),
            ..TaskFilter::default()
        };
        let ids: Vec<_> = store
            .list(&f)
            .await
            .unwrap()
            .into_iter()
            .map(|t| t.id)
            .collect();
        assert_eq!(ids, ["a"]);
        let f = TaskFilter {
            status_timestamp_after: Some("2026-01-01T00:00:01.500Z".into()),
            ..TaskFilter::default()
        };
        assert_eq!(store.list(&f).await.unwrap().len(), 2);
    }
}
