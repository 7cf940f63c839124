//! MCP server tools as SPI [`Tool`]s, named `mcp__<server>__<tool>`.

use std::sync::Arc;
use std::time::Duration;

use subagent_spi::{
    BoxError, ProgressKind, TaskContext, Tool, ToolError, ToolOutput, ToolSource, async_trait,
};

use crate::client::{CallEnd, CallEvent, McpPool};
use crate::content::{progress_line, result_text, tool_description};
use crate::input::Asker;
use crate::{McpEndpoint, McpError, McpServerConfig, McpServerEntry};

/// The SPI name of MCP tool `tool` of server `server`: `mcp__<server>__<tool>`, with characters
/// other than ASCII letters, digits, `_` and `-` replaced by `_`.
pub fn mcp_tool_name(server: &str, tool: &str) -> String {
    let clean = |s: &str| -> String {
        s.chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .collect()
    };
    format!("mcp__{}__{}", clean(server), clean(tool))
}

/// One tool of an MCP server, callable by an agent. Calls go through the shared pool, so the
/// server is started once and restarted if it exits.
#[derive(Debug, Clone)]
pub struct McpTool {
    name: String,
    server: String,
    tool: String,
    description: String,
    input_schema: serde_json::Value,
    endpoint: McpEndpoint,
    request_timeout: Duration,
    pool: McpPool,
}

impl McpTool {
    /// The configured server name.
    pub fn server(&self) -> &str {
        &self.server
    }

    /// The tool's own name on the server.
    pub fn mcp_name(&self) -> &str {
        &self.tool
    }

    /// How long the server may take to answer one call (its `timeout_secs`, else the pool's).
    pub fn request_timeout(&self) -> Duration {
        self.request_timeout
    }
}

#[async_trait]
impl Tool for McpTool {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> String {
        self.description.clone()
    }

    fn input_schema(&self) -> serde_json::Value {
        self.input_schema.clone()
    }

    // `effect` keeps the default, `ToolEffect::Execute`: a server's tool may do anything.

    async fn call(
        &self,
        input: serde_json::Value,
        ctx: &TaskContext,
    ) -> Result<ToolOutput, ToolError> {
        let args = match input {
            serde_json::Value::Object(m) => m,
            serde_json::Value::Null => serde_json::Map::new(),
            other => {
                return Err(ToolError::invalid(
                    &self.name,
                    format!("expected a JSON object, got `{other}`"),
                ));
            }
        };
        let failed = |e: McpError| ToolError::failed(&self.name, e.to_string());
        let conn = self.pool.connection(&self.endpoint).await.map_err(failed)?;
        let asker = Arc::new(Asker::new(ctx, &self.name, conn.label()));
        let end = conn
            .call_tool(
                &self.tool,
                args,
                ctx.cancel(),
                ctx.remaining(),
                self.request_timeout,
                asker,
                None,
                |event| match event {
                    CallEvent::Progress(p) => ctx.emit(ProgressKind::Status {
                        message: progress_line(&p),
                    }),
                    CallEvent::Status(message) => ctx.emit(ProgressKind::Status { message }),
                    CallEvent::Task(_) => {}
                },
            )
            .await
            .map_err(failed)?;
        match end {
            CallEnd::Done(result) => Ok(if result.is_error == Some(true) {
                ToolOutput::error(result_text(&result))
            } else {
                ToolOutput::text(result_text(&result))
            }),
            CallEnd::Cancelled => Err(ToolError::Cancelled {
                tool: self.name.clone(),
            }),
            CallEnd::TimedOut(after) => Err(ToolError::TimedOut {
                tool: self.name.clone(),
                after,
            }),
        }
    }
}

/// The tools of one server; `request_timeout` is its configured limit (else the pool's).
async fn tools_of(
    server: &str,
    endpoint: &McpEndpoint,
    request_timeout: Option<Duration>,
    pool: &McpPool,
) -> Result<Vec<Arc<dyn Tool>>, McpError> {
    let request_timeout = request_timeout.unwrap_or(pool.request_timeout());
    let conn = pool.connection(endpoint).await?;
    let listed = conn.list_tools(request_timeout).await?;
    Ok(listed
        .into_iter()
        .map(|t| {
            let description = tool_description(&t, server);
            Arc::new(McpTool {
                name: mcp_tool_name(server, &t.name),
                server: server.to_string(),
                tool: t.name.to_string(),
                description,
                input_schema: serde_json::Value::Object((*t.input_schema).clone()),
                endpoint: endpoint.clone(),
                request_timeout,
                pool: pool.clone(),
            }) as Arc<dyn Tool>
        })
        .collect())
}

