//! The concurrency cap over a delegation tree: at most `max_concurrent` children work at once.
//!
//! # The rule
//!
//! A child run takes a place before it starts and gives it back when it ends. The main agent
//! (the root) takes none. **A run that waits for its own children gives its place back for the
//! wait** (a foreground `Task` call, a blocking `TaskOutput`, `TaskStop`'s wind-down) and takes
//! one again, waiting its turn, before it continues. So the cap counts the runs that are doing
//! work of their own (a model call, their tools), not the ones blocked on grandchildren, and a
//! tree can never deadlock on its own cap: every place is held by a run that is making
//! progress. Several parallel waits of one run give its place back once and take it again when
//! the last one ends.
//!
//! The places are one [`Slots`] per [`TaskTool`](crate::TaskTool) (every child of a tree sees
//! the same tool through its delegation handle); each run's place sits in its context's
//! extensions as a [`RunPermit`], changed only by that run. There is no lock shared by the tree.
//!
//! # Cost
//!
//! This is on every dispatch, so the common case is a few atomic operations and nothing else:
//! while the tree is under its cap a place is taken with one compare-and-swap on a counter of
//! free places and given back with one add (no semaphore, no waiter lock), and a run's own state
//! (its place, its waits, whether it ended) is one atomic word, not a mutex. Only a call that
//! finds the tree full registers as a waiter and sleeps on a [`Notify`]; a place given back while
//! someone waits wakes the oldest waiter.

use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use subagent_spi::TaskContext;
use tokio::sync::Notify;

/// The default cap on children working at once (Claude Code's too).
pub const DEFAULT_MAX_CONCURRENT: usize = 20;

/// The places under the cap of one tool, shared by every run of its tree.
pub(crate) struct Slots {
    /// Places free now.
    free: AtomicUsize,
    /// Calls waiting for a place (registered on `wake` or about to be).
    waiters: AtomicUsize,
    /// Wakes a waiter when a place is given back while someone waits.
    wake: Notify,
}

impl Slots {
    /// `max` places, all free.
    pub(crate) fn new(max: usize) -> Self {
        Self {
            free: AtomicUsize::new(max),
            waiters: AtomicUsize::new(0),
            wake: Notify::new(),
        }
    }

    /// Takes a free place without waiting. A new call does not overtake calls already waiting
    /// for one (they get the next place given back).
    fn try_take(&self) -> bool {
        self.waiters.load(Ordering::Relaxed) == 0 && self.take_free()
    }

    /// Takes a free place, if any, whoever waits.
    fn take_free(&self) -> bool {
        // SeqCst, paired with `give`: a waiter that registered and then finds no free place is
        // certain to be seen (and woken) by the next `give`.
        let mut cur = self.free.load(Ordering::SeqCst);
        while cur > 0 {
            match self
                .free
                .compare_exchange_weak(cur, cur - 1, Ordering::SeqCst, Ordering::SeqCst)
            {
                Ok(_) => return true,
                Err(now) => cur = now,
            }
        }
        false
    }

    /// Gives a place back, waking a waiter if there is one.
    fn give(&self) {
        self.free.fetch_add(1, Ordering::SeqCst);
        if self.waiters.load(Ordering::SeqCst) > 0 {
            // Wakes the oldest registered waiter, or (none registered yet) leaves a permit the
            // next one to register consumes at once; a woken waiter that is dropped before it
            // looks passes the wake-up on (tokio's `Notify` does).
            self.wake.notify_one();
        }
    }

    /// Takes a place, waiting its turn; false when `ctx` is cancelled first.
    async fn take(&self, ctx: &TaskContext) -> bool {
        if self.try_take() {
            return true;
        }
        self.waiters.fetch_add(1, Ordering::SeqCst);
        let _registered = Registered(&self.waiters);
        loop {
            let mut woken = pin!(self.wake.notified());
            // Registered before looking, so a place given back after the look wakes this call.
            woken.as_mut().enable();
            if self.take_free() {
                return true;
            }
            tokio::select! {
                biased;
                () = ctx.cancel().cancelled() => return false,
                () = woken => {}
            }
        }
    }
}

/// One waiter in [`Slots::waiters`], for as long as it lives.
struct Registered<'a>(&'a AtomicUsize);

impl Drop for Registered<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// [`RunPermit::state`]: the run holds a place.
const HELD: usize = 1;
/// [`RunPermit::state`]: the run ended; it never takes a place again.
const ENDED: usize = 2;
/// [`RunPermit::state`]: one wait on children (the count of waits is `state / WAIT`).
const WAIT: usize = 4;

/// A run's place under the cap, kept in its context (see the module docs).
pub(crate) struct RunPermit {
    slots: Arc<Slots>,
    /// `HELD`, `ENDED` and the number of waits on children in progress, in one word.
    state: AtomicUsize,
}

impl RunPermit {
    fn held(slots: &Arc<Slots>) -> Arc<Self> {
        Arc::new(Self {
            slots: slots.clone(),
            state: AtomicUsize::new(HELD),
        })
    }

