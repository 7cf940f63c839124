//! The agents `subagents.toml` defines (its `a2a` and `mcp` entries), for `agents list`: what
//! a run would register besides the Markdown agents, listed without contacting anyone.
//!
//! Listing never fetches an A2A agent card nor starts or connects to an MCP server (a cloned
//! repository's file may name any URL or command): an agent whose name comes from its peer is
//! listed under its URL (credentials hidden) with a note saying so.

use subagents::config::A2aEntry;
use subagents::config::trust::{Kind as FileKind, TrustStore, control_files, strip_weakening};
use subagents::models::redacted;

use crate::config::Config;
use crate::loaded::Loaded;

/// The kind of A2A agents.
const A2A: &str = "A2A";
/// The kind of MCP agents.
const MCP: &str = "MCP";

/// What a listed A2A agent says: its card is not fetched (under 80 characters, the width
/// of the text listing).
const CARD_NOT_FETCHED: &str =
    "name and description from its agent card when a run starts (not fetched here)";

/// What a listed MCP entry with `name` or `tool` says.
const MCP_NOT_STARTED: &str = "MCP agent; its server is started or reached by a run, not here";

/// What a listed MCP entry without `name` or `tool` says: its agents are the server's tools.
const TOOLS_NOT_LISTED: &str =
    "its tools are agents, named when a run connects to it (not started here)";

/// The agents of `config`'s `a2a` and `mcp` entries, in the file's order, each with the file
/// as its path. `explicit` is true when the file was given with `--config` (the user's word);
/// a workspace file that is not approved has its MCP entries flagged, as a run drops them.
pub(crate) fn listed(config: &Config, explicit: bool) -> Vec<Loaded> {
    if config.a2a.is_empty() && config.mcp.is_empty() {
        return Vec::new();
    }
    let file = config.name();
    let unapproved = !explicit && not_approved(config);
    // What a run keeps of an unapproved file (the same stripping as `trust::gate`).
    let mut kept = config.clone();
    if unapproved {
        strip_weakening(&mut kept);
    }
    let mut out = Vec::new();
    for (i, entry) in config.a2a.iter().enumerate() {
        let (url, name, settings) = match entry {
            A2aEntry::Url(url) => (url, None, 0),
            A2aEntry::Table { url, settings } => {
                (url, settings.get("name").cloned(), settings.len())
            }
            _ => continue,
        };
        let kept_settings = match kept.a2a.get(i) {
            Some(A2aEntry::Table { settings, .. }) => settings.len(),
            _ => settings,
        };
        let mut warnings = Vec::new();
        if kept_settings < settings {
            warnings.push(format!(
                "its credential settings are not used: {file} is a workspace file that is not \
                 approved; approve it with: subagents trust {file}"
            ));
        }
        let shown = redacted(url);
        out.push(Loaded {
            path: file.clone(),
            name: name.unwrap_or_else(|| shown.clone()),
            slug: None,
            kind: A2A.to_string(),
            warnings,
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
            description: Some(
                if name.is_some() {
                    MCP_NOT_STARTED
                } else {
                    TOOLS_NOT_LISTED
                }
                .to_string(),
            ),
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
