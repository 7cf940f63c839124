//! [`A2aResolver`]: fetches an agent card and picks the endpoint to speak to.

use std::sync::Arc;

use subagent_spi::{SubagentDefinition, SubagentError, SubagentReference, SubagentResolver};

use super::KIND;
use super::config::A2aConfig;
use super::definition::{A2aSubagentDefinition, AgentCard, describe};
use super::endpoint::{Binding, Endpoint, read_body};
use crate::error::A2aError;
use crate::types::{
    AGENT_CARD_PATH, LEGACY_AGENT_CARD_PATH, ProtocolVersion, VERSION_HEADER, v1, v03,
};

/// Resolves `A2A` references: `uri` is the agent's base URL (the card is read from
/// `{uri}/.well-known/agent-card.json`, falling back to `{uri}/.well-known/agent.json`) or the
/// card's own URL (ending in `.json`).
#[derive(Debug, Clone)]
pub struct A2aResolver {
    http: reqwest::Client,
    verification: std::sync::Arc<super::CardVerification>,
}

impl Default for A2aResolver {
    fn default() -> Self {
        Self::new()
    }
}

impl A2aResolver {
    /// A resolver with its own HTTP client.
    pub fn new() -> Self {
        Self::with_client(super::default_http_client())
    }

    /// A resolver using the given HTTP client.
    pub fn with_client(http: reqwest::Client) -> Self {
        Self {
            http,
            verification: Default::default(),
        }
    }

    /// Sets how card signatures are checked (builder style; default
    /// [`CardTrust::VerifyIfPresent`](crate::signing::CardTrust) with no trusted keys, see
    /// [`CardVerification`](super::CardVerification)).
    #[must_use]
    pub fn with_card_verification(mut self, v: super::CardVerification) -> Self {
        self.verification = std::sync::Arc::new(v);
        self
    }

    /// Fetches the card and builds the definition (the typed form of [`SubagentResolver::resolve`]).
    pub async fn resolve_a2a(
        &self,
        reference: &SubagentReference,
    ) -> Result<A2aSubagentDefinition, A2aError> {
        let mut config = A2aConfig::from_reference(reference)?;
        let uri = reference.uri.trim();
        if !(uri.starts_with("http://") || uri.starts_with("https://")) {
            return Err(A2aError::Config {
                message: format!("A2A reference URI `{uri}` must be an http:// or https:// URL"),
            });
        }
        let candidates: Vec<String> = if uri.ends_with(".json") {
            vec![uri.to_string()]
        } else {
            let base = uri.trim_end_matches('/');
            vec![
                format!("{base}{AGENT_CARD_PATH}"),
                format!("{base}{LEGACY_AGENT_CARD_PATH}"),
            ]
        };
        let mut failures = Vec::new();
        let mut found = None;
        for url in &candidates {
            match self.fetch_card(url, &config).await {
                Ok(card) => {
                    found = Some((url.clone(), card));
                    break;
                }
                // A signature that does not hold is final: the other card path is not tried.
                Err(e @ A2aError::CardSignature(_)) => return Err(e),
                Err(e) => failures.push(e.to_string()),
            }
        }
        let Some((card_url, card)) = found else {
            return Err(A2aError::Card {
                url: candidates.join(", "),
                message: failures.join("; "),
            });
        };
        let card_v1 = card.to_v1();
        config.apply_card(&card_v1)?;
        let mut ranked = usable_endpoints(&card, &card_v1, &card_url, &config)?;
        let endpoint = ranked.remove(0);
        // Fallbacks for a peer that refuses the chosen version: one per other version.
        let mut fallbacks: Vec<Endpoint> = Vec::new();
        for e in ranked {
            if e.version != endpoint.version && fallbacks.iter().all(|f| f.version != e.version) {
                fallbacks.push(e);
            }
        }
        let name = config
            .name
            .clone()
            .unwrap_or_else(|| card_v1.name.trim().to_string());
        if name.is_empty() {
            return Err(A2aError::Card {
                url: card_url,
                message: "the card has an empty `name` and the reference sets no `name`".into(),
            });
        }
        Ok(A2aSubagentDefinition {
            name,
            description: describe(&card_v1),
            reference: reference.clone(),
            card,
            card_v1,
            card_url,
            endpoint,
            fallbacks,
            config,
            verification: self.verification.clone(),
        })
    }

