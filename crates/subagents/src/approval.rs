//! Approvals of workspace files by content: what a file runs, and lifts, applies only once its
//! user approved the file as it is now (feature `claude`).
//!
//! An approval covers everything the file runs: its bytes and the workspace files its commands
//! name ([`subagent_tools::ScriptPins`]: `sh tools/srv.sh`, `python3 x.py`, `make`'s
//! makefile...). A script a model rewrote after the approval makes the file unapproved again.
//! The command keeps approvals in `trusted.json` ([`config::trust`](crate::config::trust));
//! [`Approvals`] is how the assembly reads them, and this module decides for the agent files
//! whether their inline `mcpServers` may start and their `permissionMode` may lift the
//! session's (see [`subagent_claude::FileApproval`]).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;
use sha2::{Digest, Sha256};
use subagent_claude::ClaudeAgentDefinition;
use subagent_spi::async_trait;
use subagent_tools::ScriptPins;

/// The workspace files a person approved, by canonical path and SHA-256 (what
/// [`ControlFile::sha256`](crate::config::trust::ControlFile::sha256) computes). The command's
/// `TrustStore` is one.
pub trait Approvals: Send + Sync + std::fmt::Debug {
    /// True when the file at canonical `path` was approved with this `sha256`.
    fn approves(&self, path: &Path, sha256: &str) -> bool;
}

/// The SHA-256 an approval records: of the file's `bytes` alone when its commands name no
/// workspace file, else of the bytes followed by the pinned files' fingerprint.
pub(crate) fn approval_digest(bytes: &[u8], pins: &ScriptPins) -> String {
    let mut hasher = Sha256::new();
    hasher.update(bytes);
    if !pins.is_empty() {
        hasher.update(b"\n\0subagents: the workspace files its commands name\n");
        hasher.update(pins.fingerprint().as_bytes());
    }
    hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The stdio commands (program and arguments) a JSON value defines, at any depth: every object
/// with a string `command` (an `mcpServers` value, `.mcp.json`).
pub(crate) fn commands_in(value: &Value) -> Vec<(String, Vec<String>)> {
    let mut out = Vec::new();
    let mut stack = vec![value];
    while let Some(v) = stack.pop() {
        match v {
            Value::Object(obj) => {
                if let Some(Value::String(command)) = obj.get("command") {
                    let args = obj
                        .get("args")
                        .and_then(Value::as_array)
                        .map(|a| {
                            a.iter()
                                .map(|x| match x {
                                    Value::String(s) => s.clone(),
                                    other => other.to_string(),
                                })
                                .collect()
                        })
                        .unwrap_or_default();
                    out.push((command.clone(), args));
                }
                stack.extend(obj.values());
            }
            Value::Array(items) => stack.extend(items.iter()),
            _ => {}
        }
    }
    out
}

/// The pins of every stdio command in `value` (see [`commands_in`]).
pub(crate) fn pins_of_commands(value: &Value, root: &Path) -> ScriptPins {
    let mut pins = ScriptPins::default();
    for (command, args) in commands_in(value) {
        pins.extend(ScriptPins::of_argv(&command, &args, root));
    }
    pins
}

/// The largest file read for approval (bigger ones are never approved).
pub const MAX_APPROVED_FILE_BYTES: u64 = 1024 * 1024;

/// Reads `path` if it is a regular file of at most [`MAX_APPROVED_FILE_BYTES`] (looked at
/// before it is opened: a FIFO would block); `Ok(None)` when it does not exist (blocking).
pub(crate) fn read_capped(path: &Path) -> Result<Option<Vec<u8>>, String> {
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("cannot read it: {e}")),
    };
    if !meta.is_file() {
        return Err("not a regular file".into());
    }
    if meta.len() > MAX_APPROVED_FILE_BYTES {
        return Err(format!(
            "{} bytes, more than the {MAX_APPROVED_FILE_BYTES} read for approval",
            meta.len()
        ));
    }
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| {
            use std::io::Read as _;
            f.take(MAX_APPROVED_FILE_BYTES + 1).read_to_end(&mut bytes)
        })
        .map_err(|e| format!("cannot read it: {e}"))?;
    if bytes.len() as u64 > MAX_APPROVED_FILE_BYTES {
        return Err(format!(
            "more than the {MAX_APPROVED_FILE_BYTES} bytes read for approval"
        ));
    }
    Ok(Some(bytes))
}

