//! [`WorkflowLimits`]: what one workflow run may use.

use std::time::Duration;

/// The limits of one workflow run. A run that crosses one stops with a
/// [`WorkflowError`](crate::WorkflowError) naming the limit (`max_steps=…`), whatever the script
/// catches: the limits raise uncatchable interrupts, not exceptions.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct WorkflowLimits {
    /// Script work, in blocks of the engine's interrupt checks: QuickJS checks about every
    /// 10,000 function calls and loop iterations, so the default (200,000) is some billions of
    /// operations, seconds to minutes of CPU. Waiting for agents costs no steps.
    pub max_steps: u64,
    /// The engine's heap in bytes (default 64 MiB): strings, arrays, objects and every result the
    /// script holds.
    pub max_memory: usize,
    /// The engine's stack in bytes (default 1 MiB): how deep the script may recurse.
    pub max_stack: usize,
    /// Wall time from the start (or the resume) of the run to its end (default 6 hours).
    pub max_wall_time: Duration,
    /// `agent()` and `ask()` calls over the whole run, resumes included (default 1,000).
    pub max_agent_calls: u32,
    /// The script's size in bytes (default 256 KiB).
    pub max_script_bytes: usize,
    /// The JSON of `args` and of the script's result, each, in bytes (default 4 MiB).
    pub max_value_bytes: usize,
}

impl Default for WorkflowLimits {
    fn default() -> Self {
        Self {
            max_steps: 200_000,
            max_memory: 64 * 1024 * 1024,
            max_stack: 1024 * 1024,
            max_wall_time: Duration::from_secs(6 * 3600),
            max_agent_calls: 1_000,
            max_script_bytes: 256 * 1024,
            max_value_bytes: 4 * 1024 * 1024,
        }
    }
}

impl WorkflowLimits {
    /// The default limits.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets [`max_steps`](Self::max_steps).
    #[must_use]
    pub fn with_max_steps(mut self, n: u64) -> Self {
        self.max_steps = n;
        self
    }

    /// Sets [`max_memory`](Self::max_memory) (at least 1 MiB).
    #[must_use]
    pub fn with_max_memory(mut self, bytes: usize) -> Self {
        self.max_memory = bytes.max(1024 * 1024);
        self
    }

    /// Sets [`max_stack`](Self::max_stack) (between 64 KiB and 8 MiB: the engine's thread has
    /// 16 MiB).
    #[must_use]
    pub fn with_max_stack(mut self, bytes: usize) -> Self {
        self.max_stack = bytes.clamp(64 * 1024, 8 * 1024 * 1024);
        self
    }

    /// Sets [`max_wall_time`](Self::max_wall_time).
    #[must_use]
    pub fn with_max_wall_time(mut self, d: Duration) -> Self {
        self.max_wall_time = d;
        self
    }

    /// Sets [`max_agent_calls`](Self::max_agent_calls).
    #[must_use]
    pub fn with_max_agent_calls(mut self, n: u32) -> Self {
        self.max_agent_calls = n;
        self
    }
}
