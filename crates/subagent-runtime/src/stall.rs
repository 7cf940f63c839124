//! The stall watchdog: a run whose model stream and tools make no progress for a configured
//! time stops with [`TaskStatus::LimitReached`](subagent_spi::TaskStatus::LimitReached) and a
//! limit naming `stalled` and where (the model call, or which tools).
//!
//! Progress is: a streamed piece of the model's reply, a finished model call, and any progress
//! event a running tool emits (a `Task` child's turns, tool calls and text reach its parent
//! this way, so a child that works keeps its parent alive). Tools get the stall time plus a
//! grace that shrinks with depth ([`tool_grace`]: 5 s per nesting level below, for up to 8
//! levels), so that a child which stalls, in a model call or in a tool of its own, is reported
//! by the child (its partial answer kept) before its parent would give up on it.

use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use subagent_spi::{ProgressEvent, ProgressSink, TaskContext};
use tokio::time::Instant;

/// One step of the tools' grace (see [`tool_grace`]).
const TOOL_GRACE_STEP: Duration = Duration::from_secs(5);
/// Nesting levels the tools' grace tells apart.
const GRACE_LEVELS: u32 = 8;

/// What the tools of a run at `depth` get on top of the stall time: more than the tools of any
/// run below it (down to [`GRACE_LEVELS`] levels), so the deepest stalled run reports first.
pub(crate) fn tool_grace(depth: u32) -> Duration {
    TOOL_GRACE_STEP * (1 + GRACE_LEVELS.saturating_sub(depth))
}

/// The start of every stall limit: `stalled: no progress for N s in ...`.
pub const STALLED_LIMIT_PREFIX: &str = "stalled";

/// No progress came within the stall time.
#[derive(Debug)]
pub(crate) struct Stalled;

/// Watches one run: [`touch`](Self::touch) on progress, [`watch`](Self::watch) a future.
#[derive(Debug)]
pub(crate) struct Watchdog {
    timeout: Option<Duration>,
    last: Mutex<Instant>,
}

impl Watchdog {
    /// A watchdog with this stall time (`None`: never fires).
    pub(crate) fn new(timeout: Option<Duration>) -> Arc<Self> {
        Arc::new(Self {
            timeout,
            last: Mutex::new(Instant::now()),
        })
    }

    /// Whether the watchdog can fire at all.
    pub(crate) fn enabled(&self) -> bool {
        self.timeout.is_some()
    }

    /// Records progress now.
    pub(crate) fn touch(&self) {
        if self.timeout.is_some() {
            *self.last.lock().unwrap_or_else(PoisonError::into_inner) = Instant::now();
        }
    }

    fn last(&self) -> Instant {
        *self.last.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Runs `fut` until it finishes or no progress was recorded for the stall time plus
    /// `extra`; the clock starts now.
    pub(crate) async fn watch<F: Future>(
        &self,
        fut: F,
        extra: Duration,
    ) -> Result<F::Output, Stalled> {
        let Some(timeout) = self.timeout else {
            return Ok(fut.await);
        };
        self.touch();
        let limit = timeout.saturating_add(extra);
        let expired = async {
            loop {
                let at = self.last() + limit;
                tokio::time::sleep_until(at).await;
                if Instant::now() >= self.last() + limit {
                    return;
                }
            }
        };
        tokio::select! {
            biased;
            out = fut => Ok(out),
            () = expired => Err(Stalled),
        }
    }

    /// The limit text: `stalled: no progress for 600 s in WHERE`.
    pub(crate) fn limit(&self, place: &str) -> subagent_spi::Limit {
        let secs = self.timeout.unwrap_or_default().as_secs_f64();
        subagent_spi::Limit::other(format!(
            "{STALLED_LIMIT_PREFIX}: no progress for {secs} s in {place}"
        ))
    }

    /// A context for the tools of one turn: the same as `ctx`, with a progress sink that
    /// records every event the tools emit as progress. `ctx` itself when the watchdog is off.
    pub(crate) fn tool_context(self: &Arc<Self>, ctx: &TaskContext) -> TaskContext {
        if !self.enabled() {
            return ctx.clone();
        }
        ctx.clone().with_progress(Arc::new(Touching {
            inner: ctx.progress().clone(),
            dog: self.clone(),
        }))
    }
}

/// Forwards events and counts each as progress.
struct Touching {
    inner: Arc<dyn ProgressSink>,
    dog: Arc<Watchdog>,
}

impl ProgressSink for Touching {
    fn emit(&self, event: ProgressEvent) {
        self.dog.touch();
        if !self.inner.discards_events() {
            self.inner.emit(event);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn fires_without_progress_and_waits_while_touched() {
        let dog = Watchdog::new(Some(Duration::from_secs(10)));
        let out = dog
            .watch(std::future::pending::<()>(), Duration::ZERO)
            .await;
        assert!(out.is_err(), "no progress: stalled");

        // Touched every 5 s for 60 s: never stalls, the work finishes.
        let d2 = dog.clone();
        let work = async move {
            for _ in 0..12 {
                tokio::time::sleep(Duration::from_secs(5)).await;
                d2.touch();
            }
            7
        };
        assert_eq!(dog.watch(work, Duration::ZERO).await.unwrap(), 7);

        let off = Watchdog::new(None);
        let slow = async {
            tokio::time::sleep(Duration::from_secs(3600)).await;
            1
        };
        assert_eq!(off.watch(slow, Duration::ZERO).await.unwrap(), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn tool_events_are_progress() {
        let dog = Watchdog::new(Some(Duration::from_secs(10)));
        let ctx = dog.tool_context(&TaskContext::new());
        let work = async {
            for _ in 0..5 {
                tokio::time::sleep(Duration::from_secs(8)).await;
                ctx.emit(subagent_spi::ProgressKind::Status {
                    message: "working".into(),
                });
            }
        };
        assert!(dog.watch(work, Duration::ZERO).await.is_ok());
        assert!(tool_grace(0) > tool_grace(1) && tool_grace(1) > Duration::ZERO);
        assert_eq!(tool_grace(20), TOOL_GRACE_STEP);
        assert_eq!(
            dog.limit("the model call (turn 2)").to_string(),
            "stalled: no progress for 10 s in the model call (turn 2)"
        );
    }
}
