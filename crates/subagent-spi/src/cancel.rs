//! A small runtime-agnostic cancellation token with parent/child propagation.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::task::{Context, Poll, Waker};

/// Cancels a tree of work cooperatively.
///
/// Cloning shares the token; [`child_token`](Self::child_token) makes a token that is cancelled
/// when this one is, but can also be cancelled on its own without touching the parent. Waiting is
/// done with [`cancelled`](Self::cancelled), a future that works with any executor.
///
/// ```
/// use subagent_spi::CancellationToken;
/// let parent = CancellationToken::new();
/// let child = parent.child_token();
/// child.cancel();
/// assert!(!parent.is_cancelled());
/// parent.cancel();
/// assert!(parent.child_token().is_cancelled());
/// ```
#[derive(Clone, Default)]
pub struct CancellationToken {
    inner: Arc<Inner>,
}

#[derive(Default)]
struct Inner {
    cancelled: AtomicBool,
    next_waiter: AtomicU64,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    waiters: Vec<(u64, Waker)>,
    children: Vec<Weak<Inner>>,
}

impl Inner {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding this lock cannot leave the state inconsistent (every critical
        // section is a push, a retain or a take), so a poisoned lock is simply recovered.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn cancel(&self) {
        if self.cancelled.swap(true, Ordering::AcqRel) {
            return;
        }
        let (waiters, children) = {
            let mut st = self.lock();
            (
                std::mem::take(&mut st.waiters),
                std::mem::take(&mut st.children),
            )
        };
        for (_, w) in waiters {
            w.wake();
        }
        for child in children.iter().filter_map(Weak::upgrade) {
            child.cancel();
        }
    }
}

impl std::fmt::Debug for CancellationToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CancellationToken")
            .field("cancelled", &self.is_cancelled())
            .finish()
    }
}

impl CancellationToken {
    /// A fresh, uncancelled token.
    pub fn new() -> Self {
        Self::default()
    }

    /// Cancels this token and every child token. Idempotent.
    pub fn cancel(&self) {
        self.inner.cancel();
    }

    /// True once [`cancel`](Self::cancel) was called on this token or an ancestor.
    pub fn is_cancelled(&self) -> bool {
        self.inner.cancelled.load(Ordering::Acquire)
    }

    /// A token cancelled together with this one, that can also be cancelled alone.
    pub fn child_token(&self) -> CancellationToken {
        let child = CancellationToken::new();
        if self.is_cancelled() {
            child.cancel();
            return child;
        }
        {
            let mut st = self.inner.lock();
            // Keep the list bounded: drop children that no longer exist before it doubles.
            if st.children.len() >= 64 && st.children.len().is_power_of_two() {
                st.children.retain(|w| w.strong_count() > 0);
            }
            st.children.push(Arc::downgrade(&child.inner));
        }
        // The parent may have been cancelled between the check and the push.
        if self.is_cancelled() {
            child.cancel();
        }
        child
    }

    /// A future that completes when the token is cancelled.
    pub fn cancelled(&self) -> Cancelled {
        Cancelled {
            inner: self.inner.clone(),
            id: None,
        }
    }
}

/// The future returned by [`CancellationToken::cancelled`].
#[must_use = "futures do nothing unless polled"]
pub struct Cancelled {
    inner: Arc<Inner>,
    id: Option<u64>,
}

impl std::fmt::Debug for Cancelled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Cancelled")
    }
}

impl Future for Cancelled {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        if this.inner.cancelled.load(Ordering::Acquire) {
            return Poll::Ready(());
        }
        let mut st = this.inner.lock();
        // Re-check under the lock: `cancel` takes the waiters under the same lock.
        if this.inner.cancelled.load(Ordering::Acquire) {
            return Poll::Ready(());
        }
        match this.id {
            Some(id) => {
                if let Some(slot) = st.waiters.iter_mut().find(|(i, _)| *i == id) {
                    if !slot.1.will_wake(cx.waker()) {
                        slot.1 = cx.waker().clone();
                    }
                } else {
                    st.waiters.push((id, cx.waker().clone()));
                }
            }
            None => {
                let id = this.inner.next_waiter.fetch_add(1, Ordering::Relaxed);
                st.waiters.push((id, cx.waker().clone()));
                this.id = Some(id);
            }
        }
        Poll::Pending
    }
}

impl Drop for Cancelled {
    fn drop(&mut self) {
        if let Some(id) = self.id
            && !self.inner.cancelled.load(Ordering::Acquire)
        {
            self.inner.lock().waiters.retain(|(i, _)| *i != id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn child_follows_parent_but_not_the_reverse() {
        let root = CancellationToken::new();
        let a = root.child_token();
        let b = a.child_token();
        b.cancel();
        assert!(b.is_cancelled());
        assert!(!a.is_cancelled());
        root.cancel();
        assert!(a.is_cancelled());
        let late = root.child_token();
        assert!(late.is_cancelled());
    }

    #[test]
    fn cancelled_future_wakes_across_threads() {
        let t = CancellationToken::new();
        let t2 = t.clone();
        let h = std::thread::spawn(move || futures::executor::block_on(t2.cancelled()));
        std::thread::sleep(std::time::Duration::from_millis(20));
        t.cancel();
        h.join().expect("waiter thread finished");
    }

    #[test]
    fn dropped_waiters_are_forgotten() {
        let t = CancellationToken::new();
        for _ in 0..100 {
            let mut fut = Box::pin(t.cancelled());
            let waker = futures::task::noop_waker();
            let mut cx = Context::from_waker(&waker);
            assert!(fut.as_mut().poll(&mut cx).is_pending());
        }
        assert_eq!(t.inner.lock().waiters.len(), 0);
    }

    #[test]
    fn children_list_stays_bounded() {
        let t = CancellationToken::new();
        for _ in 0..10_000 {
            drop(t.child_token());
        }
        assert!(t.inner.lock().children.len() <= 128);
    }
}
