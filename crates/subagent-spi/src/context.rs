use std::any::Any;
use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use derive_setters::Setters;

#[allow(deprecated)]
use crate::Inbox;
use crate::{
    Approver, CancellationToken, Delegation, MessageInbox, ProgressEvent, ProgressKind, Tool,
};

/// Receives progress events. Implementations must return quickly and never block: events are
/// emitted from the task path (use a bounded channel and drop on overflow, or an atomic update).
pub trait ProgressSink: Send + Sync {
    /// Handles one event.
    fn emit(&self, event: ProgressEvent);

    /// Whether this sink drops every event unread (as [`NoopProgressSink`] does): senders may
    /// then skip building events. `false` unless a sink says otherwise.
    fn discards_events(&self) -> bool {
        false
    }
}

/// A sink that drops every event.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoopProgressSink;

impl ProgressSink for NoopProgressSink {
    fn emit(&self, _event: ProgressEvent) {}

    fn discards_events(&self) -> bool {
        true
    }
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
/// limits, the parent's model, where to send progress, and the host's delegation handle.
///
/// Contexts are cheap to clone. A caller makes a child context for each delegated run with
/// [`child`](Self::child): depth + 1, a child cancellation token, the same sink, limits,
/// extensions and delegation handle. Fields are private so new ones can be added without
/// breaking plugins: read them with the accessors, set them with the `with_*` methods.
#[derive(Clone, Setters)]
#[setters(prefix = "with_")]
pub struct TaskContext {
    #[setters(doc = "Sets the cancellation token.")]
    cancel: CancellationToken,
    #[setters(doc = "Sets the nesting depth (a host continuing a tree started elsewhere).")]
    depth: u32,
    #[setters(strip_option, into, doc = "Sets this run's task id.")]
    task_id: Option<String>,
    #[setters(strip_option, into, doc = "Sets the parent's task id.")]
    parent_task_id: Option<String>,
    #[setters(into, doc = "Sets the agent name.")]
    agent: String,
    #[setters(doc = "Sets (or clears) the deadline.")]
    deadline: Option<Instant>,
    #[setters(doc = "Sets (or clears) the caller's turn budget.")]
    max_turns: Option<u32>,
    #[setters(doc = "Sets (or clears) the caller's token budget.")]
    max_tokens: Option<u64>,
    #[setters(strip_option, into, doc = "Sets the parent model.")]
    parent_model: Option<String>,
    #[setters(doc = "Sets the progress sink.")]
    progress: Arc<dyn ProgressSink>,
    #[setters(skip)]
    extensions: Extensions,
    #[setters(
        strip_option,
        doc = "Sets the delegation handle children and their executors see."
    )]
    delegation: Option<Arc<dyn Delegation>>,
    #[setters(
        strip_option,
        doc = "Sets the approver this run and every run below it ask (see [`approver`](Self::approver))."
    )]
    approver: Option<Arc<dyn Approver>>,
    /// The agent names of the runs above this one, root first.
    #[setters(skip)]
    ancestors: Arc<[String]>,
    /// The 0.3 inbox, when a host set one with the deprecated [`with_inbox`](Self::with_inbox).
    #[setters(skip)]
    #[allow(deprecated)]
    inbox: Option<Inbox>,
    /// Messages sent to this run while it runs (never inherited by a child).
    #[setters(skip)]
    messages: Option<Arc<dyn MessageInbox>>,
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
            .field("delegation", &self.delegation.is_some())
            .field("approver", &self.approver.is_some())
            .field("agent_path", &self.agent_path())
            .field("messages", &self.messages.is_some())
            .finish_non_exhaustive()
    }
}

impl Default for TaskContext {
    fn default() -> Self {
        Self::new()
    }
}

