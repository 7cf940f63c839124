//! The integration tests of `subagent-http`, one test binary (`tests/it`): one module per area.

#[cfg(feature = "cli")]
mod cli;
mod http_kind;
mod usage;
