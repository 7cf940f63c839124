//! The `MCP` subagent kind: an agent is one tool of an MCP server.

use std::sync::Arc;
use std::time::{Duration, Instant};

use rmcp::model::JsonObject;
use subagent_spi::{
    ProgressKind, SubagentDefinition, SubagentError, SubagentKind, SubagentReference,
    SubagentResolver, SubagentType, TaskCall, TaskContext, TaskOutcome, TaskStatus, Usage,
    async_trait,
};

use crate::client::{CallEnd, CallEvent, McpPool, TASK_SESSION_PREFIX};
use crate::content::{progress_line, result_text, tool_description};
use crate::input::Asker;
use crate::{McpEndpoint, McpError};

/// The kind name of MCP agents, as written in references.
pub const KIND: subagent_spi::Kind = subagent_spi::Kind::from_static("MCP");

/// The default name of the tool argument that receives the prompt (when the tool has it; else
/// its only string argument, see [`McpResolver`]).
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
/// only tool. The agent's name is metadata `name`, else the tool's name. The prompt goes to
/// metadata `argument`; else `prompt` when the tool has it; else the tool's only string
/// argument (or only required string argument); else resolving fails naming the arguments.
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
        let wanted_argument = reference
            .metadata("argument")
            .map(str::trim)
            .filter(|s| !s.is_empty());
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
        let argument = prompt_argument(&input_schema, wanted_argument)
            .map_err(|m| invalid(format!("tool `{}` {m}", tool.name)))?;
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

/// The argument of a tool's input schema that receives the prompt: `wanted` (metadata
/// `argument`) when the schema has it; else `prompt` when it has it; else its only string
/// field; else its only required string field. A schema without properties takes `prompt`
/// (or `wanted`). The error says what the tool has.
pub(crate) fn prompt_argument(
    schema: &serde_json::Value,
    wanted: Option<&str>,
) -> Result<String, String> {
    let props = match schema.get("properties").and_then(|p| p.as_object()) {
        Some(p) if !p.is_empty() => p,
        _ => return Ok(wanted.unwrap_or(DEFAULT_ARGUMENT).to_string()),
    };
    let mut have: Vec<&str> = props.keys().map(String::as_str).collect();
    have.sort_unstable();
    if let Some(w) = wanted {
        return if props.contains_key(w) {
            Ok(w.to_string())
        } else {
            Err(format!(
                "has no argument `{w}` (its arguments: {}); set metadata `argument`",
                have.join(", ")
            ))
        };
    }
    if props.contains_key(DEFAULT_ARGUMENT) {
        return Ok(DEFAULT_ARGUMENT.to_string());
    }
    let is_string =
        |p: &serde_json::Value| p.get("type").and_then(|t| t.as_str()) == Some("string");
    let strings: Vec<&str> = have
        .iter()
        .copied()
        .filter(|k| props.get(*k).is_some_and(is_string))
        .collect();
    if let [only] = strings.as_slice() {
        return Ok((*only).to_string());
    }
    let required: Vec<&str> = schema
        .get("required")
        .and_then(|r| r.as_array())
        .map(|r| r.iter().filter_map(|v| v.as_str()).collect())
        .unwrap_or_default();
    let required_strings: Vec<&str> = strings
        .iter()
        .copied()
        .filter(|k| required.contains(k))
        .collect();
    if let [only] = required_strings.as_slice() {
        return Ok((*only).to_string());
    }
    Err(format!(
        "has no argument `{DEFAULT_ARGUMENT}` and {} string arguments (its arguments: {}); set \
         metadata `argument` to the one that takes the prompt",
        if strings.is_empty() { "no" } else { "several" },
        have.join(", ")
    ))
}

/// The options an agent spec may carry after `#` (see [`agent_reference`]).
const SPEC_KEYS: [&str; 4] = ["tool", "argument", "name", "timeout_secs"];

