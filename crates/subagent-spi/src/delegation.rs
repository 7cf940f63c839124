//! The delegation handle: how a host's `Task` tool reaches every run below it.

use std::fmt;
use std::sync::Arc;

use crate::Tool;

/// The delegation tools of a host, handed down to each child run through
/// [`TaskContext::delegation`](crate::TaskContext::delegation).
///
/// The `Task` tool of `task-tool` puts a handle to itself into the context of every run it
/// starts, so any executor (the Markdown kind, a third-party kind, an agent served over A2A or
/// MCP) can offer delegation to what it runs without being wired to the host after build.
/// An executor asks [`TaskContext::delegation_tools`](crate::TaskContext::delegation_tools),
/// which answers with nothing once the nesting limit is reached, so a model beyond the limit
/// never sees the tool.
pub trait Delegation: Send + Sync + fmt::Debug {
    /// The deepest nesting depth at which a run may still be offered delegation is
    /// `max_depth - 1`: a run at depth `d` may delegate only when `d < max_depth`. The main
    /// agent is depth 0.
    fn max_depth(&self) -> u32;

    /// The delegation tools to offer a run: `Task` first, then its companions (`TaskOutput`,
    /// `TaskStop`, `SendMessage`).
    fn tools(&self) -> Vec<Arc<dyn Tool>>;

    /// The names of the agents this handle can start (for validating rules such as
    /// `Agent(a, b)`).
    fn agent_names(&self) -> Vec<String>;
}