impl TaskContext {
    /// A root context: depth 0, a fresh token, no limits, progress dropped, no delegation.
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
            delegation: None,
            approver: None,
            ancestors: Arc::from(Vec::new()),
            inbox: None,
            messages: None,
        }
    }

    /// The context for a run this one delegates to: depth + 1, a child cancellation token,
    /// this run's task id as the parent, the same sink, limits, extensions, delegation and
    /// approver, and this run's agent path as the child's ancestors. The child has no
    /// [`inbox`](Self::inbox): messages sent to this run are not its.
    pub fn child(&self, agent: impl Into<String>, task_id: Option<String>) -> Self {
        let ancestors: Arc<[String]> = if self.agent.is_empty() {
            self.ancestors.clone()
        } else {
            self.ancestors
                .iter()
                .cloned()
                .chain(std::iter::once(self.agent.clone()))
                .collect()
        };
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
            delegation: self.delegation.clone(),
            approver: self.approver.clone(),
            ancestors,
            // Messages are for the run they were sent to, not for the runs it starts.
            inbox: None,
            messages: None,
        }
    }

    // --- accessors ---

    /// Cancelled when the caller gives up on this run; executors must stop promptly.
    pub fn cancel(&self) -> &CancellationToken {
        &self.cancel
    }

    /// Nesting depth: 0 for the main agent, 1 for its children, and so on.
    pub fn depth(&self) -> u32 {
        self.depth
    }

    /// This run's task id, when it has one.
    pub fn task_id(&self) -> Option<&str> {
        self.task_id.as_deref()
    }

    /// The task id of the run that started this one.
    pub fn parent_task_id(&self) -> Option<&str> {
        self.parent_task_id.as_deref()
    }

    /// The agent name this context runs (for progress events); empty when unnamed.
    pub fn agent(&self) -> &str {
        &self.agent
    }

    /// A point in time after which the run must stop with a limit-reached status.
    pub fn deadline(&self) -> Option<Instant> {
        self.deadline
    }

    /// A turn budget imposed by the caller (the agent's own limit still applies).
    pub fn max_turns(&self) -> Option<u32> {
        self.max_turns
    }

    /// A token budget (input + output) imposed by the caller.
    pub fn max_tokens(&self) -> Option<u64> {
        self.max_tokens
    }

    /// The parent's model name, used when an agent's model is `inherit`.
    pub fn parent_model(&self) -> Option<&str> {
        self.parent_model.as_deref()
    }

    /// Where progress goes.
    pub fn progress(&self) -> &Arc<dyn ProgressSink> {
        &self.progress
    }

    /// Typed values a host passes down to plugins (e.g. a shared HTTP client).
    pub fn extensions(&self) -> &Extensions {
        &self.extensions
    }

    /// Typed values, for changing them in place.
    pub fn extensions_mut(&mut self) -> &mut Extensions {
        &mut self.extensions
    }

    /// The host's delegation handle, when the run was started by a delegation tool (or a host
    /// put one in).
    pub fn delegation(&self) -> Option<&Arc<dyn Delegation>> {
        self.delegation.as_ref()
    }

    /// True when this run may be offered delegation: a handle is present and
    /// `depth < max_depth`.
    pub fn can_delegate(&self) -> bool {
        self.delegation
            .as_ref()
            .is_some_and(|d| self.depth < d.max_depth())
    }

    /// The delegation tools (`Task`, `TaskOutput`, `TaskStop`, `SendMessage`) this run may offer its model:
    /// empty beyond the nesting limit or without a handle, so the model never sees them there.
    pub fn delegation_tools(&self) -> Vec<Arc<dyn Tool>> {
        match &self.delegation {
            Some(d) if self.depth < d.max_depth() => d.tools(),
            _ => Vec::new(),
        }
    }

    /// Where tool calls that need approval are asked (copied into every child context, so a
    /// request from any depth reaches whoever holds the root). `None`: nobody can approve, and
    /// such calls are denied.
    pub fn approver(&self) -> Option<&Arc<dyn Approver>> {
        self.approver.as_ref()
    }

    /// The agent names from the root run to this one (this run's own name last; unnamed runs
    /// are left out), e.g. `["main", "coordinator", "leaf"]`.
    pub fn agent_path(&self) -> Vec<String> {
        let mut path: Vec<String> = self.ancestors.to_vec();
        if !self.agent.is_empty() {
            path.push(self.agent.clone());
        }
        path
    }

    /// Messages sent to this run while it runs (Claude Code's `SendMessage`), when its host
    /// gave it an inbox: a kind that can receive them (see
    /// [`SubagentExecutor::message_delivery`](crate::SubagentExecutor::message_delivery))
    /// [`take`](MessageInbox::take)s them whenever it can act on them, e.g. at each turn
    /// boundary. Never inherited by [`child`](Self::child) contexts.
    pub fn messages(&self) -> Option<&Arc<dyn MessageInbox>> {
        self.messages.as_ref()
    }

    /// The inbox a host set with the deprecated [`with_inbox`](Self::with_inbox) (`None` when
    /// it set one with [`with_messages`](Self::with_messages)).
    #[deprecated(
        since = "0.3.1",
        note = "read messages through TaskContext::messages (the stock queue is subagent_core::Inbox)"
    )]
    #[allow(deprecated)]
    pub fn inbox(&self) -> Option<&Inbox> {
        self.inbox.as_ref()
    }

    /// Time left before the deadline; `None` when there is no deadline.
    pub fn remaining(&self) -> Option<Duration> {
        self.deadline
            .map(|d| d.saturating_duration_since(Instant::now()))
    }

    // --- builder-style setters (those that set one field as given are derived: `Setters`) ---

    /// Sets the inbox this run reads messages sent to it from (see [`messages`](Self::messages)).
    #[must_use]
    pub fn with_messages(mut self, messages: Arc<dyn MessageInbox>) -> Self {
        self.messages = Some(messages);
        self
    }

    /// Sets the inbox this run reads messages sent to it from, as a 0.3 [`Inbox`]; it is also
    /// what [`messages`](Self::messages) returns.
    #[deprecated(
        since = "0.3.1",
        note = "use TaskContext::with_messages (the stock queue is subagent_core::Inbox)"
    )]
    #[allow(deprecated)]
    #[must_use]
    pub fn with_inbox(mut self, inbox: Inbox) -> Self {
        self.messages = Some(Arc::new(inbox.clone()));
        self.inbox = Some(inbox);
        self
    }

    /// Sets a deadline `timeout` from now.
    #[must_use]
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.deadline = Some(Instant::now() + timeout);
        self
    }

    /// Stores a typed value for plugins, replacing one of the same type.
    #[must_use]
    pub fn with_extension<T: Send + Sync + 'static>(mut self, value: T) -> Self {
        self.extensions.insert(value);
        self
    }

    /// [`with_extension`](Self::with_extension) for a value the caller shares: the context
    /// keeps this `Arc` (no copy, no second allocation), and
    /// [`extensions().get::<T>()`](Extensions::get) reads it.
    #[must_use]
    pub fn with_extension_arc<T: Send + Sync + 'static>(mut self, value: Arc<T>) -> Self {
        self.extensions.insert_arc(value);
        self
    }

    /// Removes the approver: calls that need approval are denied.
    #[must_use]
    pub fn without_approver(mut self) -> Self {
        self.approver = None;
        self
    }

    /// Sets the names of the runs above this one, root first (hosts that continue a tree
    /// started elsewhere).
    #[must_use]
    pub fn with_ancestors(mut self, names: Vec<String>) -> Self {
        self.ancestors = Arc::from(names);
        self
    }

    /// Removes the delegation handle: nothing below this run may delegate.
    #[must_use]
    pub fn without_delegation(mut self) -> Self {
        self.delegation = None;
        self
    }

    /// Emits a progress event stamped with this context's task, agent and depth.
    pub fn emit(&self, kind: ProgressKind) {
        // No event is built for a sink that drops them (the default one): this runs on every
        // delegation.
        if self.progress.discards_events() {
            return;
        }
        let mut event = ProgressEvent::new(self.agent.clone(), self.depth, kind);
        event.task_id = self.task_id.clone();
        event.parent_task_id = self.parent_task_id.clone();
        self.progress.emit(event);
    }
}

