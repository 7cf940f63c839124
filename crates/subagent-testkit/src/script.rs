//! The reply queue, shareable between servers and test tasks.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};

use crate::reply::Reply;

/// Computes a reply from the request's JSON body (e.g. to echo an id the client got from a
/// tool, as a real model would).
pub type Responder = Arc<dyn Fn(&serde_json::Value) -> Reply + Send + Sync>;

/// One queued answer: fixed, or computed from the request.
#[derive(Clone)]
enum Item {
    Fixed(Box<Reply>),
    Dynamic(Responder),
}

impl std::fmt::Debug for Item {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Item::Fixed(r) => r.fmt(f),
            Item::Dynamic(_) => f.write_str("Dynamic(..)"),
        }
    }
}

impl Item {
    fn reply(self, body: &serde_json::Value) -> Reply {
        match self {
            Item::Fixed(r) => *r,
            Item::Dynamic(f) => f(body),
        }
    }
}

#[derive(Debug, Default)]
struct ScriptInner {
    queue: VecDeque<Item>,
    per_model: HashMap<String, VecDeque<Item>>,
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
        crate::locked(&self.inner)
    }

    /// Queue a reply for the next request.
    pub fn push(&self, reply: Reply) {
        self.lock().queue.push_back(Item::Fixed(Box::new(reply)));
    }

    /// Queue several replies, in order.
    pub fn push_all(&self, replies: impl IntoIterator<Item = Reply>) {
        self.lock()
            .queue
            .extend(replies.into_iter().map(|r| Item::Fixed(Box::new(r))));
    }

    /// Queue a reply for the next request whose body names `model`.
    pub fn push_for_model(&self, model: impl Into<String>, reply: Reply) {
        self.lock()
            .per_model
            .entry(model.into())
            .or_default()
            .push_back(Item::Fixed(Box::new(reply)));
    }

    /// Queue a reply computed from the request body, for the next request naming `model`
    /// (`None`: the shared queue).
    pub fn push_dynamic(
        &self,
        model: Option<&str>,
        responder: impl Fn(&serde_json::Value) -> Reply + Send + Sync + 'static,
    ) {
        let item = Item::Dynamic(Arc::new(responder));
        let mut inner = self.lock();
        match model {
            Some(m) => inner
                .per_model
                .entry(m.to_string())
                .or_default()
                .push_back(item),
            None => inner.queue.push_back(item),
        }
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
    pub(crate) fn next_for(&self, model: Option<&str>, body: &serde_json::Value) -> Option<Reply> {
        let item = {
            let mut inner = self.lock();
            let per_model = model
                .and_then(|m| inner.per_model.get_mut(m))
                .and_then(VecDeque::pop_front);
            match per_model.or_else(|| inner.queue.pop_front()) {
                Some(item) => item,
                None => return inner.fallback.clone(),
            }
        };
        // Computed outside the lock: a responder may be slow or use the script itself.
        Some(item.reply(body))
    }
}
