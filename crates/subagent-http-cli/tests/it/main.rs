//! The integration tests of `subagent-http-cli`, one test binary (`tests/it`): one module per area.

mod cli;
