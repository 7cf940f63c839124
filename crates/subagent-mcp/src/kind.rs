//! The `MCP` subagent kind: an agent is one tool of an MCP server.

use std::sync::Arc;
use std::time::{Duration, Instant};

use rmcp::model::JsonObject;
use subagent_spi::{
    ProgressKind, SubagentDefinition, SubagentError, SubagentExecutor, SubagentReference,
    SubagentResolver, SubagentType, TaskCall, TaskContext, TaskOutcome, TaskStatus, Usage,
    async_trait,
};

use crate::client::{CallEnd, McpPool};
use crate::content::{progress_line, result_text, tool_description};
use crate::{McpEndpoint, McpError};

/// The kind name of MCP agents, as written in references.
pub const KIND: subagent_spi::Kind = subagent_spi::Kind::from_static("MCP");

/// The default name of the tool argument that receives the prompt.
pub const DEFAULT_ARGUMENT: &str = "prompt";

/// A resolved MCP agent: which server, which tool, which argument takes the prompt.
#[derive(Debug, Clone)]
pub struct McpSubagentDefinition {
    name: String,
    description: String,
    reference: SubagentReference,
    endpoint: McpEndpoint,
    tool: String,
    argument: String,
    timeout: Option<Duration>,
    input_schema: serde_json::Value,
}

impl McpSubagentDefinition {
    /// The server.
    pub fn endpoint(&self) -> &McpEndpoint {
        &self.endpoint
    }

    /// The MCP tool that is this agent.
    pub fn tool(&self) -> &str {
        &self.tool
    }

    /// The tool argument that receives the prompt.
    pub fn argument(&self) -> &str {
        &self.argument
    }

    /// The per-call timeout from metadata `timeout_secs` (a call that passes it ends with
    /// [`SubagentError::TimedOut`]). It replaces the pool's request timeout
    /// ([`McpPool::request_timeout`]) for this agent's requests.
    pub fn timeout(&self) -> Option<Duration> {
        self.timeout
    }

    /// The tool's input schema, as the server reported it.
    pub fn input_schema(&self) -> &serde_json::Value {
        &self.input_schema
    }
}

subagent_spi::impl_subagent_definition!(McpSubagentDefinition);

/// Resolves `MCP` references: connects (through the shared pool), lists the server's tools and
/// builds the definition from the chosen tool's name and description.
///
/// The tool is metadata `tool`; else the tool named like metadata `name`; else the server's
/// only tool. The agent's name is metadata `name`, else the tool's name.
#[derive(Debug, Clone)]
pub struct McpResolver {
    pool: McpPool,
}

impl McpResolver {
    /// A resolver using `pool` for its connections.
    pub fn new(pool: McpPool) -> Self {
        Self { pool }
    }

