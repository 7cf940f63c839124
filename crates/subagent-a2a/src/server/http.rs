//! The HTTP layer: routes a request to a hosted agent, then to its card, its JSON-RPC endpoint
//! (1.0 and 0.3 methods) or its HTTP+JSON routes, and encodes answers and SSE streams in the
//! caller's version and binding.

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::atomic::{AtomicU8, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::response::Response;
use futures::Stream;
use http::request::Parts;
use http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode, header};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use serde_json::value::RawValue;
use subagent_spi::CancellationToken;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc};

use super::ServerConfig;
use super::card::{AgentInfo, ServerAuth, card_v1, card_v03};
use super::engine::{ApiError, Engine, Event, SendParams, Started, trim_history};
use crate::types::jsonrpc::{RequestId, RpcError, a2a_error, codes};
use crate::types::{ProtocolVersion, VERSION_HEADER, json_error_message, v1, v03};

/// One hosted agent.
pub(crate) struct Hosted {
    /// `""` for the root, else `/a/b` (no trailing slash).
    pub path: String,
    pub engine: Arc<Engine>,
    pub info: AgentInfo,
    pub auth: Option<ServerAuth>,
}

/// Everything the router needs.
pub(crate) struct Shared {
    /// Longest path first.
    pub agents: Vec<Hosted>,
    pub cfg: ServerConfig,
    pub streams: StreamLimits,
    pub shutdown: CancellationToken,
    /// Starts (once, from the first request) the task that cancels every running handler
    /// when `shutdown` fires, however the router is served.
    pub watcher: std::sync::Once,
    /// When the server was built: the cards' `Last-Modified`.
    pub started: std::time::SystemTime,
}

impl Shared {
    /// Cancels every running handler of every agent.
    pub fn cancel_all(&self) {
        for a in &self.agents {
            a.engine.cancel_all();
        }
    }
}

impl Shared {
    fn find<'a>(&'a self, path: &'a str) -> Option<(&'a Hosted, &'a str)> {
        self.agents.iter().find_map(|a| {
            if a.path.is_empty() {
                return Some((a, path));
            }
            let rest = path.strip_prefix(a.path.as_str())?;
            (rest.is_empty() || rest.starts_with('/')).then_some((a, rest))
        })
    }
}

/// The binding and version a reply is encoded for.
#[derive(Clone)]
enum Wire {
    RpcV1(RequestId),
    RpcV03(RequestId),
    Rest,
}

impl Wire {
    fn version(&self) -> ProtocolVersion {
        match self {
            Wire::RpcV03(_) => ProtocolVersion::V03,
            _ => ProtocolVersion::V1,
        }
    }
}

#[derive(Serialize)]
struct RpcOk<'a, T: Serialize> {
    jsonrpc: &'static str,
    id: &'a RequestId,
    result: &'a T,
}

#[derive(Serialize)]
struct RpcErr<'a> {
    jsonrpc: &'static str,
    id: &'a RequestId,
    error: &'a RpcError,
}

const JSON: &str = "application/json";

fn json_bytes<T: Serialize>(v: &T) -> Bytes {
    // Serializing our own types into a Vec cannot fail (no non-string map keys, no I/O).
    // Most replies fit in 256 bytes; starting there saves the Vec's doubling steps.
    let mut out = Vec::with_capacity(256);
    match serde_json::to_writer(&mut out, v) {
        Ok(()) => Bytes::from(out),
        Err(_) => Bytes::new(),
    }
}

fn respond(status: StatusCode, body: Bytes) -> Response {
    let mut r = Response::new(Body::from(body));
    *r.status_mut() = status;
    r.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(JSON));
    r
}

/// The HTTP status and gRPC status name of the HTTP+JSON binding for an error code.
fn http_status(code: i32) -> (StatusCode, &'static str) {
    match code {
        codes::TASK_NOT_FOUND => (StatusCode::NOT_FOUND, "NOT_FOUND"),
        codes::TASK_NOT_CANCELABLE => (StatusCode::CONFLICT, "FAILED_PRECONDITION"),
        codes::PUSH_NOTIFICATION_NOT_SUPPORTED
        | codes::UNSUPPORTED_OPERATION
        | codes::VERSION_NOT_SUPPORTED => (StatusCode::BAD_REQUEST, "UNIMPLEMENTED"),
        codes::CONTENT_TYPE_NOT_SUPPORTED => {
            (StatusCode::UNSUPPORTED_MEDIA_TYPE, "INVALID_ARGUMENT")
        }
        codes::INVALID_AGENT_RESPONSE => (StatusCode::BAD_GATEWAY, "INTERNAL"),
        codes::EXTENDED_AGENT_CARD_NOT_CONFIGURED | codes::EXTENSION_SUPPORT_REQUIRED => {
            (StatusCode::BAD_REQUEST, "FAILED_PRECONDITION")
        }
        codes::METHOD_NOT_FOUND => (StatusCode::NOT_FOUND, "NOT_FOUND"),
        codes::INTERNAL_ERROR => (StatusCode::INTERNAL_SERVER_ERROR, "INTERNAL"),
        codes::SERVER_BUSY => (StatusCode::SERVICE_UNAVAILABLE, "UNAVAILABLE"),
        _ => (StatusCode::BAD_REQUEST, "INVALID_ARGUMENT"),
    }
}

/// `Retry-After` (seconds) sent with every ServerBusy (503) answer.
const RETRY_AFTER_SECS: &str = "5";

/// Adds `Retry-After` to a ServerBusy answer.
fn busy_headers(r: &mut Response, code: i32) {
    if code == codes::SERVER_BUSY {
        r.headers_mut().insert(
            header::RETRY_AFTER,
            HeaderValue::from_static(RETRY_AFTER_SECS),
        );
    }
}

fn rpc_error_object(e: &ApiError, v1_style: bool) -> RpcError {
    if v1_style {
        a2a_error(e.code, e.message.clone(), None)
    } else {
        RpcError::new(e.code, e.message.clone())
    }
}

fn rpc_error(status: StatusCode, id: &RequestId, e: &ApiError, v1_style: bool) -> Response {
    let err = rpc_error_object(e, v1_style);
    respond(
        status,
        json_bytes(&RpcErr {
            jsonrpc: "2.0",
            id,
            error: &err,
        }),
    )
}

/// An AIP-193 error body: `{"error": {"code", "status", "message", "details": [ErrorInfo]}}`.
fn rest_error(e: &ApiError) -> Response {
    let (status, name) = http_status(e.code);
    let mut r = rest_error_as(status, name, e);
    busy_headers(&mut r, e.code);
    r
}

/// An AIP-193 error body with the given HTTP status and status name (`code` is always the
/// HTTP status, so status line and body agree).
fn rest_error_as(status: StatusCode, name: &str, e: &ApiError) -> Response {
    let details = a2a_error(e.code, "", None)
        .data
        .unwrap_or_else(|| Value::Array(Vec::new()));
    let body = serde_json::json!({
        "error": {
            "code": status.as_u16(),
            "status": name,
            "message": e.message,
            "details": details,
        }
    });
    respond(status, json_bytes(&body))
}

fn error_for(wire: &Wire, e: &ApiError) -> Response {
    match wire {
        Wire::Rest => rest_error(e),
        Wire::RpcV1(id) => rpc_error_for(id, e, true),
        Wire::RpcV03(id) => rpc_error_for(id, e, false),
    }
}

/// A JSON-RPC error answer: HTTP 200, except ServerBusy (503 + `Retry-After`, so proxies and
/// clients see the overload without reading the body).
fn rpc_error_for(id: &RequestId, e: &ApiError, v1_style: bool) -> Response {
    if e.code == codes::SERVER_BUSY {
        let mut r = rpc_error(StatusCode::SERVICE_UNAVAILABLE, id, e, v1_style);
        busy_headers(&mut r, e.code);
        return r;
    }
    rpc_error(StatusCode::OK, id, e, v1_style)
}

/// `A2A-Version`, parsed once (a `&str` key is parsed and lower-cased on every lookup).
static VERSION_HEADER_NAME: HeaderName = HeaderName::from_static("a2a-version");
/// `A2A-Extensions`.
static EXTENSIONS_HEADER: HeaderName = HeaderName::from_static("a2a-extensions");

