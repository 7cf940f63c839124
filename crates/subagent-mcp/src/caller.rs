//! Who a request comes from: the owner of the tasks, questions and messages it creates. Every
//! request of a served MCP client is scoped to its caller, so one client never lists, reads,
//! stops, messages or answers what another started.
//!
//! - over stdio: the one client at the other end;
//! - a streamable-HTTP session (clients before the 2026-07-28 revision): the session
//!   (`Mcp-Session-Id`, a random id the server handed out and checks);
//! - a stateless HTTP request (2026-07-28 clients, which have no session): the credential it
//!   sends (`Authorization`, `X-API-Key`; checked when the server requires keys), so a client
//!   that sends the same credential on every request keeps its tasks; requests without one
//!   share one anonymous caller.
//!
//! A caller's id is a keyed hash (random per server) of what identifies it: it never shows a
//! session id or a key.

use std::hash::BuildHasher as _;

use rmcp::RoleServer;
use rmcp::service::RequestContext;

/// The session header of the streamable-HTTP transport.
const SESSION_HEADER: &str = "mcp-session-id";

/// The caller of a request to a served [`McpToolServer`](crate::McpToolServer): the host's
/// [`with_caller_context`](crate::McpToolServer::with_caller_context) hook gets it with each
/// call's context.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct McpCaller {
    id: String,
    over_http: bool,
}

impl McpCaller {
    /// An id that tells this caller apart from the server's other callers (stable over the
    /// caller's requests; never the session id or credential itself).
    pub fn id(&self) -> &str {
        &self.id
    }

    /// True for a caller over streamable HTTP (one of possibly many); false for the one client
    /// of a stdio server.
    pub fn over_http(&self) -> bool {
        self.over_http
    }

    /// The task id a caller's calls run under: the background tasks they start are "started
    /// by" it, and a run reaches only the tasks it started.
    pub(crate) fn scope(&self) -> String {
        format!("mcp-caller-{}", self.id)
    }

    /// The caller of the request `context` belongs to.
    pub(crate) fn of(context: &RequestContext<RoleServer>, keys: &std::hash::RandomState) -> Self {
        let Some(parts) = context.extensions.get::<http::request::Parts>() else {
            return Self {
                id: "stdio".to_string(),
                over_http: false,
            };
        };
        let header = |name: &str| parts.headers.get(name).map(|v| v.as_bytes());
        let hash =
            |what: &str, value: &[&[u8]]| format!("{what}-{:016x}", keys.hash_one((what, value)));
        let id = if let Some(session) = header(SESSION_HEADER) {
            hash("session", &[session])
        } else {
            let auth = header(http::header::AUTHORIZATION.as_str());
            let key = header("x-api-key");
            if auth.is_none() && key.is_none() {
                "anonymous".to_string()
            } else {
                hash(
                    "credential",
                    &[auth.unwrap_or_default(), key.unwrap_or_default()],
                )
            }
        };
        Self {
            id,
            over_http: true,
        }
    }
}