/// Connects to server `server_name` of `config` and returns one [`Tool`] per server tool,
/// named `mcp__<server>__<tool>`, with the server's descriptions and input schemas.
///
/// The tools share a private connection: the server runs while any of them is alive. Use
/// [`McpToolProvider`] to share connections across agents.
pub async fn mcp_tools(
    server_name: &str,
    config: &McpServerConfig,
) -> Result<Vec<Arc<dyn Tool>>, McpError> {
    let endpoint = config
        .get(server_name)
        .ok_or_else(|| McpError::UnknownServer {
            name: server_name.to_string(),
            available: config.names(),
        })?;
    tools_of(
        server_name,
        endpoint,
        config.request_timeout(server_name),
        &McpPool::new(),
    )
    .await
}

/// Gives agents the tools of their MCP servers: holds the configured servers (e.g. from
/// `.mcp.json`) and a connection pool, so each server starts once however many agents use it.
///
/// Cheap to clone and `Send + Sync`; keep one per host in an `Arc` or by value.
#[derive(Debug, Clone, Default)]
pub struct McpToolProvider {
    config: Arc<McpServerConfig>,
    pool: McpPool,
}

impl McpToolProvider {
    /// A provider for `config` with its own pool.
    pub fn new(config: McpServerConfig) -> Self {
        Self::with_pool(config, McpPool::new())
    }

    /// A provider for `config` sharing `pool` (e.g. with the `MCP` kind).
    pub fn with_pool(config: McpServerConfig, pool: McpPool) -> Self {
        Self {
            config: Arc::new(config),
            pool,
        }
    }

    /// The configured servers.
    pub fn config(&self) -> &McpServerConfig {
        &self.config
    }

    /// The connection pool.
    pub fn pool(&self) -> &McpPool {
        &self.pool
    }

    /// The tools of one configured server.
    pub async fn tools_for_server(&self, name: &str) -> Result<Vec<Arc<dyn Tool>>, McpError> {
        let endpoint = self
            .config
            .get(name)
            .ok_or_else(|| McpError::UnknownServer {
                name: name.to_string(),
                available: self.config.names(),
            })?;
        tools_of(
            name,
            endpoint,
            self.config.request_timeout(name),
            &self.pool,
        )
        .await
    }

    /// The tools for an agent's `mcpServers` frontmatter value, as written (names of
    /// configured servers and/or inline definitions; see [`McpServerEntry::parse_list`]).
    /// `origin` (the agent or its file) is named in parse errors.
    pub async fn tools_for_value(
        &self,
        origin: &str,
        mcp_servers: &serde_json::Value,
    ) -> Result<Vec<Arc<dyn Tool>>, McpError> {
        let entries = McpServerEntry::parse_list(mcp_servers, origin)?;
        self.tools_for(&entries).await
    }

    /// The tools of every server in `entries` (names of configured servers and inline
    /// definitions, as parsed by [`McpServerEntry::parse_list`]), connecting concurrently.
    /// A name listed twice counts once (the first entry wins). Fails on the first unknown
    /// name or unreachable server.
    pub async fn tools_for(
        &self,
        entries: &[McpServerEntry],
    ) -> Result<Vec<Arc<dyn Tool>>, McpError> {
        let mut targets = Vec::with_capacity(entries.len());
        let mut seen = std::collections::HashSet::new();
        for entry in entries {
            // A server listed twice (by name and inline, say) contributes its tools once.
            if !seen.insert(entry.name()) {
                continue;
            }
            match entry {
                McpServerEntry::Named(name) => {
                    let endpoint =
                        self.config
                            .get(name)
                            .ok_or_else(|| McpError::UnknownServer {
                                name: name.clone(),
                                available: self.config.names(),
                            })?;
                    targets.push((name.as_str(), endpoint, self.config.request_timeout(name)));
                }
                McpServerEntry::Inline {
                    name,
                    endpoint,
                    request_timeout,
                } => targets.push((name.as_str(), endpoint, *request_timeout)),
            }
        }
        let lists = futures::future::try_join_all(
            targets
                .iter()
                .map(|(name, endpoint, timeout)| tools_of(name, endpoint, *timeout, &self.pool)),
        )
        .await?;
        Ok(lists.into_iter().flatten().collect())
    }
}

/// The tool-source contract of the SPI: Markdown agents' `mcpServers` values become
/// `mcp__<server>__<tool>` tools (the host wires this provider into the `CLAUDE` kind; neither
/// crate depends on the other).
#[async_trait]
impl ToolSource for McpToolProvider {
    async fn tools_for(
        &self,
        agent: &str,
        mcp_servers: &serde_json::Value,
    ) -> Result<Vec<Arc<dyn Tool>>, BoxError> {
        Ok(self
            .tools_for_value(&format!("agent `{agent}`"), mcp_servers)
            .await?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_prefixed_and_cleaned() {
        assert_eq!(
            mcp_tool_name("github", "create_issue"),
            "mcp__github__create_issue"
        );
        assert_eq!(mcp_tool_name("my server", "a.b/c"), "mcp__my_server__a_b_c");
    }
}