    /// [`resolve_a2a`](Self::resolve_a2a) as the SPI words it: a failure is a
    /// [`SubagentError::Resolution`] naming the URI (the kind's and the erased resolver's one
    /// path).
    pub(crate) async fn resolve_typed(
        &self,
        reference: &SubagentReference,
    ) -> Result<A2aSubagentDefinition, SubagentError> {
        let def = self
            .resolve_a2a(reference)
            .await
            .map_err(|e| SubagentError::resolution(reference.uri.clone(), e))?;
        tracing::debug!(
            agent = %def.name,
            endpoint = %def.endpoint.url,
            binding = def.endpoint.binding.as_str(),
            version = def.endpoint.version.as_str(),
            "resolved A2A agent"
        );
        Ok(def)
    }

    async fn fetch_card(&self, url: &str, config: &A2aConfig) -> Result<AgentCard, A2aError> {
        let resp = self
            .http
            .get(url)
            .headers(config.headers.clone())
            .header(http::header::ACCEPT, "application/json")
            // Clients send the version on every request; a server doing legacy card discovery
            // answers a request without it with the 0.3 card.
            .header(VERSION_HEADER, ProtocolVersion::V1.as_str())
            .timeout(config.timeout.min(std::time::Duration::from_secs(60)))
            .send()
            .await
            .map_err(|e| A2aError::http(url, e))?;
        let status = resp.status();
        let bytes = read_body(resp, url).await?;
        if !status.is_success() {
            return Err(A2aError::status(url, status.as_u16(), &bytes));
        }
        self.verification.check(&self.http, url, &bytes).await?;
        parse_card(url, &bytes)
    }
}

/// Parses a card, detecting its version: `supportedInterfaces` means 1.0, `url` (with
/// `protocolVersion`) means 0.3.
pub fn parse_card(url: &str, bytes: &[u8]) -> Result<AgentCard, A2aError> {
    let v: serde_json::Value = serde_json::from_slice(bytes).map_err(|e| A2aError::Card {
        url: url.to_string(),
        message: format!("not JSON: {e}"),
    })?;
    let bad = |e: serde_json::Error, which: &str| A2aError::Card {
        url: url.to_string(),
        message: format!("invalid {which} agent card: {e}"),
    };
    if v.get("supportedInterfaces").is_some() {
        // A 0.3 card with the 1.0 interfaces embedded (a server's legacy discovery) has 0.3
        // security shapes, which the 1.0 type refuses: read it as the 0.3 card it is.
        match serde_json::from_value::<v1::AgentCard>(v.clone()) {
            Ok(c) => Ok(AgentCard::V1(c)),
            Err(e) if v.get("url").is_some() => serde_json::from_value::<v03::AgentCard>(v)
                .map(AgentCard::V03)
                .map_err(|_| bad(e, "1.0")),
            Err(e) => Err(bad(e, "1.0")),
        }
    } else if v.get("url").is_some() {
        serde_json::from_value::<v03::AgentCard>(v)
            .map(AgentCard::V03)
            .map_err(|e| bad(e, "0.3"))
    } else {
        Err(A2aError::Card {
            url: url.to_string(),
            message: "neither `supportedInterfaces` (A2A 1.0) nor `url` (A2A 0.3) is present"
                .into(),
        })
    }
}

/// Picks the interface to use: among JSON-RPC and HTTP+JSON interfaces this client speaks,
/// the reference's preferred version and binding first, then 1.0 before 0.3, then JSON-RPC
/// before HTTP+JSON, then card order.
pub fn choose_endpoint(
    card: &AgentCard,
    card_v1: &v1::AgentCard,
    card_url: &str,
    config: &A2aConfig,
) -> Result<Endpoint, A2aError> {
    let mut all = usable_endpoints(card, card_v1, card_url, config)?;
    Ok(all.swap_remove(0))
}