/// A small typed map of values a host hands down to plugins through [`TaskContext`].
///
/// A persistent list shared by contexts: a child adding a value allocates one node and leaves
/// its parent's values untouched and uncopied (contexts are made on every delegation).
#[derive(Clone, Default)]
pub struct Extensions {
    head: Option<Arc<dyn ExtNode>>,
}

/// Nodes an [`Extensions`] list may hold before shadowed values are dropped.
const MAX_EXTENSION_NODES: usize = 32;

/// One value of an [`Extensions`] list.
trait ExtNode: Send + Sync {
    fn id(&self) -> std::any::TypeId;
    fn value(&self) -> &(dyn Any + Send + Sync);
    fn next(&self) -> Option<&Arc<dyn ExtNode>>;
    /// Nodes in the list from this one on.
    fn len(&self) -> usize;
    fn with_next(&self, next: Option<Arc<dyn ExtNode>>) -> Arc<dyn ExtNode>;
}

struct Node<T> {
    value: Arc<T>,
    next: Option<Arc<dyn ExtNode>>,
    len: usize,
}

impl<T: Send + Sync + 'static> Node<T> {
    /// A node holding `value` in front of `next`.
    fn linked(value: Arc<T>, next: Option<Arc<dyn ExtNode>>) -> Arc<dyn ExtNode> {
        let len = next.as_ref().map_or(0, |n| n.len()) + 1;
        Arc::new(Node { value, next, len })
    }
}

