//! The integration tests of `subagents`, one test binary (`tests/it`): one module per area.
//!
//! Two files stay binaries of their own, because `tracing`'s dispatch is process-wide: `traces.rs`
//! (a scoped subscriber, which other tests' threads registering the same callsites at the same
//! time can leave out of a callsite's cached interest) and `propagation.rs` (a global subscriber
//! and W3C propagator, which would record and propagate every other test's spans).

mod common;

mod a2a_approvals;
mod budget;
mod concurrency;
mod fork;
mod long_run;
mod mcp_agents;
mod mcp_approvals;
mod mcp_tasks;
mod model_servers;
mod nesting;
mod ops;
mod parity;
mod permissions;
mod prompt_cache;
mod remote_usage;
mod serve_store;
mod steer;
mod streaming;
mod typed;
#[cfg(all(feature = "workflow", feature = "store"))]
mod workflow;