/// An agent file as it is now, read for approval: its definition and the digest of its bytes
/// and of the workspace files its inline commands name, both from the same bytes (blocking).
pub(crate) fn read_agent_file(
    path: &Path,
    root: &Path,
) -> Result<(ClaudeAgentDefinition, String), String> {
    let bytes = read_capped(path)?.ok_or_else(|| "it does not exist".to_string())?;
    let text = String::from_utf8(bytes).map_err(|_| "it is not UTF-8 text".to_string())?;
    let def = subagent_claude::parse_agent(path, &text)
        .map_err(|e| e.to_string())?
        .definition;
    let pins = def
        .mcp_servers
        .as_ref()
        .map(|v| pins_of_commands(v, root))
        .unwrap_or_default();
    let digest = approval_digest(text.as_bytes(), &pins);
    Ok((def, digest))
}

/// `path` canonicalized, or as given when it does not resolve.
fn canonical(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
}

/// The assembly's [`FileApproval`](subagent_claude::FileApproval): an agent file from the
/// project's `.claude/agents`, from a given directory (`--agents`) or from inside the workspace
/// may start its inline `mcpServers` and lift the session's `permissionMode` only when approved
/// as it is now (its bytes and the workspace files its commands name); the user's own
/// (`~/.claude/agents` outside the workspace), the built-ins and agents defined in code may.
pub(crate) struct AgentFileApproval {
    pub(crate) root: PathBuf,
    pub(crate) approvals: Option<Arc<dyn Approvals>>,
}

impl AgentFileApproval {
    /// True when a model or a cloned repository may have written `def`'s file.
    fn is_the_workspaces(&self, def: &ClaudeAgentDefinition, source: &Path) -> bool {
        match def.reference.metadata("scope") {
            Some("project") | Some("cli") => true,
            _ => canonical(source).starts_with(canonical(&self.root)),
        }
    }
}

#[async_trait]
impl subagent_claude::FileApproval for AgentFileApproval {
    async fn refusal(&self, def: &ClaudeAgentDefinition) -> Option<String> {
        let source = def.source.clone()?;
        if !self.is_the_workspaces(def, &source) || subagent_claude::needs_approval(def).is_empty()
        {
            return None;
        }
        let shown = source.display().to_string();
        let unapproved = format!(
            "`{shown}` is not approved (a model or a cloned repository may have written it); \
             review it, then approve it with: subagents trust {shown}"
        );
        let Some(approvals) = self.approvals.clone() else {
            return Some(unapproved);
        };
        let root = self.root.clone();
        let read = {
            let source = source.clone();
            tokio::task::spawn_blocking(move || {
                read_agent_file(&source, &root).map(|r| (r, canonical(&source)))
            })
        };
        match read.await {
            // The file as read now must be the one that was loaded (else it changed between).
            Ok(Ok(((now, digest), canonical_path)))
                if now.mcp_servers == def.mcp_servers
                    && now.permission_mode == def.permission_mode =>
            {
                (!approvals.approves(&canonical_path, &digest)).then_some(unapproved)
            }
            Ok(Ok(_)) => Some(format!(
                "`{shown}` changed after it was loaded; it is not approved as loaded"
            )),
            Ok(Err(e)) => Some(format!("`{shown}` cannot be read for approval: {e}")),
            Err(_) => Some(format!("`{shown}` could not be checked for approval")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn commands_are_found_at_any_depth() {
        let v = json!(["github", {"srv": {"command": "sh", "args": ["tools/srv.sh", 3]}},
                       {"mcpServers": {"web": {"url": "http://h"}, "py": {"command": "python3"}}}]);
        let mut found = commands_in(&v);
        found.sort();
        assert_eq!(
            found,
            [
                ("python3".to_string(), vec![]),
                (
                    "sh".to_string(),
                    vec!["tools/srv.sh".to_string(), "3".to_string()]
                )
            ]
        );
    }

    #[test]
    fn the_digest_covers_the_named_scripts() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir(root.join("tools")).unwrap();
        std::fs::write(root.join("tools/srv.sh"), "echo one\n").unwrap();
        let v = json!({"srv": {"command": "sh", "args": ["tools/srv.sh"]}});
        let first = approval_digest(b"file", &pins_of_commands(&v, root));
        assert_eq!(first, approval_digest(b"file", &pins_of_commands(&v, root)));
        std::fs::write(root.join("tools/srv.sh"), "echo two\n").unwrap();
        assert_ne!(first, approval_digest(b"file", &pins_of_commands(&v, root)));
        let none = pins_of_commands(&json!({"web": {"url": "http://h"}}), root);
        let bare: String = Sha256::digest(b"file")
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(
            approval_digest(b"file", &none),
            bare,
            "a file naming no script is approved by its bytes alone"
        );
    }
}
