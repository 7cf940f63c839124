//! The card routes: `agent-card.json` (1.0, or the 0.3 card under legacy discovery) and
//! `agent.json` (0.3), with `Cache-Control`, `ETag` / `If-None-Match` and `Last-Modified` /
//! `If-Modified-Since`; signed when [`ServerConfig::card_signer`] is set.

use axum::body::Body;
use axum::extract::{Request, State};
use axum::response::Response;
use http::request::Parts;
use http::{HeaderMap, HeaderValue, StatusCode, header};
use serde::Serialize;

use super::reply::{json_bytes, respond};
use super::request::requested_version;
use super::{AgentCtx, Hosted, Shared};
use crate::server::ServerConfig;
use crate::server::card::{card_v1, card_v03, signatures, signed};
use crate::types::{ProtocolVersion, v1, v03};

/// `GET {agent}/.well-known/agent-card.json`.
pub(super) async fn agent_card(State(ctx): State<AgentCtx>, req: Request) -> Response {
    let (parts, _) = req.into_parts();
    let shape = card_shape(&ctx.shared.cfg, &parts);
    card(&ctx.shared, ctx.agent(), &parts, shape)
}

/// `GET {agent}/.well-known/agent.json`: always the 0.3 card.
pub(super) async fn agent_json(State(ctx): State<AgentCtx>, req: Request) -> Response {
    let (parts, _) = req.into_parts();
    card(&ctx.shared, ctx.agent(), &parts, CardShape::V03)
}

/// The public URL of an agent: the configured base, else scheme + host from `X-Forwarded-*` /
/// `Host`, plus the agent's path.
pub(crate) fn agent_url(cfg: &ServerConfig, agent: &Hosted, headers: &HeaderMap) -> String {
    if let Some(base) = &cfg.public_url {
        return format!("{}{}", base.trim_end_matches('/'), agent.path);
    }
    let first = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split(',').next())
            .map(str::trim)
            .filter(|v| !v.is_empty())
    };
    let proto = first("x-forwarded-proto")
        .filter(|p| matches!(*p, "http" | "https"))
        .unwrap_or("http");
    let host = first("x-forwarded-host")
        .or_else(|| first(header::HOST.as_str()))
        .filter(|h| {
            h.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b".-:[]_".contains(&b))
        })
        .unwrap_or("localhost");
    let prefix = first("x-forwarded-prefix")
        .filter(|p| {
            p.starts_with('/')
                && p.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"/-._~".contains(&b))
        })
        .map(|p| p.trim_end_matches('/'))
        .unwrap_or("");
    format!("{proto}://{host}{prefix}{}", agent.path)
}

/// Which card a request gets.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum CardShape {
    /// The 1.0 card.
    V1,
    /// The 0.3 card.
    V03,
    /// The 0.3 card with the 1.0 `supportedInterfaces` embedded (legacy card discovery).
    V03WithV1Interfaces,
}

/// The card `agent-card.json` serves for this request. With
/// [`ServerConfig::legacy_card_discovery`]: the 1.0 card when the request's `A2A-Version`
/// (header or query parameter) names 1.x, else (absent, empty, 0.x) the 0.3 card with the 1.0
/// interfaces embedded. Without it: the card of [`ServerConfig::agent_card_version`].
pub(super) fn card_shape(cfg: &ServerConfig, parts: &Parts) -> CardShape {
    if !cfg.legacy_card_discovery {
        return match cfg.agent_card_version {
            ProtocolVersion::V03 => CardShape::V03,
            _ => CardShape::V1,
        };
    }
    match requested_version(parts) {
        Ok(Some(ProtocolVersion::V03) | None) => CardShape::V03WithV1Interfaces,
        // 1.x, or a version this server does not speak: the current card.
        _ => CardShape::V1,
    }
}

/// The 0.3 card with the 1.0 card's `supportedInterfaces` beside its own fields (the two field
/// sets are disjoint), as the official JavaScript SDK's `legacyCompat` serves it: 0.3 clients
/// read `url` / `preferredTransport`, 1.0 clients read `supportedInterfaces`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct LegacyCard {
    #[serde(flatten)]
    card: v03::AgentCard,
    supported_interfaces: Vec<v1::AgentInterface>,
}

/// An HTTP-date (`Last-Modified`) for a time.
pub(super) fn http_date(t: std::time::SystemTime) -> String {
    httpdate::fmt_http_date(t)
}

