//! Fair shares of the background limit among the callers of one tool: a host serving several
//! clients from one `TaskTool` (`subagents mcp --listen`: one caller per MCP session or
//! credential) marks each client's calls with a [`BackgroundCaller`], and no caller can take
//! every background place.
//!
//! The rule: a caller may run at most `max_background / (n + 1)` background tasks at once (at
//! least one), where `n` counts the callers running background tasks, itself included; the
//! `+ 1` keeps a share for a caller that has none yet. Alone, a caller gets half the limit (8
//! of the default 16); with another one running, a third each (5); and so on. Tasks started
//! without a caller (the host's own, a model's in `subagents run`) count only against the
//! limit itself. Runs inherit their context's extensions, so what a caller's background tasks
//! start in the background counts against that caller too. A share is checked when a task
//! starts and never taken back: once callers that started at their shares fill the limit
//! (8 + 5 + 3 of 16), a newcomer waits until one of their tasks ends.

use std::collections::HashMap;
use std::sync::Mutex;

/// The caller a background task is started for (see the module docs): put it in the context
/// of each caller's calls with [`TaskContext::with_extension`](subagent_spi::TaskContext::with_extension).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct BackgroundCaller(String);

impl BackgroundCaller {
    /// A caller known by `id` (any stable text that tells callers apart).
    pub fn new(id: impl Into<String>) -> Self {
        Self(id.into())
    }

    /// Its id.
    pub fn id(&self) -> &str {
        &self.0
    }
}

/// Background tasks running per caller (only callers with at least one).
#[derive(Default)]
pub(crate) struct Shares {
    running: Mutex<HashMap<String, usize>>,
}

impl Shares {
    /// Takes a place for `caller` under `max`: `Err` with its share and how many it runs when
    /// it has no place left.
    pub(crate) fn take(&self, caller: &BackgroundCaller, max: usize) -> Result<(), (usize, usize)> {
        let mut running = self.running.lock().unwrap_or_else(|p| p.into_inner());
        let mine = running.get(caller.id()).copied().unwrap_or(0);
        let others = running.keys().filter(|k| k.as_str() != caller.id()).count();
        let share = (max / (others + 2)).max(1);
        if mine >= share {
            return Err((share, mine));
        }
        running.insert(caller.id().to_string(), mine + 1);
        Ok(())
    }

    /// Gives `caller`'s place back (its task ended, or did not start).
    pub(crate) fn give_back(&self, caller: &BackgroundCaller) {
        let mut running = self.running.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(n) = running.get_mut(caller.id()) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                running.remove(caller.id());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lone_caller_gets_half_and_the_next_ones_a_share() {
        let shares = Shares::default();
        let (b, c, d) = (
            BackgroundCaller::new("b"),
            BackgroundCaller::new("c"),
            BackgroundCaller::new("d"),
        );
        for _ in 0..8 {
            shares.take(&b, 16).expect("b's share");
        }
        assert_eq!(shares.take(&b, 16), Err((8, 8)));
        for _ in 0..5 {
            shares.take(&c, 16).expect("c's share");
        }
        assert_eq!(shares.take(&c, 16), Err((5, 5)));
        assert_eq!(shares.take(&b, 16), Err((5, 8)), "b is over its share now");
        shares.take(&d, 16).expect("d finds a place");
        for _ in 0..8 {
            shares.give_back(&b);
        }
        shares.take(&b, 16).expect("b again");
        assert_eq!(shares.take(&BackgroundCaller::new("e"), 1), Ok(()));
    }
}