    /// Takes a place from `slots`, waiting its turn; `None` when `ctx` is cancelled first.
    pub(crate) async fn acquire(slots: &Arc<Slots>, ctx: &TaskContext) -> Option<Arc<Self>> {
        slots.take(ctx).await.then(|| Self::held(slots))
    }

    /// [`acquire`](Self::acquire) for the run of `child`, taking and giving back the context
    /// (so the caller's future holds no borrow of it across the wait).
    pub(crate) async fn acquire_for(
        slots: &Arc<Slots>,
        child: TaskContext,
    ) -> (Option<Arc<Self>>, TaskContext) {
        let permit = Self::acquire(slots, &child).await;
        (permit, child)
    }

    /// Takes a place without waiting, when one is free.
    pub(crate) fn try_acquire(slots: &Arc<Slots>) -> Option<Arc<Self>> {
        slots.try_take().then(|| Self::held(slots))
    }

    /// Changes the state with `f` (one compare-and-swap when uncontended); returns the state
    /// before.
    fn update(&self, f: impl Fn(usize) -> usize) -> usize {
        let mut cur = self.state.load(Ordering::Acquire);
        loop {
            match self
                .state
                .compare_exchange_weak(cur, f(cur), Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => return cur,
                Err(now) => cur = now,
            }
        }
    }

    /// Gives the place back for good (the run ended).
    pub(crate) fn release(&self) {
        if self.update(|s| (s | ENDED) & !HELD) & HELD != 0 {
            self.slots.give();
        }
    }

    fn begin_wait(&self) {
        if self.update(|s| (s + WAIT) & !HELD) & HELD != 0 {
            self.slots.give();
        }
    }

    /// Ends one wait without waiting when it can: true when done (other waits go on, or the
    /// last one took a free place at once); false when the run must wait its turn for a place
    /// ([`take_again`](Self::take_again)).
    fn end_wait_now(&self) -> bool {
        // Zero after the wait ends: no other wait in progress, no place held, the run going on.
        if less_one_wait(self.update(less_one_wait)) != 0 {
            return true;
        }
        if !self.slots.try_take() {
            return false;
        }
        self.keep_taken();
        true
    }

    /// The slow end of a wait: takes a place again, waiting its turn (or until `ctx` is
    /// cancelled: the run then stops anyway).
    async fn take_again(&self, ctx: &TaskContext) {
        if self.slots.take(ctx).await {
            self.keep_taken();
        }
    }

    /// A place was taken at the end of the last wait: keep it unless another wait began
    /// meanwhile (it needs no place) or the run ended.
    fn keep_taken(&self) {
        if self.update(|s| if s == 0 { HELD } else { s }) != 0 {
            self.slots.give();
        }
    }

    /// Ends a wait that was abandoned (its future dropped): no place is taken again, since the
    /// run is being stopped.
    fn abandon_wait(&self) {
        self.update(less_one_wait);
    }
}

impl Drop for RunPermit {
    /// A run dropped before it was released (its dispatch future was dropped midway) gives
    /// its place back here, when the last context holding it goes.
    fn drop(&mut self) {
        if *self.state.get_mut() & HELD != 0 {
            self.slots.give();
        }
    }
}

/// A [`RunPermit`] state with one wait fewer.
fn less_one_wait(s: usize) -> usize {
    if s >= WAIT { s - WAIT } else { s }
}

/// A wait of a run on its children, begun with [`ChildWait::begin`]: the run's place is given
/// back until [`end`](Self::end) takes one again. Dropped without `end` (the waiting future was
/// dropped), the wait is abandoned and no place is taken again, since the run is being stopped.
///
/// A guard rather than a wrapper future, so the dispatch path does not nest (and copy) the
/// child's future inside another one.
pub(crate) struct ChildWait<'a> {
    permit: Option<&'a RunPermit>,
}

impl<'a> ChildWait<'a> {
    /// Begins a wait of the run of `ctx`; `None` for a run without a place (the root).
    pub(crate) fn begin(ctx: &'a TaskContext) -> Option<Self> {
        let permit = ctx.extensions().get::<RunPermit>()?;
        permit.begin_wait();
        Some(Self {
            permit: Some(permit),
        })
    }

    /// Ends the wait: the last one of the run takes a place again, waiting its turn.
    pub(crate) async fn end(mut self, ctx: &TaskContext) {
        if let Some(permit) = self.permit.take()
            && !permit.end_wait_now()
        {
            // Boxed: the waiting future is large and rare, and callers embed this one.
            Box::pin(permit.take_again(ctx)).await;
        }
    }
}

impl Drop for ChildWait<'_> {
    fn drop(&mut self) {
        if let Some(permit) = self.permit {
            permit.abandon_wait();
        }
    }
}

/// Runs `fut`, a wait of the run of `ctx` on its children, with the run's place given back for
/// the wait (see the module docs). Runs without a place (the root) just await `fut`.
pub(crate) async fn waiting_on_children<F: Future>(ctx: &TaskContext, fut: F) -> F::Output {
    let Some(wait) = ChildWait::begin(ctx) else {
        return fut.await;
    };
    let out = fut.await;
    wait.end(ctx).await;
    out
}
