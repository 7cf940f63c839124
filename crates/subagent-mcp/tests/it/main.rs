//! The integration tests of `subagent-mcp`, one test binary (`tests/it`): one module per area.
//!
//! `tests/support` stays where it was: `server_main.rs` is the `subagent-mcp-test-server`
//! binary, `server.rs` its server (declared here once by `#[path]`, used by `mcp_kind` and
//! `mcp_revision`), `py_mcp_server.py` the Python peer of `mcp_interop_py`.

mod common;

#[cfg(feature = "test-server")]
#[path = "../support/server.rs"]
mod server;

mod mcp_interop_py;
#[cfg(feature = "test-server")]
mod mcp_kind;
mod mcp_lifecycle;
#[cfg(feature = "test-server")]
mod mcp_revision;
#[cfg(feature = "test-server")]
mod mcp_tools;
mod tool_server;
