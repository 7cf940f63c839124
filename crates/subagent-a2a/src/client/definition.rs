//! [`A2aSubagentDefinition`]: a resolved remote agent (its card, endpoint and settings).

use subagent_spi::SubagentReference;

use super::config::A2aConfig;
use super::endpoint::Endpoint;
use super::transport::A2aClient;
use crate::types::{v1, v03};

/// An agent card as fetched, in the version the agent declared.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum AgentCard {
    /// A 1.0 card (`supportedInterfaces`).
    V1(v1::AgentCard),
    /// A 0.3 card (`url`, `protocolVersion`).
    V03(v03::AgentCard),
}

impl AgentCard {
    /// The card in 1.0 terms (a 0.3 card is converted).
    pub fn to_v1(&self) -> v1::AgentCard {
        match self {
            AgentCard::V1(c) => c.clone(),
            AgentCard::V03(c) => c.clone().into(),
        }
    }
}

/// A remote A2A agent: what its card says and how this client reaches it: the `A2A` kind's
/// own definition ([`SubagentKind::Agent`](subagent_spi::SubagentKind::Agent) of
/// [`A2aExecutor`](super::A2aExecutor)), built by
/// [`A2aResolver::resolve_a2a`](super::A2aResolver::resolve_a2a). A host holding the erased
/// `dyn SubagentDefinition` reaches it with `downcast_ref::<A2aSubagentDefinition>()`.
#[derive(Debug, Clone)]
pub struct A2aSubagentDefinition {
    pub(crate) name: String,
    pub(crate) description: String,
    pub(crate) reference: SubagentReference,
    pub(crate) card: AgentCard,
    pub(crate) card_v1: v1::AgentCard,
    pub(crate) card_url: String,
    pub(crate) endpoint: Endpoint,
    pub(crate) fallbacks: Vec<Endpoint>,
    pub(crate) config: A2aConfig,
    /// The resolver's card-signature policy, for the extended card of its clients.
    pub(crate) verification: std::sync::Arc<super::CardVerification>,
}

impl A2aSubagentDefinition {
    /// The card as fetched.
    pub fn card(&self) -> &AgentCard {
        &self.card
    }

    /// The card in 1.0 terms.
    pub fn card_v1(&self) -> &v1::AgentCard {
        &self.card_v1
    }

    /// The URL the card was read from.
    pub fn card_url(&self) -> &str {
        &self.card_url
    }

    /// The chosen endpoint (URL, binding, version).
    pub fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    /// Endpoints of other protocol versions the card offers, tried in order when the chosen
    /// endpoint answers `VersionNotSupported` (-32009) to the first message.
    pub fn fallback_endpoints(&self) -> &[Endpoint] {
        &self.fallbacks
    }

    /// The settings read from the reference.
    pub fn config(&self) -> &A2aConfig {
        &self.config
    }

    /// True when tasks are sent with `SendStreamingMessage`: the card declares streaming and
    /// the reference does not turn it off.
    pub fn uses_streaming(&self) -> bool {
        self.config
            .streaming
            .unwrap_or(self.card_v1.capabilities.streaming == Some(true))
    }

    /// A client for this agent's endpoint, with the reference's auth headers and the
    /// resolver's card-signature policy (for the extended card).
    pub fn client(&self, http: reqwest::Client) -> A2aClient {
        self.client_for(&self.endpoint, http)
    }

    /// A client for another endpoint (e.g. a fallback), with the reference's auth headers and
    /// the resolver's card-signature policy.
    ///
    /// The credentials go only where [`keys::ALLOWED_ORIGINS`](super::keys::ALLOWED_ORIGINS)
    /// lets them (the reference URL's origin, or an allowed one): a client for an endpoint
    /// elsewhere sends none.
    pub fn client_for(&self, endpoint: &Endpoint, http: reqwest::Client) -> A2aClient {
        let headers = if self.config.credentials_may_go_to(&endpoint.url) {
            self.config.headers.clone()
        } else {
            if !self.config.headers.is_empty() {
                tracing::warn!(endpoint = %endpoint.url,
                    "A2A endpoint on an origin the credentials were not given for: sending none");
            }
            http::HeaderMap::new()
        };
        let mut c = A2aClient::new(http, endpoint.clone(), headers)
            .with_stream_idle_timeout(self.config.stream_idle_timeout);
        c.verification = self.verification.clone();
        c
    }
}

subagent_spi::impl_subagent_definition!(A2aSubagentDefinition);

/// The description shown to the model: the card's description, then its skills with their
/// descriptions and examples, so the model knows when to delegate. Skills are indented
/// sub-items (`  * name: ...`), so in the `Task` tool's list of agents (`- agent: ...`) they
/// cannot be mistaken for agents.
pub fn describe(card: &v1::AgentCard) -> String {
    let mut out = card.description.trim().to_string();
    if out.is_empty() {
        out = format!("Remote A2A agent {}", card.name);
    }
    if !card.skills.is_empty() {
        out.push_str("\n  Skills:");
        for s in &card.skills {
            out.push_str(&format!("\n  * {}", s.name.trim()));
            let d = s.description.trim();
            if !d.is_empty() {
                out.push_str(&format!(": {d}"));
            }
            let examples: Vec<String> = s
                .examples
                .iter()
                .map(|e| e.trim())
                .filter(|e| !e.is_empty())
                .take(5)
                .map(|e| format!("\"{e}\""))
                .collect();
            if !examples.is_empty() {
                out.push_str(&format!(" (examples: {})", examples.join("; ")));
            }
        }
    }
    out
}
