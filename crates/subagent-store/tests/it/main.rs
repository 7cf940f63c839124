//! The integration tests of `subagent-store`, one test binary (`tests/it`): one module per area.

mod common;

mod a2a_chaos;
mod a2a_commit;
mod a2a_fencing;
mod a2a_lock;
mod a2a_replicas;
mod a2a_restart;
mod a2a_store;
#[cfg(all(feature = "transcripts", feature = "ledger"))]
mod durable;
mod open;
#[cfg(feature = "workflow")]
mod workflow;
