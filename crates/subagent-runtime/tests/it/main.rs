//! The integration tests of `subagent-runtime`, one test binary (`tests/it`): one module per area.

mod common;

mod agent_loop;
mod long_run;
mod registry;
mod repeat;
mod steer;
mod structured;
