//! The facade's error: what can go wrong while assembling [`Subagents`](crate::Subagents).

use std::path::PathBuf;

use subagent_spi::{BoxError, ModelError};

/// Building [`Subagents`](crate::Subagents) failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The workspace root cannot be used.
    #[error("workspace {}: {source}", .path.display())]
    Workspace {
        /// The root asked for.
        path: PathBuf,
        /// Why it cannot be used.
        #[source]
        source: BoxError,
    },
    /// A directory of agents cannot be read.
    #[error("agent directory {}: {source}", .path.display())]
    AgentDir {
        /// The directory.
        path: PathBuf,
        /// Why.
        #[source]
        source: BoxError,
    },
    /// The MCP server configuration (`.mcp.json`) cannot be read.
    #[error("MCP configuration {}: {source}", .path.display())]
    McpConfig {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: BoxError,
    },
    /// Permission settings (`.claude/settings.json`, `.claude/settings.local.json`) cannot be
    /// used.
    #[error("permission settings in {}: {source}", .path.display())]
    Permissions {
        /// The directory of the settings files.
        path: PathBuf,
        /// Why (names the file).
        #[source]
        source: BoxError,
    },
    /// A model cannot be built from its spec.
    #[error("model `{spec}`: {source}")]
    Model {
        /// The spec (credentials in URLs redacted).
        spec: String,
        /// Why.
        #[source]
        source: ModelError,
    },
    /// No model is configured and none could be found.
    #[error("{0}")]
    NoModel(String),
    /// A feature this configuration needs is not compiled in.
    #[error("{what} needs the `{feature}` feature of the `subagents` crate")]
    MissingFeature {
        /// What was asked for.
        what: String,
        /// The cargo feature to enable.
        feature: &'static str,
    },
    /// Registering the agents failed (unresolvable references, duplicate names, limits).
    #[error(transparent)]
    Build(#[from] task_tool::BuildError),
    /// The durable store could not be opened or migrated.
    #[error("store {url}: {source}")]
    Store {
        /// The store URL, password removed.
        url: String,
        /// What went wrong.
        #[source]
        source: BoxError,
    },
    /// The OTLP trace export could not be set up (feature `otel`).
    #[error("OTLP export to {endpoint}: {source}")]
    Telemetry {
        /// The endpoint, password removed.
        endpoint: String,
        /// What went wrong.
        #[source]
        source: BoxError,
    },
    /// The A2A server could not be assembled.
    #[error("A2A server: {0}")]
    Server(#[source] BoxError),
    /// An MCP agent spec (`--mcp`, [`mcp_agent`](crate::SubagentsBuilder::mcp_agent)) is
    /// malformed (an unknown `#` option, say).
    #[error("MCP agent `{spec}`: {source}")]
    McpAgent {
        /// The spec as written.
        spec: String,
        /// What is wrong.
        #[source]
        source: BoxError,
    },
}