/// The entry point of every request.
pub(crate) async fn dispatch(State(shared): State<Arc<Shared>>, req: Request) -> Response {
    // Served by another loop with `ConnectInfo`: make the peer known for per-client caps.
    if PEER.try_with(|_| ()).is_err()
        && let Some(axum::extract::ConnectInfo(addr)) = req
            .extensions()
            .get::<axum::extract::ConnectInfo<SocketAddr>>()
            .copied()
    {
        return PEER.scope(addr, dispatch_inner(shared, req)).await;
    }
    dispatch_inner(shared, req).await
}

async fn dispatch_inner(shared: Arc<Shared>, req: Request) -> Response {
    shared.watcher.call_once(|| {
        let weak = Arc::downgrade(&shared);
        let token = shared.shutdown.clone();
        tokio::spawn(async move {
            token.cancelled().await;
            if let Some(s) = weak.upgrade() {
                s.cancel_all();
            }
        });
    });
    let (parts, body) = req.into_parts();
    let path = parts.uri.path();
    let Some((agent, rest)) = shared.find(path) else {
        return rest_error(&ApiError::new(
            codes::METHOD_NOT_FOUND,
            format!("no agent is served at `{path}`"),
        ));
    };
    match (&parts.method, rest) {
        (&Method::GET, "/.well-known/agent-card.json") => {
            card(&shared, agent, &parts, card_shape(&shared.cfg, &parts))
        }
        (&Method::GET, "/.well-known/agent.json") => card(&shared, agent, &parts, CardShape::V03),
        (&Method::POST, "" | "/") => {
            if let Some(r) = unauthorized(agent, &parts.headers) {
                return r;
            }
            jsonrpc(&shared, agent, &parts, body).await
        }
        (_, r)
            if r.starts_with("/message:")
                || r == "/tasks"
                || r.starts_with("/tasks/")
                || r == "/extendedAgentCard" =>
        {
            if let Some(r) = unauthorized(agent, &parts.headers) {
                return r;
            }
            rest_route(&shared, agent, &parts, body, rest).await
        }
        _ => rest_error(&ApiError::new(
            codes::METHOD_NOT_FOUND,
            format!("no route for {} `{path}`", parts.method),
        )),
    }
}

fn unauthorized(agent: &Hosted, headers: &HeaderMap) -> Option<Response> {
    let auth = agent.auth.as_ref()?;
    if auth.check(headers) {
        return None;
    }
    let mut r = respond(
        StatusCode::UNAUTHORIZED,
        json_bytes(&serde_json::json!({
            "error": {
                "code": 401,
                "status": "UNAUTHENTICATED",
                "message": format!("agent `{}` requires credentials (see securitySchemes in its card)", agent.info.name),
            }
        })),
    );
    if auth.takes_bearer() {
        r.headers_mut()
            .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    }
    Some(r)
}

