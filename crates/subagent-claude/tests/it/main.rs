//! The integration tests of `subagent-claude`, one test binary (`tests/it`): one module per area.

mod common;
mod corpus;
mod executor;
mod hostile_files;
mod hostile_names;
mod hostile_props;
mod hostile_yaml;
