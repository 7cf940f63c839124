//! Keeping each conversation on its own slot of a llama.cpp server (`llama-server -np N`).
//!
//! A slot holds one conversation's KV cache: a request that starts with what its slot holds
//! re-evaluates only the rest. Left to itself, the server gives a request the slot whose cache
//! matches it best or the least recently used one, so a child that runs while its parent waits
//! may take the parent's slot, and the parent's next turn re-evaluates its whole prompt (4,600
//! tokens, minutes on a CPU). With [`SlotPool`] each conversation ([`CacheScope`] key) is sent
//! to one slot (`id_slot`) and keeps it:
//! - a new conversation takes a slot no conversation above it holds (its caller, its caller's
//!   caller...): a free one, else the least recently used; so with one slot more than the
//!   nesting depth in use, every waiting caller keeps its cache;
//! - when callers hold every slot, it shares its nearest caller's (the caller resumes after it
//!   anyway, and the older, longer prompts above stay);
//! - a fork has its caller's key, so it runs on its caller's slot and reuses its whole prefix.
//!
//! The slot count is asked once per server (`GET /props`, `total_slots`); a server that does
//! not answer, or has one slot, gets no `id_slot` (a slot id it does not have would make it wait
//! forever).

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, OnceLock, PoisonError, Weak};

use subagent_spi::CacheScope;
use tokio::sync::OnceCell;

use crate::transport::Transport;

/// Conversations whose caller is remembered (the oldest are forgotten first).
const MAX_REMEMBERED: usize = 4096;

/// How far up the callers are followed.
const MAX_DEPTH: usize = 64;

/// The slots of one llama.cpp server, shared by every model talking to it.
#[derive(Debug, Default)]
pub(crate) struct SlotPool {
    /// The server's slot count, once known.
    total: OnceCell<usize>,
    state: Mutex<PoolState>,
}

#[derive(Debug, Default)]
struct PoolState {
    /// Per slot: the conversation on it and when it last sent a request.
    holders: Vec<Option<(String, u64)>>,
    /// Each conversation's caller, as its requests named it.
    parents: HashMap<String, Option<String>>,
    /// `parents`' keys, oldest first (to forget them in order).
    order: VecDeque<String>,
    tick: u64,
}

impl SlotPool {
    /// The pool of the server at `props_url` (the same value for every model talking to it).
    pub(crate) fn for_server(props_url: &str) -> Arc<Self> {
        static REGISTRY: OnceLock<Mutex<HashMap<String, Weak<SlotPool>>>> = OnceLock::new();
        let mut map = REGISTRY
            .get_or_init(Default::default)
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(p) = map.get(props_url).and_then(Weak::upgrade) {
            return p;
        }
        map.retain(|_, w| w.strong_count() > 0);
        let p = Arc::new(SlotPool::default());
        map.insert(props_url.to_string(), Arc::downgrade(&p));
        p
    }

    /// The slot for the next request of `scope`'s conversation, asking the server its slot
    /// count first if not yet known; `None` when it has a single slot (or did not say).
    pub(crate) async fn slot_for(
        &self,
        scope: &CacheScope,
        transport: &Transport,
        props_url: &str,
    ) -> Option<usize> {
        let total = match self.total.get() {
            Some(n) => *n,
            None => match crate::probe::llama_total_slots(transport, props_url).await {
                Some(n) => *self.total.get_or_init(|| async { n }).await,
                // Unreachable for now: ask again next time.
                None => return None,
            },
        };
        self.assign(scope, total)
    }

