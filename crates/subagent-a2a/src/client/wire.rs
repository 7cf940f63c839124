//! The HTTP plumbing every HTTP dialect of [`A2aClient`](super::A2aClient) shares: one
//! endpoint's client, headers and limits, and the JSON-RPC and HTTP+JSON exchanges (bodies
//! bounded, SSE read with the workspace's one decoder, errors naming the URL). What is sent
//! where is the dialects' business ([`super::dialect`]).

use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use futures::StreamExt;
use http::{HeaderMap, HeaderValue, header};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::endpoint::{Endpoint, EventStream, MAX_EVENT_BYTES, read_body, stream_idle_error};
use super::sse::{SseError, data_events};
use crate::error::A2aError;
use crate::types::jsonrpc::{Request, Response};
use crate::types::{VERSION_HEADER, v1};

/// One endpoint's HTTP side: the client, where, what is sent on every request, and how long
/// a stream may stay silent.
pub(super) struct Wire {
    pub(super) http: reqwest::Client,
    pub(super) endpoint: Endpoint,
    pub(super) headers: HeaderMap,
    /// The `Content-Type` of request bodies (the dialect's).
    pub(super) content_type: &'static str,
    next_id: AtomicI64,
    pub(super) stream_idle_timeout: Option<Duration>,
}

impl Wire {
    pub(super) fn new(
        http: reqwest::Client,
        endpoint: Endpoint,
        headers: HeaderMap,
        content_type: &'static str,
        stream_idle_timeout: Option<Duration>,
    ) -> Self {
        Self {
            http,
            endpoint,
            headers,
            content_type,
            next_id: AtomicI64::new(1),
            stream_idle_timeout,
        }
    }

