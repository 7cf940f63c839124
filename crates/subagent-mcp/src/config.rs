//! MCP server configuration in Claude Code's `.mcp.json` shape, and the `mcpServers` entries
//! of agent frontmatter.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use serde_json::Value;

use crate::{McpEndpoint, McpError};

/// A set of named MCP servers, as in Claude Code's `.mcp.json`:
///
/// ```json
/// {"mcpServers": {
///   "files": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "."],
///             "env": {"LOG": "${LOG_LEVEL:-info}"}},
///   "remote": {"type": "http", "url": "https://example.com/mcp",
///              "headers": {"Authorization": "Bearer ${TOKEN}"}}
/// }}
/// ```
///
/// `type` may be `stdio` (the default when `command` is present) or `http` (the default when
/// `url` is present); `sse` is refused. `${VAR}` and `${VAR:-default}` are expanded from the
/// environment in commands, arguments, env values, URLs and header values.
///
/// `timeout_secs` (a positive number) bounds each request to that server (`tools/list`,
/// `tools/call`); without it the pool's limit applies
/// ([`DEFAULT_REQUEST_TIMEOUT`](crate::DEFAULT_REQUEST_TIMEOUT) unless the pool says otherwise).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct McpServerConfig {
    servers: BTreeMap<String, McpEndpoint>,
    request_timeouts: BTreeMap<String, Duration>,
}

impl McpServerConfig {
    /// An empty configuration.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds (or replaces) one server (builder style).
    #[must_use]
    pub fn with_server(mut self, name: impl Into<String>, endpoint: McpEndpoint) -> Self {
        self.insert(name, endpoint);
        self
    }

    /// Adds (or replaces) one server.
    pub fn insert(&mut self, name: impl Into<String>, endpoint: McpEndpoint) {
        self.servers.insert(name.into(), endpoint);
    }

    /// Sets how long server `name` may take to answer one request (builder style; the
    /// `timeout_secs` of a `.mcp.json` entry).
    #[must_use]
    pub fn with_request_timeout(mut self, name: impl Into<String>, timeout: Duration) -> Self {
        self.request_timeouts.insert(name.into(), timeout);
        self
    }

    /// One server by name.
    pub fn get(&self, name: &str) -> Option<&McpEndpoint> {
        self.servers.get(name)
    }

    /// The request limit configured for server `name`, if any.
    pub fn request_timeout(&self, name: &str) -> Option<Duration> {
        self.request_timeouts.get(name).copied()
    }

    /// The configured names, sorted.
    pub fn names(&self) -> Vec<String> {
        self.servers.keys().cloned().collect()
    }

    /// Every server, by name.
    pub fn servers(&self) -> &BTreeMap<String, McpEndpoint> {
        &self.servers
    }

    /// Adds every server of `other`, replacing same-named ones (with their request limits).
    pub fn merge(&mut self, other: McpServerConfig) {
        for name in other.servers.keys() {
            self.request_timeouts.remove(name);
        }
        self.servers.extend(other.servers);
        self.request_timeouts.extend(other.request_timeouts);
    }

    /// Reads a `.mcp.json` file.
    pub async fn from_file(path: impl AsRef<Path>) -> Result<Self, McpError> {
        let path = path.as_ref();
        let text = tokio::fs::read_to_string(path)
            .await
            .map_err(|source| McpError::Read {
                path: path.display().to_string(),
                source,
            })?;
        Self::from_json_str(&text, &path.display().to_string())
    }

    /// Parses `.mcp.json` text; `origin` (e.g. the file path) is named in errors.
    pub fn from_json_str(text: &str, origin: &str) -> Result<Self, McpError> {
        let value: Value = serde_json::from_str(text).map_err(|e| McpError::Config {
            origin: format!("{origin}:{}:{}", e.line(), e.column()),
            message: e.to_string(),
        })?;
        Self::from_value(&value, origin)
    }

    /// Builds the configuration from a JSON value: `{"mcpServers": {...}}` or the bare map
    /// `{"name": {...}}`.
    pub fn from_value(value: &Value, origin: &str) -> Result<Self, McpError> {
        let map = match value.get("mcpServers") {
            Some(inner) => inner,
            None => value,
        };
        let Some(map) = map.as_object() else {
            return Err(config_error(
                origin,
                "expected an object `{\"mcpServers\": {\"name\": {...}}}`".to_string(),
            ));
        };
        let mut config = Self::default();
        for (name, spec) in map {
            config
                .servers
                .insert(name.clone(), parse_server(name, spec, origin)?);
            if let Some(timeout) = parse_timeout(name, spec, origin)? {
                config.request_timeouts.insert(name.clone(), timeout);
            }
        }
        Ok(config)
    }

    /// The servers as inline entries (with their request limits).
    fn into_inline(self) -> impl Iterator<Item = McpServerEntry> {
        let mut timeouts = self.request_timeouts;
        self.servers
            .into_iter()
            .map(move |(name, endpoint)| McpServerEntry::Inline {
                request_timeout: timeouts.remove(&name),
                name,
                endpoint,
            })
    }
}

