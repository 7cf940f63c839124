//! What the benches share.

/// A multi-threaded tokio runtime with `workers` worker threads.
pub(crate) fn runtime(workers: usize) -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_all()
        .build()
        .expect("runtime")
}