    fn base_headers(&self, accept_sse: bool) -> HeaderMap {
        let mut h = self.headers.clone();
        h.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static(self.content_type),
        );
        h.insert(
            header::ACCEPT,
            HeaderValue::from_static(if accept_sse {
                "text/event-stream"
            } else {
                "application/json, application/a2a+json"
            }),
        );
        h.insert(
            VERSION_HEADER,
            HeaderValue::from_static(self.endpoint.version.as_str()),
        );
        crate::trace_context::inject(&mut h);
        h
    }

    /// Sends a request answered by a stream: the answer's head must come within the stream
    /// idle limit too (a peer that accepts and goes silent is stuck either way).
    pub(super) async fn send_for_stream(
        &self,
        rb: reqwest::RequestBuilder,
        url: &str,
    ) -> Result<reqwest::Response, A2aError> {
        let send = rb.send();
        let sent = match self.stream_idle_timeout {
            None => send.await,
            Some(limit) => tokio::time::timeout(limit, send)
                .await
                .map_err(|_| stream_idle_error(url, limit))?,
        };
        sent.map_err(|e| A2aError::http(url, e))
    }

    pub(super) fn rest_url(&self, path: &str) -> String {
        let base = self.endpoint.url.trim_end_matches('/');
        match &self.endpoint.tenant {
            Some(t) => format!("{base}/{}/{path}", path_segment(t)),
            None => format!("{base}/{path}"),
        }
    }

    /// A 0.3 HTTP+JSON URL: `{url}/v1/{path}` (0.3 has no tenants).
    pub(super) fn rest_v03_url(&self, path: &str) -> String {
        format!("{}/v1/{path}", self.endpoint.url.trim_end_matches('/'))
    }

    /// A 0.3 HTTP+JSON call: the answer's ProtoJSON goes through `convert` (to the 0.3
    /// JSON-RPC shape) and is then read as `R`.
    pub(super) async fn rest_v03<R: DeserializeOwned>(
        &self,
        method: reqwest::Method,
        url: &str,
        body: Option<&Value>,
        convert: impl FnOnce(&Value) -> Result<Value, String>,
    ) -> Result<R, A2aError> {
        let v: Value = self.rest(method, url, body).await?;
        let v = convert(&v).map_err(|message| A2aError::Protocol {
            url: url.to_string(),
            message: format!("the 0.3 HTTP+JSON response: {message}"),
        })?;
        serde_json::from_value(v)
            .map_err(|e| A2aError::decode(url, "the 0.3 HTTP+JSON response", e))
    }

    /// A JSON-RPC request of `method` with `params` (and a fresh id) to the endpoint, with the
    /// reference's headers (`stream`: asking for SSE).
    pub(super) fn rpc_request<P: Serialize>(
        &self,
        method: &'static str,
        params: &P,
        stream: bool,
    ) -> reqwest::RequestBuilder {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        self.http
            .post(&self.endpoint.url)
            .headers(self.base_headers(stream))
            .json(&Request::new(id, method, params))
    }

    /// Sends a JSON-RPC call; the answer's status and body.
    pub(super) async fn rpc_exchange<P: Serialize>(
        &self,
        method: &'static str,
        params: &P,
    ) -> Result<(reqwest::StatusCode, Vec<u8>), A2aError> {
        let url = &self.endpoint.url;
        let resp = self
            .rpc_request(method, params, false)
            .send()
            .await
            .map_err(|e| A2aError::http(url, e))?;
        let status = resp.status();
        Ok((status, read_body(resp, url).await?))
    }

    pub(super) async fn rpc<P: Serialize, R: DeserializeOwned>(
        &self,
        method: &'static str,
        params: &P,
    ) -> Result<R, A2aError> {
        let (status, bytes) = self.rpc_exchange(method, params).await?;
        let url = &self.endpoint.url;
        match serde_json::from_slice::<Response<R>>(&bytes) {
            Ok(r) => r
                .into_result()
                .map_err(|error| rpc_error(method, url, error)),
            Err(e) if status.is_success() => {
                Err(A2aError::decode(url, format!("the `{method}` response"), e))
            }
            Err(_) => Err(A2aError::status(url, status.as_u16(), &bytes)),
        }
    }

    /// A call whose result carries nothing (`{}` or `null`): success unless `error` is set.
    pub(super) async fn rpc_unit<P: Serialize>(
        &self,
        method: &'static str,
        params: &P,
    ) -> Result<(), A2aError> {
        /// Only the error matters; a `null` result is success.
        #[derive(serde::Deserialize)]
        struct Unit {
            #[serde(default)]
            error: Option<crate::types::jsonrpc::RpcError>,
        }
        let (status, bytes) = self.rpc_exchange(method, params).await?;
        let url = &self.endpoint.url;
        match serde_json::from_slice::<Unit>(&bytes) {
            Ok(Unit { error: Some(error) }) => Err(rpc_error(method, url, error)),
            Ok(Unit { error: None }) if status.is_success() => Ok(()),
            _ => Err(A2aError::status(url, status.as_u16(), &bytes)),
        }
    }

    pub(super) async fn rpc_stream<P: Serialize, R>(
        &self,
        method: &'static str,
        params: &P,
    ) -> Result<EventStream, A2aError>
    where
        R: DeserializeOwned + Into<v1::StreamResponse> + Send + 'static,
    {
        let url = self.endpoint.url.clone();
        let rb = self.rpc_request(method, params, true);
        let resp = self.send_for_stream(rb, &url).await?;
        let status = resp.status();
        if !is_event_stream(&resp) {
            // An error answered as a plain JSON-RPC response (or a non-JSON failure).
            let bytes = read_body(resp, &url).await?;
            return match serde_json::from_slice::<Response<serde_json::Value>>(&bytes) {
                Ok(r) => match r.into_result() {
                    Err(error) => Err(rpc_error(method, &url, error)),
                    Ok(v) => {
                        // A single result instead of a stream: accept it as one event.
                        let ev: R = serde_json::from_value(v).map_err(|e| {
                            A2aError::decode(&url, format!("the `{method}` response"), e)
                        })?;
                        Ok(Box::pin(futures::stream::once(
                            async move { Ok(ev.into()) },
                        )))
                    }
                },
                Err(_) => Err(A2aError::status(&url, status.as_u16(), &bytes)),
            };
        }
        if !status.is_success() {
            return Err(A2aError::status(&url, status.as_u16(), b""));
        }
        let events = data_events(
            resp.bytes_stream(),
            MAX_EVENT_BYTES,
            self.stream_idle_timeout,
        );
        let stream = events.map(move |item| {
            let data = item.map_err(|e| sse_error(&url, e))?;
            let r: Response<R> = serde_json::from_str(&data)
                .map_err(|e| A2aError::decode(&url, format!("a `{method}` event"), e))?;
            r.into_result()
                .map(Into::into)
                .map_err(|error| rpc_error(method, &url, error))
        });
        Ok(Box::pin(stream))
    }

    /// An HTTP+JSON request with the reference's headers (`stream`: asking for SSE) and `body`
    /// as JSON.
    pub(super) fn rest_request<B: Serialize>(
        &self,
        method: reqwest::Method,
        url: &str,
        body: Option<&B>,
        stream: bool,
    ) -> Result<reqwest::RequestBuilder, A2aError> {
        let rb = self
            .http
            .request(method, url)
            .headers(self.base_headers(stream));
        let Some(b) = body else { return Ok(rb) };
        let bytes =
            serde_json::to_vec(b).map_err(|e| A2aError::decode(url, "the request body", e))?;
        Ok(rb.body(bytes))
    }

    pub(super) async fn rest<B: Serialize, R: DeserializeOwned>(
        &self,
        method: reqwest::Method,
        url: &str,
        body: Option<&B>,
    ) -> Result<R, A2aError> {
        let rb = self.rest_request(method, url, body, false)?;
        let resp = rb.send().await.map_err(|e| A2aError::http(url, e))?;
        let status = resp.status();
        let bytes = read_body(resp, url).await?;
        if !status.is_success() {
            return Err(rest_error(url, status.as_u16(), &bytes));
        }
        serde_json::from_slice(&bytes)
            .map_err(|e| A2aError::decode(url, "the HTTP+JSON response", e))
    }

    /// An HTTP+JSON `GET` of `url`.
    pub(super) async fn rest_get<R: DeserializeOwned>(&self, url: &str) -> Result<R, A2aError> {
        self.rest::<(), _>(reqwest::Method::GET, url, None).await
    }

    /// An HTTP+JSON `DELETE` of `url`; whatever JSON answers it is success.
    pub(super) async fn rest_delete(&self, url: &str) -> Result<(), A2aError> {
        let _: Value = self
            .rest::<(), _>(reqwest::Method::DELETE, url, None)
            .await?;
        Ok(())
    }

    pub(super) async fn rest_stream<B: Serialize>(
        &self,
        method: reqwest::Method,
        url: &str,
        body: Option<&B>,
        decode: fn(&str, &str) -> Result<v1::StreamResponse, A2aError>,
    ) -> Result<EventStream, A2aError> {
        let rb = self.rest_request(method, url, body, true)?;
        let resp = self.send_for_stream(rb, url).await?;
        let status = resp.status();
        if !status.is_success() || !is_event_stream(&resp) {
            let bytes = read_body(resp, url).await?;
            return Err(rest_error(url, status.as_u16(), &bytes));
        }
        let url = url.to_string();
        let events = data_events(
            resp.bytes_stream(),
            MAX_EVENT_BYTES,
            self.stream_idle_timeout,
        );
        Ok(Box::pin(events.map(move |item| {
            let data = item.map_err(|e| sse_error(&url, e))?;
            decode(&url, &data)
        })))
    }
}

