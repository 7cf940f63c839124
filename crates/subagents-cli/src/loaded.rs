//! One row of the `agents list` / `agents load` JSON report, a module of its own because both
//! the Markdown listing (`agents`) and the configuration file's agents (`config_agents`) make
//! them.

use serde::Serialize;

/// One loaded agent in the JSON report.
#[derive(Debug, Serialize)]
pub(crate) struct Loaded {
    /// File path (or `embedded:NAME` for built-ins).
    pub path: String,
    /// Agent name.
    pub name: String,
    /// The path segment used for the agent (memory directory, served URL path), when it is not
    /// the name itself.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub slug: Option<String>,
    /// Kind (`CLAUDE`).
    pub kind: String,
    /// Load warnings: what a run would warn about (ignored fields and tools, unknown model...).
    pub warnings: Vec<String>,
    /// Description (list only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The model it would run on under the current flags, configuration and environment
    /// (list only; `-` when none is known).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The URL (A2A) or spec (MCP) of an agent of the configuration file, credentials hidden
    /// (list only; see `config_agents`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
}
