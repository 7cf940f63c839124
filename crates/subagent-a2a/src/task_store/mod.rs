//! The server's storage contract (feature `task-store`, on with `server`): where tasks live
//! between requests. One trait per concern, so a store implements only what it backs:
//! [`TaskStore`] (tasks: save, get, list, admission), [`PushConfigStore`] (webhook configs),
//! [`ReplicaBus`] (events and cancel requests between processes sharing a store) and
//! [`ContextSessionStore`] (the executor session each conversation continues); their records
//! ([`TaskFilter`], [`TaskPage`], [`RemoteSignal`], [`StoreError`]); the size estimates a
//! bounded store counts ([`task_bytes`], [`message_bytes`]); and the bounded default,
//! [`InMemoryTaskStore`]. A store crate (`subagent-store`) depends on this alone, not on the
//! HTTP server.

mod memory;
mod sizes;

use std::sync::Arc;

use subagent_spi::async_trait;

pub use crate::util::now_rfc3339;
pub use memory::InMemoryTaskStore;
#[cfg(feature = "push")]
pub(crate) use sizes::event_bytes;
pub use sizes::{message_bytes, task_bytes};

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
    /// The store's memory budget is taken by running tasks: a new task does not fit. The server
    /// answers ServerBusy (HTTP 503 with `Retry-After`, JSON-RPC -32000).
    #[error(
        "the task store is full: running tasks hold about {used_bytes} bytes of its \
         {limit_bytes}-byte budget and a new message of about {incoming_bytes} bytes does not \
         fit; retry when tasks finish"
    )]
    Full {
        /// Approximate bytes held by tasks that cannot be evicted (submitted or working).
        used_bytes: usize,
        /// The store's budget in bytes.
        limit_bytes: usize,
        /// Approximate size of the refused message.
        incoming_bytes: usize,
    },
    /// The store does not keep this kind of record.
    #[error("this task store keeps no {what}")]
    Unsupported {
        /// What it does not keep.
        what: &'static str,
    },
    /// A compare-and-set write ([`TaskStore::save_versioned`]) found the task at another
    /// version than the writer expected: someone else (another server process sharing the
    /// store, a cancel, the lease sweep) wrote it since the writer read it. Nothing was written.
    #[error(
        "task `{task_id}` changed in the store since version {expected} was read (another \
         server process or request wrote it); this write was refused"
    )]
    Conflict {
        /// The task.
        task_id: String,
        /// The version the writer expected (0: that the task did not exist).
        expected: u64,
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

/// One page of [`TaskStore::list`].
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct TaskPage {
    /// The tasks of the page, latest status first.
    pub tasks: Vec<v1::Task>,
    /// How many tasks match the filter in all.
    pub total: usize,
}

impl TaskPage {
    /// A page of `tasks` out of `total` matching ones.
    pub fn new(tasks: Vec<v1::Task>, total: usize) -> Self {
        Self { tasks, total }
    }
}

/// A stored task with its version ([`TaskStore::get_versioned`]): the token a compare-and-set
/// write ([`TaskStore::save_versioned`]) presents.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct VersionedTask {
    /// The task.
    pub task: v1::Task,
    /// Its version: at least 1, greater after every write ([`UNVERSIONED`] from a store that
    /// keeps no versions).
    pub version: u64,
}

impl VersionedTask {
    /// `task` at `version`.
    pub fn new(task: v1::Task, version: u64) -> Self {
        Self { task, version }
    }
}

/// The version the default [`TaskStore::get_versioned`] and [`TaskStore::save_versioned`]
/// give: a store that keeps no versions (and so fences nothing).
pub const UNVERSIONED: u64 = 0;

/// What another server process sharing a [`TaskStore`] tells this one (see
/// [`ReplicaBus::signals`]).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum RemoteSignal {
    /// An event of a task, published by the process running it (possibly this one), for the
    /// subscribers of processes that do not run it.
    Event {
        /// The task.
        task_id: String,
        /// A status or artifact update.
        event: Arc<v1::StreamResponse>,
    },
    /// A client asked, through some process, to cancel a task: the process running its
    /// handler cancels it.
    Cancel {
        /// The task.
        task_id: String,
    },
}

