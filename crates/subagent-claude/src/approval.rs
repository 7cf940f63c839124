//! What an agent file may do only once its user approved it: start its own MCP servers and run
//! in a permission mode that asks less than the session's.
//!
//! An agent file may come from a cloned repository's `.claude/agents/`, or a model may have
//! written it into a directory given with `--agents`. Its prompt, tools and hooks (confined like
//! `Bash`) are fine to use unread; two of its fields are not: an inline `mcpServers` definition
//! starts a command of the file's choosing (or sends headers, `${VAR}` secrets included, to a
//! URL of its choosing), and `permissionMode: bypassPermissions` stops every question. A host
//! that knows which files its user approved gives the kind a [`FileApproval`]; a file it refuses
//! runs without its inline servers (named servers of the host's configuration still work) and
//! in at most the session's mode.

use serde_json::Value;
use subagent_spi::async_trait;

use crate::definition::{ClaudeAgentDefinition, PermissionMode};

/// Decides whether an agent file may do what only its user may allow (see the module docs).
/// Without one ([`ClaudeSubagentTypeBuilder::file_approval`](crate::ClaudeSubagentTypeBuilder::file_approval)),
/// every file may: they are the host's own.
#[async_trait]
pub trait FileApproval: Send + Sync {
    /// `None` when `def` may (its file is the user's own, or approved as it is now); otherwise
    /// why not, naming the file and how to approve it (shown to the person and the model).
    async fn refusal(&self, def: &ClaudeAgentDefinition) -> Option<String>;
}

/// What in `def` needs its user's approval, one item per setting, for messages: its inline
/// `mcpServers` (by name) and a `permissionMode` that asks less than `default`. Empty when the
/// file needs none.
pub fn needs_approval(def: &ClaudeAgentDefinition) -> Vec<String> {
    let mut out = Vec::new();
    let inline = def
        .mcp_servers
        .as_ref()
        .map(inline_mcp_servers)
        .unwrap_or_default();
    if !inline.is_empty() {
        out.push(format!(
            "mcpServers {inline:?} (defined in the file: commands or URLs it chooses)"
        ));
    }
    if def.permission_mode.lifts_limits() {
        out.push(format!("permissionMode {}", def.permission_mode));
    }
    out
}

/// The names of the servers an `mcpServers` value defines inline (objects), as opposed to the
/// names of servers the host configured (strings).
pub fn inline_mcp_servers(value: &Value) -> Vec<String> {
    let names = |obj: &serde_json::Map<String, Value>| -> Vec<String> {
        let map = match obj.get("mcpServers") {
            Some(Value::Object(inner)) => inner,
            _ => obj,
        };
        map.keys().cloned().collect()
    };
    match value {
        Value::Object(obj) => names(obj),
        Value::Array(items) => items
            .iter()
            .filter_map(Value::as_object)
            .flat_map(names)
            .collect(),
        _ => Vec::new(),
    }
}

/// `value` with its inline definitions left out: only the names of configured servers remain
/// (`None` when none does).
pub fn configured_mcp_servers_only(value: &Value) -> Option<Value> {
    match value {
        Value::String(_) => Some(value.clone()),
        Value::Array(items) => {
            let names: Vec<Value> = items.iter().filter(|v| v.is_string()).cloned().collect();
            (!names.is_empty()).then_some(Value::Array(names))
        }
        _ => None,
    }
}

impl PermissionMode {
    /// This mode, or `ceiling` when this one asks less than it: an unapproved agent file's
    /// `acceptEdits`, `bypassPermissions` or `auto` cannot lift the session's mode. Modes that
    /// ask no less than `default` (`plan`, `dontAsk`, `default`) are kept.
    pub fn capped_by(self, ceiling: PermissionMode) -> PermissionMode {
        let leniency = |m: PermissionMode| match m {
            PermissionMode::AcceptEdits => 1,
            PermissionMode::BypassPermissions | PermissionMode::Auto => 2,
            _ => 0,
        };
        if self.lifts_limits() && leniency(self) > leniency(ceiling) {
            ceiling
        } else {
            self
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn inline_servers_are_told_from_configured_ones() {
        let v = json!(["github", {"local": {"command": "sh", "args": ["x.sh"]}}, "a, b"]);
        assert_eq!(inline_mcp_servers(&v), ["local"]);
        assert_eq!(
            configured_mcp_servers_only(&v),
            Some(json!(["github", "a, b"]))
        );
        let map = json!({"mcpServers": {"one": {"url": "http://h"}, "two": {"command": "x"}}});
        assert_eq!(inline_mcp_servers(&map), ["one", "two"]);
        assert_eq!(configured_mcp_servers_only(&map), None);
        assert!(inline_mcp_servers(&json!("github")).is_empty());
        assert_eq!(
            configured_mcp_servers_only(&json!("github")),
            Some(json!("github"))
        );
    }

    #[test]
    fn a_lenient_mode_is_capped_by_the_session() {
        use PermissionMode as M;
        assert_eq!(M::BypassPermissions.capped_by(M::Default), M::Default);
        assert_eq!(M::Auto.capped_by(M::AcceptEdits), M::AcceptEdits);
        assert_eq!(M::AcceptEdits.capped_by(M::Plan), M::Plan);
        assert_eq!(
            M::AcceptEdits.capped_by(M::BypassPermissions),
            M::AcceptEdits
        );
        assert_eq!(M::Plan.capped_by(M::BypassPermissions), M::Plan);
        assert_eq!(M::DontAsk.capped_by(M::Default), M::DontAsk);
        let mut d = ClaudeAgentDefinition::new("a", "d", "p");
        assert!(needs_approval(&d).is_empty());
        d.permission_mode = M::BypassPermissions;
        d.mcp_servers = Some(json!({"srv": {"command": "x"}}));
        let needs = needs_approval(&d);
        assert!(needs[0].contains("\"srv\"") && needs[1].contains("bypassPermissions"));
    }
}