// ---------------------------------------------------------------------------------------------
// Cards
// ---------------------------------------------------------------------------------------------

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
enum CardShape {
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
fn card_shape(cfg: &ServerConfig, parts: &Parts) -> CardShape {
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
struct LegacyCard {
    #[serde(flatten)]
    card: v03::AgentCard,
    supported_interfaces: Vec<v1::AgentInterface>,
}

/// An HTTP-date (`Last-Modified`) for a time.
fn http_date(t: std::time::SystemTime) -> String {
    httpdate::fmt_http_date(t)
}

fn card(shared: &Shared, agent: &Hosted, parts: &Parts, shape: CardShape) -> Response {
    let url = agent_url(&shared.cfg, agent, &parts.headers);
    let auth = agent.auth.as_ref();
    let body = match shape {
        CardShape::V03 => json_bytes(&card_v03(&agent.info, auth, &url)),
        CardShape::V03WithV1Interfaces => json_bytes(&LegacyCard {
            card: card_v03(&agent.info, auth, &url),
            supported_interfaces: card_v1(&agent.info, auth, &url).supported_interfaces,
        }),
        CardShape::V1 => json_bytes(&card_v1(&agent.info, auth, &url)),
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

// ---------------------------------------------------------------------------------------------
// Request helpers
// ---------------------------------------------------------------------------------------------

/// Why a request body could not be read.
pub(crate) enum BodyError {
    /// Larger than `max_body_bytes`.
    TooLarge(usize),
    /// Not received within `body_read_timeout`.
    TimedOut(Duration),
    /// The connection failed mid-body.
    Broken(String),
}

impl BodyError {
    /// The HTTP status, the AIP-193 status name and the error. A body over the limit is 413
    /// with `RESOURCE_EXHAUSTED` (what gRPC answers for an oversized message); a body that is
    /// too slow is 408 with `DEADLINE_EXCEEDED`.
    fn parts(&self) -> (StatusCode, &'static str, ApiError) {
        match self {
            BodyError::TooLarge(limit) => (
                StatusCode::PAYLOAD_TOO_LARGE,
                "RESOURCE_EXHAUSTED",
                ApiError::new(
                    codes::INVALID_REQUEST,
                    format!("request body exceeds the limit of {limit} bytes"),
                ),
            ),
            BodyError::TimedOut(d) => (
                StatusCode::REQUEST_TIMEOUT,
                "DEADLINE_EXCEEDED",
                ApiError::new(
                    codes::INVALID_REQUEST,
                    format!(
                        "request body not received within the {} ms body read timeout",
                        d.as_millis()
                    ),
                ),
            ),
            BodyError::Broken(m) => (
                StatusCode::BAD_REQUEST,
                "INVALID_ARGUMENT",
                ApiError::new(
                    codes::INVALID_REQUEST,
                    format!("cannot read the request body: {m}"),
                ),
            ),
        }
    }

    /// Closes the connection after a timed out or broken body (its rest is never read).
    fn finish(&self, mut r: Response) -> Response {
        if !matches!(self, BodyError::TooLarge(_)) {
            r.headers_mut()
                .insert(header::CONNECTION, HeaderValue::from_static("close"));
        }
        r
    }

    fn rest(&self) -> Response {
        let (status, name, e) = self.parts();
        self.finish(rest_error_as(status, name, &e))
    }

    fn rpc(&self, v1_style: bool) -> Response {
        let (status, _, e) = self.parts();
        self.finish(rpc_error(status, &RequestId::Null, &e, v1_style))
    }
}

/// Reads the body up to `max_body_bytes`, within `body_read_timeout` (zero: no timeout).
async fn read_body(
    cfg: &ServerConfig,
    headers: &HeaderMap,
    body: Body,
) -> Result<Bytes, BodyError> {
    let limit = cfg.max_body_bytes;
    if let Some(len) = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok())
        && len > limit as u64
    {
        return Err(BodyError::TooLarge(limit));
    }
    let collect = async {
        use futures::StreamExt;
        let mut stream = body.into_data_stream();
        // The usual body is one chunk: keep it as is; copy only when there are several.
        let mut first: Option<Bytes> = None;
        let mut joined: Vec<u8> = Vec::new();
        let mut total = 0usize;
        while let Some(chunk) = stream.next().await {
            let chunk = chunk.map_err(|e| BodyError::Broken(e.to_string()))?;
            total = total.saturating_add(chunk.len());
            if total > limit {
                return Err(BodyError::TooLarge(limit));
            }
            if first.is_none() && joined.is_empty() {
                first = Some(chunk);
            } else {
                if let Some(f) = first.take() {
                    joined.extend_from_slice(&f);
                }
                joined.extend_from_slice(&chunk);
            }
        }
        Ok(first.unwrap_or_else(|| Bytes::from(joined)))
    };
    if cfg.body_read_timeout.is_zero() {
        return collect.await;
    }
    tokio::time::timeout(cfg.body_read_timeout, collect)
        .await
        .unwrap_or(Err(BodyError::TimedOut(cfg.body_read_timeout)))
}

/// Parses a body as `T`, telling a JSON syntax error (-32700) from a wrong shape (-32602).
fn parse_body<'a, T: serde::Deserialize<'a>>(bytes: &'a [u8], what: &str) -> Result<T, ApiError> {
    serde_json::from_slice(bytes).map_err(|e| {
        // Error path only: a second pass tells bad JSON from a bad shape (the typed error of
        // a part names its index, which hides the category).
        match serde_json::from_slice::<serde::de::IgnoredAny>(bytes) {
            Err(syntax) => ApiError::new(
                codes::PARSE_ERROR,
                format!(
                    "invalid JSON in the {what} body: {}",
                    json_error_message(&syntax)
                ),
            ),
            Ok(_) => ApiError::new(
                codes::INVALID_PARAMS,
                format!("invalid {what} body: {}", json_error_message(&e)),
            ),
        }
    })
}

/// The version the client asked for (`A2A-Version` header, else the `A2A-Version` query
/// parameter); `Ok(None)` when absent, an error when unsupported.
fn requested_version(parts: &Parts) -> Result<Option<ProtocolVersion>, ApiError> {
    let raw: Option<&str> = parts
        .headers
        .get(&VERSION_HEADER_NAME)
        .map(|v| v.to_str().unwrap_or("?"))
        .or_else(|| {
            parts.uri.query().and_then(|q| {
                q.split('&').find_map(|kv| {
                    let (k, v) = kv.split_once('=')?;
                    k.eq_ignore_ascii_case(VERSION_HEADER).then_some(v)
                })
            })
        });
    match raw {
        None => Ok(None),
        Some(v) if v.trim().is_empty() => Ok(None),
        Some(v) => ProtocolVersion::parse(v).map(Some).ok_or_else(|| {
            ApiError::new(
                codes::VERSION_NOT_SUPPORTED,
                format!("A2A-Version `{v}` is not supported; this server speaks 1.0 and 0.3"),
            )
        }),
    }
}

/// True when the request declares a JSON body (or no content type at all).
fn json_content_type(headers: &HeaderMap) -> bool {
    match headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
    {
        None => true,
        Some(ct) => {
            let mt = ct.split(';').next().unwrap_or("").trim();
            match mt.split_once('/') {
                Some((ty, sub)) if ty.eq_ignore_ascii_case("application") => {
                    sub.eq_ignore_ascii_case("json")
                        || (sub.len() > 5
                            && sub.is_char_boundary(sub.len() - 5)
                            && sub[sub.len() - 5..].eq_ignore_ascii_case("+json"))
                }
                _ => false,
            }
        }
    }
}

fn content_type_error(headers: &HeaderMap) -> ApiError {
    let ct = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("?");
    ApiError::new(
        codes::CONTENT_TYPE_NOT_SUPPORTED,
        format!(
            "Content-Type `{ct}` is not supported; send application/json or application/a2a+json"
        ),
    )
}

/// Required extensions the client did not name in `A2A-Extensions`.
fn check_extensions(agent: &Hosted, headers: &HeaderMap) -> Result<(), ApiError> {
    if !agent.info.extensions.iter().any(|e| e.required) {
        return Ok(());
    }
    let declared: Vec<&str> = headers
        .get_all(&EXTENSIONS_HEADER)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .collect();
    for e in agent.info.extensions.iter().filter(|e| e.required) {
        if !declared.contains(&e.uri.as_str()) {
            return Err(ApiError::new(
                codes::EXTENSION_SUPPORT_REQUIRED,
                format!(
                    "agent `{}` requires extension `{}`; declare it in the A2A-Extensions header",
                    agent.info.name, e.uri
                ),
            ));
        }
    }
    Ok(())
}

/// Refuses parts whose media type the agent does not accept.
fn check_parts(agent: &Hosted, message: &v1::Message) -> Result<(), ApiError> {
    for (i, p) in message.parts.iter().enumerate() {
        let mt = match (&p.media_type, &p.content) {
            (Some(mt), _) if !mt.is_empty() => mt.as_str(),
            (_, v1::PartContent::Text(_)) => "text/plain",
            (_, v1::PartContent::Data(_)) => "application/json",
            _ => continue,
        };
        if !agent.info.accepts(mt) {
            return Err(ApiError::new(
                codes::CONTENT_TYPE_NOT_SUPPORTED,
                format!(
                    "part {i} has media type `{mt}`, which agent `{}` does not accept (accepted: {})",
                    agent.info.name,
                    agent.info.default_input_modes.join(", ")
                ),
            ));
        }
    }
    Ok(())
}

fn parse_params<T: DeserializeOwned>(
    params: Option<&RawValue>,
    method: &str,
) -> Result<T, ApiError> {
    optional_params(params, method)?
        .ok_or_else(|| ApiError::invalid_params(format!("`{method}` requires `params`")))
}

fn optional_params<T: DeserializeOwned>(
    params: Option<&RawValue>,
    method: &str,
) -> Result<Option<T>, ApiError> {
    match params {
        None => Ok(None),
        Some(raw) => serde_json::from_str::<T>(raw.get()).map(Some).map_err(|e| {
            ApiError::invalid_params(format!(
                "invalid params for `{method}`: {}",
                json_error_message(&e)
            ))
        }),
    }
}

// ---------------------------------------------------------------------------------------------
// JSON-RPC
// ---------------------------------------------------------------------------------------------

fn is_v1_method(m: &str) -> bool {
    !m.contains('/')
}

async fn jsonrpc(shared: &Arc<Shared>, agent: &Hosted, parts: &Parts, body: Body) -> Response {
    let header_version = requested_version(parts);
    let v1_hint = !matches!(header_version, Ok(Some(ProtocolVersion::V03)) | Ok(None));
    let body = match read_body(&shared.cfg, &parts.headers, body).await {
        Ok(b) => b,
        Err(e) => return e.rpc(v1_hint),
    };
    if !json_content_type(&parts.headers) {
        return rpc_error(
            StatusCode::OK,
            &RequestId::Null,
            &content_type_error(&parts.headers),
            v1_hint,
        );
    }
    // JSON-RPC 2.0 batches (a top-level array) are not supported: the whole batch gets one
    // InvalidRequest error (as the spec answers an empty batch). Checked on the first byte, so
    // an array is never read as a positional request either (serde reads structs from arrays).
    if first_byte(&body) == Some(b'[') {
        let err = match serde_json::from_slice::<serde::de::IgnoredAny>(&body) {
            Err(e) => ApiError::new(
                codes::PARSE_ERROR,
                format!("invalid JSON: {}", json_error_message(&e)),
            ),
            Ok(_) => ApiError::new(
                codes::INVALID_REQUEST,
                "JSON-RPC batch requests (a top-level array) are not supported by this server; \
                 send one request object per HTTP request",
            ),
        };
        return rpc_error(StatusCode::OK, &RequestId::Null, &err, v1_hint);
    }
    // One pass over the envelope; the params are kept as borrowed raw text.
    let head: Head = match serde_json::from_slice(&body) {
        Ok(h) => h,
        Err(e) => {
            // serde stops at the first wrong type (`3 garbage` fails as "an integer, expected a
            // struct"): on this error path, a full syntax pass tells invalid JSON (-32700) from
            // a JSON value that is not a request (-32600).
            let parse = |e: &serde_json::Error| {
                ApiError::new(
                    codes::PARSE_ERROR,
                    format!("invalid JSON: {}", json_error_message(e)),
                )
            };
            let err = if e.is_syntax() || e.is_eof() {
                parse(&e)
            } else if let Err(syntax) = serde_json::from_slice::<serde::de::IgnoredAny>(&body) {
                parse(&syntax)
            } else {
                ApiError::new(
                    codes::INVALID_REQUEST,
                    format!(
                        "a JSON-RPC request must be an object with `jsonrpc`, `method` and `id`: {}",
                        json_error_message(&e)
                    ),
                )
            };
            return rpc_error(StatusCode::OK, &RequestId::Null, &err, v1_hint);
        }
    };
    let invalid = |id: &RequestId, msg: &str| {
        rpc_error(
            StatusCode::OK,
            id,
            &ApiError::new(codes::INVALID_REQUEST, msg),
            v1_hint,
        )
    };
    // An absent `id` makes a notification; an explicit `"id": null` is a request (answered
    // with `"id": null`), as JSON-RPC 2.0 says.
    let notification = head.id.is_none();
    let id = match head.id {
        None | Some(Value::Null) => RequestId::Null,
        Some(Value::String(s)) => RequestId::Str(s),
        Some(Value::Number(n)) => match n.as_i64() {
            Some(i) => RequestId::Number(i),
            None => return invalid(&RequestId::Null, "`id` must be an integer or a string"),
        },
        Some(_) => return invalid(&RequestId::Null, "`id` must be a string, a number or null"),
    };
    if head.jsonrpc.as_ref().and_then(JsonStrOrOther::as_str) != Some("2.0") {
        return invalid(&id, "`jsonrpc` must be \"2.0\"");
    }
    let method = match head.method.as_ref().and_then(JsonStrOrOther::as_str) {
        Some(m) => m,
        None => return invalid(&id, "`method` must be a string"),
    };
    let v1m = is_v1_method(method);
    let wire = if v1m {
        Wire::RpcV1(id.clone())
    } else {
        Wire::RpcV03(id.clone())
    };
    let answer = match header_version {
        Err(e) => rpc_error_for(&id, &e, true),
        Ok(_) => match check_extensions(agent, &parts.headers) {
            Err(e) => error_for(&wire, &e),
            Ok(()) => match rpc_call(shared, agent, method, head.params, &wire).await {
                Ok(r) => r,
                Err(e) => error_for(&wire, &e),
            },
        },
    };
    if notification {
        // A valid notification is executed but never answered (JSON-RPC 2.0 §4.1). Over HTTP
        // that is 204 No Content: the exchange still needs a status, and 204 says plainly that
        // no body follows (as the JSON-RPC-over-HTTP conventions do), unlike a 200 with an
        // empty body that a client would try to parse.
        drop(answer);
        let mut r = Response::new(Body::empty());
        *r.status_mut() = StatusCode::NO_CONTENT;
        return r;
    }
    answer
}

/// Reads a member that is present, `null` included (an absent member stays `None` through
/// `#[serde(default)]`), so `"id": null` is told from no `id` at all.
fn present_value<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    <Value as serde::Deserialize>::deserialize(d).map(Some)
}

/// The JSON-RPC envelope, read in one pass; `params` stays raw text until the method is known.
#[derive(serde::Deserialize)]
struct Head<'a> {
    #[serde(default, borrow)]
    jsonrpc: Option<JsonStrOrOther<'a>>,
    #[serde(default, deserialize_with = "present_value")]
    id: Option<Value>,
    #[serde(default, borrow)]
    method: Option<JsonStrOrOther<'a>>,
    /// The params as raw JSON text (borrowed), parsed once the method is known.
    #[serde(default, borrow)]
    params: Option<&'a RawValue>,
}

/// A string (borrowed when it has no escapes) or any other JSON value (skipped). Written by
/// hand: a derived `#[serde(untagged)]` enum buffers the value into an intermediate tree first.
enum JsonStrOrOther<'a> {
    Str(std::borrow::Cow<'a, str>),
    Other,
}

impl<'de: 'a, 'a> serde::Deserialize<'de> for JsonStrOrOther<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::{IgnoredAny, MapAccess, SeqAccess, Visitor};
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = JsonStrOrOther<'a>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(JsonStrOrOther::Str(std::borrow::Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
                Ok(JsonStrOrOther::Str(std::borrow::Cow::Owned(v.to_owned())))
            }
            fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
                Ok(JsonStrOrOther::Str(std::borrow::Cow::Owned(v)))
            }
            fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
                Ok(JsonStrOrOther::Other)
            }
            fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
                Ok(JsonStrOrOther::Other)
            }
            fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
                Ok(JsonStrOrOther::Other)
            }
            fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
                Ok(JsonStrOrOther::Other)
            }
            fn visit_unit<E>(self) -> Result<Self::Value, E> {
                Ok(JsonStrOrOther::Other)
            }
            fn visit_none<E>(self) -> Result<Self::Value, E> {
                Ok(JsonStrOrOther::Other)
            }
            fn visit_some<D2: serde::Deserializer<'de>>(
                self,
                d: D2,
            ) -> Result<Self::Value, D2::Error> {
                d.deserialize_any(self)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<Self::Value, A::Error> {
                while a.next_element::<IgnoredAny>()?.is_some() {}
                Ok(JsonStrOrOther::Other)
            }
            fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Self::Value, A::Error> {
                while a.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(JsonStrOrOther::Other)
            }
        }
        d.deserialize_any(V(std::marker::PhantomData))
    }
}