/// Persists tasks: the one store every hosted agent has. The server writes a task on every
/// change (status, new message; artifacts with the next status change) and reads it for
/// `GetTask`, `ListTasks`, `CancelTask`, `SubscribeToTask` and for messages continuing a task.
/// Implementations must be bounded or backed by durable storage.
///
/// A reply, stream event or webhook tells of a task state only after [`save`](Self::save)
/// of that state (or a later one) returned. A new task is first written in the state its
/// handler's first status change (or its end) gives it, without a `submitted` write before:
/// a task that completes at once costs one write.
///
/// **Fencing.** The server writes every change of a task through
/// [`save_versioned`](Self::save_versioned), a compare-and-set on the version it read with
/// [`get_versioned`](Self::get_versioned) or got from its own last write: of two server
/// processes continuing one `input-required` task, exactly one write succeeds (the other
/// request is refused with UnsupportedOperation), and a process that stalled past its lease
/// cannot overwrite what another process wrote meanwhile (its run stops). A store shared by
/// several processes, or by several servers in one process, must implement both methods
/// (the stores of this crate and `subagent-store` do); their defaults keep no versions and
/// check nothing, which is enough for a store only one server uses (the server does not race
/// itself).
///
/// The other concerns are separate traits, each implemented only by a store that backs it and
/// offered through this trait's accessors (whose defaults offer none):
/// [`PushConfigStore`] ([`push_configs`](Self::push_configs)), [`ReplicaBus`]
/// ([`replica_bus`](Self::replica_bus)) and [`ContextSessionStore`]
/// ([`context_sessions`](Self::context_sessions)). The server asks once, when it is built.
#[async_trait]
pub trait TaskStore: Send + Sync + 'static {
    /// Inserts or replaces a task (keyed by its id).
    async fn save(&self, task: v1::Task) -> Result<(), StoreError>;

    /// Reads a task.
    async fn get(&self, task_id: &str) -> Result<Option<v1::Task>, StoreError>;

    /// Reads a task with its version (see [`save_versioned`](Self::save_versioned)). The
    /// default reads [`get`](Self::get) and gives [`UNVERSIONED`].
    async fn get_versioned(&self, task_id: &str) -> Result<Option<VersionedTask>, StoreError> {
        Ok(self
            .get(task_id)
            .await?
            .map(|task| VersionedTask::new(task, UNVERSIONED)))
    }

    /// Writes `task` only if the stored version of it is `expected` (0: only if no task with
    /// its id is stored), and returns its new version; otherwise writes nothing and fails with
    /// [`StoreError::Conflict`]. Atomic against every other writer of the store, in this
    /// process or another. A task deleted by retention meanwhile may be written again.
    ///
    /// The default calls [`save`](Self::save), checks nothing, and returns [`UNVERSIONED`].
    async fn save_versioned(&self, task: v1::Task, expected: u64) -> Result<u64, StoreError> {
        let _ = expected;
        self.save(task).await.map(|()| UNVERSIONED)
    }

    /// The tasks matching the filter, latest status first: at most `limit` of them after
    /// skipping `offset`, with the total count of matching ones.
    async fn list(
        &self,
        filter: &TaskFilter,
        offset: usize,
        limit: usize,
    ) -> Result<TaskPage, StoreError>;

    /// Asked before a handler starts on a new message of about `bytes` bytes (see
    /// [`message_bytes`]): an error ([`StoreError::Full`]) refuses the message with ServerBusy
    /// (HTTP 503 + `Retry-After`, JSON-RPC -32000). Must be cheap: it runs on every message.
    /// The default admits everything.
    fn admit(&self, bytes: usize) -> Result<(), StoreError> {
        let _ = bytes;
        Ok(())
    }

    /// The store of this agent's push-notification configs, when this store keeps them
    /// (`Some(self)` from a store implementing [`PushConfigStore`]). `None`, the default:
    /// the agent offers no push notifications (its card says `pushNotifications: false`).
    fn push_configs(self: Arc<Self>) -> Option<Arc<dyn PushConfigStore>> {
        None
    }

    /// The bus to the other server processes sharing this store, when it is shared (replicas
    /// behind a load balancer): a task not running here may be running there. `None`, the
    /// default, for a store used by one process.
    fn replica_bus(self: Arc<Self>) -> Option<Arc<dyn ReplicaBus>> {
        None
    }

    /// Where the executor sessions of conversations are kept across restarts, when this store
    /// keeps them. `None`, the default: a hosted agent remembers them in memory only.
    fn context_sessions(self: Arc<Self>) -> Option<Arc<dyn ContextSessionStore>> {
        None
    }
}

