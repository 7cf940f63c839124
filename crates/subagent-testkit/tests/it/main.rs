//! The integration tests of `subagent-testkit`, one test binary (`tests/it`): one module per area.

mod server;
mod window_and_stalls;
