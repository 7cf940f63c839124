//! The `MCP` kind (MCP servers' tools as agents), and the MCP servers of `.mcp.json` offered
//! to Markdown agents as tools (their `mcpServers`).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use subagent_spi::{ToolSource, async_trait};

use super::untrusted::Untrusted;
use super::{AgentTools, Assembly, Contribution};
use crate::{Error, SubagentsBuilder};

/// The MCP kind, registered when the builder names an MCP agent.
#[derive(Default)]
pub(crate) struct Mcp {
    /// The workspace scripts of the stdio servers, shared by the kind's pool and the agents'.
    scripts: OnceLock<Arc<SessionScripts>>,
}

impl Mcp {
    fn scripts(&self, root: &Path) -> Arc<SessionScripts> {
        self.scripts
            .get_or_init(|| {
                Arc::new(SessionScripts {
                    root: root.to_path_buf(),
                    pinned: Mutex::new(HashMap::new()),
                })
            })
            .clone()
    }
}

#[async_trait]
impl Contribution for Mcp {
    fn tools(&self, b: &SubagentsBuilder, root: &Path) -> Option<Box<dyn AgentTools>> {
        Some(Box::new(McpServers {
            path: b.mcp_config.clone(),
            root: root.to_path_buf(),
            untrusted: Untrusted::new(&b.untrusted_files),
            scripts: self.scripts(root),
        }))
    }

    async fn kinds(&mut self, b: &SubagentsBuilder, a: &mut Assembly) -> Result<(), Error> {
        if b.mcp_agents.is_empty() {
            return Ok(());
        }
        // Issue 32: a spec may name the tool and the prompt's argument (`#tool=..&argument=..`);
        // a server with several tools and none named gives one agent per tool. The kind
        // shares the pool that listed them, so each server starts once.
        let pool = self.scripts(&a.root).pool();
        a.kinds
            .push(subagent_mcp::mcp_subagent_type_with_pool(pool.clone()));
        for spec in &b.mcp_agents {
            let reference = subagent_mcp::agent_reference(spec).map_err(|e| Error::McpAgent {
                spec: spec.clone(),
                source: Box::new(e),
            })?;
            a.references
                .extend(subagent_mcp::expand_reference(&pool, &reference).await);
        }
        Ok(())
    }
}

/// Where Markdown agents' `mcpServers` come from: the servers named in the MCP configuration
/// (`path`, else `<root>/.mcp.json` when it exists) plus inline definitions.
struct McpServers {
    path: Option<PathBuf>,
    root: PathBuf,
    untrusted: Untrusted,
    scripts: Arc<SessionScripts>,
}

#[async_trait]
impl AgentTools for McpServers {
    async fn load(self: Box<Self>) -> Result<Arc<dyn ToolSource>, Error> {
        let (file, required) = match &self.path {
            Some(p) => (p.clone(), true),
            None => (self.root.join(".mcp.json"), false),
        };
        let config = if self.untrusted.contains(&file) {
            tracing::info!(path = %file.display(), "MCP servers not applied: the file is not approved");
            subagent_mcp::McpServerConfig::new()
        } else if required || file.is_file() {
            subagent_mcp::McpServerConfig::from_file(&file)
                .await
                .map_err(|e| Error::McpConfig {
                    path: file.clone(),
                    source: Box::new(e),
                })?
        } else {
            subagent_mcp::McpServerConfig::new()
        };
        // The configured servers' scripts as they are now, when the session starts (and the
        // file was approved): a model that rewrites one later does not get it started.
        let endpoints: Vec<subagent_mcp::McpEndpoint> =
            config.servers().values().cloned().collect();
        let scripts = self.scripts.clone();
        let _ = tokio::task::spawn_blocking(move || {
            for endpoint in &endpoints {
                scripts.pin(endpoint);
            }
        })
        .await;
        Ok(Arc::new(subagent_mcp::McpToolProvider::with_pool(
            config,
            self.scripts.pool(),
        )))
    }
}

/// The workspace files each stdio server's command names ([`subagent_tools::ScriptPins`]), as
/// they were when the session started (the servers of `.mcp.json`) or when the server first
/// started (the others): a later start, a restart or a first start after a model rewrote the
/// script, is refused, so an approval (or the user's command line) never runs a script the
/// model wrote in the same session.
pub(crate) struct SessionScripts {
    root: PathBuf,
    pinned: Mutex<HashMap<subagent_mcp::McpEndpoint, Arc<subagent_tools::ScriptPins>>>,
}

impl SessionScripts {
    /// A pool that asks [`check`](Self::check) before every start.
    fn pool(self: &Arc<Self>) -> subagent_mcp::McpPool {
        let scripts = self.clone();
        subagent_mcp::McpPool::new()
            .with_launch_check(Arc::new(move |endpoint| scripts.check(endpoint)))
    }

    /// Pins `endpoint`'s scripts unless they are pinned already (blocking).
    fn pin(&self, endpoint: &subagent_mcp::McpEndpoint) {
        let subagent_mcp::McpEndpoint::Stdio { command, args, .. } = endpoint else {
            return;
        };
        if self.lock().contains_key(endpoint) {
            return;
        }
        let pins = Arc::new(subagent_tools::ScriptPins::of_argv(
            command, args, &self.root,
        ));
        self.lock().entry(endpoint.clone()).or_insert(pins);
    }

    /// May `endpoint` start now? Pins its scripts on its first start (blocking).
    fn check(&self, endpoint: &subagent_mcp::McpEndpoint) -> Result<(), String> {
        self.pin(endpoint);
        let Some(pins) = self.lock().get(endpoint).cloned() else {
            return Ok(());
        };
        match pins.changed() {
            None => Ok(()),
            Some(path) => Err(format!(
                "`{}` changed since this session started; what was approved (or given) is \
                 what it was then. Review it, then start a new session (and approve the file \
                 that names it again: subagents trust)",
                path.display()
            )),
        }
    }

    fn lock(
        &self,
    ) -> std::sync::MutexGuard<
        '_,
        HashMap<subagent_mcp::McpEndpoint, Arc<subagent_tools::ScriptPins>>,
    > {
        self.pinned
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}
