//! The default store: [`InMemoryTaskStore`], bounded by count and bytes.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use subagent_spi::async_trait;

use super::sizes::{push_config_bytes, task_bytes};
use super::{
    MAX_PUSH_CONFIGS_PER_TASK, PushConfigStore, StoreError, TaskFilter, TaskPage, TaskStore,
    VersionedTask,
};
use crate::types::v1;

/// Submitted / working (or unspecified): a handler may still be running it, so it is never
/// evicted for space.
fn pinned(state: v1::TaskState) -> bool {
    !state.is_terminal() && !state.is_interrupted()
}

struct Stored {
    task: v1::Task,
    /// The task's push-notification configs (at most [`MAX_PUSH_CONFIGS_PER_TASK`]).
    push: Vec<v1::TaskPushNotificationConfig>,
    updated: Instant,
    seq: u64,
    /// The task's version (see [`TaskStore::save_versioned`]): 1 at its first write, one more
    /// at each.
    version: u64,
    /// [`task_bytes`] of `task` plus [`push_config_bytes`] of `push`.
    bytes: usize,
}

struct Inner {
    tasks: HashMap<String, Stored>,
    seq: u64,
    /// Sum of `bytes` over all tasks.
    bytes: usize,
}

/// The default [`TaskStore`]: a map in memory bounded by count (`max_tasks`, default 10,000)
/// and by approximate bytes ([`task_bytes`]; `max_bytes`, default
/// [`DEFAULT_MAX_BYTES`](Self::DEFAULT_MAX_BYTES) = 256 MiB). Terminal tasks expire
/// `terminal_ttl` after their last change. Over either bound, expired tasks go first, then
/// the oldest terminal ones, then (for bytes) the oldest interrupted ones (input-required /
/// auth-required), then (for count only) the oldest of all. Submitted and working tasks are
/// never evicted for bytes: when they alone fill the budget, [`TaskStore::admit`] refuses new
/// messages until some finish.
pub struct InMemoryTaskStore {
    inner: Mutex<Inner>,
    max_tasks: usize,
    max_bytes: usize,
    max_push_configs: usize,
    terminal_ttl: Duration,
    /// Bytes of submitted / working tasks, read without the lock by `admit`.
    pinned_bytes: AtomicUsize,
}

impl std::fmt::Debug for InMemoryTaskStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InMemoryTaskStore")
            .field("len", &self.len())
            .field("bytes", &self.bytes())
            .field("max_tasks", &self.max_tasks)
            .field("max_bytes", &self.max_bytes)
            .field("max_push_configs", &self.max_push_configs)
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
    /// The default byte budget: 256 MiB. That holds 25 tasks carrying a maximal (10 MiB)
    /// request each, or tens of thousands of typical few-KiB tasks (the 10,000-task count bound
    /// usually comes first), and leaves room in a 1 GiB container for the transient copies a
    /// request makes while it is parsed and answered.
    pub const DEFAULT_MAX_BYTES: usize = 256 * 1024 * 1024;

    /// A store keeping at most `max_tasks` tasks (at least 1), terminal ones for `terminal_ttl`,
    /// within [`DEFAULT_MAX_BYTES`](Self::DEFAULT_MAX_BYTES).
    pub fn new(max_tasks: usize, terminal_ttl: Duration) -> Self {
        Self {
            inner: Mutex::new(Inner {
                tasks: HashMap::new(),
                seq: 0,
                bytes: 0,
            }),
            max_tasks: max_tasks.max(1),
            max_bytes: Self::DEFAULT_MAX_BYTES,
            max_push_configs: MAX_PUSH_CONFIGS_PER_TASK,
            terminal_ttl,
            pinned_bytes: AtomicUsize::new(0),
        }
    }

    /// Sets the byte budget (at least 1 byte; builder style).
    #[must_use]
    pub fn with_max_bytes(mut self, max_bytes: usize) -> Self {
        self.max_bytes = max_bytes.max(1);
        self
    }

    /// Sets the most push-notification configs one task may have (at least 1; default
    /// [`MAX_PUSH_CONFIGS_PER_TASK`]; builder style).
    #[must_use]
    pub fn with_max_push_configs(mut self, max: usize) -> Self {
        self.max_push_configs = max.max(1);
        self
    }

    /// The byte budget.
    pub fn max_bytes(&self) -> usize {
        self.max_bytes
    }

    /// The approximate bytes held ([`task_bytes`] summed over the tasks).
    pub fn bytes(&self) -> usize {
        self.lock().bytes
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

    /// Removes a task, keeping the byte counts right.
    fn remove(&self, inner: &mut Inner, id: &str) {
        if let Some(old) = inner.tasks.remove(id) {
            inner.bytes -= old.bytes;
            if pinned(old.task.status.state) {
                self.pinned_bytes.fetch_sub(old.bytes, Ordering::Relaxed);
            }
        }
    }

    fn drop_expired(&self, inner: &mut Inner, now: Instant) {
        let expired: Vec<String> = inner
            .tasks
            .iter()
            .filter(|(_, s)| self.expired(s, now))
            .map(|(k, _)| k.clone())
            .collect();
        for k in expired {
            self.remove(inner, &k);
        }
    }

    fn evict(&self, inner: &mut Inner, now: Instant) {
        self.drop_expired(inner, now);
        let over_count = inner.tasks.len() > self.max_tasks;
        let over_bytes = inner.bytes > self.max_bytes;
        if !over_count && !over_bytes {
            return;
        }
        // Free about a tenth of the capacity at once so eviction stays amortized O(1).
        let target_len = self.max_tasks - self.max_tasks / 10;
        let target_bytes = self.max_bytes - self.max_bytes / 10;
        // Terminal first, then interrupted, then running; oldest first within each.
        let rank = |s: v1::TaskState| {
            if s.is_terminal() {
                0u8
            } else if s.is_interrupted() {
                1
            } else {
                2
            }
        };
        let mut order: Vec<(u8, u64, String)> = inner
            .tasks
            .iter()
            .map(|(k, s)| (rank(s.task.status.state), s.seq, k.clone()))
            .collect();
        order.sort_unstable();
        for (r, _, k) in order {
            let need_count = over_count && inner.tasks.len() > target_len;
            let need_bytes = over_bytes && inner.bytes > target_bytes;
            // Running tasks (rank 2, sorted last) are never evicted for bytes (see `admit`).
            if !need_count && (!need_bytes || r == 2) {
                break;
            }
            self.remove(inner, &k);
        }
    }
}

