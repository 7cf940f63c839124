//! The task engine of one hosted agent: runs handlers, applies their events to tasks, fans
//! events out to subscribers, and answers task queries. Protocol-neutral (1.0 types inside).
//!
//! This module takes requests (send, continue, get, list, cancel, subscribe); [`run`] runs a
//! task (a handler run and its events), [`fanout`] hands events to subscribers and webhooks,
//! [`replicas`] coordinates with the processes sharing the store, [`fence`] makes every write
//! of a task a compare-and-set on its version.

pub(crate) mod direct;
mod fanout;
mod fence;
mod replicas;
mod run;
mod sink;

use fanout::broadcast;
pub(crate) use fence::Fence;
use replicas::RemoteWatcher;

use std::collections::{HashMap, HashSet};
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use futures::FutureExt;
use subagent_spi::CancellationToken;
use tokio::sync::{mpsc, oneshot};
use tracing::Instrument as _;

use super::handler::{
    A2aHandler, Emission, HandlerError, HandlerRequest, SinkError, TaskEventSink,
};
use super::store::{
    ContextSessionStore, PushConfigStore, RemoteSignal, ReplicaBus, StoreError, TaskFilter,
    TaskStore, VersionedTask,
};
use super::util::{new_id, now_rfc3339};
use crate::types::jsonrpc::codes;
use crate::types::{JsonObject, ProtocolVersion, v1};

// The engine's answers to the bindings (re-exported: the bindings import them from here).
pub(crate) use super::api::{ApiError, Event};

/// Tuning of an engine.
#[derive(Debug, Clone)]
pub(crate) struct EngineLimits {
    /// Events buffered per subscriber before the handler waits.
    pub subscriber_buffer: usize,
    /// How long the handler waits for a full subscriber before dropping it.
    pub slow_subscriber_timeout: Duration,
    /// How long `CancelTask` waits for the handler to end before forcing `canceled`.
    pub cancel_grace: Duration,
}

struct RunState {
    task: Option<v1::Task>,
    /// Shared with the handler's request: copied into the task's history only if a task is
    /// created (a direct reply never copies it).
    user_message: Option<Arc<v1::Message>>,
    /// No more events are accepted (terminal state, direct reply, or handler done).
    finished: bool,
    replied: bool,
    subscribers: Vec<mpsc::Sender<Event>>,
    error: Option<ApiError>,
    /// A push config sent with the message that creates the task: stored with the task.
    pending_push: Option<v1::TaskPushNotificationConfig>,
    /// The task's version as this run last wrote it: its next write is a compare-and-set on it.
    fence: Fence,
    /// Another writer changed the task: the run stopped working on it ([`Run::fence`]).
    fenced: bool,
}

/// One execution of the handler for one message of one task.
pub(crate) struct Run {
    pub task_id: String,
    pub context_id: String,
    pub cancel: CancellationToken,
    state: tokio::sync::Mutex<RunState>,
    engine: Weak<Engine>,
    done: std::sync::atomic::AtomicBool,
    done_notify: tokio::sync::Notify,
    /// The run is in the engine's map (it created or continued a task).
    registered: std::sync::atomic::AtomicBool,
    /// Set while the handler waits, in this run, for the client's answer to a question
    /// ([`Run::await_input`]): the next message on the task goes here instead of starting a
    /// new handler run.
    input: Mutex<Option<oneshot::Sender<Arc<v1::Message>>>>,
    /// One question at a time: concurrent [`Run::await_input`] calls queue here.
    asking: tokio::sync::Mutex<()>,
    /// Set when the handler takes further messages while the task runs
    /// ([`TaskEventSink::inbox`](super::TaskEventSink::inbox)): a message on the `working`
    /// task goes here instead of being refused.
    pub(crate) inbox: Mutex<Option<mpsc::Sender<Arc<v1::Message>>>>,
    /// The protocol version of the message that started the run (push payloads follow it).
    version: ProtocolVersion,
    /// Direct runs (a blocking send of a new task, see `direct`): the request's answer
    /// is handed over here instead of through a subscriber channel.
    pub(crate) direct: Option<direct::Direct>,
}

type BoxFuture = std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>;

/// The handler's run (handler + finishing). The binding layer either spawns it at once
/// ([`Driver::spawn`]) or drives it inside the request (no task hop for quick handlers); if the
/// request goes away first, dropping the driver spawns the rest, so the task always finishes.
pub(crate) struct Driver(Option<BoxFuture>);

