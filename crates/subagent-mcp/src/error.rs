use std::time::Duration;

/// Everything that can go wrong in this crate: bad configuration, servers that cannot be
/// started or reached, and protocol failures.
///
/// Messages name the server (URI or configured name), the tool, the file, or the limit involved.
/// Header values and bearer tokens never appear in them.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum McpError {
    /// A reference URI or a server entry is malformed.
    #[error("invalid MCP server `{target}`: {message}")]
    InvalidTarget {
        /// The URI or server name.
        target: String,
        /// What is wrong.
        message: String,
    },
    /// An MCP configuration file or value could not be parsed.
    #[error("invalid MCP configuration {origin}: {message}")]
    Config {
        /// Where the configuration came from (a file path with line, or `inline`).
        origin: String,
        /// What is wrong.
        message: String,
    },
    /// Reading a configuration file failed.
    #[error("cannot read MCP configuration `{path}`: {source}")]
    Read {
        /// The file.
        path: String,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// A server name is not in the configuration.
    #[error("unknown MCP server `{name}`; configured servers: {}", list_or_none(.available))]
    UnknownServer {
        /// The name asked for.
        name: String,
        /// The configured names.
        available: Vec<String>,
    },
    /// An environment variable the configuration needs is not set.
    #[error("MCP server `{target}` needs environment variable `{var}`, which is not set")]
    MissingEnv {
        /// The server.
        target: String,
        /// The variable.
        var: String,
    },
    /// The server process could not be started.
    #[error("cannot start MCP server `{command}`: {source}")]
    Spawn {
        /// The command line.
        command: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// Connecting or the MCP handshake failed.
    #[error("cannot connect to MCP server `{target}`: {message}")]
    Connect {
        /// The server.
        target: String,
        /// What failed.
        message: String,
    },
    /// The handshake did not finish in time.
    #[error("MCP server `{target}` did not finish its handshake within {} ms", .after.as_millis())]
    ConnectTimeout {
        /// The server.
        target: String,
        /// The limit.
        after: Duration,
    },
    /// A request to the server failed (transport closed, JSON-RPC error...).
    #[error("MCP server `{target}` failed `{method}`: {message}")]
    Request {
        /// The server.
        target: String,
        /// The MCP method, e.g. `tools/list`.
        method: String,
        /// What the server or transport said.
        message: String,
    },
    /// The server did not answer a request within its limit (`notifications/cancelled` was
    /// sent for a `tools/call`). The connection stays open.
    #[error(
        "MCP server `{target}` did not answer `{method}` within {} ms (its request timeout)",
        .after.as_millis()
    )]
    RequestTimeout {
        /// The server.
        target: String,
        /// The MCP method, e.g. `tools/call`.
        method: String,
        /// The limit.
        after: Duration,
    },
    /// The connection to the server closed before it answered (the server exited or the
    /// session ended). The pool drops the connection: the next call starts the server again
    /// (or opens a new HTTP session).
    #[error(
        "MCP server `{target}` closed the connection during `{method}` (the server exited or ended the session)"
    )]
    Closed {
        /// The server.
        target: String,
        /// The MCP method, e.g. `tools/call`.
        method: String,
    },
    /// The server has no tool with that name.
    #[error("MCP server `{target}` has no tool `{tool}`; its tools: {}", list_or_none(.available))]
    NoSuchTool {
        /// The server.
        target: String,
        /// The tool asked for.
        tool: String,
        /// The tools it has.
        available: Vec<String>,
    },
    /// Which tool is the agent could not be decided.
    #[error(
        "MCP server `{target}` has {} tools ({}); set metadata `tool` (or `name`) to pick one",
        .available.len(), list_or_none(.available)
    )]
    AmbiguousTool {
        /// The server.
        target: String,
        /// The tools it has.
        available: Vec<String>,
    },
    /// Serving over MCP failed (binding a socket, the stdio transport...).
    #[error("serving MCP failed: {0}")]
    Serve(String),
}

pub(crate) fn list_or_none(names: &[String]) -> String {
    if names.is_empty() {
        "(none)".to_string()
    } else {
        names.join(", ")
    }
}