impl InMemoryTaskStore {
    /// Stores `task` (of [`task_bytes`] `bytes`, measured before taking the lock) at
    /// `version` (the lock held).
    fn put(&self, inner: &mut Inner, task: v1::Task, bytes: usize, version: u64, now: Instant) {
        let is_pinned = pinned(task.status.state);
        inner.seq += 1;
        let seq = inner.seq;
        let id = task.id.clone();
        let push = inner
            .tasks
            .get_mut(&id)
            .map(|s| std::mem::take(&mut s.push))
            .unwrap_or_default();
        let bytes = bytes + push.iter().map(push_config_bytes).sum::<usize>();
        self.remove(inner, &id);
        inner.tasks.insert(
            id,
            Stored {
                task,
                push,
                updated: now,
                seq,
                version,
                bytes,
            },
        );
        inner.bytes += bytes;
        if is_pinned {
            self.pinned_bytes.fetch_add(bytes, Ordering::Relaxed);
        }
        if inner.tasks.len() > self.max_tasks
            || (inner.bytes > self.max_bytes
                && inner.bytes > self.pinned_bytes.load(Ordering::Relaxed))
        {
            self.evict(inner, now);
        }
    }

    /// `read` of the task `task_id` while it lives (`None` when there is none); an expired one
    /// is removed on the way.
    fn read_live<T>(&self, task_id: &str, read: impl FnOnce(&Stored) -> T) -> Option<T> {
        let now = Instant::now();
        let mut inner = self.lock();
        match inner.tasks.get(task_id) {
            Some(s) if self.expired(s, now) => {
                self.remove(&mut inner, task_id);
                None
            }
            Some(s) => Some(read(s)),
            None => None,
        }
    }

    /// The stored version of `task_id` (0 when absent or expired).
    fn version(&self, inner: &Inner, task_id: &str, now: Instant) -> u64 {
        match inner.tasks.get(task_id) {
            Some(s) if !self.expired(s, now) => s.version,
            _ => 0,
        }
    }
}

#[async_trait]
impl TaskStore for InMemoryTaskStore {
    async fn save(&self, task: v1::Task) -> Result<(), StoreError> {
        let now = Instant::now();
        let bytes = task_bytes(&task);
        let mut inner = self.lock();
        let version = self.version(&inner, &task.id, now) + 1;
        self.put(&mut inner, task, bytes, version, now);
        Ok(())
    }

