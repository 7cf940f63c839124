//! The integration tests of `subagents-cli`, one test binary (`tests/it`): one module per area.

mod common;

mod a2a_approval;
mod agents_load;
mod background;
mod budget;
mod cli;
mod crate_map;
#[cfg(feature = "custom-cli-example")]
mod custom_cli;
mod delegation_py;
mod durable;
mod first_hour;
mod fork;
mod full_disk;
mod hostile;
mod loader;
mod local_first;
mod long_run;
mod mcp;
mod mcp_restart;
mod mcp_scope;
mod mcp_tasks_py;
mod models;
mod nesting;
mod otel_export;
mod parity;
mod permissions;
mod prompt_cache;
mod rate_limits;
mod readme;
mod real_model;
mod remote_usage;
mod sandbox_work;
mod serve_assembly;
mod serve_auth;
mod serve_bounds;
mod serve_sessions;
mod small_models;
mod steer;
mod stream;
mod terminal;
mod trust_config;
mod trust_doors;
mod typed;
mod workflow;