/// The `timeout_secs` of one server object: absent, or a positive number of seconds.
fn parse_timeout(name: &str, spec: &Value, origin: &str) -> Result<Option<Duration>, McpError> {
    match spec.get("timeout_secs") {
        None | Some(Value::Null) => Ok(None),
        Some(v) => match v.as_f64() {
            Some(secs) if secs.is_finite() && secs > 0.0 => Duration::try_from_secs_f64(secs)
                .map(Some)
                .map_err(|_| timeout_error(name, v, origin)),
            _ => Err(timeout_error(name, v, origin)),
        },
    }
}

fn timeout_error(name: &str, value: &Value, origin: &str) -> McpError {
    config_error(
        origin,
        format!(
            "mcpServers.{name}: `timeout_secs` must be a positive number of seconds, got `{value}`"
        ),
    )
}

/// A configuration error naming where it is (`origin`).
fn config_error(origin: &str, message: String) -> McpError {
    McpError::Config {
        origin: origin.to_string(),
        message,
    }
}

/// One entry of an agent's `mcpServers` frontmatter: the name of a configured server, or an
/// inline server definition.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum McpServerEntry {
    /// A server from the provider's configuration.
    Named(String),
    /// A server defined in the frontmatter itself.
    Inline {
        /// Its name (used in tool names `mcp__<name>__<tool>`).
        name: String,
        /// Where it lives.
        endpoint: McpEndpoint,
        /// Its `timeout_secs`: how long it may take to answer one request.
        request_timeout: Option<Duration>,
    },
}

impl McpServerEntry {
    /// The server name.
    pub fn name(&self) -> &str {
        match self {
            McpServerEntry::Named(n) => n,
            McpServerEntry::Inline { name, .. } => name,
        }
    }

    /// Parses an `mcpServers` frontmatter value: a name, a list of names and/or
    /// `{name: config}` objects, or one `{name: config, ...}` map (optionally wrapped in
    /// `{"mcpServers": ...}`). `origin` (e.g. `agents/x.md`) is named in errors.
    pub fn parse_list(value: &Value, origin: &str) -> Result<Vec<Self>, McpError> {
        // One name or one object reads as a list of one.
        let items = match value {
            Value::Null => &[][..],
            Value::Array(items) => items.as_slice(),
            Value::String(_) | Value::Object(_) => std::slice::from_ref(value),
            other => {
                return Err(config_error(
                    origin,
                    format!(
                        "mcpServers: expected a list or an object, got {}",
                        type_name(other)
                    ),
                ));
            }
        };
        let mut out = Vec::new();
        for (i, item) in items.iter().enumerate() {
            match item {
                Value::String(s) => out.extend(names_from_str(s)),
                Value::Object(_) => {
                    out.extend(McpServerConfig::from_value(item, origin)?.into_inline());
                }
                other => {
                    return Err(config_error(
                        origin,
                        format!(
                            "mcpServers[{i}]: expected a server name or an object, got {}",
                            type_name(other)
                        ),
                    ));
                }
            }
        }
        Ok(out)
    }
}

fn names_from_str(s: &str) -> impl Iterator<Item = McpServerEntry> + '_ {
    s.split(',')
        .map(str::trim)
        .filter(|n| !n.is_empty())
        .map(|n| McpServerEntry::Named(n.to_string()))
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// Parses one server object of `.mcp.json`.
pub fn parse_server(name: &str, spec: &Value, origin: &str) -> Result<McpEndpoint, McpError> {
    let err = |message: String| config_error(origin, format!("mcpServers.{name}: {message}"));
    let Some(obj) = spec.as_object() else {
        return Err(err(format!("expected an object, got {}", type_name(spec))));
    };
    let string = |key: &str| -> Result<Option<String>, McpError> {
        match obj.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(expand(s, name)?)),
            Some(other) => Err(err(format!(
                "`{key}` must be a string, got {}",
                type_name(other)
            ))),
        }
    };
    let string_map = |key: &str| -> Result<BTreeMap<String, String>, McpError> {
        match obj.get(key) {
            None | Some(Value::Null) => Ok(BTreeMap::new()),
            Some(Value::Object(m)) => m
                .iter()
                .map(|(k, v)| match v {
                    Value::String(s) => Ok((k.clone(), expand(s, name)?)),
                    other => Err(err(format!(
                        "`{key}.{k}` must be a string, got {}",
                        type_name(other)
                    ))),
                })
                .collect(),
            Some(other) => Err(err(format!(
                "`{key}` must be an object, got {}",
                type_name(other)
            ))),
        }
    };
    let kind = string("type")?;
    let kind = match kind.as_deref() {
        Some(k) => k.to_ascii_lowercase(),
        None if obj.contains_key("command") => "stdio".to_string(),
        None if obj.contains_key("url") => "http".to_string(),
        None => return Err(err("needs `command` (stdio) or `url` (http)".to_string())),
    };
    match kind.as_str() {
        "stdio" => {
            let command = string("command")?
                .filter(|c| !c.trim().is_empty())
                .ok_or_else(|| err("a stdio server needs a non-empty `command`".to_string()))?;
            let args = match obj.get("args") {
                None | Some(Value::Null) => Vec::new(),
                Some(Value::Array(items)) => items
                    .iter()
                    .enumerate()
                    .map(|(i, a)| match a {
                        Value::String(s) => expand(s, name),
                        Value::Number(n) => Ok(n.to_string()),
                        other => Err(err(format!(
                            "`args[{i}]` must be a string, got {}",
                            type_name(other)
                        ))),
                    })
                    .collect::<Result<_, _>>()?,
                Some(other) => {
                    return Err(err(format!(
                        "`args` must be a list, got {}",
                        type_name(other)
                    )));
                }
            };
            Ok(McpEndpoint::Stdio {
                command,
                args,
                env: string_map("env")?,
            })
        }
        "http" | "streamable-http" | "streamable_http" | "streamablehttp" => {
            let url =
                string("url")?.ok_or_else(|| err("an http server needs a `url`".to_string()))?;
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                return Err(err(format!(
                    "`url` must start with http:// or https://, got `{url}`"
                )));
            }
            Ok(McpEndpoint::Http {
                url,
                headers: string_map("headers")?,
                bearer_env: None,
            })
        }
        "sse" => Err(err(
            "the legacy SSE transport is not supported; use `\"type\": \"http\"` (streamable HTTP)"
                .to_string(),
        )),
        other => Err(err(format!(
            "unknown `type` `{other}`; expected `stdio` or `http`"
        ))),
    }
}