// Serializes one of our own types (cannot fail: no non-string map keys).
pub(super) fn to_json<T: Serialize>(v: &T) -> Value {
    serde_json::to_value(v).unwrap_or_default()
}

fn is_event_stream(resp: &reqwest::Response) -> bool {
    resp.headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim_start().starts_with("text/event-stream"))
}

fn sse_error(url: &str, e: SseError<reqwest::Error>) -> A2aError {
    match e {
        SseError::Source(e) => A2aError::http(url, e),
        SseError::TooLarge(limit) => A2aError::TooLarge {
            url: url.to_string(),
            limit,
        },
        SseError::Idle(limit) => stream_idle_error(url, limit),
    }
}

/// The error of a JSON-RPC call that `url` answered with `error`.
pub(super) fn rpc_error(
    method: &str,
    url: &str,
    error: crate::types::jsonrpc::RpcError,
) -> A2aError {
    A2aError::Rpc {
        method: method.to_string(),
        url: url.to_string(),
        error,
    }
}

/// Turns an HTTP+JSON error body (`{"error": {"code", "status", "message", "details"}}`) into an
/// error, falling back to the status and body text.
pub(super) fn rest_error(url: &str, status: u16, body: &[u8]) -> A2aError {
    let parsed: Option<serde_json::Value> = serde_json::from_slice(body).ok();
    let err = parsed
        .as_ref()
        .and_then(|v| v.get("error"))
        .or(parsed.as_ref());
    if let Some(msg) = err.and_then(|e| e.get("message")).and_then(|m| m.as_str()) {
        let reason = err
            .and_then(|e| e.get("details"))
            .and_then(|d| d.as_array())
            .and_then(|d| d.iter().find_map(|x| x.get("reason")?.as_str()))
            .map(str::to_string);
        return A2aError::Rest {
            url: url.to_string(),
            status,
            message: msg.to_string(),
            reason,
        };
    }
    A2aError::status(url, status, body)
}

/// Percent-encodes a value for use as one URL path segment.
pub(super) fn path_segment(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_segments_are_escaped() {
        assert_eq!(path_segment("abc-1.2_~"), "abc-1.2_~");
        assert_eq!(path_segment("a/b c"), "a%2Fb%20c");
    }

    #[test]
    fn rest_errors_keep_message_and_reason() {
        let body = br#"{"error":{"code":404,"status":"NOT_FOUND","message":"no such task","details":[{"@type":"x","reason":"TASK_NOT_FOUND"}]}}"#;
        match rest_error("http://h/tasks/1", 404, body) {
            A2aError::Rest {
                status,
                message,
                reason,
                ..
            } => {
                assert_eq!(status, 404);
                assert_eq!(message, "no such task");
                assert_eq!(reason.as_deref(), Some("TASK_NOT_FOUND"));
            }
            other => panic!("unexpected {other:?}"),
        }
        assert!(matches!(
            rest_error("u", 500, b"boom"),
            A2aError::Status { status: 500, .. }
        ));
    }
}
