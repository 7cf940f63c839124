//! Serving the assembled agents over A2A (feature `server`): one path per agent, each able to
//! delegate in turn, and a JSON directory at `GET /`.

use std::sync::Arc;
use std::time::Duration;

use derive_setters::Setters;
use subagent_a2a::server::{
    A2aServer, AgentMount, DEFAULT_APPROVAL_TIMEOUT, ServerAuth, ServerConfig, SubagentHandler,
};
use subagent_spi::{SubagentDefinition, TaskContext};

use crate::{Error, Subagents};

/// What to serve and how: see [`Subagents::a2a_server`].
#[derive(Debug, Clone, Default, Setters)]
#[setters(strip_option)]
#[non_exhaustive]
pub struct ServeOptions {
    /// Names of the agents to serve (ignoring case); empty serves every agent from the
    /// configuration (not the built-in agents).
    #[setters(skip)] // `agents` takes any list of names
    pub agents: Vec<String>,
    /// The public base URL used in cards, when the server sits behind a proxy.
    #[setters(into)]
    pub public_url: Option<String>,
    /// Credentials every agent requires (declared in both card versions; requests without
    /// them get HTTP 401). `None`: no authentication. Keys never appear in `Debug` output.
    pub auth: Option<ServerAuth>,
    /// How long a served agent's tool call that needs approval waits for the A2A client's
    /// answer (the task is `input-required` meanwhile) before it is denied; zero never asks.
    /// `None`: [`DEFAULT_APPROVAL_TIMEOUT`] (300 s). The registry's own approver (e.g.
    /// `--yes`) answers first when it can.
    pub approval_timeout: Option<Duration>,
    /// Where the served agents' A2A tasks live (feature `store`): each agent gets its own
    /// view of it. `None`: bounded memory. A SQLite store keeps tasks across restarts; a
    /// PostgreSQL one is shared by every replica given the same database (see
    /// `docs/scaling.md`).
    #[cfg(feature = "store")]
    pub task_store: Option<subagent_store::a2a::SqlTaskStore>,
    /// The address (`host:port`) of the gRPC binding the cards list (feature `grpc`; serve it
    /// with [`A2aServer::serve_grpc`]). `None`: no gRPC interface on the cards.
    #[setters(into)]
    pub grpc_url: Option<String>,
    /// Signs every served card with this key (JWS, A2A §8.4). `None`: unsigned cards.
    pub card_signer: Option<subagent_a2a::signing::CardSigner>,
    /// Lets stock A2A 0.3 clients (ADK-Java, LangGraph, the 0.3 SDKs) discover the agents:
    /// `agent-card.json` requests without an `A2A-Version: 1.x` header get the 0.3 card (with
    /// the 1.0 interfaces embedded); see `ServerConfig::legacy_card_discovery`. Off by
    /// default: 1.0 clients that fetch the card without the header (the A2A TCK 1.0, the
    /// Python SDK 1.x) would then get the 0.3 form, which strict 1.0 validation refuses.
    pub legacy_card_discovery: bool,
    /// Offers push notifications (off by default): clients may register webhooks, which get
    /// every update of their task. Webhooks at loopback, private and other non-public
    /// addresses are refused unless the [`server_config`](Self::server_config) allows them;
    /// delivery is bounded by its `push_max_*` limits.
    pub push_notifications: bool,
    /// The server settings to start from: connection, body, stream and push limits and
    /// timeouts (see `ServerConfig` for each default). `None`: the defaults. The options
    /// above, when set, override their fields.
    pub server_config: Option<ServerConfig>,
}

impl ServeOptions {
    /// Serve every configured agent.
    pub fn new() -> Self {
        Self::default()
    }

    /// Serve only these agents (builder style).
    #[must_use]
    pub fn agents(mut self, names: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.agents = names.into_iter().map(Into::into).collect();
        self
    }

    /// Requires one of `keys`, as `Authorization: Bearer KEY` or `X-API-Key: KEY` (builder
    /// style; an empty list sets no authentication).
    #[must_use]
    pub fn api_keys(mut self, keys: impl IntoIterator<Item = impl Into<String>>) -> Self {
        let keys: Vec<String> = keys.into_iter().map(Into::into).collect();
        self.auth = (!keys.is_empty()).then(|| ServerAuth::keys(keys));
        self
    }
}

/// Opens the A2A task store at `url` for [`ServeOptions::task_store`] (feature `store`):
/// `None` for `memory`; otherwise the database, migrated, with running tasks of an earlier
/// process handled (see `subagent_store::a2a`). Needs a tokio runtime.
#[cfg(feature = "store")]
pub async fn open_task_store(
    url: &subagent_store::StoreUrl,
) -> Result<Option<subagent_store::a2a::SqlTaskStore>, Error> {
    let Some(db) = subagent_store::Db::open(url)
        .await
        .map_err(|e| Error::Server(Box::new(e)))?
    else {
        return Ok(None);
    };
    let store = subagent_store::a2a::SqlTaskStore::open(db, Default::default())
        .await
        .map_err(|e| Error::Server(Box::new(e)))?;
    Ok(Some(store))
}

#[cfg(feature = "store")]
impl Subagents {
    /// The A2A task store on this registry's own store
    /// ([`SubagentsBuilder::store`](crate::SubagentsBuilder::store)), for
    /// [`ServeOptions::task_store`]: `None` without a store. `subagents serve` uses it, so `--store` keeps served tasks too.
    pub async fn a2a_task_store(&self) -> Result<Option<subagent_store::a2a::SqlTaskStore>, Error> {
        let Some(db) = self.store_db() else {
            return Ok(None);
        };
        let store = subagent_store::a2a::SqlTaskStore::open(db.clone(), Default::default())
            .await
            .map_err(|e| Error::Server(Box::new(e)))?;
        Ok(Some(store))
    }
}