    async fn save_versioned(&self, task: v1::Task, expected: u64) -> Result<u64, StoreError> {
        let now = Instant::now();
        let bytes = task_bytes(&task);
        let mut inner = self.lock();
        let current = self.version(&inner, &task.id, now);
        // A task evicted meanwhile (current 0) may be written again, as in a database.
        if current != expected && !(current == 0 && expected != 0) {
            return Err(StoreError::Conflict {
                task_id: task.id,
                expected,
            });
        }
        let version = expected + 1;
        self.put(&mut inner, task, bytes, version, now);
        Ok(version)
    }

    async fn get_versioned(&self, task_id: &str) -> Result<Option<VersionedTask>, StoreError> {
        Ok(self.read_live(task_id, |s| VersionedTask::new(s.task.clone(), s.version)))
    }

    fn admit(&self, bytes: usize) -> Result<(), StoreError> {
        let used = self.pinned_bytes.load(Ordering::Relaxed);
        if used.saturating_add(bytes) > self.max_bytes {
            return Err(StoreError::Full {
                used_bytes: used,
                limit_bytes: self.max_bytes,
                incoming_bytes: bytes,
            });
        }
        Ok(())
    }

    async fn get(&self, task_id: &str) -> Result<Option<v1::Task>, StoreError> {
        Ok(self.read_live(task_id, |s| s.task.clone()))
    }

    async fn list(
        &self,
        filter: &TaskFilter,
        offset: usize,
        limit: usize,
    ) -> Result<TaskPage, StoreError> {
        let now = Instant::now();
        let inner = self.lock();
        let mut found: Vec<(&Stored, &str)> = inner
            .tasks
            .values()
            .filter(|s| !self.expired(s, now) && filter.matches(&s.task))
            .map(|s| (s, s.task.status.timestamp.as_deref().unwrap_or("")))
            .collect();
        found.sort_by(|a, b| b.1.cmp(a.1).then(b.0.seq.cmp(&a.0.seq)));
        let total = found.len();
        let tasks = found
            .into_iter()
            .skip(offset)
            .take(limit)
            .map(|(s, _)| s.task.clone())
            .collect();
        Ok(TaskPage::new(tasks, total))
    }

    fn push_configs(self: Arc<Self>) -> Option<Arc<dyn PushConfigStore>> {
        Some(self)
    }
}

#[async_trait]
impl PushConfigStore for InMemoryTaskStore {
    async fn save_push_config(
        &self,
        config: v1::TaskPushNotificationConfig,
    ) -> Result<(), StoreError> {
        let task_id = config.task_id.clone().unwrap_or_default();
        let mut inner = self.lock();
        let Some(stored) = inner.tasks.get_mut(&task_id) else {
            return Err(StoreError::Backend {
                task_id,
                message: "no such task".into(),
            });
        };
        let existing = stored.push.iter().position(|c| c.id == config.id);
        if existing.is_none() && stored.push.len() >= self.max_push_configs {
            return Err(StoreError::Backend {
                task_id,
                message: format!(
                    "the task already has {} push notification configs (the limit); delete one \
                     first",
                    self.max_push_configs
                ),
            });
        }
        let old = existing.map_or(0, |i| push_config_bytes(&stored.push[i]));
        let new = push_config_bytes(&config);
        let is_pinned = pinned(stored.task.status.state);
        // Configs count in the budget with their task: a running task's configs must fit
        // beside the other running tasks (nothing of theirs can be evicted).
        if is_pinned && new > old {
            let used = self.pinned_bytes.load(Ordering::Relaxed);
            if used.saturating_add(new - old) > self.max_bytes {
                return Err(StoreError::Full {
                    used_bytes: used,
                    limit_bytes: self.max_bytes,
                    incoming_bytes: new,
                });
            }
        }
        match existing {
            Some(i) => stored.push[i] = config,
            None => stored.push.push(config),
        }
        stored.bytes = stored.bytes + new - old;
        inner.bytes = inner.bytes + new - old;
        if is_pinned {
            self.pinned_bytes.fetch_add(new, Ordering::Relaxed);
            self.pinned_bytes.fetch_sub(old, Ordering::Relaxed);
        }
        if inner.bytes > self.max_bytes && inner.bytes > self.pinned_bytes.load(Ordering::Relaxed) {
            self.evict(&mut inner, Instant::now());
        }
        Ok(())
    }