/// Expands `${VAR}` and `${VAR:-default}` from the environment.
fn expand(s: &str, server: &str) -> Result<String, McpError> {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            out.push_str(&rest[start..]);
            return Ok(out);
        };
        let inner = &after[..end];
        let (var, default) = match inner.split_once(":-") {
            Some((v, d)) => (v, Some(d)),
            None => (inner, None),
        };
        match std::env::var(var) {
            Ok(v) => out.push_str(&v),
            Err(_) => match default {
                Some(d) => out.push_str(d),
                None => {
                    return Err(McpError::MissingEnv {
                        target: server.to_string(),
                        var: var.to_string(),
                    });
                }
            },
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parses_claude_code_shape() {
        let cfg = McpServerConfig::from_json_str(
            r#"{"mcpServers": {
                "files": {"command": "npx", "args": ["-y", "srv", 3], "env": {"A": "${SUBAGENT_MCP_UNSET_X:-dflt}"}},
                "remote": {"type": "http", "url": "http://127.0.0.1:1/mcp", "headers": {"X-K": "v"}}
            }}"#,
            ".mcp.json",
        )
        .unwrap();
        assert_eq!(cfg.names(), vec!["files", "remote"]);
        let McpEndpoint::Stdio { command, args, env } = cfg.get("files").unwrap() else {
            panic!()
        };
        assert_eq!(command, "npx");
        assert_eq!(args, &["-y", "srv", "3"]);
        assert_eq!(env["A"], "dflt");
        let McpEndpoint::Http { url, headers, .. } = cfg.get("remote").unwrap() else {
            panic!()
        };
        assert_eq!(url, "http://127.0.0.1:1/mcp");
        assert_eq!(headers["X-K"], "v");
    }

    #[test]
    fn errors_name_the_origin_and_server() {
        let e = McpServerConfig::from_json_str("{\n  \"mcpServers\": [}", "a/.mcp.json")
            .unwrap_err()
            .to_string();
        assert!(e.contains("a/.mcp.json:2:"), "{e}");
        for (spec, needle) in [
            (json!({"type": "sse", "url": "http://x"}), "SSE"),
            (json!({"args": []}), "needs `command`"),
            (json!({"command": 1}), "`command` must be a string"),
            (json!({"command": "x", "env": {"A": 1}}), "`env.A`"),
            (json!({"type": "http", "url": "ftp://x"}), "http://"),
            (
                json!({"command": "${SUBAGENT_MCP_UNSET_Y}"}),
                "SUBAGENT_MCP_UNSET_Y",
            ),
        ] {
            let e = McpServerConfig::from_value(&json!({"mcpServers": {"srv": spec}}), "f.json")
                .unwrap_err()
                .to_string();
            assert!(e.contains(needle), "{e}");
            assert!(e.contains("srv"), "{e}");
        }
    }

    #[test]
    fn parses_frontmatter_entries() {
        let v = json!(["github", {"local": {"command": "srv"}}, "a, b"]);
        let entries = McpServerEntry::parse_list(&v, "agents/x.md").unwrap();
        let names: Vec<&str> = entries.iter().map(|e| e.name()).collect();
        assert_eq!(names, ["github", "local", "a", "b"]);
        assert!(matches!(entries[1], McpServerEntry::Inline { .. }));
        let map = json!({"one": {"type": "http", "url": "http://h/mcp"}});
        assert_eq!(McpServerEntry::parse_list(&map, "x").unwrap().len(), 1);
        let e = McpServerEntry::parse_list(&json!([1]), "agents/x.md")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("agents/x.md") && e.contains("mcpServers[0]"),
            "{e}"
        );
    }
}
