//! The integration tests of `subagent-sse`, one test binary (`tests/it`): one module per area.

mod parser;