/// Parses an MCP agent as written on the command line (`--mcp`) or given to the facade:
/// `stdio:COMMAND ARGS...` or an `http(s)://` URL, optionally followed by
/// `#tool=TOOL&argument=FIELD&name=AGENT&timeout_secs=N` (any of these, in any order), which
/// become the reference's metadata. A `#` fragment without `=` is left in the URI. An
/// unknown option or an empty value is an error naming it.
///
/// ```
/// let r = subagent_mcp::agent_reference("stdio:my-server --flag#tool=ask&argument=question")
///     .unwrap();
/// assert_eq!(r.uri, "stdio:my-server --flag");
/// assert_eq!(r.metadata("tool"), Some("ask"));
/// assert_eq!(r.metadata("argument"), Some("question"));
/// ```
pub fn agent_reference(spec: &str) -> Result<SubagentReference, McpError> {
    let spec = spec.trim();
    let invalid = |message: String| McpError::InvalidTarget {
        target: spec.to_string(),
        message,
    };
    let Some((uri, options)) = spec.rsplit_once('#').filter(|(_, o)| o.contains('=')) else {
        return Ok(SubagentReference::new(spec, KIND));
    };
    let mut reference = SubagentReference::new(uri.trim_end(), KIND);
    for part in options.split('&').filter(|p| !p.is_empty()) {
        let (key, value) = part.split_once('=').unwrap_or((part, ""));
        let (key, value) = (key.trim(), value.trim());
        if !SPEC_KEYS.contains(&key) {
            return Err(invalid(format!(
                "unknown option `{key}` after `#` (known: {})",
                SPEC_KEYS.join(", ")
            )));
        }
        if value.is_empty() {
            return Err(invalid(format!("option `{key}` after `#` has no value")));
        }
        reference = reference.with_metadata(key, value);
    }
    Ok(reference)
}

/// The agents of one MCP reference: the reference itself when it names its tool (metadata
/// `tool` or `name`) or the server has one tool; else one reference per tool of the server
/// whose input schema can take the prompt (see [`McpResolver`]), each with metadata `tool`.
/// Connects through `pool` (the connection stays for the agents' calls). When the server
/// cannot be listed, the reference itself is returned, so resolving it reports why.
pub async fn expand_reference(
    pool: &McpPool,
    reference: &SubagentReference,
) -> Vec<SubagentReference> {
    let named = ["tool", "name"]
        .iter()
        .any(|k| reference.metadata(k).is_some_and(|v| !v.trim().is_empty()));
    if named {
        return vec![reference.clone()];
    }
    let Ok(endpoint) = McpEndpoint::from_reference(reference) else {
        return vec![reference.clone()];
    };
    let listed = match pool.connection(&endpoint).await {
        Ok(conn) => conn.list_tools(pool.request_timeout()).await,
        Err(e) => Err(e),
    };
    let tools = match listed {
        Ok(tools) if tools.len() > 1 => tools,
        _ => return vec![reference.clone()],
    };
    let wanted = reference
        .metadata("argument")
        .map(str::trim)
        .filter(|s| !s.is_empty());
    let agents: Vec<SubagentReference> = tools
        .iter()
        .filter(|t| {
            let schema = serde_json::Value::Object((*t.input_schema).clone());
            let fits = prompt_argument(&schema, wanted).is_ok();
            if !fits {
                tracing::info!(server = %endpoint, tool = %t.name, "MCP tool skipped: no argument for the prompt");
            }
            fits
        })
        .map(|t| reference.clone().with_metadata("tool", t.name.to_string()))
        .collect();
    if agents.is_empty() {
        vec![reference.clone()]
    } else {
        agents
    }
}

/// Runs tasks against MCP agents: calls the tool with `{argument: prompt}` and returns its
/// text. Progress notifications become [`ProgressKind::Status`] events; cancelling the
/// context sends `notifications/cancelled` (and `tasks/cancel` for a call the server runs as
/// a task) and returns a cancelled outcome at once. The server's questions are asked through
/// the context's approver. A call the server runs as a task announces the session
/// `mcp-task:ID` ([`ProgressKind::Session`]); resuming it follows that task.
///
/// It is the whole `MCP` kind ([`SubagentKind`]): it resolves references with an
/// [`McpResolver`] on the same pool.
#[derive(Debug, Clone)]
pub struct McpExecutor {
    pool: McpPool,
    resolver: McpResolver,
}

impl McpExecutor {
    /// An executor using `pool` for its connections.
    pub fn new(pool: McpPool) -> Self {
        Self {
            resolver: McpResolver::new(pool.clone()),
            pool,
        }
    }
}

#[async_trait]
impl SubagentKind for McpExecutor {
    type Agent = McpSubagentDefinition;

    fn kind(&self) -> subagent_spi::Kind {
        KIND
    }

    async fn resolve(
        &self,
        reference: &SubagentReference,
    ) -> Result<McpSubagentDefinition, SubagentError> {
        self.resolver
            .resolve_inner(reference)
            .await
            .map_err(|e| SubagentError::resolution(reference.uri.clone(), e))
    }

