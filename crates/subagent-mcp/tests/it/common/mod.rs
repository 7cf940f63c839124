//! What several test modules of `subagent-mcp` share.
#![allow(dead_code)]

use std::time::Duration;

use subagent_spi::CancellationToken;
use tokio::task::JoinHandle;

/// Cancels `cancel`, then waits (bounded) for the call `running` under it to return; what it
/// returned.
pub(crate) async fn cancel_and_join<T>(cancel: &CancellationToken, running: JoinHandle<T>) -> T {
    cancel.cancel();
    tokio::time::timeout(Duration::from_secs(20), running)
        .await
        .expect("the cancelled call returns")
        .expect("the call's task ends without a panic")
}
