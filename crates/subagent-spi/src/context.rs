use std::any::Any;
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::{CancellationToken, ProgressEvent, ProgressKind};

/// Receives progress events. Implementations must return quickly and never block: events are
/// emitted from the task path (use a bounded channel and drop on overflow, or an atomic update).
pub trait ProgressSink: Send + Sync {
    /// Handles one event.
    fn emit(&self, event: ProgressEvent);
}

/// A sink that drops every event.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoopProgressSink;

impl ProgressSink for NoopProgressSink {
    fn emit(&self, _event: ProgressEvent) {}
}

impl<F> ProgressSink for F
where
    F: Fn(ProgressEvent) + Send + Sync,
{
    fn emit(&self, event: ProgressEvent) {
        self(event)
    }
}

/// Everything a run needs from its caller besides the call itself: cancellation, nesting depth,
/// limits, the parent's model and where to send progress.
///
/// Contexts are cheap to clone. A caller makes a child context for each delegated run with
/// [`child`](Self::child): depth + 1, a child cancellation token, the same sink and limits.
#[derive(Clone)]
pub struct TaskContext {
    /// Cancelled when the caller gives up on this run; executors must stop promptly.
    pub cancel: CancellationToken,
    /// Nesting depth: 0 for the main agent, 1 for its children, and so on.
    pub depth: u32,
    /// This run's task id, when it has one.
    pub task_id: Option<String>,
    /// The task id of the run that started this one.
    pub parent_task_id: Option<String>,
    /// The agent name this context runs (for progress events).
    pub agent: String,
    /// A point in time after which the run must stop with a limit-reached status.
    pub deadline: Option<Instant>,
    /// A turn budget imposed by the caller (the agent's own limit still applies).
    pub max_turns: Option<u32>,
    /// A token budget (input + output) imposed by the caller.
    pub max_tokens: Option<u64>,
    /// The parent's model name, used when an agent's model is `inherit`.
    pub parent_model: Option<String>,
    /// Where progress goes.
    pub progress: Arc<dyn ProgressSink>,
    /// Typed values a host passes down to plugins (e.g. a shared HTTP client).
    pub extensions: Extensions,
}

impl fmt::Debug for TaskContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TaskContext")
            .field("depth", &self.depth)
            .field("task_id", &self.task_id)
            .field("parent_task_id", &self.parent_task_id)
            .field("agent", &self.agent)
            .field("deadline", &self.deadline)
            .field("max_turns", &self.max_turns)
            .field("max_tokens", &self.max_tokens)
            .field("parent_model", &self.parent_model)
            .field("cancelled", &self.cancel.is_cancelled())
            .finish_non_exhaustive()
    }
}

impl Default for TaskContext {
    fn default() -> Self {
        Self::new()
    }
}

impl TaskContext {
    /// A root context: depth 0, a fresh token, no limits, progress dropped.
    pub fn new() -> Self {
        Self {
            cancel: CancellationToken::new(),
            depth: 0,
            task_id: None,
            parent_task_id: None,
            agent: String::new(),
            deadline: None,
            max_turns: None,
            max_tokens: None,
            parent_model: None,
            progress: Arc::new(NoopProgressSink),
            extensions: Extensions::default(),
        }
    }

    /// The context for a run this one delegates to: depth + 1, a child cancellation token,
    /// this run's task id as the parent, the same sink, limits and extensions.
    pub fn child(&self, agent: impl Into<String>, task_id: Option<String>) -> Self {
        Self {
            cancel: self.cancel.child_token(),
            depth: self.depth + 1,
            parent_task_id: self.task_id.clone(),
            task_id,
            agent: agent.into(),
            deadline: self.deadline,
            max_turns: self.max_turns,
            max_tokens: self.max_tokens,
            parent_model: self.parent_model.clone(),
            progress: self.progress.clone(),
            extensions: self.extensions.clone(),
        }
    }

    /// Sets the progress sink (builder style).
    #[must_use]
    pub fn with_progress(mut self, sink: Arc<dyn ProgressSink>) -> Self {
        self.progress = sink;
        self
    }

    /// Sets the cancellation token (builder style).
    #[must_use]
    pub fn with_cancel(mut self, token: CancellationToken) -> Self {
        self.cancel = token;
        self
    }

    /// Sets the parent model (builder style).
    #[must_use]
    pub fn with_parent_model(mut self, model: impl Into<String>) -> Self {
        self.parent_model = Some(model.into());
        self
    }

    /// Sets a deadline `timeout` from now (builder style).
    #[must_use]
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.deadline = Some(Instant::now() + timeout);
        self
    }

    /// Time left before the deadline; `None` when there is no deadline.
    pub fn remaining(&self) -> Option<Duration> {
        self.deadline
            .map(|d| d.saturating_duration_since(Instant::now()))
    }

    /// Emits a progress event stamped with this context's task, agent and depth.
    pub fn emit(&self, kind: ProgressKind) {
        self.progress.emit(ProgressEvent {
            task_id: self.task_id.clone(),
            parent_task_id: self.parent_task_id.clone(),
            agent: self.agent.clone(),
            depth: self.depth,
            kind,
        });
    }
}

/// A small typed map of values a host hands down to plugins through [`TaskContext`].
#[derive(Clone, Default)]
pub struct Extensions {
    map: Option<Arc<HashMap<std::any::TypeId, Arc<dyn Any + Send + Sync>>>>,
}

impl fmt::Debug for Extensions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Extensions")
            .field("len", &self.map.as_ref().map_or(0, |m| m.len()))
            .finish()
    }
}

impl Extensions {
    /// Stores a value, replacing one of the same type.
    pub fn insert<T: Send + Sync + 'static>(&mut self, value: T) {
        let map = Arc::make_mut(self.map.get_or_insert_with(Default::default));
        map.insert(std::any::TypeId::of::<T>(), Arc::new(value));
    }

    /// Reads a value by type.
    pub fn get<T: Send + Sync + 'static>(&self) -> Option<&T> {
        self.map
            .as_ref()?
            .get(&std::any::TypeId::of::<T>())?
            .downcast_ref::<T>()
    }
}