    /// [`slot_for`](Self::slot_for) once the slot count is known.
    pub(crate) fn assign(&self, scope: &CacheScope, total: usize) -> Option<usize> {
        if total <= 1 {
            return None;
        }
        let mut st = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        st.holders.resize(total, None);
        st.tick += 1;
        let tick = st.tick;
        st.remember(&scope.key, scope.parent.as_deref());
        if let Some(i) = st
            .holders
            .iter()
            .position(|h| h.as_ref().is_some_and(|(k, _)| *k == scope.key))
        {
            st.holders[i] = Some((scope.key.clone(), tick));
            return Some(i);
        }
        let callers = st.callers(&scope.key);
        let free = st.holders.iter().position(Option::is_none);
        let lru = st
            .holders
            .iter()
            .enumerate()
            .filter_map(|(i, h)| h.as_ref().map(|(k, t)| (i, k, *t)))
            .filter(|(_, k, _)| !callers.contains(k))
            .min_by_key(|(_, _, t)| *t)
            .map(|(i, _, _)| i);
        let nearest_caller = || {
            callers.iter().find_map(|c| {
                st.holders
                    .iter()
                    .position(|h| h.as_ref().is_some_and(|(k, _)| k == c))
            })
        };
        let slot = free.or(lru).or_else(nearest_caller).unwrap_or(0);
        st.holders[slot] = Some((scope.key.clone(), tick));
        Some(slot)
    }
}

impl PoolState {
    /// Notes `key`'s caller (bounded).
    fn remember(&mut self, key: &str, parent: Option<&str>) {
        if self.parents.contains_key(key) {
            return;
        }
        if self.order.len() >= MAX_REMEMBERED
            && let Some(old) = self.order.pop_front()
        {
            self.parents.remove(&old);
        }
        self.parents
            .insert(key.to_string(), parent.map(str::to_string));
        self.order.push_back(key.to_string());
    }

    /// `key`'s callers, nearest first.
    fn callers(&self, key: &str) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        let mut at = self.parents.get(key).cloned().flatten();
        while let Some(k) = at {
            if out.len() >= MAX_DEPTH || out.contains(&k) || k == key {
                break;
            }
            at = self.parents.get(&k).cloned().flatten();
            out.push(k);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scope(key: &str, parent: Option<&str>) -> CacheScope {
        let s = CacheScope::new(key);
        match parent {
            Some(p) => s.with_parent(p),
            None => s,
        }
    }

    #[test]
    fn a_caller_keeps_its_slot_while_its_children_run() {
        let pool = SlotPool::default();
        let main = scope("main", None);
        assert_eq!(pool.assign(&main, 1), None, "one slot: nothing to choose");
        assert_eq!(pool.assign(&main, 2), Some(0));
        // Children, one after the other, take the other slot; main keeps its own.
        for child in ["a", "b", "c"] {
            let c = scope(child, Some("main"));
            assert_eq!(pool.assign(&c, 2), Some(1), "{child}");
            assert_eq!(pool.assign(&c, 2), Some(1), "{child}, its next turn");
            assert_eq!(pool.assign(&main, 2), Some(0));
        }
        // A fork has its caller's key: its caller's slot.
        assert_eq!(pool.assign(&main, 2), Some(0));
        // A grandchild while main and the child hold both slots: the child's (nearest caller).
        let child = scope("d", Some("main"));
        assert_eq!(pool.assign(&child, 2), Some(1));
        let grandchild = scope("e", Some("d"));
        assert_eq!(pool.assign(&grandchild, 2), Some(1));
        assert_eq!(pool.assign(&main, 2), Some(0), "main's slot survived");
        // With three slots the grandchild gets one of its own.
        let pool = SlotPool::default();
        assert_eq!(pool.assign(&main, 3), Some(0));
        assert_eq!(pool.assign(&child, 3), Some(1));
        assert_eq!(pool.assign(&grandchild, 3), Some(2));
        assert_eq!(pool.assign(&child, 3), Some(1));
        assert_eq!(pool.assign(&main, 3), Some(0));
        // A new root takes the least recently used slot.
        assert_eq!(pool.assign(&scope("other", None), 3), Some(2));
    }

    #[test]
    fn callers_are_bounded_and_cycles_end() {
        let mut st = PoolState::default();
        st.remember("a", Some("b"));
        st.remember("b", Some("a"));
        assert_eq!(st.callers("a"), vec!["b".to_string()]);
        for i in 0..(MAX_REMEMBERED + 10) {
            st.remember(&format!("k{i}"), Some(&format!("k{}", i + 1)));
        }
        assert!(st.parents.len() <= MAX_REMEMBERED);
        assert!(st.callers("k5000").len() <= MAX_DEPTH);
    }
}