/// Push-notification configs, kept with their tasks (see [`TaskStore::push_configs`]).
#[async_trait]
pub trait PushConfigStore: Send + Sync + 'static {
    /// Inserts or replaces a push-notification config, keyed by its `task_id` and `id` (the
    /// server fills both before calling; the task exists). A store may refuse more than
    /// [`MAX_PUSH_CONFIGS_PER_TASK`] configs for one task with [`StoreError::Backend`].
    /// Configs go when their task goes.
    async fn save_push_config(
        &self,
        config: v1::TaskPushNotificationConfig,
    ) -> Result<(), StoreError>;

    /// One push-notification config of a task, `None` when absent.
    async fn get_push_config(
        &self,
        task_id: &str,
        config_id: &str,
    ) -> Result<Option<v1::TaskPushNotificationConfig>, StoreError>;

    /// Every push-notification config of a task, in the order they were first saved. Read on
    /// every update of a task while push notifications are on, so it should be cheap.
    async fn list_push_configs(
        &self,
        task_id: &str,
    ) -> Result<Vec<v1::TaskPushNotificationConfig>, StoreError>;

    /// Deletes one push-notification config; `Ok(false)` when there was none (deleting is
    /// idempotent).
    async fn delete_push_config(&self, task_id: &str, config_id: &str) -> Result<bool, StoreError>;
}

/// Carries events and cancel requests between the server processes sharing a store (see
/// [`TaskStore::replica_bus`]).
#[async_trait]
pub trait ReplicaBus: Send + Sync + 'static {
    /// Publishes an event of a task running in this process to every process sharing the
    /// store.
    async fn publish_event(
        &self,
        task_id: &str,
        event: &v1::StreamResponse,
    ) -> Result<(), StoreError>;

    /// Asks every process sharing the store to cancel the handler of `task_id`.
    async fn request_cancel(&self, task_id: &str) -> Result<(), StoreError>;

    /// Events and cancel requests from the processes sharing the store, this one included.
    /// Each call gives a new receiver.
    fn signals(&self) -> tokio::sync::broadcast::Receiver<RemoteSignal>;
}

/// The executor sessions that conversations continue (see [`TaskStore::context_sessions`]).
#[async_trait]
pub trait ContextSessionStore: Send + Sync + 'static {
    /// The executor session that the conversation `context_id` continues, as recorded by
    /// [`save_context_session`](Self::save_context_session): a hosted agent
    /// (`server::SubagentHandler`) resumes it on the next message of
    /// that context, also after the server restarted. `None` when unknown.
    async fn context_session(&self, context_id: &str) -> Result<Option<String>, StoreError>;

    /// Records (`Some`) or forgets (`None`) the executor session of the conversation
    /// `context_id`. A durable store keeps it as long as tasks of that context are kept.
    async fn save_context_session(
        &self,
        context_id: &str,
        session_id: Option<&str>,
    ) -> Result<(), StoreError>;
}

/// The most push-notification configs one task may have in [`InMemoryTaskStore`] (and what
/// other stores should allow at least).
pub const MAX_PUSH_CONFIGS_PER_TASK: usize = 16;
