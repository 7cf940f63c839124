//! # subagent-mcp
//!
//! The Model Context Protocol both ways, built on [rmcp](https://docs.rs/rmcp) (the official
//! Rust MCP SDK), kept behind this crate so the SPI never sees it:
//!
//! 1. **The `MCP` subagent kind** ([`mcp_subagent_type`]): an agent is one tool of an MCP
//!    server. A reference's URI is `stdio:COMMAND ARG...` (a child process; words split like a
//!    shell, quotes allowed) or an `http(s)://` streamable-HTTP endpoint; [`agent_reference`]
//!    reads the command line's form `URI#tool=TOOL&argument=FIELD`, and [`expand_reference`]
//!    gives one agent per tool of a server when none is named. Metadata: `tool` (which tool is
//!    the agent; default: the tool named like metadata `name`, else the server's only tool),
//!    `name`, `argument` (the argument receiving the prompt; default `prompt`, else the tool's
//!    only string argument), `timeout_secs`, `env.NAME` (stdio), `header.NAME` and
//!    `bearer_env` (HTTP). The executor calls the tool and returns its text; MCP progress
//!    becomes [`ProgressKind::Status`](subagent_spi::ProgressKind::Status) events; cancelling
//!    the context sends `notifications/cancelled`.
//!
//!    The client speaks the 2026-07-28 revision (`server/discover`, no handshake, the protocol
//!    version and client info in each request's `_meta`) and falls back to the 2025-11-25
//!    `initialize` handshake with servers that do not know `server/discover`. A server's
//!    questions — SEP-2322 `input_required` results, `input_required` tasks, a 2025-11-25
//!    server's `elicitation/create` — become approval requests up the delegation tree (at most
//!    8 rounds of at most 8 questions per call). A `tools/call` answered with a task handle
//!    (the `io.modelcontextprotocol/tasks` extension, SEP-2663) is followed with
//!    `notifications/tasks` and `tasks/get` (at the server's poll interval, kept within 100 ms
//!    and 10 s) until it ends, cancelled with `tasks/cancel` when the run is cancelled or
//!    times out, and its id announced as the run's session (`mcp-task:ID`): resuming that
//!    session follows the task instead of calling the tool again.
//! 2. **MCP tools for agents** ([`McpServerConfig`], [`mcp_tools`], [`McpToolProvider`]): the
//!    servers of a Claude Code `.mcp.json` (or an agent's inline `mcpServers`) become SPI
//!    [`Tool`](subagent_spi::Tool)s named `mcp__<server>__<tool>`.
//! 3. **Serving SPI tools over MCP** ([`McpToolServer`]): any tools — typically `Task`,
//!    `TaskOutput` and `TaskStop` — served over stdio or streamable HTTP so any MCP client can
//!    delegate to subagents. Both eras of MCP on one endpoint: clients of the 2026-07-28
//!    revision (stateless requests, `server/discover`) are asked for approvals by
//!    `input_required` results, older ones by elicitation; with a [`McpTaskBackend`] the
//!    server declares the tasks extension (`io.modelcontextprotocol/tasks`) and runs task
//!    calls as tasks the client follows with `tasks/get`, `tasks/update` and `tasks/cancel`.
//!
//! With the `otel` feature (the OpenTelemetry API and `tracing-opentelemetry`, never the SDK),
//! `tools/call` requests carry the current `tracing` span's W3C trace context in `_meta` as
//! SEP-414 defines it (`traceparent`, `tracestate`, `baggage`), and the server runs each call
//! in a `tools/call {tool}`
//! server span continuing it, through the global propagator the host installs (as
//! `subagent-a2a` does with headers).
//!
//! Connections live in an [`McpPool`] keyed by [`McpEndpoint`]: a stdio server starts once per
//! distinct command line and environment, is reused by every resolve and call, and is killed
//! when the pool and the last tool using it are dropped. A server that exits fails the calls
//! waiting on it at once ([`McpError::Closed`]) and is started again on the next call. Every
//! request is bounded: a server that does not answer within its request timeout
//! ([`DEFAULT_REQUEST_TIMEOUT`], or `timeout_secs` in its configuration or reference) gets
//! `notifications/cancelled` and the call fails with [`McpError::RequestTimeout`].
//!
//! ```no_run
//! use subagent_spi::SubagentReference;
//! // Register the kind with the `Task` tool, then point references at MCP servers:
//! let kind = subagent_mcp::mcp_subagent_type();
//! let reference = SubagentReference::new("stdio:npx -y my-mcp-agent", subagent_mcp::KIND)
//!     .with_metadata("tool", "ask_expert")
//!     .with_metadata("timeout_secs", "120");
//! # let _ = (kind, reference);
//! ```

#![cfg_attr(docsrs, feature(doc_cfg))]

mod approval_form;
mod caller;
mod client;
mod config;
mod content;
mod elicit;
mod endpoint;
mod error;
mod input;
mod kind;
mod results;
mod round_trip;
mod server;
mod shell;
mod task_notify;
mod tasks;
mod tools;
mod trace_context;

pub use caller::McpCaller;
pub use client::{DEFAULT_CONNECT_TIMEOUT, DEFAULT_REQUEST_TIMEOUT, LaunchCheck, McpPool};
pub use config::{McpServerConfig, McpServerEntry, parse_server};
pub use elicit::DEFAULT_ELICITATION_TIMEOUT;
pub use endpoint::McpEndpoint;
pub use error::McpError;
pub use kind::{
    DEFAULT_ARGUMENT, KIND, McpExecutor, McpResolver, McpSubagentDefinition, agent_reference,
    expand_reference, mcp_subagent_type, mcp_subagent_type_with_pool, task_of_session,
};
pub use round_trip::DEFAULT_MAX_WAITING_CALLS;
pub use server::{CallerContext, HttpAuth, McpHttpServer, McpToolServer};
pub use tasks::{DEFAULT_MAX_TASKS, DEFAULT_TASK_POLL_INTERVAL, McpTaskBackend, McpTaskState};
pub use tools::{McpTool, McpToolProvider, mcp_tool_name, mcp_tools};