impl Driver {
    /// The run of `handler` on `request`: the handler (a panic fails it), then `finish` with
    /// its result; in the request's span, spawned or driven by the request.
    pub(crate) fn handler<F, Fut>(
        handler: Arc<dyn A2aHandler>,
        request: HandlerRequest,
        sink: TaskEventSink,
        cancel: CancellationToken,
        finish: F,
    ) -> Self
    where
        F: FnOnce(Result<(), HandlerError>) -> Fut + Send + 'static,
        Fut: std::future::Future<Output = ()> + Send,
    {
        Driver(Some(Box::pin(
            async move {
                let fut = handler.handle(request, sink, cancel);
                let result = match AssertUnwindSafe(fut).catch_unwind().await {
                    Ok(r) => r,
                    Err(_) => Err(HandlerError::failed("the agent's handler panicked")),
                };
                finish(result).await;
            }
            .instrument(tracing::Span::current()),
        )))
    }

    /// Runs the rest in its own tokio task.
    pub(super) fn spawn(&mut self) {
        if let Some(f) = self.0.take() {
            match tokio::runtime::Handle::try_current() {
                Ok(h) => {
                    h.spawn(f);
                }
                Err(_) => tracing::warn!("A2A handler dropped outside a tokio runtime"),
            }
        }
    }

    /// The future still to drive, if any.
    pub(super) fn pending(&mut self) -> Option<&mut BoxFuture> {
        self.0.as_mut()
    }

    /// Marks the run as driven to its end.
    pub(super) fn done(&mut self) {
        self.0 = None;
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        self.spawn();
    }
}

/// What a send produced: a run of the engine, or (a blocking send of a new task) a direct run
/// that becomes one only when its handler reports a task event (see `direct`).
pub(crate) enum Sent {
    Run(Started),
    Direct(direct::DirectStart),
}

/// What a run of the engine starts with, for [`Run::create`].
pub(crate) struct NewRun {
    pub task_id: String,
    pub context_id: String,
    pub cancel: CancellationToken,
    /// The task continued (as the run starts); `None` for a new task.
    pub task: Option<v1::Task>,
    /// The user's message, for a new task's history.
    pub user_message: Option<Arc<v1::Message>>,
    pub subscribers: Vec<mpsc::Sender<Event>>,
    pub pending_push: Option<v1::TaskPushNotificationConfig>,
    pub version: ProtocolVersion,
    pub direct: Option<direct::Direct>,
    /// The version of the continued task as the run starts (default: a new task).
    pub fence: Fence,
}

impl Run {
    /// A run of `engine` (not registered: its first task event does that).
    pub(crate) fn create(engine: Weak<Engine>, n: NewRun) -> Arc<Run> {
        Arc::new(Run {
            task_id: n.task_id,
            context_id: n.context_id,
            cancel: n.cancel,
            state: tokio::sync::Mutex::new(RunState {
                task: n.task,
                user_message: n.user_message,
                finished: false,
                replied: false,
                subscribers: n.subscribers,
                error: None,
                pending_push: n.pending_push,
                fence: n.fence,
                fenced: false,
            }),
            engine,
            done: std::sync::atomic::AtomicBool::new(false),
            done_notify: tokio::sync::Notify::new(),
            registered: std::sync::atomic::AtomicBool::new(false),
            input: Mutex::new(None),
            asking: tokio::sync::Mutex::new(()),
            inbox: Mutex::new(None),
            version: n.version,
            direct: n.direct,
        })
    }
}

/// What a send produced, read by the binding layer.
pub(crate) struct Started {
    pub run: Arc<Run>,
    /// The run's events for the request.
    pub events: mpsc::Receiver<Event>,
    pub driver: Driver,
}

/// The engine of one hosted agent.
pub(crate) struct Engine {
    pub handler: Arc<dyn A2aHandler>,
    pub store: Arc<dyn TaskStore>,
    /// The store's push-notification configs, when it keeps them.
    pub push_configs: Option<Arc<dyn PushConfigStore>>,
    /// The bus to the processes sharing the store, when it is shared.
    replicas: Option<Arc<dyn ReplicaBus>>,
    /// The store's conversation sessions, when it keeps them.
    sessions: Option<Arc<dyn ContextSessionStore>>,
    pub limits: EngineLimits,
    pub agent_path: String,
    runs: Mutex<HashMap<String, Arc<Run>>>,
    /// Tasks a message is continuing right now (from reading the stored task to registering
    /// the new run): a second message for one of them is refused at once, so exactly one
    /// continuation of an interrupted task wins.
    continuing: Mutex<HashSet<String>>,
    /// Subscribers of interrupted tasks, waiting for the message that continues them.
    waiting: Mutex<HashMap<String, Vec<mpsc::Sender<Event>>>>,
    /// Shared stores: subscribers of tasks this process does not run, fed by the store's
    /// [`RemoteSignal::Event`]s.
    remote: Mutex<HashMap<String, Vec<RemoteWatcher>>>,
    /// The store's signals are being read (shared stores).
    listening: std::sync::Once,
    /// Fires on server shutdown (streams end; [`Engine::cancel_all`] cancels the handlers).
    pub shutdown: CancellationToken,
    /// Delivers task updates to webhooks, when push notifications are on.
    #[cfg(feature = "push")]
    pub pusher: Option<Arc<super::push::Pusher>>,
}

