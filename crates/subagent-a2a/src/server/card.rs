//! Agent cards: what a hosted agent says about itself ([`AgentInfo`]), the optional credential
//! check ([`ServerAuth`]), and the 1.0 / 0.3 cards built from them per request.

use std::collections::BTreeMap;

use crate::types::{ProtocolVersion, binding, v1, v03};

/// What a hosted agent's card says about it. The interfaces (URLs, bindings, versions) and the
/// security declarations are added by the server.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct AgentInfo {
    /// The agent's name.
    pub name: String,
    /// What it does.
    pub description: String,
    /// The agent's own version (default `1.0.0`).
    pub version: String,
    /// Its skills (default: none; a subagent gets one skill describing it).
    pub skills: Vec<v1::AgentSkill>,
    /// The provider.
    pub provider: Option<v1::AgentProvider>,
    /// A documentation URL.
    pub documentation_url: Option<String>,
    /// An icon URL.
    pub icon_url: Option<String>,
    /// Streaming is offered (default true).
    pub streaming: bool,
    /// Accepted input media types (default `text/plain`, `application/json`); parts with
    /// another `mediaType` are refused with ContentTypeNotSupported.
    pub default_input_modes: Vec<String>,
    /// Produced output media types (default `text/plain`, `application/json`).
    pub default_output_modes: Vec<String>,
    /// Protocol extensions; a `required` one must be named in the client's `A2A-Extensions`
    /// header, else the request is refused with ExtensionSupportRequired.
    pub extensions: Vec<v1::AgentExtension>,
}

impl AgentInfo {
    /// An agent with a name and description and the defaults above.
    pub fn new(name: impl Into<String>, description: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            description: description.into(),
            version: "1.0.0".into(),
            skills: Vec::new(),
            provider: None,
            documentation_url: None,
            icon_url: None,
            streaming: true,
            default_input_modes: vec!["text/plain".into(), "application/json".into()],
            default_output_modes: vec!["text/plain".into(), "application/json".into()],
            extensions: Vec::new(),
        }
    }

    /// Adds a skill (builder style).
    #[must_use]
    pub fn with_skill(mut self, skill: v1::AgentSkill) -> Self {
        self.skills.push(skill);
        self
    }

    /// Sets the agent's version (builder style).
    #[must_use]
    pub fn with_version(mut self, version: impl Into<String>) -> Self {
        self.version = version.into();
        self
    }

    /// Sets the accepted input media types (builder style).
    #[must_use]
    pub fn with_input_modes(mut self, modes: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.default_input_modes = modes.into_iter().map(Into::into).collect();
        self
    }

    /// Turns streaming on or off (builder style).
    #[must_use]
    pub fn with_streaming(mut self, on: bool) -> Self {
        self.streaming = on;
        self
    }

    /// Sets the provider (builder style).
    #[must_use]
    pub fn with_provider(
        mut self,
        organization: impl Into<String>,
        url: impl Into<String>,
    ) -> Self {
        self.provider = Some(v1::AgentProvider {
            organization: organization.into(),
            url: url.into(),
        });
        self
    }

    /// True when a part with this media type is accepted (`*/*` and `type/*` wildcards work;
    /// parameters such as `; charset=utf-8` are ignored).
    pub fn accepts(&self, media_type: &str) -> bool {
        // The usual case first: a mode named exactly (no parsing, no case folding).
        if self.default_input_modes.iter().any(|m| m == media_type) {
            return true;
        }
        let mt = media_type.split(';').next().unwrap_or("").trim();
        let mt_type = mt.split('/').next().unwrap_or("");
        self.default_input_modes.iter().any(|m| {
            let m = m.trim();
            m == "*/*"
                || m.eq_ignore_ascii_case(mt)
                || m.strip_suffix("/*")
                    .is_some_and(|ty| ty.eq_ignore_ascii_case(mt_type))
        })
    }
}

