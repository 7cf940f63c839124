//! The reply queue, shareable between servers and test tasks.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use crate::reply::Reply;

#[derive(Debug, Default)]
struct ScriptInner {
    queue: VecDeque<Reply>,
    per_model: HashMap<String, VecDeque<Reply>>,
    fallback: Option<Reply>,
}

/// A script of replies consumed in order, one per request.
///
/// Cloning gives another handle to the same queue (it is an `Arc` around a `std::sync::Mutex`),
/// so several concurrent requests, several servers, or test tasks pushing while requests run
/// all share one script. Replies queued for a model name (see
/// [`push_for_model`](Self::push_for_model)) are served first to requests naming that model;
/// other requests take from the shared queue; when both are empty the fallback reply (if set)
/// answers, otherwise the server answers 500 "script exhausted".
#[derive(Debug, Clone, Default)]
pub struct Script {
    inner: Arc<Mutex<ScriptInner>>,
}

impl Script {
    /// An empty script.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> MutexGuard<'_, ScriptInner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Queue a reply for the next request.
    pub fn push(&self, reply: Reply) {
        self.lock().queue.push_back(reply);
    }

    /// Queue several replies, in order.
    pub fn push_all(&self, replies: impl IntoIterator<Item = Reply>) {
        self.lock().queue.extend(replies);
    }

    /// Queue a reply for the next request whose body names `model`.
    pub fn push_for_model(&self, model: impl Into<String>, reply: Reply) {
        self.lock()
            .per_model
            .entry(model.into())
            .or_default()
            .push_back(reply);
    }

    /// Answer with (a copy of) this reply whenever the queues are empty; `None` turns it off.
    pub fn set_fallback(&self, reply: Option<Reply>) {
        self.lock().fallback = reply;
    }

    /// Replies still queued (all queues, fallback not counted).
    pub fn remaining(&self) -> usize {
        let inner = self.lock();
        inner.queue.len() + inner.per_model.values().map(VecDeque::len).sum::<usize>()
    }

    /// Take the reply for a request naming `model`.
    pub(crate) fn next_for(&self, model: Option<&str>) -> Option<Reply> {
        let mut inner = self.lock();
        if let Some(m) = model
            && let Some(q) = inner.per_model.get_mut(m)
            && let Some(r) = q.pop_front()
        {
            return Some(r);
        }
        if let Some(r) = inner.queue.pop_front() {
            return Some(r);
        }
        inner.fallback.clone()
    }
}