/// What [`Engine::launch`] starts a run with, besides the call.
struct Launch {
    task_id: String,
    context_id: String,
    /// The task continued (as the run starts, and as it was stored before this message);
    /// `None` for a new task.
    task: Option<(v1::Task, v1::Task)>,
    /// Who hears the run's events: the caller first.
    subscribers: Vec<mpsc::Sender<Event>>,
    /// The caller's end of the first subscriber.
    events: mpsc::Receiver<Event>,
    /// A push config named inline, stored with the task.
    pending_push: Option<v1::TaskPushNotificationConfig>,
    /// The continued task's version (its `working` write's).
    fence: Fence,
}

/// The parsed parts of a `SendMessage` call.
pub(crate) struct SendParams {
    pub message: v1::Message,
    pub configuration: Option<v1::SendMessageConfiguration>,
    pub metadata: Option<JsonObject>,
    pub streaming: bool,
    pub version: ProtocolVersion,
    /// A blocking send: a new task's run answers the request directly (see `direct`).
    pub direct: bool,
}

/// Keeps the last `n` history messages (`n` = 0 drops them all, `None` keeps all).
pub(crate) fn trim_history(task: &mut v1::Task, history_length: Option<i32>) {
    if let Some(n) = history_length {
        let n = usize::try_from(n).unwrap_or(0);
        let len = task.history.len();
        if len > n {
            task.history.drain(..len - n);
        }
    }
}

/// A blocking send's answer once its run has settled: `task` (the run's, read by the caller)
/// with `history_length` messages of history, else the error the handler answered with.
pub(crate) async fn settled_reply(
    run: &Run,
    task: Option<v1::Task>,
    history_length: Option<i32>,
) -> Result<v1::SendMessageResponse, ApiError> {
    match task {
        Some(mut t) => {
            trim_history(&mut t, history_length);
            Ok(v1::SendMessageResponse::Task(t))
        }
        None => Err(run
            .error()
            .await
            .unwrap_or_else(|| ApiError::internal("the agent ended without answering"))),
    }
}

/// Refuses a call on the task `task_id` when it is in a terminal state; `consequence` ends the
/// message (what the state rules out).
fn refuse_terminal(task_id: &str, task: &v1::Task, consequence: &str) -> Result<(), ApiError> {
    if task.status.state.is_terminal() {
        return Err(ApiError::new(
            codes::UNSUPPORTED_OPERATION,
            format!(
                "task `{task_id}` is in terminal state {}{consequence}",
                task.status.state
            ),
        ));
    }
    Ok(())
}

fn lock_runs(
    m: &Mutex<HashMap<String, Arc<Run>>>,
) -> std::sync::MutexGuard<'_, HashMap<String, Arc<Run>>> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

type Waiting = HashMap<String, Vec<mpsc::Sender<Event>>>;