pub(super) fn card(shared: &Shared, agent: &Hosted, parts: &Parts, shape: CardShape) -> Response {
    let url = agent_url(&shared.cfg, agent, &parts.headers);
    let auth = agent.auth.as_ref();
    let push = agent.engine.push_enabled();
    let ext = agent.offers_extended_card();
    let signer = shared.cfg.card_signer.as_ref();
    let body = match shape {
        CardShape::V03 => json_bytes(&signed(
            signer,
            card_v03(card_v1(&agent.info, auth, &url, push, ext)),
        )),
        CardShape::V03WithV1Interfaces => {
            #[allow(unused_mut)]
            let mut v1_card = card_v1(&agent.info, auth, &url, push, ext);
            #[cfg(feature = "grpc-server")]
            add_interface(&mut v1_card, &shared.cfg, agent);
            let mut legacy = LegacyCard {
                card: card_v03(card_v1(&agent.info, auth, &url, push, ext)),
                supported_interfaces: v1_card.supported_interfaces,
            };
            // Signed as served: the embedded interfaces are part of the payload.
            if let Some(s) = signer {
                legacy.card.signatures =
                    signatures(s, &legacy).into_iter().map(Into::into).collect();
            }
            json_bytes(&legacy)
        }
        CardShape::V1 => {
            #[allow(unused_mut)]
            let mut c = card_v1(&agent.info, auth, &url, push, ext);
            #[cfg(feature = "grpc-server")]
            add_interface(&mut c, &shared.cfg, agent);
            json_bytes(&signed(signer, c))
        }
    };
    let etag = {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        body.hash(&mut h);
        format!("\"{:016x}\"", h.finish())
    };
    // The card is built from the mount's fixed information: it last changed when the server
    // was built (HTTP dates have whole seconds, so a client's copy compares equal).
    let last_modified = http_date(shared.started);
    let not_modified = match parts.headers.get(header::IF_NONE_MATCH) {
        // If-None-Match wins over If-Modified-Since (RFC 9110 §13.1.3).
        Some(v) => v.to_str().ok().is_some_and(|v| {
            v.split(',').any(|t| {
                let t = t.trim();
                t == "*" || t.strip_prefix("W/").unwrap_or(t) == etag
            })
        }),
        None => parts
            .headers
            .get(header::IF_MODIFIED_SINCE)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| httpdate::parse_http_date(v).ok())
            .is_some_and(|since| {
                httpdate::parse_http_date(&last_modified).is_ok_and(|lm| lm <= since)
            }),
    };
    let mut r = if not_modified {
        let mut r = Response::new(Body::empty());
        *r.status_mut() = StatusCode::NOT_MODIFIED;
        r
    } else {
        respond(StatusCode::OK, body)
    };
    let h = r.headers_mut();
    if let Ok(v) = HeaderValue::from_str(&format!(
        "public, max-age={}",
        shared.cfg.card_max_age.as_secs()
    )) {
        h.insert(header::CACHE_CONTROL, v);
    }
    if let Ok(v) = HeaderValue::from_str(&etag) {
        h.insert(header::ETAG, v);
    }
    if let Ok(v) = HeaderValue::from_str(&last_modified) {
        h.insert(header::LAST_MODIFIED, v);
    }
    if shared.cfg.legacy_card_discovery {
        // Caches keep one copy per requested version.
        h.insert(header::VARY, HeaderValue::from_static("A2A-Version"));
    }
    r
}

/// The GRPC interface of an agent's card, when the server has a gRPC address.
#[cfg(feature = "grpc-server")]
pub(crate) fn interface(
    cfg: &crate::server::ServerConfig,
    agent: &Hosted,
) -> Option<v1::AgentInterface> {
    let url = cfg.grpc_url.as_ref()?;
    let tenant = agent.path.trim_start_matches('/');
    Some(v1::AgentInterface {
        url: url.clone(),
        protocol_binding: crate::types::binding::GRPC.to_string(),
        tenant: (!tenant.is_empty()).then(|| tenant.to_string()),
        protocol_version: ProtocolVersion::V1.as_str().to_string(),
    })
}

/// Adds the GRPC interface to a 1.0 card (after the 1.0 HTTP interfaces), when served.
#[cfg(feature = "grpc-server")]
pub(crate) fn add_interface(
    card: &mut v1::AgentCard,
    cfg: &crate::server::ServerConfig,
    agent: &Hosted,
) {
    if let Some(i) = interface(cfg, agent) {
        let at = card
            .supported_interfaces
            .iter()
            .position(|i| i.protocol_version != ProtocolVersion::V1.as_str())
            .unwrap_or(card.supported_interfaces.len());
        card.supported_interfaces.insert(at, i);
    }
}