impl JsonStrOrOther<'_> {
    fn as_str(&self) -> Option<&str> {
        match self {
            JsonStrOrOther::Str(s) => Some(s),
            JsonStrOrOther::Other => None,
        }
    }
}

fn rpc_ok<T: Serialize>(wire: &Wire, result: &T) -> Response {
    let id = match wire {
        Wire::RpcV1(id) | Wire::RpcV03(id) => id,
        Wire::Rest => return respond(StatusCode::OK, json_bytes(result)),
    };
    respond(
        StatusCode::OK,
        json_bytes(&RpcOk {
            jsonrpc: "2.0",
            id,
            result,
        }),
    )
}

/// Encodes a task for the wire's version.
fn task_reply(wire: &Wire, task: v1::Task) -> Response {
    match wire.version() {
        ProtocolVersion::V03 => rpc_ok(wire, &v03::Task::from(task)),
        _ => rpc_ok(wire, &task),
    }
}

async fn rpc_call(
    shared: &Arc<Shared>,
    agent: &Hosted,
    method: &str,
    params: Option<&RawValue>,
    wire: &Wire,
) -> Result<Response, ApiError> {
    use crate::types::v1::methods as m1;
    use crate::types::v03::methods as m03;
    match method {
        m1::SEND_MESSAGE | m1::SEND_STREAMING_MESSAGE => {
            let req: v1::SendMessageRequest = parse_params(params, method)?;
            send(
                shared,
                agent,
                req,
                method == m1::SEND_STREAMING_MESSAGE,
                wire,
            )
            .await
        }
        m03::MESSAGE_SEND | m03::MESSAGE_STREAM => {
            let req: v03::MessageSendParams = parse_params(params, method)?;
            let blocking = req.configuration.as_ref().and_then(|c| c.blocking);
            let mut req: v1::SendMessageRequest = req.into();
            if let Some(c) = req.configuration.as_mut() {
                c.return_immediately = blocking == Some(false);
            }
            send(shared, agent, req, method == m03::MESSAGE_STREAM, wire).await
        }
        m1::GET_TASK => {
            let req: v1::GetTaskRequest = parse_params(params, method)?;
            let t = agent.engine.get(&req.id, req.history_length).await?;
            Ok(task_reply(wire, t))
        }
        m03::TASKS_GET => {
            let req: v03::TaskQueryParams = parse_params(params, method)?;
            let t = agent.engine.get(&req.id, req.history_length).await?;
            Ok(task_reply(wire, t))
        }
        m1::LIST_TASKS => {
            let req: v1::ListTasksRequest = optional_params(params, method)?.unwrap_or_default();
            Ok(rpc_ok(wire, &agent.engine.list(&req).await?))
        }
        m1::CANCEL_TASK => {
            let req: v1::CancelTaskRequest = parse_params(params, method)?;
            Ok(task_reply(wire, agent.engine.cancel(&req.id).await?))
        }
        m03::TASKS_CANCEL => {
            let req: v03::TaskIdParams = parse_params(params, method)?;
            Ok(task_reply(wire, agent.engine.cancel(&req.id).await?))
        }
        m1::SUBSCRIBE_TO_TASK => {
            let req: v1::SubscribeToTaskRequest = parse_params(params, method)?;
            subscribe(shared, agent, &req.id, wire).await
        }
        m03::TASKS_RESUBSCRIBE => {
            let req: v03::TaskIdParams = parse_params(params, method)?;
            subscribe(shared, agent, &req.id, wire).await
        }
        m1::CREATE_PUSH_CONFIG
        | m1::GET_PUSH_CONFIG
        | m1::LIST_PUSH_CONFIGS
        | m1::DELETE_PUSH_CONFIG
        | m03::PUSH_CONFIG_SET
        | m03::PUSH_CONFIG_GET
        | m03::PUSH_CONFIG_LIST
        | m03::PUSH_CONFIG_DELETE => Err(push_unsupported()),
        m1::GET_EXTENDED_AGENT_CARD | m03::GET_AUTHENTICATED_EXTENDED_CARD => {
            Err(extended_card_unsupported())
        }
        other => Err(ApiError::new(
            codes::METHOD_NOT_FOUND,
            format!("method `{other}` not found"),
        )),
    }
}

