//! The adaptive limit on the requests in flight to one endpoint with one key, shared by every
//! client of that endpoint and key in the process: every child of a delegation tree, every
//! run of a `serve`.
//!
//! # The rule (AIMD)
//!
//! Until the endpoint first asks to slow down (429, 503, 529) there is no limit. Then:
//!
//! - **decrease** on a slow-down answer: the limit drops to the number of this process's other
//!   requests still in flight to the endpoint (the server is full with those), or, when none
//!   is, halves (once per round: answers to requests sent before the last decrease do not
//!   halve it again), never below 1. A slow-down with nothing else in flight means the
//!   provider's bucket, not our concurrency, is the limit: every call then also waits out its
//!   `Retry-After` before its next attempt, not only the call that got it;
//! - **increase** on a success while calls wait for a place: `1/limit` per success, so one
//!   more place per round of successes, back to no limit past [`CEILING`].
//!
//! A call that finds the endpoint full waits in line (oldest call first: a call keeps its
//! place in line across its retries), so a fan-out wider than what the provider takes queues
//! instead of failing. The provider's rate-limit headers saying a limit is used up (see
//! [`crate::rate_headers`]) pause every call until it resets, each with its own jitter.
//!
//! # Cost
//!
//! One small mutex per endpoint and key, held for a few instructions per request: no lock is
//! shared between endpoints and none is held across an await. The registry is touched only
//! when a model client is built. The key is kept only as a keyed hash, never logged.

use std::collections::{BTreeMap, HashMap};
use std::hash::{BuildHasher, Hash, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::Duration;

use tokio::sync::oneshot;
use tokio::time::Instant;

/// Past this many requests in flight the limiter stops limiting (no limit again).
pub(crate) const CEILING: f64 = 1024.0;

/// Endpoints and keys remembered at most; past it, those no client uses are forgotten.
const MAX_ENDPOINTS: usize = 256;

/// Why a call waits before its attempt (see [`Limiter::acquire`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Wait {
    /// The endpoint has as many of this process's requests in flight as it takes now.
    Queued {
        /// Requests in flight to the endpoint.
        in_flight: usize,
    },
    /// The provider's headers said a limit is used up; it resets in this long.
    Paused(Duration),
}

/// The limiter of one endpoint and key.
#[derive(Debug)]
pub(crate) struct Limiter {
    state: Mutex<State>,
    tickets: AtomicU64,
}

#[derive(Debug)]
struct State {
    /// Requests allowed in flight; infinite until the first slow-down.
    limit: f64,
    /// Requests in flight (places taken).
    in_flight: usize,
    /// Calls waiting for a place, by ticket: the oldest call first.
    waiters: BTreeMap<u64, oneshot::Sender<()>>,
    /// No attempt starts before this (the provider's limit is used up until then).
    not_before: Option<Instant>,
    /// Bumped on every decrease, so one round of slow-downs halves the limit once.
    round: u64,
}

impl State {
    /// Places there are: `floor(limit)`, at least 1.
    fn places(&self) -> usize {
        if self.limit.is_finite() {
            (self.limit as usize).max(1)
        } else {
            usize::MAX
        }
    }

    /// Takes a place for `ticket` when one is free and no older call waits.
    fn try_take(&mut self, ticket: u64) -> bool {
        let first = self
            .waiters
            .first_key_value()
            .is_none_or(|(t, _)| *t > ticket);
        if first && self.in_flight < self.places() {
            self.in_flight += 1;
            true
        } else {
            false
        }
    }

    /// Hands free places to the oldest waiters.
    fn hand_over(&mut self) {
        while self.in_flight < self.places() {
            let Some((_, tx)) = self.waiters.pop_first() else {
                break;
            };
            // A waiter that gave up (its receiver dropped) gets nothing.
            if tx.send(()).is_ok() {
                self.in_flight += 1;
            }
        }
    }

    /// Gives a place back.
    fn release(&mut self) {
        self.in_flight = self.in_flight.saturating_sub(1);
        self.hand_over();
    }
}

/// The process's limiters, by endpoint URL and keyed hash of its credentials.
type Registry = HashMap<(String, u64), Arc<Limiter>>;

impl Limiter {
    fn new() -> Self {
        Self {
            state: Mutex::new(State {
                limit: f64::INFINITY,
                in_flight: 0,
                waiters: BTreeMap::new(),
                not_before: None,
                round: 0,
            }),
            tickets: AtomicU64::new(0),
        }
    }

