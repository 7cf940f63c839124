//! The agents `subagents.toml` defines (its `a2a` and `mcp` entries), for `agents list`: what
//! a run would register besides the Markdown agents, listed without contacting anyone.
//!
//! Listing never fetches an A2A agent card nor starts or connects to an MCP server (a cloned
//! repository's file may name any URL or command): an agent whose name comes from its peer is
//! listed under its URL (credentials hidden) with a note saying so.

use subagents::config::A2aEntry;
use subagents::config::trust::{Kind as FileKind, TrustStore, control_files};
use subagents::models::redacted;

use crate::agents::Loaded;
use crate::config::Config;

/// The kind of A2A agents.
const A2A: &str = "A2A";
/// The kind of MCP agents.
const MCP: &str = "MCP";

/// What a listed A2A agent says when its card was not fetched.
pub(crate) const CARD_NOT_FETCHED: &str = "remote A2A agent: its name and description come \
from its agent card, fetched when a run starts (agents list does not contact it)";

/// What a listed MCP entry without `name` or `tool` says: its agents are the server's tools.
pub(crate) const TOOLS_NOT_LISTED: &str = "MCP server: each of its tools is an agent, named \
after the tool when a run connects to it (agents list does not start or contact it)";

/// The agents of `config`'s `a2a` and `mcp` entries, in the file's order, each with the file
/// as its path. `explicit` is true when the file was given with `--config` (the user's word);
/// a workspace file that is not approved has its MCP entries flagged, as a run drops them.
pub(crate) fn listed(config: &Config, explicit: bool) -> Vec<Loaded> {
    if config.a2a.is_empty() && config.mcp.is_empty() {
        return Vec::new();
    }
    let file = config.name();
    let unapproved = !explicit && not_approved(config);
    let mut out = Vec::new();
    for entry in &config.a2a {
        let (url, name) = match entry {
            A2aEntry::Url(url) => (url, None),
            A2aEntry::Table { url, settings } => (url, settings.get("name").cloned()),
            _ => continue,
        };
        let shown = redacted(url);
        out.push(Loaded {
            path: file.clone(),
            name: name.unwrap_or_else(|| shown.clone()),
            slug: None,
            kind: A2A.to_string(),
            warnings: Vec::new(),
            description: Some(CARD_NOT_FETCHED.to_string()),
            model: None,
            url: Some(shown),
        });
    }
    for spec in &config.mcp {
        let shown = redacted(spec);
        let mut warnings = Vec::new();
        let name = match subagents::mcp::agent_reference(spec) {
            Ok(r) => r
                .metadata("name")
                .or_else(|| r.metadata("tool"))
                .map(str::to_string),
            Err(e) => {
                warnings.push(redacted(&e.to_string()));
                None
            }
        };
        if unapproved {
            warnings.push(format!(
                "not used: {file} is a workspace file that is not approved, and its `mcp` \
                 entries start processes or reach servers; approve it with: subagents trust \
                 {file}"
            ));
        }
        out.push(Loaded {
            path: file.clone(),
            description: Some(match &name {
                Some(_) => format!("MCP agent (a tool of {shown}; not contacted by agents list)"),
                None => TOOLS_NOT_LISTED.to_string(),
            }),
            name: name.unwrap_or_else(|| shown.clone()),
            slug: None,
            kind: MCP.to_string(),
            warnings,
            model: None,
            url: Some(shown),
        });
    }
    out
}

/// True when `config` is the workspace's `subagents.toml` with settings that need approval
/// (its `mcp` entries among them) and no approval of its current content.
fn not_approved(config: &Config) -> bool {
    let Ok(root) = std::env::current_dir() else {
        return true;
    };
    let files: Vec<_> = control_files(config, false, &root)
        .into_iter()
        .filter(|f| f.kind == FileKind::Toml && !f.weakening.is_empty())
        .collect();
    if files.is_empty() {
        return false;
    }
    let store = TrustStore::load(&root).ok();
    files
        .iter()
        .any(|f| !store.as_ref().is_some_and(|s| s.approves(f)))
}
