//! Runnable examples of the `subagents` framework; see the `[[example]]` entries of this
//! package (`cargo run --example NAME` from the workspace root).
