use std::collections::BTreeMap;
use std::fmt;

use subagent_spi::SubagentReference;

use crate::McpError;
use crate::shell;

/// Where an MCP server lives and how to reach it: a command started as a child process and
/// spoken to over stdio, or a streamable-HTTP URL.
///
/// Endpoints are the keys of the connection pool: two references with equal endpoints share one
/// server process (or HTTP session). [`Debug`](fmt::Debug) and [`Display`](fmt::Display) never
/// show header values.
#[derive(Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum McpEndpoint {
    /// A command started once and spoken to over its stdin/stdout.
    Stdio {
        /// The program.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Environment variables set for it (on top of the inherited environment).
        env: BTreeMap<String, String>,
    },
    /// A streamable-HTTP MCP endpoint.
    Http {
        /// The endpoint URL.
        url: String,
        /// Extra HTTP headers sent with every request.
        headers: BTreeMap<String, String>,
        /// An environment variable holding a bearer token, read when connecting.
        bearer_env: Option<String>,
    },
}

impl McpEndpoint {
    /// A stdio endpoint.
    pub fn stdio(command: impl Into<String>, args: impl IntoIterator<Item = String>) -> Self {
        Self::Stdio {
            command: command.into(),
            args: args.into_iter().collect(),
            env: BTreeMap::new(),
        }
    }

    /// A streamable-HTTP endpoint.
    pub fn http(url: impl Into<String>) -> Self {
        Self::Http {
            url: url.into(),
            headers: BTreeMap::new(),
            bearer_env: None,
        }
    }

    /// Parses an `MCP` reference: URI `stdio:COMMAND ARG...` (split like a shell, quotes
    /// allowed) or `http(s)://...`, with metadata `env.NAME` (stdio), `header.NAME` and
    /// `bearer_env` (HTTP).
    pub fn from_reference(reference: &SubagentReference) -> Result<Self, McpError> {
        let uri = reference.uri.trim();
        let invalid = |message: String| McpError::InvalidTarget {
            target: reference.uri.clone(),
            message,
        };
        let prefixed = |prefix: &str| -> BTreeMap<String, String> {
            reference
                .metadata
                .iter()
                .filter_map(|(k, v)| {
                    k.strip_prefix(prefix)
                        .filter(|n| !n.is_empty())
                        .map(|n| (n.to_string(), v.clone()))
                })
                .collect()
        };
        if let Some(rest) = uri.strip_prefix("stdio:") {
            let mut words =
                shell::split(rest).map_err(|e| invalid(format!("command line: {e}")))?;
            if words.is_empty() {
                return Err(invalid(
                    "empty command; expected `stdio:COMMAND ARG...`".into(),
                ));
            }
            let command = words.remove(0);
            Ok(Self::Stdio {
                command,
                args: words,
                env: prefixed("env."),
            })
        } else if uri.starts_with("http://") || uri.starts_with("https://") {
            let after_scheme = uri.split_once("://").map_or("", |(_, rest)| rest);
            if after_scheme.is_empty() || after_scheme.starts_with('/') {
                return Err(invalid("URL has no host".into()));
            }
            Ok(Self::Http {
                url: uri.to_string(),
                headers: prefixed("header."),
                bearer_env: reference
                    .metadata("bearer_env")
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(str::to_string),
            })
        } else {
            Err(invalid(
                "expected `stdio:COMMAND ARG...` or an `http://` / `https://` URL".into(),
            ))
        }
    }

    /// A short label for messages: the command line or the URL.
    pub fn label(&self) -> String {
        self.to_string()
    }
}

impl fmt::Display for McpEndpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            McpEndpoint::Stdio { command, args, .. } => {
                write!(f, "stdio:{command}")?;
                for a in args {
                    if a.is_empty() || a.contains(char::is_whitespace) {
                        write!(f, " {a:?}")?;
                    } else {
                        write!(f, " {a}")?;
                    }
                }
                Ok(())
            }
            McpEndpoint::Http { url, .. } => f.write_str(url),
        }
    }
}

impl fmt::Debug for McpEndpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            McpEndpoint::Stdio { command, args, env } => f
                .debug_struct("Stdio")
                .field("command", command)
                .field("args", args)
                .field("env", &env.keys().collect::<Vec<_>>())
                .finish(),
            McpEndpoint::Http {
                url,
                headers,
                bearer_env,
            } => f
                .debug_struct("Http")
                .field("url", url)
                .field("headers", &headers.keys().collect::<Vec<_>>())
                .field("bearer_env", bearer_env)
                .finish(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_stdio_with_quotes_and_env() {
        let r = SubagentReference::new(r#"stdio:python -m "my server" --flag"#, "MCP")
            .with_metadata("env.TOKEN", "secret")
            .with_metadata("tool", "x");
        let e = McpEndpoint::from_reference(&r).unwrap();
        let McpEndpoint::Stdio { command, args, env } = &e else {
            panic!("not stdio: {e:?}")
        };
        assert_eq!(command, "python");
        assert_eq!(args, &["-m", "my server", "--flag"]);
        assert_eq!(env.get("TOKEN").map(String::as_str), Some("secret"));
        assert!(!format!("{e:?}").contains("secret"));
        assert_eq!(e.to_string(), r#"stdio:python -m "my server" --flag"#);
    }

    #[test]
    fn parses_http_with_headers() {
        let r = SubagentReference::new("https://example.com/mcp", "MCP")
            .with_metadata("header.X-Api-Key", "k")
            .with_metadata("bearer_env", "TOKEN_VAR");
        let e = McpEndpoint::from_reference(&r).unwrap();
        let McpEndpoint::Http {
            url,
            headers,
            bearer_env,
        } = &e
        else {
            panic!("not http")
        };
        assert_eq!(url, "https://example.com/mcp");
        assert_eq!(headers.get("X-Api-Key").map(String::as_str), Some("k"));
        assert_eq!(bearer_env.as_deref(), Some("TOKEN_VAR"));
        assert!(!format!("{e:?}").contains("\"k\""));
    }

    #[test]
    fn rejects_bad_uris() {
        for (uri, needle) in [
            ("stdio:", "empty command"),
            ("stdio:a 'b", "single quote"),
            ("ftp://x", "expected"),
            ("http://", "no host"),
        ] {
            let err = McpEndpoint::from_reference(&SubagentReference::new(uri, "MCP"))
                .unwrap_err()
                .to_string();
            assert!(err.contains(needle), "{uri}: {err}");
            assert!(err.contains(uri), "{uri}: {err}");
        }
    }
}
