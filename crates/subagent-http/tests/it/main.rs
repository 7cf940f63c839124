//! The integration tests of `subagent-http`, one test binary (`tests/it`): one module per area.

mod http_kind;
mod usage;
