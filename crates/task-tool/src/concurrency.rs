//! The concurrency cap over a delegation tree: at most `max_concurrent` children work at once.
//!
//! # The rule
//!
//! A child run takes a place (a semaphore permit) before it starts and gives it back when it
//! ends. The main agent (the root) takes none. **A run that waits for its own children gives its
//! place back for the wait** (a foreground `Task` call, a blocking `TaskOutput`, `TaskStop`'s
//! wind-down) and takes one again, waiting its turn, before it continues. So the cap counts the
//! runs that are doing work of their own (a model call, their tools), not the ones blocked on
//! grandchildren, and a tree can never deadlock on its own cap: every place is held by a run
//! that is making progress. Several parallel waits of one run give its place back once and take
//! it again when the last one ends.
//!
//! The semaphore is one per [`TaskTool`](crate::TaskTool) (every child of a tree sees the same
//! tool through its delegation handle); each run's permit sits in its context's extensions as a
//! [`RunPermit`], locked only by that run. There is no lock shared by the tree.

use std::sync::{Arc, Mutex};

use subagent_spi::TaskContext;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// The default cap on children working at once (Claude Code's too).
pub const DEFAULT_MAX_CONCURRENT: usize = 20;

/// A run's place under the cap, kept in its context (see the module docs).
pub(crate) struct RunPermit {
    sem: Arc<Semaphore>,
    state: Mutex<PermitState>,
}

struct PermitState {
    /// Waits on children in progress.
    waiting: usize,
    permit: Option<OwnedSemaphorePermit>,
    /// The run ended: never take a place again.
    released: bool,
}

impl RunPermit {
    /// Takes a place from `sem`, waiting its turn; `None` when `ctx` is cancelled first.
    pub(crate) async fn acquire(sem: &Arc<Semaphore>, ctx: &TaskContext) -> Option<Arc<Self>> {
        // The common case, a free place, without registering for cancellation.
        if let Some(p) = Self::try_acquire(sem) {
            return Some(p);
        }
        let permit = tokio::select! {
            biased;
            () = ctx.cancel().cancelled() => return None,
            p = sem.clone().acquire_owned() => p.ok()?,
        };
        Some(Arc::new(Self {
            sem: sem.clone(),
            state: Mutex::new(PermitState {
                waiting: 0,
                permit: Some(permit),
                released: false,
            }),
        }))
    }

    /// [`acquire`](Self::acquire) for the run of `child`, taking and giving back the context
    /// (so the caller's future holds no borrow of it across the wait).
    pub(crate) async fn acquire_for(
        sem: &Arc<Semaphore>,
        child: TaskContext,
    ) -> (Option<Arc<Self>>, TaskContext) {
        let permit = Self::acquire(sem, &child).await;
        (permit, child)
    }

    /// Takes a place without waiting, when one is free.
    pub(crate) fn try_acquire(sem: &Arc<Semaphore>) -> Option<Arc<Self>> {
        let permit = sem.clone().try_acquire_owned().ok()?;
        Some(Arc::new(Self {
            sem: sem.clone(),
            state: Mutex::new(PermitState {
                waiting: 0,
                permit: Some(permit),
                released: false,
            }),
        }))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, PermitState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Gives the place back for good (the run ended).
    pub(crate) fn release(&self) {
        let permit = {
            let mut s = self.lock();
            s.released = true;
            s.permit.take()
        };
        drop(permit);
    }

    fn begin_wait(&self) {
        let permit = {
            let mut s = self.lock();
            s.waiting += 1;
            s.permit.take()
        };
        drop(permit);
    }

    /// Ends one wait; the last one takes a place again (waiting its turn, or until `ctx` is
    /// cancelled: the run then stops anyway).
    async fn end_wait(&self, ctx: &TaskContext) {
        {
            let mut s = self.lock();
            s.waiting = s.waiting.saturating_sub(1);
            if s.waiting > 0 || s.released || s.permit.is_some() {
                return;
            }
        }
        let permit = match self.sem.clone().try_acquire_owned() {
            Ok(p) => p,
            Err(_) => tokio::select! {
            biased;
            () = ctx.cancel().cancelled() => return,
            p = self.sem.clone().acquire_owned() => match p {
                Ok(p) => p,
                Err(_) => return,
            },
            },
        };
        let mut s = self.lock();
        // Another wait began meanwhile (it needs no place), or the run ended: drop it.
        if s.waiting == 0 && !s.released && s.permit.is_none() {
            s.permit = Some(permit);
        }
    }

    /// Ends a wait that was abandoned (its future dropped): no place is taken again, since the
    /// run is being stopped.
    fn abandon_wait(&self) {
        let mut s = self.lock();
        s.waiting = s.waiting.saturating_sub(1);
    }
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
        let permit = ctx.extensions().get::<Arc<RunPermit>>()?;
        permit.begin_wait();
        Some(Self {
            permit: Some(permit),
        })
    }

    /// Ends the wait: the last one of the run takes a place again, waiting its turn.
    pub(crate) async fn end(mut self, ctx: &TaskContext) {
        if let Some(permit) = self.permit.take() {
            permit.end_wait(ctx).await;
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