/// The URL to call `iface` at, or `None` when it is not usable: a gRPC address is `host:port`
/// (no scheme: plain HTTP/2) and serves 1.0 only; any other URL is absolute or relative to the
/// card's (`base`).
fn interface_url(
    iface: &v1::AgentInterface,
    binding: Binding,
    version: ProtocolVersion,
    base: Option<&reqwest::Url>,
) -> Option<String> {
    #[cfg(feature = "grpc-client")]
    if binding == Binding::Grpc {
        if version != ProtocolVersion::V1 {
            return None;
        }
        return Some(if iface.url.contains("://") {
            iface.url.clone()
        } else {
            format!("http://{}", iface.url)
        });
    }
    #[cfg(not(feature = "grpc-client"))]
    let _ = (binding, version);
    match reqwest::Url::parse(&iface.url) {
        Ok(u) => Some(u.to_string()),
        Err(_) => base
            .and_then(|b| b.join(&iface.url).ok())
            .map(|u| u.to_string()),
    }
}

/// Every interface of the card this client can speak, best first (the order of
/// [`choose_endpoint`]); never empty on success. Interfaces the reference's credentials may
/// not go to are left out (another origin than the reference URL's, unless allowed with
/// [`keys::ALLOWED_ORIGINS`](super::keys::ALLOWED_ORIGINS)), as are plain-HTTP interfaces of a
/// card read over HTTPS; when none is left, the error says why and names both URLs.
pub fn usable_endpoints(
    card: &AgentCard,
    card_v1: &v1::AgentCard,
    card_url: &str,
    config: &A2aConfig,
) -> Result<Vec<Endpoint>, A2aError> {
    let default_version = match card {
        AgentCard::V1(_) => ProtocolVersion::V1,
        AgentCard::V03(_) => ProtocolVersion::V03,
    };
    let base = reqwest::Url::parse(card_url).ok();
    let mut candidates: Vec<(usize, Endpoint)> = Vec::new();
    // The first interface refused for its origin (downgrade, or credentials elsewhere).
    let mut refused: Option<A2aError> = None;
    for (i, iface) in card_v1.supported_interfaces.iter().enumerate() {
        let Some(binding) = Binding::parse(&iface.protocol_binding) else {
            continue;
        };
        let version = if iface.protocol_version.trim().is_empty() {
            Some(default_version)
        } else {
            ProtocolVersion::parse(&iface.protocol_version)
        };
        let Some(version) = version else { continue };
        let Some(url) = interface_url(iface, binding, version, base.as_ref()) else {
            continue;
        };
        if let Err(e) = config.check_interface(card_url, &url) {
            refused.get_or_insert(e);
            continue;
        }
        candidates.push((
            i,
            Endpoint {
                url,
                binding,
                version,
                tenant: iface.tenant.clone().filter(|t| !t.is_empty()),
            },
        ));
    }
    let rank = |e: &Endpoint, i: usize| {
        (
            config.version.is_some_and(|v| v != e.version),
            config.binding.is_some_and(|b| b != e.binding),
            e.version != ProtocolVersion::V1,
            e.binding != Binding::JsonRpc,
            i,
        )
    };
    candidates.sort_by_key(|(i, e)| rank(e, *i));
    let ranked: Vec<Endpoint> = candidates.into_iter().map(|(_, e)| e).collect();
    if ranked.is_empty() {
        if let Some(e) = refused {
            return Err(e);
        }
        return Err(A2aError::Card {
            url: card_url.to_string(),
            message: format!(
                "no usable interface: this client speaks JSON-RPC and HTTP+JSON (1.0, 0.3) and, with its grpc-client feature, gRPC (1.0); the card offers {}",
                card_v1
                    .supported_interfaces
                    .iter()
                    .map(|i| format!("{} {} at {}", i.protocol_binding, i.protocol_version, i.url))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        });
    }
    Ok(ranked)
}

#[subagent_spi::async_trait]
impl SubagentResolver for A2aResolver {
    fn can_resolve(&self, reference: &SubagentReference) -> bool {
        reference.is_kind(KIND)
    }

    async fn resolve(
        &self,
        reference: &SubagentReference,
    ) -> Result<Arc<dyn SubagentDefinition>, SubagentError> {
        Ok(Arc::new(self.resolve_typed(reference).await?))
    }
}