    /// The limiter of `url` called with these credentials (the values of the secret headers:
    /// the API key), the same for every client of that endpoint and key in the process.
    pub(crate) fn for_endpoint<'a>(
        url: &str,
        credentials: impl IntoIterator<Item = &'a [u8]>,
    ) -> Arc<Self> {
        static REGISTRY: OnceLock<Mutex<Registry>> = OnceLock::new();
        // A hash keyed at random for this process: the key cannot be recovered from it.
        static KEYED: OnceLock<std::collections::hash_map::RandomState> = OnceLock::new();
        let mut h = KEYED.get_or_init(Default::default).build_hasher();
        for c in credentials {
            c.hash(&mut h);
        }
        let key = (url.to_string(), h.finish());
        let mut map = REGISTRY
            .get_or_init(Default::default)
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(l) = map.get(&key) {
            return l.clone();
        }
        if map.len() >= MAX_ENDPOINTS {
            // Bounded: forget the endpoints no client uses any more.
            map.retain(|_, l| Arc::strong_count(l) > 1);
        }
        let l = Arc::new(Self::new());
        map.insert(key, l.clone());
        l
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A call's place in line, kept across its retries.
    pub(crate) fn ticket(&self) -> u64 {
        self.tickets.fetch_add(1, Ordering::Relaxed)
    }

    /// Requests allowed in flight now (`None`: no limit).
    #[cfg(test)]
    pub(crate) fn limit(&self) -> Option<f64> {
        let l = self.lock().limit;
        l.is_finite().then_some(l)
    }

    /// Waits for a place (in line by `ticket`) and for any pause the provider's headers set,
    /// telling `on_wait` why it waits; then the call may send its attempt. Dropping the
    /// future gives up the place in line (or the place, when it was just handed over).
    pub(crate) async fn acquire(
        self: &Arc<Self>,
        ticket: u64,
        on_wait: &(dyn Fn(Wait) + Send + Sync),
    ) -> Permit {
        loop {
            let waiting = {
                let mut st = self.lock();
                if st.try_take(ticket) {
                    None
                } else {
                    let (tx, rx) = oneshot::channel();
                    st.waiters.insert(ticket, tx);
                    Some((rx, st.in_flight))
                }
            };
            let Some((rx, in_flight)) = waiting else {
                break;
            };
            on_wait(Wait::Queued { in_flight });
            let mut w = InLine {
                limiter: self,
                ticket,
                rx,
                done: false,
            };
            let handed = (&mut w.rx).await.is_ok();
            w.done = true;
            if handed {
                break;
            }
        }
        let permit = Permit {
            limiter: self.clone(),
            round: self.lock().round,
        };
        // The provider's limit is used up: wait until it resets, each call with its own
        // jitter so they do not all start at that instant.
        loop {
            let until = self.lock().not_before;
            let now = Instant::now();
            let Some(until) = until.filter(|u| *u > now) else {
                break;
            };
            let left = until - now;
            let wait = left + spread(left).mul_f64(jitter_fraction());
            on_wait(Wait::Paused(wait));
            tokio::time::sleep(wait).await;
        }
        permit
    }

    /// No attempt starts before `wait` from now (longer pauses in force stay).
    pub(crate) fn pause_for(&self, wait: Duration) {
        let until = Instant::now() + wait;
        let mut st = self.lock();
        st.not_before = Some(st.not_before.map_or(until, |u| u.max(until)));
    }
}

/// The jitter spread around a wait of `wait`: half of it, from 100 ms to 5 s.
pub(crate) fn spread(wait: Duration) -> Duration {
    (wait / 2).clamp(Duration::from_millis(100), Duration::from_secs(5))
}

/// A call waiting in line; leaving the line (the future dropped) removes it, or gives back the
/// place it was handed.
struct InLine<'a> {
    limiter: &'a Limiter,
    ticket: u64,
    rx: oneshot::Receiver<()>,
    done: bool,
}

impl Drop for InLine<'_> {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        let mut st = self.limiter.lock();
        if st.waiters.remove(&self.ticket).is_none() && self.rx.try_recv().is_ok() {
            // Handed a place (under this lock) that nobody will use.
            st.release();
        }
    }
}

/// One request's place in flight; given back when dropped.
#[derive(Debug)]
pub(crate) struct Permit {
    limiter: Arc<Limiter>,
    /// The decrease round the request was sent in.
    round: u64,
}

impl Permit {
    /// The endpoint answered: one more place per round of successes while calls wait.
    pub(crate) fn succeeded(&self) {
        let mut st = self.limiter.lock();
        if !st.limit.is_finite() || st.in_flight + st.waiters.len() < st.places() {
            return;
        }
        st.limit += 1.0 / st.limit;
        if st.limit >= CEILING {
            st.limit = f64::INFINITY;
        }
        st.hand_over();
    }

    /// The endpoint asked to slow down (`retry_after`: the wait it asked for, capped): lowers
    /// the limit, and when nothing else was in flight pauses every call for `retry_after`.
    /// Gives the place back.
    pub(crate) fn slowed_down(self, retry_after: Option<Duration>) {
        let mut st = self.limiter.lock();
        let others = st.in_flight.saturating_sub(1);
        let before = st.limit;
        if others > 0 {
            // The server is full with the others.
            st.limit = st.limit.min(others as f64);
        } else {
            if self.round == st.round {
                st.limit = if st.limit.is_finite() {
                    (st.limit / 2.0).max(1.0)
                } else {
                    1.0
                };
            }
            if let Some(wait) = retry_after {
                let until = Instant::now() + wait;
                st.not_before = Some(st.not_before.map_or(until, |u| u.max(until)));
            }
        }
        if st.limit < before {
            st.round += 1;
        }
        // Given back by `drop`, after this lock is released.
    }
}