fn lock_waiting(m: &Mutex<Waiting>) -> std::sync::MutexGuard<'_, Waiting> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Engine {
    pub(super) fn new(
        handler: Arc<dyn A2aHandler>,
        store: Arc<dyn TaskStore>,
        limits: EngineLimits,
        agent_path: String,
        shutdown: CancellationToken,
    ) -> Self {
        Self {
            handler,
            push_configs: store.clone().push_configs(),
            replicas: store.clone().replica_bus(),
            sessions: store.clone().context_sessions(),
            store,
            limits,
            agent_path,
            runs: Mutex::new(HashMap::new()),
            continuing: Mutex::new(HashSet::new()),
            waiting: Mutex::new(HashMap::new()),
            remote: Mutex::new(HashMap::new()),
            listening: std::sync::Once::new(),
            shutdown,
            #[cfg(feature = "push")]
            pusher: None,
        }
    }

    /// Completes and checks a push config for `task_id` (a fresh id when it has none); refuses
    /// it when push notifications are off (PushNotificationNotSupported) or its URL is not
    /// allowed (InvalidParams).
    pub(crate) fn prepare_push_config(
        &self,
        task_id: &str,
        mut config: v1::TaskPushNotificationConfig,
    ) -> Result<v1::TaskPushNotificationConfig, ApiError> {
        #[cfg(feature = "push")]
        if let Some(p) = &self.pusher {
            config.task_id = Some(task_id.to_string());
            if config.id.as_deref().is_none_or(str::is_empty) {
                config.id = Some(new_id());
            }
            super::push::validate(&config, p.allow_private())?;
            return Ok(config);
        }
        let _ = (task_id, &mut config);
        Err(ApiError::new(
            codes::PUSH_NOTIFICATION_NOT_SUPPORTED,
            "push notifications are not supported by this agent (capabilities.pushNotifications is false)",
        ))
    }

    /// Stores a push config in the store's push configs ([`StoreError::Unsupported`] when it
    /// keeps none).
    pub(crate) async fn save_push_config(
        &self,
        config: v1::TaskPushNotificationConfig,
    ) -> Result<(), StoreError> {
        match &self.push_configs {
            Some(p) => p.save_push_config(config).await,
            None => Err(StoreError::Unsupported {
                what: "push notification configs",
            }),
        }
    }

    /// True when this agent delivers push notifications.
    pub(crate) fn push_enabled(&self) -> bool {
        #[cfg(feature = "push")]
        {
            self.pusher.is_some()
        }
        #[cfg(not(feature = "push"))]
        {
            false
        }
    }

    fn live(&self, task_id: &str) -> Option<Arc<Run>> {
        lock_runs(&self.runs).get(task_id).cloned()
    }

    /// The number of tasks whose handler is running.
    pub(super) fn live_count(&self) -> usize {
        lock_runs(&self.runs).len()
    }

    async fn load(&self, task_id: &str) -> Result<Option<v1::Task>, ApiError> {
        self.store
            .get(task_id)
            .await
            .map_err(|e| ApiError::internal(e.to_string()))
    }

    /// Validates a message and starts the handler. The returned receiver gets the events in
    /// order; it closes when the task reaches a terminal or interrupted state, after a direct
    /// reply, or when the handler ends.
    pub(super) async fn send(self: &Arc<Self>, p: SendParams) -> Result<Sent, ApiError> {
        self.admit_message(&p)?;
        if p.message.task_id.as_deref().is_some_and(|t| !t.is_empty()) {
            // A follow-up waits on the store and on the task's run. Boxed: that future is
            // large, and a new task (the common case) starts without waiting on anything, in
            // a future every binding's call embeds.
            return Box::pin(self.follow_up(p)).await.map(Sent::Run);
        }
        let mut p = p;
        let context_id = match p.message.context_id.take() {
            Some(c) if !c.is_empty() => c,
            _ => new_id(),
        };
        let task_id = new_id();
        let pending_push = self.inline_push(&task_id, &p)?;
        if p.direct {
            return Ok(Sent::Direct(direct::start(
                self,
                p,
                task_id,
                context_id,
                pending_push,
            )));
        }
        let (tx, events) = mpsc::channel(self.limits.subscriber_buffer.max(1));
        Ok(Sent::Run(self.launch(
            p,
            Launch {
                task_id,
                context_id,
                task: None,
                subscribers: vec![tx],
                events,
                pending_push,
                fence: Fence::default(),
            },
        )))
    }

    /// A fresh cancellation token for a run: no lock on a shared parent per request; shutdown
    /// cancels the registered runs (see `cancel_all`).
    pub(crate) fn run_token(&self) -> CancellationToken {
        if self.shutdown.is_cancelled() {
            self.shutdown.child_token()
        } else {
            CancellationToken::new()
        }
    }

    /// The store's conversation sessions, when it keeps them.
    pub(crate) fn sessions(&self) -> Option<Arc<dyn ContextSessionStore>> {
        self.sessions.clone()
    }

    /// The checks every message passes before anything starts: ids, parts, role, history
    /// length, and room in the store's memory budget.
    fn admit_message(self: &Arc<Self>, p: &SendParams) -> Result<(), ApiError> {
        let message = &p.message;
        if message.message_id.is_empty() {
            return Err(ApiError::invalid_params("`message.messageId` is required"));
        }
        if message.parts.is_empty() {
            return Err(ApiError::invalid_params(
                "`message.parts` must hold at least one part",
            ));
        }
        if message.role != v1::Role::User {
            return Err(ApiError::invalid_params(format!(
                "`message.role` must be ROLE_USER, got {}",
                message.role
            )));
        }
        if let Some(c) = &p.configuration
            && let Some(h) = c.history_length
            && h < 0
        {
            return Err(ApiError::invalid_params(format!(
                "`configuration.historyLength` must be >= 0, got {h}"
            )));
        }
        // Memory: refuse new work while running tasks fill the store's budget.
        if let Err(e) = self.store.admit(super::store::message_bytes(message)) {
            return Err(match e {
                StoreError::Full { .. } => ApiError::new(codes::SERVER_BUSY, e.to_string()),
                e => ApiError::internal(e.to_string()),
            });
        }
        self.ensure_listening();
        Ok(())
    }

    /// The push config a send names inline, checked, for task `task_id`.
    fn inline_push(
        &self,
        task_id: &str,
        p: &SendParams,
    ) -> Result<Option<v1::TaskPushNotificationConfig>, ApiError> {
        match p
            .configuration
            .as_ref()
            .and_then(|c| c.task_push_notification_config.clone())
        {
            Some(c) => self.prepare_push_config(task_id, c).map(Some),
            None => Ok(None),
        }
    }

    /// A message to an existing task: answered by its running handler when that waits for
    /// it, else it continues the stored task when that is interrupted (input or auth
    /// required).
    ///
    /// Concurrent messages for one task: exactly one continues it; the others are refused at
    /// once (UnsupportedOperation, the task is running), never left waiting.
    async fn follow_up(self: &Arc<Self>, mut p: SendParams) -> Result<Started, ApiError> {
        let tid = p.message.task_id.clone().unwrap_or_default();
        // Held until the continuing run is registered (or this message is refused).
        let _claim = self.claim(&tid)?;
        if let Some(run) = self.live(&tid) {
            // The handler may be waiting, in its run, for exactly this message.
            match run.answer(p.message, self).await? {
                Ok(started) => return Ok(started),
                Err(m) => p.message = m,
            }
            // A handler that left its task interrupted without waiting is returning: once it
            // has (within the cancel grace), the stored task is continued below.
            if !run
                .interrupted_and_returning(self.limits.cancel_grace)
                .await
            {
                return Err(still_running(&tid));
            }
        }
        let VersionedTask { mut task, version } = self
            .load_versioned(&tid)
            .await?
            .ok_or_else(|| ApiError::not_found(&tid))?;
        refuse_terminal(&tid, &task, " and accepts no more messages")?;
        if !task.status.state.is_interrupted() {
            // Submitted or working, not here: another process sharing the store runs it.
            return Err(ApiError::new(
                codes::UNSUPPORTED_OPERATION,
                format!(
                    "task `{tid}` is still running (on another server process); wait \
                     for it to stop or cancel it"
                ),
            ));
        }
        let context_id = task.context_id.clone().unwrap_or_default();
        if let Some(c) = &p.message.context_id
            && !c.is_empty()
            && *c != context_id
        {
            return Err(ApiError::invalid_params(format!(
                "`message.contextId` `{c}` does not match the context `{context_id}` of task `{tid}`"
            )));
        }
        p.message.context_id = Some(context_id.clone());
        let push = self.inline_push(&tid, &p)?;
        let (tx, events) = mpsc::channel(self.limits.subscriber_buffer.max(1));
        let mut subscribers = vec![tx];
        let previous = task.clone();
        let mut message = p.message.clone();
        message.task_id = Some(tid.clone());
        task.history.push(message);
        task.status = v1::TaskStatus {
            state: v1::TaskState::Working,
            message: None,
            timestamp: Some(now_rfc3339()),
        };
        // Committed before any stream, webhook or replica hears of it; a compare-and-set on the
        // version read, so of messages racing through several processes exactly one wins.
        let mut fence = Fence::at(version);
        if self.save_at(task.clone(), &mut fence).await.is_err() {
            return Err(ApiError::new(
                codes::UNSUPPORTED_OPERATION,
                format!(
                    "task `{tid}` was continued by another message meanwhile (through another \
                     server process); wait for it to stop or cancel it"
                ),
            ));
        }
        if let Some(c) = push {
            self.save_push_config(c)
                .await
                .map_err(|e| ApiError::internal(e.to_string()))?;
        }
        let _ = subscribers[0].try_send(Arc::new(v1::StreamResponse::Task(task.clone())));
        let waiting = lock_waiting(&self.waiting).remove(&tid).unwrap_or_default();
        let update = Arc::new(v1::StreamResponse::StatusUpdate(
            v1::TaskStatusUpdateEvent {
                task_id: tid.clone(),
                context_id: context_id.clone(),
                status: task.status.clone(),
                metadata: None,
            },
        ));
        self.push(&tid, &update, Some(&task), p.version);
        for w in waiting {
            if w.try_send(update.clone()).is_ok() {
                subscribers.push(w);
            }
        }
        self.publish(&tid, &update).await;
        let started = self.launch(
            p,
            Launch {
                task_id: tid,
                context_id,
                task: Some((task, previous)),
                subscribers,
                events,
                pending_push: None,
                fence,
            },
        );
        started
            .run
            .registered
            .store(true, std::sync::atomic::Ordering::Release);
        lock_runs(&self.runs).insert(started.run.task_id.clone(), started.run.clone());
        Ok(started)
    }

    /// Marks `task_id` as being continued by one message until the guard drops; refuses at
    /// once when another message is continuing it.
    fn claim(&self, task_id: &str) -> Result<ContinueClaim<'_>, ApiError> {
        let mut c = self.continuing.lock().unwrap_or_else(|e| e.into_inner());
        if !c.insert(task_id.to_string()) {
            return Err(ApiError::new(
                codes::UNSUPPORTED_OPERATION,
                format!(
                    "task `{task_id}` is being continued by another message; wait for it to \
                     stop or cancel it"
                ),
            ));
        }
        Ok(ContinueClaim {
            set: &self.continuing,
            task_id: task_id.to_string(),
        })
    }

    /// Starts the handler's run of `p`'s message in task `l.task_id` (not waiting on
    /// anything: the returned driver runs it).
    fn launch(self: &Arc<Self>, p: SendParams, l: Launch) -> Started {
        let Launch {
            task_id,
            context_id,
            task,
            subscribers,
            events,
            pending_push,
            fence,
        } = l;
        let mut message = p.message;
        message.task_id = Some(task_id.clone());
        message.context_id = Some(context_id.clone());
        let message = Arc::new(message);
        let (task, previous) = task.unzip();
        let run = Run::create(
            Arc::downgrade(self),
            NewRun {
                task_id: task_id.clone(),
                context_id: context_id.clone(),
                cancel: self.run_token(),
                task,
                user_message: Some(message.clone()),
                subscribers,
                pending_push,
                version: p.version,
                // Direct runs start in `direct`.
                direct: None,
                fence,
            },
        );
        let request = HandlerRequest {
            agent_path: self.agent_path.clone(),
            task_id,
            context_id,
            message,
            task: previous,
            configuration: p.configuration,
            metadata: p.metadata,
            streaming: p.streaming,
            version: p.version,
        };
        let sink = TaskEventSink::new(Arc::new(sink::EngineSink(run.clone())));
        let r2 = run.clone();
        let driver = Driver::handler(
            self.handler.clone(),
            request,
            sink,
            run.cancel.clone(),
            move |result| async move { r2.finish(result).await },
        );
        Started {
            run,
            events,
            driver,
        }
    }

    /// The current task (live or stored), history trimmed.
    pub(super) async fn get(
        &self,
        task_id: &str,
        history_length: Option<i32>,
    ) -> Result<v1::Task, ApiError> {
        if let Some(h) = history_length
            && h < 0
        {
            return Err(ApiError::invalid_params(format!(
                "`historyLength` must be >= 0, got {h}"
            )));
        }
        let mut task = match self.snapshot(task_id).await {
            Some(t) => t,
            None => self
                .load(task_id)
                .await?
                .ok_or_else(|| ApiError::not_found(task_id))?,
        };
        trim_history(&mut task, history_length);
        Ok(task)
    }

    async fn snapshot(&self, task_id: &str) -> Option<v1::Task> {
        let run = self.live(task_id)?;
        let st = run.state.lock().await;
        st.task.clone()
    }

    /// Lists tasks for `ListTasks`.
    pub(super) async fn list(
        &self,
        req: &v1::ListTasksRequest,
    ) -> Result<v1::ListTasksResponse, ApiError> {
        let page_size = match req.page_size {
            None | Some(0) => 50,
            Some(n) if (1..=100).contains(&n) => n,
            Some(n) => {
                return Err(ApiError::invalid_params(format!(
                    "`pageSize` must be between 1 and 100, got {n}"
                )));
            }
        };
        if let Some(h) = req.history_length
            && h < 0
        {
            return Err(ApiError::invalid_params(format!(
                "`historyLength` must be >= 0, got {h}"
            )));
        }
        let offset = match req.page_token.as_deref() {
            None | Some("") => 0usize,
            Some(t) => t
                .strip_prefix("o")
                .and_then(|n| n.parse().ok())
                .ok_or_else(|| ApiError::invalid_params(format!("invalid `pageToken` `{t}`")))?,
        };
        if let Some(ts) = &req.status_timestamp_after
            && !looks_like_timestamp(ts)
        {
            return Err(ApiError::invalid_params(format!(
                "`statusTimestampAfter` must be an ISO 8601 timestamp, got `{ts}`"
            )));
        }
        let filter = TaskFilter {
            context_id: req.context_id.clone().filter(|c| !c.is_empty()),
            state: req.status.filter(|s| *s != v1::TaskState::Unspecified),
            status_timestamp_after: req.status_timestamp_after.clone(),
        };
        let size = usize::try_from(page_size).unwrap_or(50);
        let page = self
            .store
            .list(&filter, offset, size)
            .await
            .map_err(|e| ApiError::internal(e.to_string()))?;
        let total = page.total;
        let include_artifacts = req.include_artifacts.unwrap_or(false);
        let mut tasks = Vec::with_capacity(page.tasks.len());
        for mut t in page.tasks {
            // The stored copy may lag a live run by one event; prefer the live one.
            if let Some(live) = self.snapshot(&t.id).await {
                t = live;
            }
            trim_history(&mut t, req.history_length);
            if !include_artifacts {
                t.artifacts.clear();
            }
            tasks.push(t);
        }
        let next = offset + tasks.len();
        Ok(v1::ListTasksResponse {
            tasks,
            next_page_token: if next < total {
                format!("o{next}")
            } else {
                String::new()
            },
            page_size,
            total_size: i32::try_from(total).unwrap_or(i32::MAX),
        })
    }

    /// Cancels a task: a running one through its handler's token (forced after a grace
    /// period), an interrupted one directly. Terminal tasks are not cancelable.
    pub(super) async fn cancel(&self, task_id: &str) -> Result<v1::Task, ApiError> {
        if let Some(run) = self.live(task_id) {
            match self.cancel_live(&run).await {
                Some(Ok(t)) => return Ok(t),
                Some(Err(())) => return Err(not_cancelable(task_id)),
                None => {}
            }
        }
        // A task changed by another process while this one cancels it is read again (a few
        // times: each round waits for a change that another writer made).
        for _ in 0..3 {
            if let Some(t) = self.cancel_stored(task_id).await? {
                return Ok(t);
            }
        }
        Err(ApiError::internal(format!(
            "task `{task_id}` kept changing while it was being canceled; try again"
        )))
    }

    /// Cancels a task this process does not run: asks the process running it (shared stores),
    /// else (or when that does not answer) writes `canceled` itself, a compare-and-set on the
    /// version read; `None` when another writer changed the task meanwhile.
    async fn cancel_stored(&self, task_id: &str) -> Result<Option<v1::Task>, ApiError> {
        let VersionedTask {
            mut task,
            mut version,
        } = self
            .load_versioned(task_id)
            .await?
            .ok_or_else(|| ApiError::not_found(task_id))?;
        if task.status.state.is_terminal() {
            return Err(not_cancelable(task_id));
        }
        if let Some(bus) = &self.replicas
            && !task.status.state.is_interrupted()
        {
            // Running on another process: ask it, and wait for its handler to end (as long as
            // a local cancel waits, plus a little for the store round trips).
            bus.request_cancel(task_id)
                .await
                .map_err(|e| ApiError::internal(e.to_string()))?;
            let deadline =
                tokio::time::Instant::now() + self.limits.cancel_grace + Duration::from_secs(2);
            while tokio::time::Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(50)).await;
                if let Some(t) = self.load_versioned(task_id).await? {
                    if t.task.status.state.is_terminal() {
                        return Ok(Some(t.task));
                    }
                    (task, version) = (t.task, t.version);
                }
            }
            // No answer (the process died, or is stuck): force it, like a local cancel.
        }
        task.status = v1::TaskStatus {
            state: v1::TaskState::Canceled,
            message: None,
            timestamp: Some(now_rfc3339()),
        };
        if self
            .save_at(task.clone(), &mut Fence::at(version))
            .await
            .is_err()
        {
            return Ok(None);
        }
        let waiting = lock_waiting(&self.waiting)
            .remove(task_id)
            .unwrap_or_default();
        let update = Arc::new(v1::StreamResponse::StatusUpdate(
            v1::TaskStatusUpdateEvent {
                task_id: task.id.clone(),
                context_id: task.context_id.clone().unwrap_or_default(),
                status: task.status.clone(),
                metadata: None,
            },
        ));
        for w in waiting {
            let _ = w.try_send(update.clone());
        }
        self.publish(task_id, &update).await;
        // The run that created the task is gone: its version is unknown, so 1.0 shapes.
        self.push(task_id, &update, Some(&task), ProtocolVersion::V1);
        Ok(Some(task))
    }

    /// Cancels a run of this process: its handler's token, then `canceled` forced after the
    /// grace period. `None` when the run has no task; `Some(Err(()))` when it is terminal.
    async fn cancel_live(&self, run: &Arc<Run>) -> Option<Result<v1::Task, ()>> {
        let terminal = {
            let st = run.state.lock().await;
            st.task.as_ref().map(|t| t.status.state.is_terminal())
        };
        if terminal == Some(true) {
            return Some(Err(()));
        }
        run.cancel.cancel();
        let notified = run.done_notify.notified();
        if !run.done.load(std::sync::atomic::Ordering::Acquire) {
            let _ = tokio::time::timeout(self.limits.cancel_grace, notified).await;
        }
        let mut st = run.state.lock().await;
        if let Some(t) = &st.task
            && !t.status.state.is_terminal()
        {
            run.apply(
                &mut st,
                Emission::Status(v1::TaskState::Canceled, None, None),
                true,
            )
            .await;
        }
        st.task.clone().map(Ok)
    }

    /// Joins a task's stream: the first event is the task itself. A task that is not running
    /// any more gives just that event (interrupted) or an error (terminal).
    pub(super) async fn subscribe(
        self: &Arc<Self>,
        task_id: &str,
    ) -> Result<mpsc::Receiver<Event>, ApiError> {
        self.ensure_listening();
        if let Some(run) = self.live(task_id) {
            let mut st = run.state.lock().await;
            if !st.finished
                && let Some(t) = st.task.clone()
                && !t.status.state.is_interrupted()
            {
                let (tx, rx) = mpsc::channel(self.limits.subscriber_buffer.max(1));
                let _ = tx.try_send(Arc::new(v1::StreamResponse::Task(t)));
                st.subscribers.push(tx);
                return Ok(rx);
            }
        }
        let task = match self.snapshot(task_id).await {
            Some(t) => t,
            None => self
                .load(task_id)
                .await?
                .ok_or_else(|| ApiError::not_found(task_id))?,
        };
        refuse_terminal(task_id, &task, "; there is nothing to subscribe to")?;
        if self.replicas.is_some() {
            return Ok(self.subscribe_remote(task).await);
        }
        // Interrupted: the stream waits for the message that continues the task.
        let (tx, rx) = mpsc::channel(self.limits.subscriber_buffer.max(1));
        let _ = tx.try_send(Arc::new(v1::StreamResponse::Task(task)));
        let mut waiting = lock_waiting(&self.waiting);
        waiting.retain(|_, v| {
            v.retain(|s| !s.is_closed());
            !v.is_empty()
        });
        waiting.entry(task_id.to_string()).or_default().push(tx);
        Ok(rx)
    }
}

