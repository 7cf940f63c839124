//! The workflow crate's tests: scripts run against the Task tool over the testkit's `FN` kind
//! (a real kind, in process), journaled in memory.

mod common;
mod hostile;
mod resume;
mod scripts;
