//! The tokio runtime the benches (and `examples/loop_count.rs`) run on.

/// A current-thread tokio runtime with I/O and timers: one thread, so the figures are the
/// work itself, not scheduling between workers.
pub(crate) fn current_thread() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime")
}