    async fn get_push_config(
        &self,
        task_id: &str,
        config_id: &str,
    ) -> Result<Option<v1::TaskPushNotificationConfig>, StoreError> {
        Ok(self.lock().tasks.get(task_id).and_then(|s| {
            s.push
                .iter()
                .find(|c| c.id.as_deref() == Some(config_id))
                .cloned()
        }))
    }

    async fn list_push_configs(
        &self,
        task_id: &str,
    ) -> Result<Vec<v1::TaskPushNotificationConfig>, StoreError> {
        Ok(self
            .lock()
            .tasks
            .get(task_id)
            .map(|s| s.push.clone())
            .unwrap_or_default())
    }

    async fn delete_push_config(&self, task_id: &str, config_id: &str) -> Result<bool, StoreError> {
        let mut inner = self.lock();
        let Some(s) = inner.tasks.get_mut(task_id) else {
            return Ok(false);
        };
        let Some(i) = s
            .push
            .iter()
            .position(|c| c.id.as_deref() == Some(config_id))
        else {
            return Ok(false);
        };
        let freed = push_config_bytes(&s.push.remove(i));
        s.bytes -= freed;
        let is_pinned = pinned(s.task.status.state);
        inner.bytes -= freed;
        if is_pinned {
            self.pinned_bytes.fetch_sub(freed, Ordering::Relaxed);
        }
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(id: &str, ctx: &str, state: v1::TaskState, ts: &str) -> v1::Task {
        v1::Task::new(
            id,
            Some(ctx.into()),
            v1::TaskStatus::at(state, Some(ts.into())),
        )
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

    /// The compare-and-set contract the server's fencing relies on: a create refuses an
    /// existing task, of two writers from one version only the first succeeds, a write from a
    /// superseded version changes nothing, and a plain `save` moves the version on too.
    #[tokio::test]
    async fn versioned_writes_are_a_compare_and_set() {
        let store = InMemoryTaskStore::default();
        let ts = "2026-01-01T00:00:00.000Z";
        let asked = task("t", "c", v1::TaskState::InputRequired, ts);
        let v1_ = store.save_versioned(asked.clone(), 0).await.unwrap();
        assert_eq!(v1_, 1);
        assert!(matches!(
            store.save_versioned(asked, 0).await,
            Err(StoreError::Conflict { expected: 0, .. })
        ));
        let working = task("t", "c", v1::TaskState::Working, ts);
        let v2 = store.save_versioned(working.clone(), v1_).await.unwrap();
        assert!(v2 > v1_);
        assert!(matches!(
            store.save_versioned(working, v1_).await,
            Err(StoreError::Conflict { .. })
        ));
        let late = task("t", "c", v1::TaskState::Completed, ts);
        assert!(store.save_versioned(late.clone(), v1_).await.is_err());
        let read = store.get_versioned("t").await.unwrap().unwrap();
        assert_eq!(
            (read.version, read.task.status.state),
            (v2, v1::TaskState::Working)
        );
        store.save(late.clone()).await.unwrap();
        assert!(store.save_versioned(late, v2).await.is_err());
        assert!(store.get_versioned("t").await.unwrap().unwrap().version > v2);
    }

    fn big(id: &str, state: v1::TaskState, n: usize) -> v1::Task {
        let mut t = task(id, "c", state, "2026-01-01T00:00:00.000Z");
        t.history.push(v1::Message::new(
            v1::Role::User,
            "m",
            vec![v1::Part::text("x".repeat(n))],
        ));
        t
    }

    /// Saves a task of `state` holding `n` bytes of text.
    async fn save_big(store: &InMemoryTaskStore, id: &str, state: v1::TaskState, n: usize) {
        store.save(big(id, state, n)).await.unwrap();
    }

    /// Whether `store` still holds the task `id`.
    async fn holds(store: &InMemoryTaskStore, id: &str) -> bool {
        store.get(id).await.unwrap().is_some()
    }

    #[tokio::test]
    async fn bytes_bound_evicts_finished_then_interrupted_never_running() {
        let store = InMemoryTaskStore::new(1000, Duration::from_secs(3600)).with_max_bytes(10_000);
        save_big(&store, "run", v1::TaskState::Working, 3000).await;
        save_big(&store, "ask", v1::TaskState::InputRequired, 3000).await;
        for i in 0..10 {
            save_big(&store, &format!("done{i}"), v1::TaskState::Completed, 1000).await;
        }
        assert!(store.bytes() <= 10_000, "{}", store.bytes());
        assert!(holds(&store, "run").await);
        assert!(holds(&store, "ask").await);
        assert!(!holds(&store, "done0").await);
        assert!(holds(&store, "done9").await);
        // Finished tasks go before interrupted ones, even the newest finished one.
        save_big(&store, "huge", v1::TaskState::Completed, 6000).await;
        assert!(store.bytes() <= 10_000, "{}", store.bytes());
        assert!(!holds(&store, "huge").await);
        assert!(holds(&store, "ask").await);
        // With no finished task left, interrupted ones go (oldest first); running ones stay.
        save_big(&store, "ask2", v1::TaskState::AuthRequired, 6000).await;
        assert!(store.bytes() <= 10_000, "{}", store.bytes());
        assert!(holds(&store, "run").await);
        assert!(!holds(&store, "ask").await);
        // Admission: running tasks hold ~3 KB of 10 KB.
        assert!(store.admit(5000).is_ok());
        save_big(&store, "run2", v1::TaskState::Working, 6000).await;
        let e = store.admit(2000).unwrap_err().to_string();
        assert!(e.contains("10000-byte budget"), "{e}");
        // Replacing a task keeps the counts right; finishing frees admission room.
        save_big(&store, "run2", v1::TaskState::Completed, 6000).await;
        assert!(store.admit(2000).is_ok());
        let sum: usize = store
            .list(&TaskFilter::default(), 0, usize::MAX)
            .await
            .unwrap()
            .tasks
            .iter()
            .map(task_bytes)
            .sum();
        assert_eq!(sum, store.bytes());
    }

    #[tokio::test]
    async fn push_configs_count_in_the_budget() {
        let store = InMemoryTaskStore::new(100, Duration::from_secs(3600)).with_max_bytes(20_000);
        store
            .save(task(
                "r",
                "c",
                v1::TaskState::Working,
                "2024-01-01T00:00:00Z",
            ))
            .await
            .unwrap();
        let before = store.bytes();
        let config = |id: &str| v1::TaskPushNotificationConfig {
            tenant: None,
            id: Some(id.into()),
            task_id: Some("r".into()),
            url: "https://example.com/hook".into(),
            token: Some("t".repeat(4000)),
            authentication: None,
        };
        store.save_push_config(config("a")).await.unwrap();
        assert!(store.bytes() >= before + 4000, "{}", store.bytes());
        // Replacing a config does not count it twice; saving the task keeps its configs' bytes.
        store.save_push_config(config("a")).await.unwrap();
        assert!(store.bytes() < before + 8000, "{}", store.bytes());
        store
            .save(task(
                "r",
                "c",
                v1::TaskState::Working,
                "2024-01-01T00:00:01Z",
            ))
            .await
            .unwrap();
        assert!(store.bytes() >= before + 4000, "{}", store.bytes());
        // A running task's configs cannot outgrow the budget.
        let mut full = None;
        for i in 0..10 {
            if let Err(e) = store.save_push_config(config(&format!("c{i}"))).await {
                full = Some(e);
                break;
            }
        }
        assert!(matches!(full, Some(StoreError::Full { .. })), "{full:?}");
        assert!(store.bytes() <= 20_000, "{}", store.bytes());
        // Deleting gives the bytes back.
        let with = store.bytes();
        assert!(store.delete_push_config("r", "a").await.unwrap());
        assert!(store.bytes() <= with - 4000, "{}", store.bytes());
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
        let all = store.list(&TaskFilter::default(), 0, 10).await.unwrap();
        let ids: Vec<_> = all.tasks.iter().map(|t| t.id.as_str()).collect();
        assert_eq!(ids, ["b", "c", "a"]);
        let page = store.list(&TaskFilter::default(), 1, 1).await.unwrap();
        assert_eq!(page.total, 3);
        assert_eq!(page.tasks.len(), 1);
        assert_eq!(page.tasks[0].id, "c");
        let f = TaskFilter {
            context_id: Some("c1".into()),
            state: Some(v1::TaskState::Completed),
            ..TaskFilter::default()
        };
        let ids: Vec<_> = store
            .list(&f, 0, 10)
            .await
            .unwrap()
            .tasks
            .into_iter()
            .map(|t| t.id)
            .collect();
        assert_eq!(ids, ["a"]);
        let f = TaskFilter {
            status_timestamp_after: Some("2026-01-01T00:00:01.500Z".into()),
            ..TaskFilter::default()
        };
        assert_eq!(store.list(&f, 0, 10).await.unwrap().total, 2);
    }
}
