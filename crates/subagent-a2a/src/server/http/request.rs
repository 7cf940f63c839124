//! Reading requests: bounded, timed bodies; the JSON content type; the requested version
//! (`A2A-Version` header or query parameter); required extensions; method params.

use std::borrow::Cow;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::response::Response;
use http::request::Parts;
use http::{HeaderMap, HeaderName, HeaderValue, StatusCode, header};
use serde::de::DeserializeOwned;
use serde_json::value::RawValue;

use super::Hosted;
use super::reply::{rest_error_as, rpc_error};
use crate::server::ServerConfig;
use crate::server::engine::ApiError;
use crate::types::jsonrpc::{RequestId, codes};
use crate::types::{ProtocolVersion, VERSION_HEADER, json_error_message};

/// `A2A-Version`, parsed once (a `&str` key is parsed and lower-cased on every lookup).
static VERSION_HEADER_NAME: HeaderName = HeaderName::from_static("a2a-version");
/// `A2A-Extensions`.
static EXTENSIONS_HEADER: HeaderName = HeaderName::from_static("a2a-extensions");

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

    pub(super) fn rest(&self) -> Response {
        let (status, name, e) = self.parts();
        self.finish(rest_error_as(status, name, &e))
    }

    pub(super) fn rpc(&self, v1_style: bool) -> Response {
        let (status, _, e) = self.parts();
        self.finish(rpc_error(status, &RequestId::Null, &e, v1_style))
    }
}

/// Reads the body up to `max_body_bytes`, within `body_read_timeout` (zero: no timeout).
pub(super) async fn read_body(
    cfg: &ServerConfig,
    headers: &HeaderMap,
    body: Body,
) -> Result<Bytes, BodyError> {
    let limit = cfg.max_body_bytes;
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if let Some(len) = declared
        && len > limit as u64
    {
        return Err(BodyError::TooLarge(limit));
    }
    // A body in several chunks is joined into one buffer of its declared length (within the
    // limit, checked above), not one grown by doubling: a large body costs its size once.
    let declared = declared.map_or(0, |n| usize::try_from(n).unwrap_or(limit).min(limit));
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
                    joined.reserve_exact(declared.max(f.len() + chunk.len()));
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

/// The error for a `what` body that is not JSON (-32700).
pub(super) fn json_syntax_error(what: &str, syntax: &serde_json::Error) -> ApiError {
    ApiError::new(
        codes::PARSE_ERROR,
        format!(
            "invalid JSON in the {what} body: {}",
            json_error_message(syntax)
        ),
    )
}

/// Parses a body as `T`, telling a JSON syntax error (-32700) from a wrong shape (-32602).
pub(super) fn parse_body<'a, T: serde::Deserialize<'a>>(
    bytes: &'a [u8],
    what: &str,
) -> Result<T, ApiError> {
    serde_json::from_slice(bytes).map_err(|e| {
        // Error path only: a second pass tells bad JSON from a bad shape (the typed error of
        // a part names its index, which hides the category).
        match serde_json::from_slice::<serde::de::IgnoredAny>(bytes) {
            Err(syntax) => json_syntax_error(what, &syntax),
            Ok(_) => ApiError::new(
                codes::INVALID_PARAMS,
                format!("invalid {what} body: {}", json_error_message(&e)),
            ),
        }
    })
}

/// The version the client asked for (`A2A-Version` header, else the `A2A-Version` query
/// parameter); `Ok(None)` when absent, an error when unsupported.
pub(super) fn requested_version(parts: &Parts) -> Result<Option<ProtocolVersion>, ApiError> {
    // The usual headers first, compared as bytes (no UTF-8 check, no number parsing).
    if let Some(v) = parts.headers.get(&VERSION_HEADER_NAME) {
        match v.as_bytes() {
            b"1.0" => return Ok(Some(ProtocolVersion::V1)),
            b"0.3" => return Ok(Some(ProtocolVersion::V03)),
            _ => {}
        }
    }
    let raw: Option<Cow<'_, str>> = parts
        .headers
        .get(&VERSION_HEADER_NAME)
        .map(|v| Cow::Borrowed(v.to_str().unwrap_or("?")))
        .or_else(|| {
            let q = parts.uri.query()?;
            form_urlencoded::parse(q.as_bytes())
                .find_map(|(k, v)| k.eq_ignore_ascii_case(VERSION_HEADER).then_some(v))
        });
    match raw.as_deref() {
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
pub(super) fn json_content_type(headers: &HeaderMap) -> bool {
    let value = headers.get(header::CONTENT_TYPE);
    // The usual header first, compared as bytes.
    if value.is_some_and(|v| v.as_bytes() == b"application/json") {
        return true;
    }
    match value.and_then(|v| v.to_str().ok()) {
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

pub(super) fn content_type_error(headers: &HeaderMap) -> ApiError {
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
pub(super) fn check_extensions(agent: &Hosted, headers: &HeaderMap) -> Result<(), ApiError> {
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

pub(super) fn parse_params<T: DeserializeOwned>(
    params: Option<&RawValue>,
    method: &str,
) -> Result<T, ApiError> {
    optional_params(params, method)?
        .ok_or_else(|| ApiError::invalid_params(format!("`{method}` requires `params`")))
}

pub(super) fn optional_params<T: DeserializeOwned>(
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

/// The first byte that is not JSON whitespace.
pub(super) fn first_byte(body: &[u8]) -> Option<u8> {
    body.iter()
        .copied()
        .find(|b| !matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
}