/// A credential check for one hosted agent, declared in its card. Secrets are never printed.
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ServerAuth {
    /// `Authorization: Bearer <token>` with one of these tokens.
    Bearer {
        /// Accepted tokens.
        tokens: Vec<String>,
    },
    /// An API key in a header.
    ApiKey {
        /// The header name (e.g. `X-API-Key`).
        header: String,
        /// Accepted keys.
        keys: Vec<String>,
    },
    /// One of these keys, either as `Authorization: Bearer <key>` or in the `header` (e.g.
    /// `X-API-Key: <key>`); the card declares both schemes, either one sufficing.
    BearerOrApiKey {
        /// The API-key header name.
        header: String,
        /// Accepted keys.
        keys: Vec<String>,
    },
}

impl std::fmt::Debug for ServerAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ServerAuth::Bearer { tokens } => f
                .debug_struct("Bearer")
                .field("tokens", &format_args!("<{} redacted>", tokens.len()))
                .finish(),
            ServerAuth::ApiKey { header, keys } => f
                .debug_struct("ApiKey")
                .field("header", header)
                .field("keys", &format_args!("<{} redacted>", keys.len()))
                .finish(),
            ServerAuth::BearerOrApiKey { header, keys } => f
                .debug_struct("BearerOrApiKey")
                .field("header", header)
                .field("keys", &format_args!("<{} redacted>", keys.len()))
                .finish(),
        }
    }
}

impl ServerAuth {
    /// Bearer auth with one token.
    pub fn bearer(token: impl Into<String>) -> Self {
        ServerAuth::Bearer {
            tokens: vec![token.into()],
        }
    }

    /// API-key auth with one key in `header`.
    pub fn api_key(header: impl Into<String>, key: impl Into<String>) -> Self {
        ServerAuth::ApiKey {
            header: header.into(),
            keys: vec![key.into()],
        }
    }

    /// Keys accepted as a bearer token or in the `X-API-Key` header.
    pub fn keys(keys: impl IntoIterator<Item = impl Into<String>>) -> Self {
        ServerAuth::BearerOrApiKey {
            header: "X-API-Key".to_string(),
            keys: keys.into_iter().map(Into::into).collect(),
        }
    }

    /// The schemes the card declares; a client satisfies any one of them.
    fn schemes(&self) -> Vec<(&'static str, v1::SecurityScheme)> {
        let bearer = || {
            (
                "bearer",
                v1::SecurityScheme::HttpAuthSecurityScheme(v1::HttpAuthSecurityScheme {
                    description: Some("Bearer token in the Authorization header".into()),
                    scheme: "Bearer".into(),
                    bearer_format: None,
                }),
            )
        };
        let api_key = |header: &str| {
            (
                "apiKey",
                v1::SecurityScheme::ApiKeySecurityScheme(v1::ApiKeySecurityScheme {
                    description: Some(format!("API key in the `{header}` header")),
                    location: "header".into(),
                    name: header.to_string(),
                }),
            )
        };
        match self {
            ServerAuth::Bearer { .. } => vec![bearer()],
            ServerAuth::ApiKey { header, .. } => vec![api_key(header)],
            ServerAuth::BearerOrApiKey { header, .. } => vec![bearer(), api_key(header)],
        }
    }

    /// True when a bearer token is one of the accepted schemes.
    pub(crate) fn takes_bearer(&self) -> bool {
        matches!(
            self,
            ServerAuth::Bearer { .. } | ServerAuth::BearerOrApiKey { .. }
        )
    }

    /// True when `headers` carry an accepted credential (every key is compared in constant
    /// time). The server checks this on every request; other servers of the same process
    /// (e.g. MCP over HTTP) use it to apply the same rule.
    pub fn verify(&self, headers: &http::HeaderMap) -> bool {
        self.check(headers)
    }