fn push_unsupported() -> ApiError {
    ApiError::new(
        codes::PUSH_NOTIFICATION_NOT_SUPPORTED,
        "push notifications are not supported by this agent (capabilities.pushNotifications is false)",
    )
}

fn extended_card_unsupported() -> ApiError {
    ApiError::new(
        codes::EXTENDED_AGENT_CARD_NOT_CONFIGURED,
        "this agent has no extended agent card",
    )
}

fn streaming_unsupported(agent: &Hosted) -> ApiError {
    ApiError::new(
        codes::UNSUPPORTED_OPERATION,
        format!("agent `{}` does not offer streaming", agent.info.name),
    )
}

/// Open streams per client.
type ClientStreams = Arc<Mutex<HashMap<IpAddr, usize>>>;

/// The stream caps: over all clients, and per client (peer IP; IPv6 per /64).
pub(crate) struct StreamLimits {
    global: Arc<Semaphore>,
    per_client: usize,
    clients: ClientStreams,
}

impl StreamLimits {
    pub fn new(global: usize, per_client: usize) -> Self {
        Self {
            global: Arc::new(Semaphore::new(global)),
            per_client,
            clients: Arc::new(Mutex::new(HashMap::new())),
        }
    }
}

/// One open stream: returns its slots (global and the client's) when dropped.
pub(crate) struct StreamPermit {
    _global: OwnedSemaphorePermit,
    client: Option<(ClientStreams, IpAddr)>,
}

impl Drop for StreamPermit {
    fn drop(&mut self) {
        if let Some((clients, ip)) = self.client.take() {
            let mut m = clients.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(n) = m.get_mut(&ip) {
                *n = n.saturating_sub(1);
                if *n == 0 {
                    m.remove(&ip);
                }
            }
        }
    }
}

/// The key a client's streams are counted under: its IPv4 address, or the /64 of its IPv6
/// address (one host usually holds a whole /64).
fn client_key(ip: IpAddr) -> IpAddr {
    match ip.to_canonical() {
        IpAddr::V6(v6) => {
            let s = v6.segments();
            IpAddr::V6(std::net::Ipv6Addr::new(s[0], s[1], s[2], s[3], 0, 0, 0, 0))
        }
        v4 => v4,
    }
}

tokio::task_local! {
    /// The peer of the connection being served: set per connection by
    /// [`serve_router`](super::A2aServer::serve_router), or per request from axum's
    /// `ConnectInfo<SocketAddr>` when the router is served another way.
    pub(crate) static PEER: SocketAddr;
}

/// Takes a stream slot, or answers ServerBusy (503 + `Retry-After`) at either cap.
fn acquire_stream(shared: &Shared) -> Result<StreamPermit, ApiError> {
    let limits = &shared.streams;
    let global = limits.global.clone().try_acquire_owned().map_err(|_| {
        ApiError::new(
            codes::SERVER_BUSY,
            format!(
                "too many concurrent streams (limit {}); retry later",
                shared.cfg.max_streams
            ),
        )
    })?;
    let mut permit = StreamPermit {
        _global: global,
        client: None,
    };
    if limits.per_client == 0 {
        return Ok(permit);
    }
    let Ok(ip) = PEER.try_with(|a| client_key(a.ip())) else {
        return Ok(permit);
    };
    let mut m = limits.clients.lock().unwrap_or_else(|e| e.into_inner());
    let n = m.entry(ip).or_insert(0);
    if *n >= limits.per_client {
        return Err(ApiError::new(
            codes::SERVER_BUSY,
            format!(
                "client {ip} has too many concurrent streams (limit {} per client); retry later",
                limits.per_client
            ),
        ));
    }
    *n += 1;
    drop(m);
    permit.client = Some((limits.clients.clone(), ip));
    Ok(permit)
}

async fn send(
    shared: &Arc<Shared>,
    agent: &Hosted,
    req: v1::SendMessageRequest,
    streaming: bool,
    wire: &Wire,
) -> Result<Response, ApiError> {
    check_parts(agent, &req.message)?;
    let history_length = req.configuration.as_ref().and_then(|c| c.history_length);
    let immediate = req
        .configuration
        .as_ref()
        .is_some_and(|c| c.return_immediately);
    let permit = if streaming {
        if !agent.info.streaming {
            return Err(streaming_unsupported(agent));
        }
        Some(acquire_stream(shared)?)
    } else {
        None
    };
    let started = agent
        .engine
        .send(SendParams {
            message: req.message,
            configuration: req.configuration,
            metadata: req.metadata,
            streaming,
            version: wire.version(),
        })
        .await?;
    match permit {
        Some(permit) => {
            let Started {
                run,
                mut events,
                mut driver,
            } = started;
            driver.spawn();
            match events.recv().await {
                Some(first) => Ok(sse(
                    shared,
                    Some(first),
                    events,
                    wire.clone(),
                    permit,
                    history_length,
                )),
                None => Err(run
                    .error()
                    .await
                    .unwrap_or_else(|| ApiError::internal("the agent ended without answering"))),
            }
        }
        None => {
            let reply = await_reply(started, immediate, history_length).await?;
            Ok(match wire.version() {
                ProtocolVersion::V03 => rpc_ok(wire, &v03::Event::from(reply)),
                _ => rpc_ok(wire, &reply),
            })
        }
    }
}

/// Only called on a value just matched as a Message: returns an empty agent message rather
/// than panicking.
fn unreachable_message() -> v1::Message {
    v1::Message::new(v1::Role::Agent, String::new(), Vec::new())
}

/// Waits for the answer of a non-streaming send: a direct message, or the task once it is
/// terminal or interrupted (at once with `immediate`).
async fn await_reply(
    mut started: Started,
    immediate: bool,
    history_length: Option<i32>,
) -> Result<v1::SendMessageResponse, ApiError> {
    if immediate {
        started.driver.spawn();
    }
    loop {
        // Drive the handler here first (no task hop for quick handlers), then read events.
        let ev = match started.driver.pending() {
            Some(fut) => tokio::select! {
                biased;
                _ = fut => {
                    started.driver.done();
                    continue;
                }
                ev = started.events.recv() => ev,
            },
            None => started.events.recv().await,
        };
        let Some(ev) = ev else { break };
        match &*ev {
            v1::StreamResponse::Message(_) => {
                let m = match Arc::try_unwrap(ev) {
                    Ok(v1::StreamResponse::Message(m)) => m,
                    Ok(_) => unreachable_message(),
                    Err(ev) => match &*ev {
                        v1::StreamResponse::Message(m) => m.clone(),
                        _ => unreachable_message(),
                    },
                };
                return Ok(v1::SendMessageResponse::Message(m));
            }
            v1::StreamResponse::Task(t) => {
                let s = t.status.state;
                if immediate || s.is_terminal() || s.is_interrupted() {
                    let mut t = t.clone();
                    trim_history(&mut t, history_length);
                    return Ok(v1::SendMessageResponse::Task(t));
                }
            }
            v1::StreamResponse::StatusUpdate(u) => {
                let s = u.status.state;
                if immediate || s.is_terminal() || s.is_interrupted() {
                    break;
                }
            }
            v1::StreamResponse::ArtifactUpdate(_) => {
                if immediate {
                    break;
                }
            }
        }
    }
    drop(started.events);
    match started.run.task().await {
        Some(mut t) => {
            trim_history(&mut t, history_length);
            Ok(v1::SendMessageResponse::Task(t))
        }
        None => Err(started
            .run
            .error()
            .await
            .unwrap_or_else(|| ApiError::internal("the agent ended without answering"))),
    }
}

async fn subscribe(
    shared: &Arc<Shared>,
    agent: &Hosted,
    task_id: &str,
    wire: &Wire,
) -> Result<Response, ApiError> {
    if !agent.info.streaming {
        return Err(streaming_unsupported(agent));
    }
    let permit = acquire_stream(shared)?;
    let rx = agent.engine.subscribe(task_id).await?;
    Ok(sse(shared, None, rx, wire.clone(), permit, None))
}