impl<T: Send + Sync + 'static> ExtNode for Node<T> {
    fn id(&self) -> std::any::TypeId {
        std::any::TypeId::of::<T>()
    }
    fn value(&self) -> &(dyn Any + Send + Sync) {
        &*self.value
    }
    fn next(&self) -> Option<&Arc<dyn ExtNode>> {
        self.next.as_ref()
    }
    fn len(&self) -> usize {
        self.len
    }
    fn with_next(&self, next: Option<Arc<dyn ExtNode>>) -> Arc<dyn ExtNode> {
        Node::linked(self.value.clone(), next)
    }
}

impl fmt::Debug for Extensions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Extensions")
            .field("len", &self.iter().count())
            .finish()
    }
}

impl Extensions {
    fn iter(&self) -> impl Iterator<Item = &Arc<dyn ExtNode>> {
        std::iter::successors(self.head.as_ref(), |n| n.next())
    }

    /// Stores a value, replacing one of the same type.
    pub fn insert<T: Send + Sync + 'static>(&mut self, value: T) {
        self.insert_arc(Arc::new(value));
    }

    /// Stores a shared value, replacing one of the same type; [`get`](Self::get) reads it as
    /// `T`. The list keeps this `Arc`: the caller may hold a clone and see the same value.
    pub fn insert_arc<T: Send + Sync + 'static>(&mut self, value: Arc<T>) {
        // A new value shadows an older one of its type (one allocation, nothing copied); the
        // list is compacted, one value per type, once shadowed values pile up.
        let mut rest = self.head.take();
        if rest
            .as_ref()
            .is_some_and(|n| n.len() >= MAX_EXTENSION_NODES)
        {
            let mut seen = vec![std::any::TypeId::of::<T>()];
            let kept: Vec<Arc<dyn ExtNode>> = self
                .iter_from(rest.as_ref())
                .filter(|n| {
                    let new = !seen.contains(&n.id());
                    seen.push(n.id());
                    new
                })
                .cloned()
                .collect();
            rest = kept
                .iter()
                .rev()
                .fold(None, |next, n| Some(n.with_next(next)));
        }
        self.head = Some(Node::linked(value, rest));
    }

    fn iter_from<'a>(
        &self,
        start: Option<&'a Arc<dyn ExtNode>>,
    ) -> impl Iterator<Item = &'a Arc<dyn ExtNode>> {
        std::iter::successors(start, |n| n.next())
    }

    /// Reads a value by type.
    pub fn get<T: Send + Sync + 'static>(&self) -> Option<&T> {
        let id = std::any::TypeId::of::<T>();
        self.iter()
            .find(|n| n.id() == id)?
            .value()
            .downcast_ref::<T>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Yes;

    #[async_trait::async_trait]
    impl crate::Approver for Yes {
        async fn request(&self, _: crate::ApprovalRequest) -> crate::ApprovalDecision {
            crate::ApprovalDecision::AllowOnce
        }
    }

    #[test]
    fn children_copy_the_approver_and_extend_the_agent_path() {
        let root = TaskContext::new()
            .with_agent("main")
            .with_approver(Arc::new(Yes));
        assert_eq!(root.agent_path(), ["main"]);
        let child = root.child("coordinator", Some("t1".into()));
        let grandchild = child.child("leaf", Some("t2".into()));
        assert!(grandchild.approver().is_some());
        assert_eq!(grandchild.agent_path(), ["main", "coordinator", "leaf"]);
        // An unnamed root is left out of the path.
        let anon = TaskContext::new().child("a", None).child("b", None);
        assert_eq!(anon.agent_path(), ["a", "b"]);
        assert!(anon.approver().is_none());
        assert!(grandchild.without_approver().approver().is_none());
    }

    #[test]
    fn only_the_noop_sink_discards_events_and_others_still_get_them() {
        assert!(NoopProgressSink.discards_events());
        let seen = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counter = seen.clone();
        let sink = move |_e: ProgressEvent| {
            counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        };
        assert!(!sink.discards_events());
        let ctx = TaskContext::new().with_progress(Arc::new(sink));
        ctx.emit(ProgressKind::Started {
            description: "d".into(),
        });
        assert_eq!(seen.load(std::sync::atomic::Ordering::Relaxed), 1);
        // The default sink drops it without building it.
        TaskContext::new().emit(ProgressKind::Started {
            description: "d".into(),
        });
    }

    #[test]
    fn extensions_are_shared_replaced_and_never_leak_upwards() {
        let parent = TaskContext::new().with_extension(1u32).with_extension("a");
        let child = parent.clone().with_extension(2u32).with_extension(7u64);
        assert_eq!(parent.extensions().get::<u32>(), Some(&1));
        assert_eq!(parent.extensions().get::<u64>(), None);
        assert_eq!(child.extensions().get::<u32>(), Some(&2));
        assert_eq!(child.extensions().get::<&str>(), Some(&"a"));
        assert_eq!(child.extensions().get::<u64>(), Some(&7));
        // Replacing keeps one value per type.
        let mut e = child.extensions().clone();
        for i in 0..100u32 {
            e.insert(i);
        }
        assert_eq!(e.get::<u32>(), Some(&99));
        assert_eq!(e.get::<&str>(), Some(&"a"));
        assert!(e.iter().count() <= MAX_EXTENSION_NODES + 1);
        // Every node knows the length of the list from it on (the compaction test reads it).
        assert_eq!(e.head.as_ref().map(|n| n.len()), Some(e.iter().count()));
    }

    #[test]
    fn a_shared_extension_is_the_callers_value_not_a_copy() {
        let shared = Arc::new(std::sync::atomic::AtomicU32::new(1));
        let ctx = TaskContext::new()
            .with_extension(5u8)
            .with_extension_arc(shared.clone());
        let child = ctx.child("c", None);
        shared.store(2, std::sync::atomic::Ordering::Relaxed);
        let seen = child.extensions().get::<std::sync::atomic::AtomicU32>();
        assert!(std::ptr::eq(seen.expect("inherited"), &*shared));
        assert_eq!(
            seen.map(|v| v.load(std::sync::atomic::Ordering::Relaxed)),
            Some(2)
        );
        assert_eq!(child.extensions().get::<u8>(), Some(&5));
        // A shared value replaces a plain one of its type and the other way round.
        let replaced = child.with_extension(std::sync::atomic::AtomicU32::new(9));
        assert!(!std::ptr::eq(
            replaced
                .extensions()
                .get::<std::sync::atomic::AtomicU32>()
                .expect("set"),
            &*shared
        ));
        // The contexts hold one clone (their shared list node), gone with the last of them.
        assert_eq!(Arc::strong_count(&shared), 2);
        drop((ctx, replaced));
        assert_eq!(Arc::strong_count(&shared), 1);
    }
}
