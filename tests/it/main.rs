//! The workspace's cross-crate integration tests, one test binary (`it`): one module per area.

mod a2a_interop_py;
mod claude_mcp;
mod doc_paths;
mod module_circles;
mod runtime_http;
mod task_claude;