/// Appends one SSE event (`data: <json>\n\n`) for the wire's version and binding. serde_json
/// escapes newlines, so the JSON always fits one `data:` line.
fn push_event(
    buf: &mut Vec<u8>,
    wire: &Wire,
    ev: &v1::StreamResponse,
    history_length: Option<i32>,
) {
    let trimmed;
    let ev = match (ev, history_length) {
        (v1::StreamResponse::Task(t), Some(_)) => {
            let mut t = t.clone();
            trim_history(&mut t, history_length);
            trimmed = v1::StreamResponse::Task(t);
            &trimmed
        }
        _ => ev,
    };
    buf.extend_from_slice(b"data: ");
    // Writing our own types into a Vec cannot fail.
    let _ = match wire {
        Wire::Rest => serde_json::to_writer(&mut *buf, ev),
        Wire::RpcV1(id) => serde_json::to_writer(
            &mut *buf,
            &RpcOk {
                jsonrpc: "2.0",
                id,
                result: ev,
            },
        ),
        Wire::RpcV03(id) => serde_json::to_writer(
            &mut *buf,
            &RpcOk {
                jsonrpc: "2.0",
                id,
                result: &v03::Event::from(ev.clone()),
            },
        ),
    };
    buf.extend_from_slice(b"\n\n");
}

type EventStream = Pin<Box<dyn Stream<Item = Result<Bytes, Infallible>> + Send>>;

/// Events already queued that one body chunk may carry.
const MAX_BATCH: usize = 64;

struct StreamState {
    first: Option<Event>,
    rx: mpsc::Receiver<Event>,
    wire: Wire,
    history_length: Option<i32>,
    keep_alive: Duration,
    shutdown: Pin<Box<subagent_spi::CancelledFuture>>,
    _permit: StreamPermit,
}

/// An SSE response: one `data:` event per stream event (events already queued go out in one
/// chunk), a `:` keep-alive comment after each idle interval; ends when the task stops (the
/// receiver closes) or the server shuts down.
fn sse(
    shared: &Shared,
    first: Option<Event>,
    rx: mpsc::Receiver<Event>,
    wire: Wire,
    permit: StreamPermit,
    history_length: Option<i32>,
) -> Response {
    let state = StreamState {
        first,
        rx,
        wire,
        history_length,
        keep_alive: if shared.cfg.keep_alive.is_zero() {
            Duration::from_secs(15)
        } else {
            shared.cfg.keep_alive
        },
        shutdown: Box::pin(shared.shutdown.cancelled()),
        _permit: permit,
    };
    let stream: EventStream = Box::pin(futures::stream::unfold(state, |mut st| async move {
        let ev = match st.first.take() {
            Some(e) => Some(e),
            None => {
                tokio::select! {
                    biased;
                    e = st.rx.recv() => Some(e?),
                    _ = &mut st.shutdown => return None,
                    _ = tokio::time::sleep(st.keep_alive) => None,
                }
            }
        };
        let mut buf = Vec::with_capacity(512);
        match ev {
            None => buf.extend_from_slice(b":\n\n"),
            Some(e) => {
                push_event(&mut buf, &st.wire, &e, st.history_length);
                for _ in 0..MAX_BATCH {
                    match st.rx.try_recv() {
                        Ok(e) => push_event(&mut buf, &st.wire, &e, st.history_length),
                        Err(_) => break,
                    }
                }
            }
        }
        Some((Ok(Bytes::from(buf)), st))
    }));
    let mut r = Response::new(Body::from_stream(stream));
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    r
}

// ---------------------------------------------------------------------------------------------
// HTTP+JSON
// ---------------------------------------------------------------------------------------------

fn query_pairs(parts: &Parts) -> Vec<(String, String)> {
    parts
        .uri
        .query()
        .map(|q| {
            q.split('&')
                .filter(|kv| !kv.is_empty())
                .map(|kv| {
                    let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
                    (percent_decode(k), percent_decode(v))
                })
                .collect()
        })
        .unwrap_or_default()
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < b.len() => {
                let hex = std::str::from_utf8(&b[i + 1..i + 3]).ok();
                match hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                    Some(v) => {
                        out.push(v);
                        i += 2;
                    }
                    None => out.push(b'%'),
                }
            }
            c => out.push(c),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn int_param(name: &str, v: &str) -> Result<i32, ApiError> {
    v.parse()
        .map_err(|_| ApiError::invalid_params(format!("`{name}` must be an integer, got `{v}`")))
}

fn state_param(v: &str) -> Result<v1::TaskState, ApiError> {
    if let Some(s) = v1::TaskState::from_name(v) {
        return Ok(s);
    }
    let upper = format!("TASK_STATE_{}", v.replace('-', "_").to_ascii_uppercase());
    v1::TaskState::from_name(&upper)
        .ok_or_else(|| ApiError::invalid_params(format!("unknown task state `{v}`")))
}

async fn rest_route(
    shared: &Arc<Shared>,
    agent: &Hosted,
    parts: &Parts,
    body: Body,
    rest: &str,
) -> Response {
    let wire = Wire::Rest;
    match requested_version(parts) {
        Ok(None | Some(ProtocolVersion::V1)) => {}
        Ok(Some(v)) => {
            return rest_error(&ApiError::new(
                codes::VERSION_NOT_SUPPORTED,
                format!("the HTTP+JSON binding of this server speaks A2A 1.0, not {v}"),
            ));
        }
        Err(e) => return rest_error(&e),
    }
    if let Err(e) = check_extensions(agent, &parts.headers) {
        return rest_error(&e);
    }
    let result = rest_inner(shared, agent, parts, body, rest, &wire).await;
    result.unwrap_or_else(|e| rest_error(&e))
}

async fn rest_body<T: DeserializeOwned>(
    shared: &Shared,
    parts: &Parts,
    body: Body,
    what: &str,
) -> Result<T, Response> {
    let bytes = read_body(&shared.cfg, &parts.headers, body)
        .await
        .map_err(|e| e.rest())?;
    if !json_content_type(&parts.headers) {
        return Err(rest_error(&content_type_error(&parts.headers)));
    }
    // ProtoJSON bodies are objects; serde would also read a positional array as a struct.
    if first_byte(&bytes) != Some(b'{') {
        let e = match serde_json::from_slice::<serde::de::IgnoredAny>(&bytes) {
            Err(syntax) => ApiError::new(
                codes::PARSE_ERROR,
                format!(
                    "invalid JSON in the {what} body: {}",
                    json_error_message(&syntax)
                ),
            ),
            Ok(_) => ApiError::new(
                codes::INVALID_PARAMS,
                format!("the {what} body must be a JSON object"),
            ),
        };
        return Err(rest_error(&e));
    }
    parse_body(&bytes, what).map_err(|e| rest_error(&e))
}