    async fn run(
        &self,
        def: &McpSubagentDefinition,
        call: TaskCall,
        ctx: TaskContext,
    ) -> Result<TaskOutcome, SubagentError> {
        let agent = def.name.clone();
        // A call the server ran as a task resumes by following that task.
        let resume_task = match call.resume {
            None => None,
            Some(session) => match task_of_session(&session) {
                Some(id) => Some(id.to_string()),
                None => {
                    return Err(SubagentError::Resume {
                        session,
                        reason: format!(
                            "MCP agent `{agent}` resumes only a call its server runs as a task \
                             (a session `{TASK_SESSION_PREFIX}ID`)"
                        ),
                    });
                }
            },
        };
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
        let asker = Arc::new(Asker::new(&ctx, &agent, conn.label()));
        let mut session: Option<String> = None;
        let end = conn
            .call_tool(
                &def.tool,
                args,
                ctx.cancel(),
                timeout,
                limit,
                asker,
                resume_task.as_deref(),
                |event| match event {
                    CallEvent::Progress(p) => ctx.emit(ProgressKind::Status {
                        message: progress_line(&p),
                    }),
                    CallEvent::Status(message) => ctx.emit(ProgressKind::Status { message }),
                    CallEvent::Task(id) => {
                        let id = format!("{TASK_SESSION_PREFIX}{id}");
                        ctx.emit(ProgressKind::Session {
                            session_id: id.clone(),
                        });
                        session = Some(id);
                    }
                },
            )
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
                    let mut outcome = TaskOutcome::completed(text).with_usage(usage);
                    // Typed result: the tool's `structuredContent`; the Task tool checks it.
                    if call.output_schema.is_some() {
                        outcome.structured = result.structured_content.clone();
                    }
                    Ok(match session {
                        Some(s) => outcome.with_session(s),
                        None => outcome,
                    })
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

/// The server's task id in the session of an MCP agent's call that the server ran as a task
/// (`mcp-task:ID`), or `None` when `session` is not one.
pub fn task_of_session(session: &str) -> Option<&str> {
    session
        .strip_prefix(TASK_SESSION_PREFIX)
        .filter(|id| !id.is_empty())
}

/// The `MCP` kind with its own connection pool, ready to register with the `Task` tool.
pub fn mcp_subagent_type() -> SubagentType {
    mcp_subagent_type_with_pool(McpPool::new())
}

/// The `MCP` kind sharing `pool` (e.g. with [`McpToolProvider`](crate::McpToolProvider)).
pub fn mcp_subagent_type_with_pool(pool: McpPool) -> SubagentType {
    SubagentType::from(McpExecutor::new(pool))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn specs_carry_tool_and_argument_after_a_hash() {
        let r = agent_reference("stdio:srv --x#tool=ask&argument=question&name=asker").unwrap();
        assert_eq!(r.uri, "stdio:srv --x");
        assert_eq!(r.kind, KIND);
        assert_eq!(r.metadata("tool"), Some("ask"));
        assert_eq!(r.metadata("argument"), Some("question"));
        assert_eq!(r.metadata("name"), Some("asker"));
        // No options: the spec as written (a URL fragment without `=` stays).
        let r = agent_reference("https://h/mcp#top").unwrap();
        assert_eq!(r.uri, "https://h/mcp#top");
        assert!(r.metadata.is_empty());
        for (bad, needle) in [
            ("stdio:srv#tol=ask", "unknown option `tol`"),
            ("stdio:srv#tool=", "option `tool` after `#` has no value"),
        ] {
            let err = agent_reference(bad).unwrap_err().to_string();
            assert!(err.contains(needle) && err.contains(bad), "{err}");
        }
    }

    #[test]
    fn the_prompt_goes_to_the_named_argument_prompt_or_the_only_string() {
        let schema = |props: serde_json::Value, required: serde_json::Value| json!({"type": "object", "properties": props, "required": required});
        let s = |v: &str| json!({"type": "string", "description": v});
        assert_eq!(prompt_argument(&json!({}), None).unwrap(), "prompt");
        assert_eq!(
            prompt_argument(
                &schema(json!({"prompt": s("p"), "q": s("q")}), json!([])),
                None
            )
            .unwrap(),
            "prompt"
        );
        assert_eq!(
            prompt_argument(
                &schema(
                    json!({"question": s("q"), "n": {"type": "integer"}}),
                    json!([])
                ),
                None
            )
            .unwrap(),
            "question"
        );
        assert_eq!(
            prompt_argument(
                &schema(json!({"a": s("a"), "b": s("b")}), json!(["b"])),
                None
            )
            .unwrap(),
            "b"
        );
        let err = prompt_argument(
            &schema(json!({"a": s("a"), "b": s("b")}), json!(["a", "b"])),
            None,
        )
        .unwrap_err();
        assert!(
            err.contains("several string arguments") && err.contains("a, b"),
            "{err}"
        );
        let err = prompt_argument(&schema(json!({"a": s("a")}), json!([])), Some("z")).unwrap_err();
        assert!(err.contains("no argument `z`"), "{err}");
    }
}