    async fn resolve_inner(
        &self,
        reference: &SubagentReference,
    ) -> Result<McpSubagentDefinition, McpError> {
        let endpoint = McpEndpoint::from_reference(reference)?;
        let target = endpoint.label();
        let invalid = |message: String| McpError::InvalidTarget {
            target: reference.uri.clone(),
            message,
        };
        let timeout = match reference.metadata("timeout_secs").map(str::trim) {
            None | Some("") => None,
            Some(s) => match s.parse::<f64>() {
                Ok(v) if v.is_finite() && v > 0.0 => Some(Duration::from_secs_f64(v)),
                _ => {
                    return Err(invalid(format!(
                        "metadata `timeout_secs` must be a positive number of seconds, got `{s}`"
                    )));
                }
            },
        };
        let argument = reference
            .metadata("argument")
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .unwrap_or(DEFAULT_ARGUMENT)
            .to_string();
        let wanted_tool = reference
            .metadata("tool")
            .map(str::trim)
            .filter(|s| !s.is_empty());
        let wanted_name = reference
            .metadata("name")
            .map(str::trim)
            .filter(|s| !s.is_empty());

        let conn = self.pool.connection(&endpoint).await?;
        let tools = conn
            .list_tools(timeout.unwrap_or(self.pool.request_timeout()))
            .await?;
        let names: Vec<String> = tools.iter().map(|t| t.name.to_string()).collect();
        let by_name = |n: &str| tools.iter().find(|t| t.name == n);
        let tool = if let Some(t) = wanted_tool {
            by_name(t).ok_or_else(|| McpError::NoSuchTool {
                target: target.clone(),
                tool: t.to_string(),
                available: names.clone(),
            })?
        } else if let Some(found) = wanted_name.and_then(|n| {
            by_name(n).or_else(|| {
                let norm = |s: &str| s.to_ascii_lowercase().replace('-', "_");
                tools.iter().find(|t| norm(&t.name) == norm(n))
            })
        }) {
            found
        } else if tools.len() == 1 {
            &tools[0]
        } else if let Some(n) = wanted_name {
            return Err(McpError::NoSuchTool {
                target,
                tool: n.to_string(),
                available: names,
            });
        } else {
            return Err(McpError::AmbiguousTool {
                target,
                available: names,
            });
        };

        let input_schema = serde_json::Value::Object((*tool.input_schema).clone());
        if let Some(props) = input_schema.get("properties").and_then(|p| p.as_object())
            && !props.is_empty()
            && !props.contains_key(&argument)
        {
            let mut have: Vec<&String> = props.keys().collect();
            have.sort();
            return Err(invalid(format!(
                "tool `{}` has no argument `{argument}` (its arguments: {}); set metadata `argument`",
                tool.name,
                have.iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
        let description = tool_description(tool, &target);
        Ok(McpSubagentDefinition {
            name: wanted_name.map_or_else(|| tool.name.to_string(), str::to_string),
            description,
            reference: reference.clone(),
            endpoint,
            tool: tool.name.to_string(),
            argument,
            timeout,
            input_schema,
        })
    }
}

#[async_trait]
impl SubagentResolver for McpResolver {
    async fn resolve(
        &self,
        reference: &SubagentReference,
    ) -> Result<Arc<dyn SubagentDefinition>, SubagentError> {
        match self.resolve_inner(reference).await {
            Ok(def) => Ok(Arc::new(def)),
            Err(e) => Err(SubagentError::resolution(reference.uri.clone(), e)),
        }
    }
}

/// Runs tasks against MCP agents: calls the tool with `{argument: prompt}` and returns its
/// text. Progress notifications become [`ProgressKind::Status`] events; cancelling the
/// context sends `notifications/cancelled` and returns a cancelled outcome at once.
#[derive(Debug, Clone)]
pub struct McpExecutor {
    pool: McpPool,
}

impl McpExecutor {
    /// An executor using `pool` for its connections.
    pub fn new(pool: McpPool) -> Self {
        Self { pool }
    }
}

#[async_trait]
impl SubagentExecutor for McpExecutor {
    async fn execute(
        &self,
        call: TaskCall,
        definition: Arc<dyn SubagentDefinition>,
        ctx: TaskContext,
    ) -> Result<TaskOutcome, SubagentError> {
        let Some(def) = definition.downcast_ref::<McpSubagentDefinition>() else {
            return Err(SubagentError::protocol(
                definition.name(),
                "the MCP executor got a definition of another kind",
            ));
        };
        let agent = def.name.clone();
        if let Some(session) = call.resume {
            return Err(SubagentError::Resume {
                session,
                reason: format!("MCP agent `{agent}` is a stateless tool call and cannot resume"),
            });
        }
        let started = Instant::now();
        let exec_err = |e: McpError| SubagentError::Execution {
            agent: agent.clone(),
            message: e.to_string(),
            source: Some(Box::new(e)),
        };
        let conn = self
            .pool
            .connection(&def.endpoint)
            .await
            .map_err(exec_err)?;
        let mut args = JsonObject::new();
        args.insert(def.argument.clone(), serde_json::Value::String(call.prompt));
        let timeout = match (def.timeout, ctx.remaining()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let limit = def.timeout.unwrap_or(self.pool.request_timeout());
        let end = conn
            .call_tool(&def.tool, args, ctx.cancel(), timeout, limit, |p| {
                ctx.emit(ProgressKind::Status {
                    message: progress_line(&p),
                })
            })
            .await
            .map_err(exec_err)?;
        let usage = Usage::new()
            .with_duration_ms(u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX));
        match end {
            CallEnd::Done(result) => {
                let text = result_text(&result);
                if result.is_error == Some(true) {
                    Err(SubagentError::execution(agent, text))
                } else {
                    let mut out = TaskOutcome::completed(text).with_usage(usage);
                    // Typed result: the tool's `structuredContent`; the Task tool checks it.
                    if call.output_schema.is_some() {
                        out.structured = result.structured_content.clone();
                    }
                    Ok(out)
                }
            }
            CallEnd::Cancelled => Ok(TaskOutcome::with_status(
                String::new(),
                TaskStatus::Cancelled,
            )
            .with_usage(usage)),
            CallEnd::TimedOut(after) => Err(SubagentError::TimedOut { agent, after }),
        }
    }
}

/// The `MCP` kind with its own connection pool, ready to register with the `Task` tool.
pub fn mcp_subagent_type() -> SubagentType {
    mcp_subagent_type_with_pool(McpPool::new())
}

/// The `MCP` kind sharing `pool` (e.g. with [`McpToolProvider`](crate::McpToolProvider)).
pub fn mcp_subagent_type_with_pool(pool: McpPool) -> SubagentType {
    SubagentType::new(
        KIND,
        Arc::new(McpResolver::new(pool.clone())),
        Arc::new(McpExecutor::new(pool)),
    )
}