/// The first byte that is not JSON whitespace.
fn first_byte(body: &[u8]) -> Option<u8> {
    body.iter()
        .copied()
        .find(|b| !matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
}

async fn rest_inner(
    shared: &Arc<Shared>,
    agent: &Hosted,
    parts: &Parts,
    body: Body,
    rest: &str,
    wire: &Wire,
) -> Result<Response, ApiError> {
    let method = parts.method.clone();
    match (method, rest) {
        (Method::POST, "/message:send" | "/message:stream") => {
            let req: v1::SendMessageRequest =
                match rest_body(shared, parts, body, "SendMessageRequest").await {
                    Ok(r) => r,
                    Err(resp) => return Ok(resp),
                };
            send(shared, agent, req, rest == "/message:stream", wire).await
        }
        (Method::GET, "/tasks") => {
            let mut req = v1::ListTasksRequest::default();
            for (k, v) in query_pairs(parts) {
                match k.as_str() {
                    "contextId" => req.context_id = Some(v),
                    "status" => req.status = Some(state_param(&v)?),
                    "pageSize" => req.page_size = Some(int_param(&k, &v)?),
                    "pageToken" => req.page_token = Some(v),
                    "historyLength" => req.history_length = Some(int_param(&k, &v)?),
                    "statusTimestampAfter" => req.status_timestamp_after = Some(v),
                    "includeArtifacts" => {
                        req.include_artifacts = Some(match v.as_str() {
                            "true" | "1" => true,
                            "false" | "0" => false,
                            _ => {
                                return Err(ApiError::invalid_params(format!(
                                    "`includeArtifacts` must be true or false, got `{v}`"
                                )));
                            }
                        })
                    }
                    _ => {}
                }
            }
            Ok(rpc_ok(wire, &agent.engine.list(&req).await?))
        }
        (Method::GET, "/extendedAgentCard") => Err(extended_card_unsupported()),
        (m, r) => {
            let tail = r.strip_prefix("/tasks/").unwrap_or("");
            if tail.contains("/pushNotificationConfigs") {
                return Err(push_unsupported());
            }
            let (id, action) = match tail.rsplit_once(':') {
                Some((id, a @ ("cancel" | "subscribe"))) => (id, Some(a)),
                _ => (tail, None),
            };
            let id = percent_decode(id);
            if id.is_empty() || id.contains('/') {
                return Err(ApiError::new(
                    codes::METHOD_NOT_FOUND,
                    format!("no route for {m} `{r}`"),
                ));
            }
            match (m, action) {
                (Method::GET, None) => {
                    let mut hl = None;
                    for (k, v) in query_pairs(parts) {
                        if k == "historyLength" {
                            hl = Some(int_param(&k, &v)?);
                        }
                    }
                    Ok(rpc_ok(wire, &agent.engine.get(&id, hl).await?))
                }
                (Method::POST, Some("cancel")) => {
                    Ok(rpc_ok(wire, &agent.engine.cancel(&id).await?))
                }
                (Method::POST | Method::GET, Some("subscribe")) => {
                    subscribe(shared, agent, &id, wire).await
                }
                (m, _) => Err(ApiError::new(
                    codes::METHOD_NOT_FOUND,
                    format!("no route for {m} `{r}`"),
                )),
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Connections: the accept loop of `A2aServer::serve` / `serve_router`
// ---------------------------------------------------------------------------------------------

/// Phases of a connection, for its watchdog.
const PHASE_HEAD: u8 = 0;
const PHASE_BUSY: u8 = 1;
const PHASE_IDLE: u8 = 2;

/// What one connection is doing. Written by the connection's own task only (reads, requests,
/// finished answers); atomics because the state is shared through an `Arc`.
struct ConnState {
    start: tokio::time::Instant,
    phase: AtomicU8,
    /// When the phase began, in milliseconds since `start`.
    since_ms: AtomicU64,
    /// Requests whose answer is not fully sent yet.
    in_flight: AtomicUsize,
    /// Asks an idle connection to close (the accept loop, at the connection cap).
    evict: tokio::sync::Notify,
}

impl ConnState {
    fn new() -> Self {
        Self {
            start: tokio::time::Instant::now(),
            // A new connection waits for its first request head.
            phase: AtomicU8::new(PHASE_HEAD),
            since_ms: AtomicU64::new(0),
            in_flight: AtomicUsize::new(0),
            evict: tokio::sync::Notify::new(),
        }
    }

    fn now_ms(&self) -> u64 {
        u64::try_from(self.start.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// Bytes arrived: on an idle connection they start the next request's head.
    fn on_read(&self) {
        if self.phase.load(Ordering::Relaxed) == PHASE_IDLE {
            self.since_ms.store(self.now_ms(), Ordering::Relaxed);
            self.phase.store(PHASE_HEAD, Ordering::Relaxed);
        }
    }

    fn begin(&self) {
        self.in_flight.fetch_add(1, Ordering::Relaxed);
        self.phase.store(PHASE_BUSY, Ordering::Relaxed);
    }

    fn end(&self) {
        if self.in_flight.fetch_sub(1, Ordering::Relaxed) == 1 {
            self.since_ms.store(self.now_ms(), Ordering::Relaxed);
            self.phase.store(PHASE_IDLE, Ordering::Relaxed);
        }
    }

    /// Waiting for a request (head or next request), not answering one.
    fn is_idle(&self) -> bool {
        self.phase.load(Ordering::Relaxed) != PHASE_BUSY
    }

    /// `None` when the connection overstayed its phase's limit, else when to look again.
    fn next_check(&self, limits: &ConnLimits) -> Option<tokio::time::Instant> {
        let limit = match self.phase.load(Ordering::Relaxed) {
            PHASE_HEAD => limits.header,
            PHASE_IDLE => limits.idle,
            _ => None,
        };
        let now = tokio::time::Instant::now();
        match limit {
            Some(l) => {
                let since =
                    self.start + Duration::from_millis(self.since_ms.load(Ordering::Relaxed));
                let deadline = since + l;
                // Look again at the deadline, or sooner: the phase may change meanwhile.
                (now < deadline).then_some(deadline.min(now + limits.poll))
            }
            // Busy (or no limit): look again later; the phase may have changed by then.
            None => Some(now + limits.poll),
        }
    }
}

/// The timeouts a connection's watchdog enforces.
#[derive(Clone, Copy)]
struct ConnLimits {
    header: Option<Duration>,
    idle: Option<Duration>,
    /// How often a busy connection is looked at again.
    poll: Duration,
}

impl ConnLimits {
    fn new(cfg: &ServerConfig) -> Self {
        let some = |d: Duration| (!d.is_zero()).then_some(d);
        let header = some(cfg.header_read_timeout);
        let idle = some(cfg.idle_timeout);
        let poll = match (header, idle) {
            (Some(h), Some(i)) => h.min(i),
            (Some(d), None) | (None, Some(d)) => d,
            (None, None) => Duration::from_secs(3600),
        };
        Self {
            header,
            idle,
            // A quarter of the shorter limit: a connection is closed at most that late after
            // its phase's limit (a phase change is noticed at the next look).
            poll: (poll / 4).max(Duration::from_millis(10)),
        }
    }
}

/// Marks a request in flight until dropped (with its answer's body).
struct InFlight(Arc<ConnState>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.end();
    }
}

/// The socket, noting reads for the watchdog.
struct TrackedIo {
    io: tokio::net::TcpStream,
    state: Arc<ConnState>,
}

impl tokio::io::AsyncRead for TrackedIo {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let r = Pin::new(&mut this.io).poll_read(cx, buf);
        if matches!(r, std::task::Poll::Ready(Ok(()))) && buf.filled().len() > before {
            this.state.on_read();
        }
        r
    }
}

impl tokio::io::AsyncWrite for TrackedIo {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> std::task::Poll<std::io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(
        self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_flush(cx)
    }

    fn poll_shutdown(
        self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_shutdown(cx)
    }
}

/// An answer's body, holding its request's [`InFlight`] mark until hyper drops it (sent or
/// abandoned).
struct TrackedBody {
    body: Body,
    _in_flight: Option<InFlight>,
}

impl http_body::Body for TrackedBody {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.get_mut().body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.body.size_hint()
    }
}

type RouterService = hyper_util::service::TowerToHyperService<axum::Router>;
type RouterFuture = hyper_util::service::TowerToHyperServiceFuture<
    axum::Router,
    http::Request<hyper::body::Incoming>,
>;

/// The router, marking each request in flight until its answer is sent.
struct ConnService {
    inner: RouterService,
    state: Arc<ConnState>,
}

/// The router's future, wrapping the answer's body in a [`TrackedBody`].
struct TrackedFuture {
    inner: RouterFuture,
    in_flight: Option<InFlight>,
}

impl std::future::Future for TrackedFuture {
    type Output = Result<http::Response<TrackedBody>, Infallible>;

    fn poll(
        self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Self::Output> {
        let this = self.get_mut();
        match Pin::new(&mut this.inner).poll(cx) {
            std::task::Poll::Pending => std::task::Poll::Pending,
            std::task::Poll::Ready(Ok(r)) => {
                let in_flight = this.in_flight.take();
                std::task::Poll::Ready(Ok(r.map(|body| TrackedBody {
                    body,
                    _in_flight: in_flight,
                })))
            }
            std::task::Poll::Ready(Err(e)) => match e {},
        }
    }
}

impl hyper::service::Service<http::Request<hyper::body::Incoming>> for ConnService {
    type Response = http::Response<TrackedBody>;
    type Error = Infallible;
    type Future = TrackedFuture;

    fn call(&self, req: http::Request<hyper::body::Incoming>) -> TrackedFuture {
        self.state.begin();
        TrackedFuture {
            inner: hyper::service::Service::call(&self.inner, req),
            in_flight: Some(InFlight(self.state.clone())),
        }
    }
}

/// Serves one connection: HTTP/1.1, closed when its head or idle time runs out, shut down
/// gracefully when `stop` fires. Holds its slot (`_permit`) until it ends.
async fn serve_conn(
    stream: tokio::net::TcpStream,
    router: axum::Router,
    limits: ConnLimits,
    max_header_bytes: usize,
    stop: CancellationToken,
    slot: ConnSlot,
) {
    let state = slot.state.clone();
    let io = hyper_util::rt::TokioIo::new(TrackedIo {
        io: stream,
        state: state.clone(),
    });
    let svc = ConnService {
        inner: hyper_util::service::TowerToHyperService::new(router),
        state: state.clone(),
    };
    let mut builder = hyper::server::conn::http1::Builder::new();
    // The watchdog below enforces the head timeout (hyper's own one would also count the
    // idle time between requests).
    builder
        .header_read_timeout(None)
        .keep_alive(true)
        .max_buf_size(max_header_bytes.max(8192));
    let conn = builder.serve_connection(io, svc);
    let mut conn = std::pin::pin!(conn);
    let stopped = stop.cancelled();
    let mut stopped = std::pin::pin!(stopped);
    let mut stopping = false;
    let first = state
        .next_check(&limits)
        .unwrap_or_else(tokio::time::Instant::now);
    let watchdog = tokio::time::sleep_until(first);
    let mut watchdog = std::pin::pin!(watchdog);
    loop {
        tokio::select! {
            r = conn.as_mut() => {
                if let Err(e) = r {
                    tracing::debug!(error = %e, "A2A connection ended with an error");
                }
                return;
            }
            _ = &mut stopped, if !stopping => {
                stopping = true;
                conn.as_mut().graceful_shutdown();
            }
            _ = state.evict.notified() => {
                // The server is at its connection cap and this connection is the idle one
                // waiting longest: make room (unless a request arrived meanwhile).
                if state.is_idle() {
                    tracing::debug!("closing an idle A2A connection to make room for a new one");
                    return;
                }
            }
            _ = &mut watchdog => match state.next_check(&limits) {
                Some(at) => watchdog.as_mut().reset(at),
                // Waiting for a head or for the next request too long: no request is in
                // flight, so dropping the connection loses nothing.
                None => {
                    tracing::debug!("closing an A2A connection that timed out waiting for a request");
                    return;
                }
            },
        }
    }
}

/// The open connections, so the accept loop can close an idle one at the cap.
#[derive(Default)]
struct Registry {
    next: u64,
    conns: HashMap<u64, Arc<ConnState>>,
}

type SharedRegistry = Arc<Mutex<Registry>>;

fn lock_registry(r: &Mutex<Registry>) -> std::sync::MutexGuard<'_, Registry> {
    r.lock().unwrap_or_else(|e| e.into_inner())
}

/// A connection's place: its slot under the cap and its registry entry, both given back when
/// the connection ends.
struct ConnSlot {
    state: Arc<ConnState>,
    id: u64,
    registry: SharedRegistry,
    _permit: OwnedSemaphorePermit,
}

impl ConnSlot {
    fn new(registry: &SharedRegistry, permit: OwnedSemaphorePermit) -> Self {
        let state = Arc::new(ConnState::new());
        let mut r = lock_registry(registry);
        r.next += 1;
        let id = r.next;
        r.conns.insert(id, state.clone());
        drop(r);
        Self {
            state,
            id,
            registry: registry.clone(),
            _permit: permit,
        }
    }
}

impl Drop for ConnSlot {
    fn drop(&mut self) {
        lock_registry(&self.registry).conns.remove(&self.id);
    }
}

/// Asks the connection that has waited longest for a request to close; false when every
/// connection is answering one.
fn evict_idle(registry: &Mutex<Registry>) -> bool {
    let r = lock_registry(registry);
    let victim = r
        .conns
        .values()
        .filter(|c| c.is_idle())
        .min_by_key(|c| c.start + Duration::from_millis(c.since_ms.load(Ordering::Relaxed)));
    match victim {
        Some(c) => {
            c.evict.notify_one();
            true
        }
        None => false,
    }
}

/// The open-file limit of this process (soft), where the platform tells it.
fn open_file_limit() -> Option<usize> {
    let limits = std::fs::read_to_string("/proc/self/limits").ok()?;
    let line = limits.lines().find(|l| l.starts_with("Max open files"))?;
    line.split_whitespace().nth(3)?.parse().ok()
}

/// `max_connections`, lowered to three quarters of the open-file limit when that is smaller
/// (the rest is left for the listener, handlers and outgoing connections).
fn effective_max_connections(configured: usize) -> usize {
    let configured = configured.clamp(1, u32::MAX as usize >> 1);
    match open_file_limit() {
        Some(fds) if fds / 4 * 3 < configured => {
            let lowered = (fds / 4 * 3).max(1);
            tracing::warn!(
                configured,
                lowered,
                open_file_limit = fds,
                "A2A server: max_connections lowered to fit the open-file limit"
            );
            lowered
        }
        _ => configured,
    }
}

/// Accepts connections until `signal` completes, at most `max_connections` at once, then
/// shuts every connection down gracefully and waits for them to end.
pub(crate) async fn serve_loop(
    shared: Arc<Shared>,
    listener: tokio::net::TcpListener,
    router: axum::Router,
    signal: impl std::future::Future<Output = ()> + Send,
) -> std::io::Result<()> {
    let max = effective_max_connections(shared.cfg.max_connections);
    let slots = Arc::new(Semaphore::new(max));
    let limits = ConnLimits::new(&shared.cfg);
    let max_header_bytes = shared.cfg.max_header_bytes;
    let stop = CancellationToken::new();
    let registry: SharedRegistry = Arc::default();
    let mut signal = std::pin::pin!(signal);
    loop {
        let (stream, peer) = tokio::select! {
            r = listener.accept() => match r {
                Ok(x) => x,
                Err(e) => {
                    if !matches!(
                        e.kind(),
                        std::io::ErrorKind::ConnectionAborted
                            | std::io::ErrorKind::ConnectionReset
                            | std::io::ErrorKind::ConnectionRefused
                            | std::io::ErrorKind::Interrupted
                    ) {
                        // Out of file descriptors and the like: back off instead of spinning.
                        tracing::warn!(error = %e, "A2A server: accept failed");
                        tokio::select! {
                            _ = tokio::time::sleep(Duration::from_millis(200)) => {}
                            _ = &mut signal => break,
                        }
                    }
                    continue;
                }
            },
            _ = &mut signal => break,
        };
        // At the cap, close the connection idle longest to make room; when every connection
        // is answering a request, wait for one to end (further connections wait in the
        // listen backlog meanwhile).
        let permit = match slots.clone().try_acquire_owned() {
            Ok(p) => p,
            Err(_) => loop {
                let evicting = evict_idle(&registry);
                tokio::select! {
                    p = slots.clone().acquire_owned() => match p {
                        Ok(p) => break p,
                        Err(_) => return Ok(()),
                    },
                    // The idle one may have become busy meanwhile: pick another.
                    _ = tokio::time::sleep(Duration::from_millis(50)), if evicting => {}
                    _ = &mut signal => {
                        drop(stream);
                        return finish(listener, stop, slots, max).await;
                    }
                }
            },
        };
        let _ = stream.set_nodelay(true);
        let slot = ConnSlot::new(&registry, permit);
        tokio::spawn(PEER.scope(
            peer,
            serve_conn(
                stream,
                router.clone(),
                limits,
                max_header_bytes,
                stop.clone(),
                slot,
            ),
        ));
    }
    finish(listener, stop, slots, max).await
}

/// Stops accepting, shuts every connection down gracefully and waits for them to end.
async fn finish(
    listener: tokio::net::TcpListener,
    stop: CancellationToken,
    slots: Arc<Semaphore>,
    max: usize,
) -> std::io::Result<()> {
    drop(listener);
    stop.cancel();
    // Every connection holds a slot until it ends.
    let _ = slots
        .acquire_many(u32::try_from(max).unwrap_or(u32::MAX))
        .await;
    Ok(())
}