/// The URL path an agent is served at: `/` and its [`agent_slug`](subagent_claude::agent_slug)
/// (`code-reviewer` → `/code-reviewer`; `LSP/Index Engineer` →
/// `/lsp-index-engineer-<8 hex digits>`, the hash of the exact name keeping names that read
/// alike apart). Always `Some` (the `Option` is kept for compatibility).
pub fn agent_path(name: &str) -> Option<String> {
    Some(format!("/{}", subagent_claude::agent_slug(name)))
}

impl Subagents {
    /// An A2A server (v1.0 and v0.3, JSON-RPC and HTTP+JSON) hosting the agents: each at
    /// [`agent_path`] of its name, run by its own kind's executor with this registry's
    /// delegation handle (a served coordinator can delegate to the other agents, within the
    /// nesting limit), plus a JSON directory at `GET /`. A tool call that needs approval is
    /// answered by this registry's approver when it can (`--yes`), else asked of the A2A
    /// client (the task goes `input-required`; see [`ServeOptions::approval_timeout`]). Serve it with
    /// [`A2aServer::serve`] or merge [`A2aServer::router`] into an app.
    pub fn a2a_server(&self, options: &ServeOptions) -> Result<A2aServer, Error> {
        let mut chosen: Vec<&std::sync::Arc<dyn SubagentDefinition>> = Vec::new();
        if options.agents.is_empty() {
            chosen.extend(self.task().user_agents());
        } else {
            for wanted in &options.agents {
                let def = self.task().find(wanted).ok_or_else(|| {
                    Error::Server(
                        format!(
                            "no agent named `{wanted}` to serve; available: {}",
                            self.task().agent_names().join(", ")
                        )
                        .into(),
                    )
                })?;
                chosen.push(def);
            }
        }
        if chosen.is_empty() {
            return Err(Error::Server(
                "no agents to serve: add an agent directory (a directory of Markdown agents)"
                    .into(),
            ));
        }
        let mut base = TaskContext::new()
            .with_depth(0)
            .with_delegation(self.task().delegation());
        if let Some(approver) = self.approver() {
            base = base.with_approver(approver.clone());
        }
        let mut builder = A2aServer::builder();
        if let Some(config) = &options.server_config {
            builder = builder.config(config.clone());
        }
        builder = builder.directory(true);
        if options.legacy_card_discovery {
            builder = builder.legacy_card_discovery(true);
        }
        if options.push_notifications {
            builder = builder.push_notifications(true);
        }
        if let Some(url) = &options.public_url {
            builder = builder.public_url(url.clone());
        }
        if let Some(url) = &options.grpc_url {
            builder = builder.grpc_url(url.clone());
        }
        if let Some(signer) = &options.card_signer {
            builder = builder.card_signer(signer.clone());
        }
        let mut paths: std::collections::HashMap<String, String> = Default::default();
        for def in chosen {
            let path = agent_path(def.name()).unwrap_or_default();
            // Slugs of distinct names differ unless made to collide on purpose: refuse that.
            if let Some(other) = paths.insert(path.clone(), def.name().to_string())
                && !other.eq_ignore_ascii_case(def.name())
            {
                return Err(Error::Server(
                    format!(
                        "agents `{}` and `{}` would both be served at {path}; rename one",
                        other.escape_debug(),
                        def.name().escape_debug()
                    )
                    .into(),
                ));
            }
            let executor = self
                .task()
                .executor_of(def.name())
                .ok_or_else(|| Error::Server(format!("no executor for `{}`", def.name()).into()))?;
            let mut handler = SubagentHandler::new(def.clone(), executor)
                .with_context(base.clone())
                .with_approval_timeout(
                    options.approval_timeout.unwrap_or(DEFAULT_APPROVAL_TIMEOUT),
                );
            if let Some(limits) = self.task().agent_budget_of(def.as_ref()) {
                handler = handler.with_budget(limits);
            }
            let info = handler.agent_info();
            let mut mount = AgentMount::from_arc(path.clone(), info, Arc::new(handler));
            if let Some(auth) = &options.auth {
                mount = mount.with_auth(auth.clone());
            }
            #[cfg(feature = "store")]
            if let Some(store) = &options.task_store {
                mount = mount.with_store(std::sync::Arc::new(store.for_agent(&path)));
            }
            builder = builder.mount(mount);
        }
        builder.build().map_err(|e| Error::Server(Box::new(e)))
    }
}

#[cfg(test)]
mod tests {
    use super::agent_path;

    #[test]
    fn paths_are_slugs() {
        assert_eq!(
            agent_path("code-reviewer").as_deref(),
            Some("/code-reviewer")
        );
        // Behaviour change (issue 27): names that are not their own slug get a hash suffix, so
        // `Release Notes Writer` and `release/notes writer` no longer share a path.
        let p = agent_path("Release Notes Writer").unwrap();
        assert!(
            p.starts_with("/release-notes-writer-") && p.len() == 30,
            "{p}"
        );
        assert_ne!(
            agent_path("release/notes writer"),
            agent_path("Release Notes Writer")
        );
        assert!(agent_path("..").unwrap().starts_with("/agent-"));
        assert!(agent_path(".").unwrap().starts_with("/agent-"));
    }
}