/// The claim of [`Engine::claim`]: released on drop.
struct ContinueClaim<'a> {
    set: &'a Mutex<HashSet<String>>,
    task_id: String,
}

impl Drop for ContinueClaim<'_> {
    fn drop(&mut self) {
        self.set
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&self.task_id);
    }
}

fn still_running(task_id: &str) -> ApiError {
    ApiError::new(
        codes::UNSUPPORTED_OPERATION,
        format!("task `{task_id}` is still running; wait for it to stop or cancel it"),
    )
}

fn not_cancelable(task_id: &str) -> ApiError {
    ApiError::new(
        codes::TASK_NOT_CANCELABLE,
        format!("task `{task_id}` is in a terminal state and cannot be canceled"),
    )
}

fn looks_like_timestamp(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() >= 10
        && b[4] == b'-'
        && b[7] == b'-'
        && b[..4].iter().all(u8::is_ascii_digit)
        && s.is_ascii()
}

impl Engine {
    /// Cancels every running handler (server shutdown).
    pub(super) fn cancel_all(&self) {
        let runs: Vec<Arc<Run>> = lock_runs(&self.runs).values().cloned().collect();
        for r in runs {
            r.cancel.cancel();
        }
    }

    fn forget(&self, run: &Run) {
        if !run.registered.load(std::sync::atomic::Ordering::Acquire) {
            return;
        }
        let mut runs = lock_runs(&self.runs);
        if runs
            .get(&run.task_id)
            .is_some_and(|r| std::ptr::eq(Arc::as_ptr(r), run))
        {
            runs.remove(&run.task_id);
        }
    }
}