    /// True when the request headers carry an accepted credential.
    pub(crate) fn check(&self, headers: &http::HeaderMap) -> bool {
        use super::util::constant_time_eq;
        let bearer = |tokens: &[String]| {
            headers
                .get(http::header::AUTHORIZATION)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| {
                    let (scheme, rest) = v.split_once(' ')?;
                    scheme.eq_ignore_ascii_case("bearer").then_some(rest.trim())
                })
                .is_some_and(|t| {
                    // Every key is compared, so the time taken does not tell which matched.
                    tokens.iter().fold(false, |hit, k| {
                        constant_time_eq(k.as_bytes(), t.as_bytes()) | hit
                    })
                })
        };
        let header_key = |header: &str, keys: &[String]| {
            headers.get(header).is_some_and(|v| {
                keys.iter().fold(false, |hit, k| {
                    constant_time_eq(k.as_bytes(), v.as_bytes()) | hit
                })
            })
        };
        match self {
            ServerAuth::Bearer { tokens } => bearer(tokens),
            ServerAuth::ApiKey { header, keys } => header_key(header, keys),
            ServerAuth::BearerOrApiKey { header, keys } => bearer(keys) | header_key(header, keys),
        }
    }
}

/// The 1.0 card for an agent reachable at `url` (JSON-RPC 1.0, HTTP+JSON 1.0, JSON-RPC 0.3 and
/// HTTP+JSON 0.3, in that order of preference).
pub(crate) fn card_v1(
    info: &AgentInfo,
    auth: Option<&ServerAuth>,
    url: &str,
    push: bool,
    extended: bool,
) -> v1::AgentCard {
    let iface = |b: &str, v: ProtocolVersion| v1::AgentInterface {
        url: url.to_string(),
        protocol_binding: b.to_string(),
        tenant: None,
        protocol_version: v.as_str().to_string(),
    };
    let mut security_schemes = BTreeMap::new();
    let mut security_requirements = Vec::new();
    if let Some(a) = auth {
        // One requirement per scheme: any one of them suffices.
        for (name, scheme) in a.schemes() {
            security_schemes.insert(name.to_string(), scheme);
            let mut schemes = BTreeMap::new();
            schemes.insert(name.to_string(), v1::StringList::default());
            security_requirements.push(v1::SecurityRequirement { schemes });
        }
    }
    v1::AgentCard {
        name: info.name.clone(),
        description: info.description.clone(),
        supported_interfaces: vec![
            iface(binding::JSONRPC, ProtocolVersion::V1),
            iface(binding::HTTP_JSON, ProtocolVersion::V1),
            iface(binding::JSONRPC, ProtocolVersion::V03),
            iface(binding::HTTP_JSON, ProtocolVersion::V03),
        ],
        provider: info.provider.clone(),
        version: info.version.clone(),
        documentation_url: info.documentation_url.clone(),
        capabilities: v1::AgentCapabilities {
            streaming: Some(info.streaming),
            push_notifications: Some(push),
            extensions: info.extensions.clone(),
            extended_agent_card: Some(extended),
        },
        security_schemes,
        security_requirements,
        default_input_modes: info.default_input_modes.clone(),
        default_output_modes: info.default_output_modes.clone(),
        skills: info.skills.clone(),
        signatures: Vec::new(),
        icon_url: info.icon_url.clone(),
    }
}

/// The 0.3 form of `card` (as [`card_v1`] makes it): its 0.3 interfaces only, the first one's
/// `url` the JSON-RPC endpoint, `protocolVersion` 0.3.0.
pub(crate) fn card_v03(mut card: v1::AgentCard) -> v03::AgentCard {
    let extended = card.capabilities.extended_agent_card == Some(true);
    card.supported_interfaces
        .retain(|i| i.protocol_version == ProtocolVersion::V03.as_str());
    let mut card: v03::AgentCard = card.into();
    card.supports_authenticated_extended_card = extended.then_some(true);
    card
}

/// A card shape that carries JWS signatures (the 1.0 and the 0.3 card).
pub(crate) trait SignableCard: serde::Serialize {
    /// Replaces the card's signatures.
    fn set_signatures(&mut self, signatures: Vec<v1::AgentCardSignature>);
}

impl SignableCard for v1::AgentCard {
    fn set_signatures(&mut self, signatures: Vec<v1::AgentCardSignature>) {
        self.signatures = signatures;
    }
}