impl Drop for Permit {
    fn drop(&mut self) {
        self.limiter.lock().release();
    }
}

/// A random number in [0, 1) (`fastrand`'s thread-local generator: calls close in time differ).
pub(crate) fn jitter_fraction() -> f64 {
    fastrand::f64()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    fn limiter() -> Arc<Limiter> {
        Arc::new(Limiter::new())
    }

    fn quiet() -> impl Fn(Wait) + Send + Sync {
        |_| {}
    }

    /// `n` permits, taken one after the other.
    async fn acquire_n(l: &Arc<Limiter>, n: usize) -> Vec<Permit> {
        let mut permits = Vec::new();
        for _ in 0..n {
            permits.push(l.acquire(l.ticket(), &quiet()).await);
        }
        permits
    }

    #[tokio::test]
    async fn no_limit_until_the_first_slow_down() {
        let l = limiter();
        let permits = acquire_n(&l, 100).await;
        assert_eq!(l.lock().in_flight, 100);
        assert_eq!(l.limit(), None);
        drop(permits);
        assert_eq!(l.lock().in_flight, 0);
    }

    #[tokio::test]
    async fn a_slow_down_lowers_the_limit_to_the_others_in_flight() {
        let l = limiter();
        let mut permits = acquire_n(&l, 24).await;
        // 20 refused while 4 are being answered: the limit ends at the 4.
        for p in permits.drain(4..) {
            p.slowed_down(None);
        }
        assert_eq!(l.limit(), Some(4.0));
        assert_eq!(l.lock().in_flight, 4);
    }

    #[tokio::test]
    async fn alone_it_halves_once_per_round_and_pauses_every_call() {
        let l = limiter();
        let a = l.acquire(l.ticket(), &quiet()).await;
        a.slowed_down(Some(Duration::from_millis(300)));
        assert_eq!(l.limit(), Some(1.0));
        let paused = Arc::new(AtomicUsize::new(0));
        let seen = paused.clone();
        let started = Instant::now();
        let b = l
            .acquire(l.ticket(), &move |w| {
                if matches!(w, Wait::Paused(_)) {
                    seen.fetch_add(1, Ordering::SeqCst);
                }
            })
            .await;
        assert!(started.elapsed() >= Duration::from_millis(300));
        assert_eq!(paused.load(Ordering::SeqCst), 1);
        drop(b);
    }

    #[tokio::test]
    async fn waiters_are_served_oldest_first_and_successes_raise_the_limit() {
        let l = limiter();
        let first = l.acquire(l.ticket(), &quiet()).await;
        let second = l.acquire(l.ticket(), &quiet()).await;
        second.slowed_down(None); // limit 1 (one other in flight)
        assert_eq!(l.limit(), Some(1.0));
        let order = Arc::new(Mutex::new(Vec::new()));
        let mut tasks = Vec::new();
        for i in 0..3u64 {
            let (l2, order) = (l.clone(), order.clone());
            let ticket = l.ticket();
            tasks.push(tokio::spawn(async move {
                let p = l2.acquire(ticket, &|_| {}).await;
                order.lock().unwrap().push(i);
                tokio::time::sleep(Duration::from_millis(5)).await;
                p.succeeded();
            }));
            tokio::task::yield_now().await;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(order.lock().unwrap().is_empty(), "all wait for the place");
        first.succeeded(); // 1 + 1/1 = 2 places
        drop(first);
        for t in tasks {
            t.await.unwrap();
        }
        assert_eq!(*order.lock().unwrap(), [0, 1, 2]);
        assert!(l.limit().unwrap() >= 2.0, "{:?}", l.limit());
        assert_eq!(l.lock().in_flight, 0);
    }

    #[tokio::test]
    async fn a_call_that_leaves_the_line_keeps_no_place() {
        let l = limiter();
        let a = l.acquire(l.ticket(), &quiet()).await;
        let b = l.acquire(l.ticket(), &quiet()).await;
        b.slowed_down(None); // limit 1
        let waiting =
            tokio::time::timeout(Duration::from_millis(20), l.acquire(l.ticket(), &quiet())).await;
        assert!(waiting.is_err(), "it waited");
        assert!(l.lock().waiters.is_empty(), "and left the line");
        drop(a);
        assert_eq!(l.lock().in_flight, 0);
        let c = l.acquire(l.ticket(), &quiet()).await;
        drop(c);
    }

    #[test]
    fn the_registry_shares_by_endpoint_and_key() {
        let a = Limiter::for_endpoint("http://h/v1", [b"key-1".as_slice()]);
        let b = Limiter::for_endpoint("http://h/v1", [b"key-1".as_slice()]);
        let c = Limiter::for_endpoint("http://h/v1", [b"key-2".as_slice()]);
        let d = Limiter::for_endpoint("http://other/v1", [b"key-1".as_slice()]);
        assert!(Arc::ptr_eq(&a, &b));
        assert!(!Arc::ptr_eq(&a, &c));
        assert!(!Arc::ptr_eq(&a, &d));
        assert!(!format!("{a:?}").contains("key-1"));
    }
}