impl SignableCard for v03::AgentCard {
    fn set_signatures(&mut self, signatures: Vec<v1::AgentCardSignature>) {
        self.signatures = signatures.into_iter().map(Into::into).collect();
    }
}

/// `card` with the signatures of `signer` over its form without signatures (none without a
/// signer).
pub(crate) fn signed<C: SignableCard>(
    signer: Option<&crate::signing::CardSigner>,
    mut card: C,
) -> C {
    if let Some(s) = signer {
        card.set_signatures(Vec::new());
        let signatures = signatures(s, &card);
        card.set_signatures(signatures);
    }
    card
}

/// The signatures of a card as served (its JSON form without `signatures`).
pub(crate) fn signatures<T: serde::Serialize>(
    signer: &crate::signing::CardSigner,
    card: &T,
) -> Vec<v1::AgentCardSignature> {
    signer.sign(card).unwrap_or_else(|e| {
        // Our cards always serialize to an object; say so should that ever change.
        tracing::warn!(error = %e, "could not sign the agent card");
        Vec::new()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn media_types_match_with_wildcards_and_parameters() {
        let info = AgentInfo::new("a", "b").with_input_modes(["text/plain", "image/*"]);
        assert!(info.accepts("text/plain; charset=utf-8"));
        assert!(info.accepts("image/png"));
        assert!(!info.accepts("application/x-unknown"));
        assert!(
            AgentInfo::new("a", "b")
                .with_input_modes(["*/*"])
                .accepts("x/y")
        );
    }

    #[test]
    fn auth_checks_headers_and_hides_secrets() {
        let a = ServerAuth::bearer("s3cret");
        let mut h = http::HeaderMap::new();
        assert!(!a.check(&h));
        h.insert("authorization", "Bearer s3cret".parse().unwrap());
        assert!(a.check(&h));
        h.insert("authorization", "Bearer wrong".parse().unwrap());
        assert!(!a.check(&h));
        assert!(!format!("{a:?}").contains("s3cret"));
        let k = ServerAuth::api_key("X-API-Key", "k1");
        let mut h = http::HeaderMap::new();
        h.insert("x-api-key", "k1".parse().unwrap());
        assert!(k.check(&h));
    }

    #[test]
    fn cards_of_both_versions_point_at_the_url() {
        let info = AgentInfo::new("echo", "Echoes");
        let both = ServerAuth::keys(["k1", "k2"]);
        let mut h = http::HeaderMap::new();
        h.insert("authorization", "Bearer k2".parse().unwrap());
        assert!(both.check(&h));
        let mut h = http::HeaderMap::new();
        h.insert("x-api-key", "k1".parse().unwrap());
        assert!(both.check(&h));
        h.insert("x-api-key", "k3".parse().unwrap());
        assert!(!both.check(&h));
        assert!(!format!("{both:?}").contains("k1"));
        let c = card_v1(&info, Some(&both), "http://h/echo", false, false);
        assert_eq!(c.security_schemes.len(), 2);
        assert_eq!(c.security_requirements.len(), 2);
        let c03 = card_v03(card_v1(&info, Some(&both), "http://h/echo", false, false));
        assert_eq!(c03.security_schemes.len(), 2);
        assert_eq!(c03.security.len(), 2);
        let c1 = card_v1(
            &info,
            Some(&ServerAuth::bearer("t")),
            "http://h/echo",
            false,
            false,
        );
        assert_eq!(c1.supported_interfaces.len(), 4);
        assert!(c1.security_schemes.contains_key("bearer"));
        let c03 = card_v03(card_v1(&info, None, "http://h/echo", false, false));
        assert_eq!(c03.url, "http://h/echo");
        assert_eq!(c03.preferred_transport.as_deref(), Some("JSONRPC"));
        assert!(c03.protocol_version.starts_with("0.3"));
        assert!(
            c03.additional_interfaces
                .iter()
                .any(|i| i.transport == "HTTP+JSON")
        );
    }
}
