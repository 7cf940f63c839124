//! HTTP plumbing shared by the providers: retries with backoff under the endpoint's adaptive
//! limit ([`crate::limiter`]), timeouts, error mapping.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use bytes::Bytes;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde_json::Value;
use subagent_spi::ModelError;
use subagent_spi::chat::{ChatDelta, ChatResponse};

use crate::limiter::{Limiter, Permit, Wait};

/// A provider's decoder of a streamed reply, fed chunk by chunk by
/// [`Transport::stream_reply`].
pub(crate) trait StreamDecode {
    /// What a reply decodes into (the response, and what else the provider keeps of it).
    type Reply;
    /// The response in a [`Reply`](Self::Reply).
    fn response(reply: &Self::Reply) -> &ChatResponse;
    /// Decodes the next chunk of bytes.
    fn feed(
        &mut self,
        bytes: &[u8],
        on_delta: &(dyn Fn(ChatDelta) + Send + Sync),
    ) -> Result<(), ModelError>;
    /// True once the stream said it is complete.
    fn is_done(&self) -> bool;
    /// The stream ended: the assembled reply, or an error if it was cut short.
    fn finish(self) -> Result<Self::Reply, ModelError>;
    /// The stream was cut off mid-answer: when the reply so far can be continued (text only so
    /// far), get ready to decode a continuation stream into the same reply and return the text
    /// to continue from; `None` (the default) when it cannot.
    fn continue_after_cut(&mut self) -> Option<String> {
        None
    }
}

/// Builds the request body that continues a reply cut off after the given text (see
/// [`Transport::stream_reply`]).
pub(crate) type ContinueBody<'a> = &'a (dyn Fn(&str) -> Result<Bytes, ModelError> + Sync);

/// How failed calls are retried.
///
/// **Slow-down answers** (429, 503, Anthropic's 529 overloaded, or any answer with a
/// `Retry-After`) are waited out: retried until `max_rate_limit_wait` has passed since the
/// call's first such answer, not a number of times. The wait before each retry is the
/// `Retry-After` the provider sent (`retry-after-ms`, seconds or an HTTP date), capped at
/// `max_retry_after`, plus a random jitter of up to half of it (from 100 ms to 5 s) so the
/// callers told the same wait do not all come back at once; without one, the exponential
/// backoff below. Meanwhile the endpoint's adaptive limit (see the crate docs) lowers the
/// number of requests in flight, so the other calls queue instead of being refused too.
///
/// **Other failures** (5xx, connection failures) are retried up to `max_retries` times. The
/// wait before retry `n` (from 0) is drawn at random from 0 to `base_delay * 2^n`, capped at
/// `max_delay` ("full jitter").
///
/// Cancellation, the caller's deadline and budget end a call whatever it waits for (the agent
/// loop drops the call).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct RetryPolicy {
    /// Retries after the first attempt for failures other than slow-down answers (default 3;
    /// 0 disables them). With `max_rate_limit_wait` zero, slow-down answers count here too.
    pub max_retries: u32,
    /// Backoff before the first retry (default 500 ms).
    pub base_delay: Duration,
    /// Largest backoff (default 30 s).
    pub max_delay: Duration,
    /// Largest wait taken from a `Retry-After` header or a provider's rate-limit reset header
    /// (default 60 s): what a server can make one attempt wait at most.
    pub max_retry_after: Duration,
    /// How long a call keeps retrying slow-down answers (429, 503, 529), from the first one
    /// (default 300 s, [`DEFAULT_MAX_RATE_LIMIT_WAIT`]); zero: they are retried like other
    /// failures, `max_retries` times.
    pub max_rate_limit_wait: Duration,
    /// Also retry attempts that hit the request timeout (default false: a timeout has already
    /// used the whole budget).
    pub retry_on_timeout: bool,
}

/// How long a call keeps retrying slow-down answers by default: 5 minutes.
pub const DEFAULT_MAX_RATE_LIMIT_WAIT: Duration = Duration::from_secs(300);

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_retries: 3,
            base_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(30),
            max_retry_after: Duration::from_secs(60),
            max_rate_limit_wait: DEFAULT_MAX_RATE_LIMIT_WAIT,
            retry_on_timeout: false,
        }
    }
}

impl RetryPolicy {
    /// The backoff before retry `attempt` (0-based) without a `Retry-After`: a random wait
    /// from 0 to `base_delay * 2^attempt`, capped at `max_delay` (full jitter).
    pub fn backoff(&self, attempt: u32) -> Duration {
        let factor = 1u32.checked_shl(attempt.min(20)).unwrap_or(u32::MAX);
        let full = self
            .base_delay
            .checked_mul(factor)
            .unwrap_or(self.max_delay)
            .min(self.max_delay);
        full.mul_f64(crate::limiter::jitter_fraction())
    }

    /// The wait before retry `attempt` after `err`: its `Retry-After` (capped) with jitter
    /// above it, else the backoff.
    fn wait_for(&self, attempt: u32, err: &ModelError) -> Duration {
        match err.retry_after() {
            Some(after) => {
                let after = after.min(self.max_retry_after);
                after + crate::limiter::spread(after).mul_f64(crate::limiter::jitter_fraction())
            }
            None => self.backoff(attempt),
        }
    }

    fn should_retry(&self, err: &ModelError) -> bool {
        match err {
            ModelError::Timeout { .. } => self.retry_on_timeout,
            other => other.is_retryable(),
        }
    }

    /// True when slow-down answers are waited out by time (`max_rate_limit_wait` > 0).
    fn waits_out_slow_downs(&self) -> bool {
        !self.max_rate_limit_wait.is_zero()
    }
}

/// Parse a `Retry-After` value: delay seconds (integer or decimal) or an HTTP date.
pub(crate) fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let v = value.trim();
    if let Ok(secs) = v.parse::<f64>() {
        return (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs.min(1e9)));
    }
    let when = httpdate::parse_http_date(v).ok()?;
    Some(when.duration_since(now).unwrap_or(Duration::ZERO))
}

fn retry_after_from(headers: &HeaderMap) -> Option<Duration> {
    if let Some(ms) = headers
        .get("retry-after-ms")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<f64>().ok())
        && ms.is_finite()
        && ms >= 0.0
    {
        return Some(Duration::from_secs_f64((ms / 1000.0).min(1e9)));
    }
    headers
        .get(reqwest::header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| parse_retry_after(v, SystemTime::now()))
}

/// The provider's own message from an error body: `{"error":{"message":..}}` (OpenAI and
/// Anthropic), `{"error":".."}`, `{"message":..}`, `{"detail":..}`, else the text itself.
pub(crate) fn error_message_from_body(body: &[u8], status: u16) -> String {
    if let Ok(v) = serde_json::from_slice::<Value>(body) {
        let found = v
            .pointer("/error/message")
            .or_else(|| v.get("error"))
            .or_else(|| v.get("message"))
            .or_else(|| v.get("detail"))
            .and_then(Value::as_str);
        if let Some(m) = found {
            return m.to_string();
        }
    }
    let text = String::from_utf8_lossy(body);
    let text = text.trim();
    if text.is_empty() {
        let reason = reqwest::StatusCode::from_u16(status)
            .ok()
            .and_then(|s| s.canonical_reason())
            .unwrap_or("error");
        return format!("{reason} (empty body)");
    }
    truncate_chars(text, 2000)
}

pub(crate) fn truncate_chars(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((i, _)) => format!("{}… ({} bytes in all)", &s[..i], s.len()),
        None => s.to_string(),
    }
}

/// The message of an error and its sources, joined with `: `.
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut src = e.source();
    while let Some(s) = src {
        let t = s.to_string();
        if !out.contains(&t) {
            out.push_str(": ");
            out.push_str(&t);
        }
        src = s.source();
    }
    out
}

/// Largest error body read, in bytes.
const MAX_ERROR_BODY: usize = 64 * 1024;
/// Largest non-streamed reply read, in bytes.
pub(crate) const MAX_REPLY_BODY: usize = 64 * 1024 * 1024;

/// True for a slow-down answer: 429, 503 or 529 (Anthropic's overloaded), or any answer with a
/// `Retry-After`: the provider asks callers to slow down.
fn is_slow_down(err: &ModelError) -> bool {
    err.retry_after().is_some() || matches!(crate::error::http_status(err), Some(429 | 503 | 529))
}

/// The status line of a waiting call, for a person: `rate limited (HTTP 429): retry in 3 s`.
fn retry_reason(err: &ModelError, slow_down: bool, wait: Duration) -> String {
    let status = crate::error::http_status(err);
    let what = match status {
        Some(429) => "rate limited (HTTP 429)".to_string(),
        Some(s @ (503 | 529)) => format!("the provider is overloaded (HTTP {s})"),
        Some(s) if slow_down => format!("the provider asked to slow down (HTTP {s})"),
        Some(s) => format!("the model call failed (HTTP {s})"),
        None => "the model call failed".to_string(),
    };
    format!("{what}: retry in {}", seconds_text(wait))
}

/// `0.4 s`, `3.2 s`, `12 s`.
fn seconds_text(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s < 10.0 {
        format!("{s:.1} s")
    } else {
        format!("{s:.0} s")
    }
}

/// A [`ChatDelta::Waiting`] for a wait in the endpoint's limiter.
fn limiter_delta(w: Wait) -> ChatDelta {
    match w {
        Wait::Queued { in_flight } => ChatDelta::Waiting {
            reason: format!(
                "rate limited: waiting for a place ({in_flight} requests in flight to this endpoint)"
            ),
            retry_in: None,
        },
        Wait::Paused(d) => ChatDelta::Waiting {
            reason: format!(
                "rate limited: the provider's limit resets in {}",
                seconds_text(d)
            ),
            retry_in: Some(d),
        },
    }
}

/// The last slow-down answer of a call that waited `waited` and may wait no longer, saying so.
fn gave_up(mut err: ModelError, waited: Duration) -> ModelError {
    if let ModelError::Rejected { message, .. } = &mut err {
        message.push_str(&format!(
            " (still refused after {} of retries; the limit is max_rate_limit_wait)",
            seconds_text(waited)
        ));
    }
    err
}

/// An HTTP endpoint with a client, retry policy and timeout.
#[derive(Debug, Clone)]
pub(crate) struct Transport {
    pub provider: String,
    pub client: reqwest::Client,
    pub url: String,
    pub headers: HeaderMap,
    pub retry: RetryPolicy,
    pub timeout: Duration,
    /// The longest silence inside a streamed body.
    pub idle_timeout: Duration,
    /// The adaptive limit shared by every client of this endpoint and key.
    pub limiter: Arc<Limiter>,
}

impl Transport {
    pub(crate) fn timeout_error(&self) -> ModelError {
        ModelError::Timeout {
            provider: self.provider.clone(),
            after: self.timeout,
        }
    }

    pub(crate) fn connection_error(&self, e: &reqwest::Error) -> ModelError {
        if e.is_timeout() {
            return self.timeout_error();
        }
        crate::error::connect_error(&self.provider, &self.url, error_chain(e))
    }

    /// Runs `attempt` with retries per the policy, each attempt under the endpoint's limiter;
    /// returns the result with its place in flight (give it back once the body is read).
    /// `notify` hears why the call waits ([`ChatDelta::Waiting`]).
    async fn with_retries<T, F, Fut>(
        &self,
        notify: &(dyn Fn(ChatDelta) + Send + Sync),
        mut attempt: F,
    ) -> Result<(T, Permit), ModelError>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, ModelError>>,
    {
        let ticket = self.limiter.ticket();
        let on_wait = |w: Wait| notify(limiter_delta(w));
        // Retries of other failures so far; slow-down retries so far, since when.
        let (mut failures, mut slow_downs) = (0u32, 0u32);
        let mut slowed_since: Option<Instant> = None;
        loop {
            let permit = self.limiter.acquire(ticket, &on_wait).await;
            let err = match attempt().await {
                Ok(v) => {
                    permit.succeeded();
                    return Ok((v, permit));
                }
                Err(e) => e,
            };
            let slow_down = is_slow_down(&err);
            if slow_down {
                permit.slowed_down(err.retry_after().map(|r| r.min(self.retry.max_retry_after)));
            } else {
                drop(permit);
            }
            let wait = if slow_down && self.retry.waits_out_slow_downs() {
                let since = *slowed_since.get_or_insert_with(Instant::now);
                let wait = self.retry.wait_for(slow_downs, &err);
                let waited = since.elapsed();
                if waited + wait > self.retry.max_rate_limit_wait {
                    return Err(gave_up(err, waited));
                }
                slow_downs += 1;
                wait
            } else if failures < self.retry.max_retries && self.retry.should_retry(&err) {
                failures += 1;
                self.retry.wait_for(failures - 1, &err)
            } else {
                return Err(err);
            };
            // A diagnostic (the log at `--log info`): the live view shows the wait itself.
            tracing::info!(
                provider = %self.provider,
                attempt = failures + slow_downs,
                wait_ms = wait.as_millis() as u64,
                error = %err,
                "model call refused or failed; retrying"
            );
            notify(ChatDelta::Waiting {
                reason: retry_reason(&err, slow_down, wait),
                retry_in: Some(wait),
            });
            tokio::time::sleep(wait).await;
        }
    }

    /// POST `body` and return the successful response (headers read) within the timeout;
    /// non-2xx answers become [`ModelError::Rejected`] (or `Unauthorized` for 401/403) with the
    /// provider's message, the status and URL in the source.
    async fn post_once(&self, body: &Bytes) -> Result<reqwest::Response, ModelError> {
        let send = self
            .client
            .post(&self.url)
            .headers(self.headers.clone())
            .body(body.clone())
            .send();
        let resp = match tokio::time::timeout(self.timeout, send).await {
            Err(_) => return Err(self.timeout_error()),
            Ok(Err(e)) => return Err(self.connection_error(&e)),
            Ok(Ok(r)) => r,
        };
        // A limit the provider says is used up pauses every call until it resets (capped).
        if let Some(reset) = crate::rate_headers::exhausted_for(resp.headers(), SystemTime::now()) {
            self.limiter
                .pause_for(reset.min(self.retry.max_retry_after));
        }
        let status = resp.status();
        if status.is_success() {
            return Ok(resp);
        }
        let retry_after = retry_after_from(resp.headers());
        let body = match tokio::time::timeout(self.timeout, read_capped(resp, MAX_ERROR_BODY)).await
        {
            Ok(Ok(b)) => b,
            _ => Vec::new(),
        };
        Err(crate::error::status_error(
            &self.provider,
            status.as_u16(),
            &self.url,
            error_message_from_body(&body, status.as_u16()),
            retry_after,
        ))
    }

    /// POST and read the whole reply body, with retries; the timeout covers each attempt.
    pub(crate) async fn post_for_body(&self, body: Bytes) -> Result<Vec<u8>, ModelError> {
        let (bytes, _permit) = self
            .with_retries(&|_| {}, || async {
                let attempt = async {
                    let resp = self.post_once(&body).await?;
                    read_capped(resp, MAX_REPLY_BODY)
                        .await
                        .map_err(|e| self.connection_error(&e))
                };
                match tokio::time::timeout(self.timeout, attempt).await {
                    Ok(r) => r,
                    Err(_) => Err(self.timeout_error()),
                }
            })
            .await?;
        Ok(bytes)
    }

    /// POST and return the response once its headers arrive, with retries, and its place in
    /// flight (held until the body is read). The caller reads the body with
    /// [`next_chunk`](Self::next_chunk); `notify` hears why the call waits.
    async fn post_for_stream(
        &self,
        body: Bytes,
        notify: &(dyn Fn(ChatDelta) + Send + Sync),
    ) -> Result<(reqwest::Response, Permit), ModelError> {
        self.with_retries(notify, || self.post_once(&body)).await
    }

    /// Read the rest of a body that should have been a stream but is one JSON document (some
    /// servers ignore `stream: true`), chunk by chunk under the idle timeout, up to the cap.
    pub(crate) async fn read_rest(
        &self,
        resp: &mut reqwest::Response,
    ) -> Result<Vec<u8>, ModelError> {
        let mut buf = Vec::new();
        while let Some(chunk) = self.next_chunk(resp).await? {
            if buf.len() + chunk.len() > MAX_REPLY_BODY {
                return Err(ModelError::BadResponse {
                    provider: self.provider.clone(),
                    message: format!("the reply exceeds {MAX_REPLY_BODY} bytes"),
                });
            }
            buf.extend_from_slice(&chunk);
        }
        Ok(buf)
    }

    /// POSTs `body` for a streamed reply and decodes it with `decoder`, handing deltas to
    /// `on_delta`. A server that ignores `stream` and answers one JSON document is read with
    /// `parse_body` (its text goes to `on_delta` at once); any other body goes through the
    /// decoder whole.
    ///
    /// A stream cut off mid-answer (the connection broke, the server went silent past the idle
    /// timeout, or the body ended early) is **continued** when `continue_body` is given and the
    /// decoder can continue ([`StreamDecode::continue_after_cut`]): a request built by
    /// `continue_body` from the text so far (a prefill) is sent, up to `max_retries` times,
    /// after the usual backoff, and its stream is decoded into the same reply, so the text
    /// already handed to `on_delta` is neither sent twice nor lost. Otherwise the cut fails the
    /// call as before.
    pub(crate) async fn stream_reply<D: StreamDecode>(
        &self,
        body: Bytes,
        mut decoder: D,
        parse_body: impl FnOnce(&[u8]) -> Result<D::Reply, ModelError>,
        on_delta: &(dyn Fn(ChatDelta) + Send + Sync),
        continue_body: Option<ContinueBody<'_>>,
    ) -> Result<D::Reply, ModelError> {
        // The place in flight is held while the body is read: the server is busy until then.
        let (mut resp, mut _permit) = self.post_for_stream(body, on_delta).await?;
        if !Self::is_event_stream(&resp) {
            let buf = self.read_rest(&mut resp).await?;
            if serde_json::from_slice::<Value>(&buf).is_ok() {
                let reply = parse_body(&buf)?;
                let text = &D::response(&reply).content;
                if !text.is_empty() {
                    on_delta(ChatDelta::Text(text.clone()));
                }
                return Ok(reply);
            }
            decoder.feed(&buf, on_delta)?;
            return decoder.finish();
        }
        let mut continued = 0u32;
        loop {
            let cut = match self.read_stream(&mut resp, &mut decoder, on_delta).await {
                Ok(()) if decoder.is_done() => break,
                Ok(()) => None, // the body ended before the stream said it was complete
                Err(e) if e.is_retryable() => Some(e),
                Err(e) => return Err(e),
            };
            let text = match continue_body {
                Some(_) if continued < self.retry.max_retries => decoder.continue_after_cut(),
                _ => None,
            };
            let (Some(build), Some(text)) = (continue_body, text) else {
                return match cut {
                    Some(e) => Err(e),
                    None => decoder.finish(), // says how the stream was cut short
                };
            };
            let wait = self.retry.backoff(continued);
            tracing::info!(
                provider = %self.provider,
                attempt = continued + 1,
                chars = text.chars().count(),
                wait_ms = wait.as_millis() as u64,
                "model stream cut off mid-answer; continuing from the text so far"
            );
            tokio::time::sleep(wait).await;
            continued += 1;
            drop(_permit);
            (resp, _permit) = self.post_for_stream(build(&text)?, on_delta).await?;
            if !Self::is_event_stream(&resp) {
                return Err(ModelError::BadResponse {
                    provider: self.provider.clone(),
                    message: "the continuation of a cut-off stream was not a stream".into(),
                });
            }
        }
        decoder.finish()
    }

    /// Feeds the body's chunks to `decoder` until the body ends or the stream is complete.
    async fn read_stream<D: StreamDecode>(
        &self,
        resp: &mut reqwest::Response,
        decoder: &mut D,
        on_delta: &(dyn Fn(ChatDelta) + Send + Sync),
    ) -> Result<(), ModelError> {
        while let Some(chunk) = self.next_chunk(resp).await? {
            decoder.feed(&chunk, on_delta)?;
            if decoder.is_done() {
                break;
            }
        }
        Ok(())
    }

    /// True when the response is `text/event-stream`.
    pub(crate) fn is_event_stream(resp: &reqwest::Response) -> bool {
        resp.headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.trim_start().starts_with("text/event-stream"))
    }

    /// The next body chunk, failing with a timeout if the server stays silent for the timeout.
    pub(crate) async fn next_chunk(
        &self,
        resp: &mut reqwest::Response,
    ) -> Result<Option<Bytes>, ModelError> {
        match tokio::time::timeout(self.idle_timeout.min(self.timeout), resp.chunk()).await {
            Err(_) => Err(ModelError::Timeout {
                provider: self.provider.clone(),
                after: self.idle_timeout.min(self.timeout),
            }),
            Ok(Err(e)) => Err(self.connection_error(&e)),
            Ok(Ok(c)) => Ok(c),
        }
    }
}

/// Read a body up to `cap` bytes (the rest is dropped).
async fn read_capped(mut resp: reqwest::Response, cap: usize) -> Result<Vec<u8>, reqwest::Error> {
    let mut out = Vec::new();
    while let Some(chunk) = resp.chunk().await? {
        let room = cap.saturating_sub(out.len());
        out.extend_from_slice(&chunk[..chunk.len().min(room)]);
        if out.len() >= cap {
            break;
        }
    }
    Ok(out)
}

/// Build a header map from name/value pairs, naming the bad one on error.
pub(crate) fn header_map(
    provider: &str,
    pairs: &[(String, String)],
    secret_names: &[&str],
) -> Result<HeaderMap, ModelError> {
    let mut map = HeaderMap::new();
    for (name, value) in pairs {
        let n = HeaderName::from_bytes(name.as_bytes()).map_err(|_| {
            ModelError::Config(format!("{provider}: invalid HTTP header name `{name}`"))
        })?;
        let mut v = HeaderValue::from_str(value).map_err(|_| {
            if secret_names.iter().any(|s| n.as_str().eq_ignore_ascii_case(s)) {
                ModelError::Config(format!(
                    "{provider}: the value of header `{name}` (a credential, not shown) has characters not allowed in HTTP headers"
                ))
            } else {
                ModelError::Config(format!(
                    "{provider}: invalid value for HTTP header `{name}`: {value:?}"
                ))
            }
        })?;
        if secret_names
            .iter()
            .any(|s| n.as_str().eq_ignore_ascii_case(s))
        {
            v.set_sensitive(true);
        }
        // Later pairs (the caller's extra headers) replace earlier ones (the defaults).
        map.insert(n, v);
    }
    Ok(map)
}

/// Normalise a base URL: must be http(s), no trailing slash.
pub(crate) fn normalise_base_url(provider: &str, url: &str) -> Result<String, ModelError> {
    let u = url.trim().trim_end_matches('/');
    let rest = u
        .strip_prefix("http://")
        .or_else(|| u.strip_prefix("https://"));
    match rest {
        Some(host) if !host.is_empty() && !host.starts_with('/') => Ok(u.to_string()),
        _ => Err(ModelError::Config(format!(
            "{provider}: base URL `{url}` must start with http:// or https:// and name a host"
        ))),
    }
}

pub(crate) fn build_client() -> Result<reqwest::Client, ModelError> {
    reqwest::Client::builder().build().map_err(|e| {
        ModelError::Config(format!("cannot build the HTTP client: {}", error_chain(&e)))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_seconds_decimal_and_date() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        assert_eq!(parse_retry_after("2", now), Some(Duration::from_secs(2)));
        assert_eq!(
            parse_retry_after(" 0.5 ", now),
            Some(Duration::from_millis(500))
        );
        assert_eq!(parse_retry_after("-1", now), None);
        assert_eq!(parse_retry_after("soon", now), None);
        let date = httpdate::fmt_http_date(now + Duration::from_secs(30));
        assert_eq!(parse_retry_after(&date, now), Some(Duration::from_secs(30)));
        let past = httpdate::fmt_http_date(now - Duration::from_secs(30));
        assert_eq!(parse_retry_after(&past, now), Some(Duration::ZERO));
    }

    #[test]
    fn backoff_grows_is_capped_and_fully_jittered() {
        let p = RetryPolicy {
            base_delay: Duration::from_millis(100),
            max_delay: Duration::from_millis(1000),
            ..RetryPolicy::default()
        };
        for attempt in 0..10 {
            let full = (100u64 << attempt.min(20)).min(1000);
            let waits: Vec<u64> = (0..200)
                .map(|_| p.backoff(attempt).as_millis() as u64)
                .collect();
            assert!(
                waits.iter().all(|d| *d <= full),
                "attempt {attempt}: {waits:?}"
            );
            // Full jitter: spread over the whole range, not bunched near the top.
            assert!(
                waits.iter().any(|d| *d < full / 4),
                "attempt {attempt}: {waits:?}"
            );
            assert!(
                waits.iter().any(|d| *d > full * 3 / 4),
                "attempt {attempt}: {waits:?}"
            );
        }
        assert!(p.backoff(u32::MAX) <= Duration::from_millis(1000));
    }

    #[test]
    fn retry_after_is_capped_and_jittered_above() {
        let p = RetryPolicy {
            max_retry_after: Duration::from_secs(5),
            ..RetryPolicy::default()
        };
        let err = crate::error::status_error(
            "x",
            429,
            "http://x/",
            String::new(),
            Some(Duration::from_secs(3600)),
        );
        let waits: Vec<Duration> = (0..100).map(|_| p.wait_for(0, &err)).collect();
        // Never before the (capped) Retry-After, never past it plus half of it.
        assert!(
            waits
                .iter()
                .all(|w| *w >= Duration::from_secs(5) && *w <= Duration::from_millis(7500)),
            "{waits:?}"
        );
        let distinct: std::collections::HashSet<_> = waits.iter().collect();
        assert!(
            distinct.len() > 50,
            "the waiters do not all come back at once"
        );
    }

    #[test]
    fn slow_downs_are_429_503_529_or_a_retry_after() {
        let e = |status, after| {
            crate::error::status_error("x", status, "http://x/", String::new(), after)
        };
        assert!(is_slow_down(&e(429, None)));
        assert!(is_slow_down(&e(503, None)));
        assert!(is_slow_down(&e(529, None)));
        assert!(is_slow_down(&e(500, Some(Duration::from_secs(1)))));
        assert!(!is_slow_down(&e(500, None)));
        assert!(!is_slow_down(&e(400, None)));
        let reason = retry_reason(&e(429, None), true, Duration::from_millis(3200));
        assert_eq!(reason, "rate limited (HTTP 429): retry in 3.2 s");
        let reason = retry_reason(&e(529, None), true, Duration::from_secs(12));
        assert_eq!(
            reason,
            "the provider is overloaded (HTTP 529): retry in 12 s"
        );
    }

    #[test]
    fn error_messages_from_various_bodies() {
        let m = |b: &str| error_message_from_body(b.as_bytes(), 400);
        assert_eq!(
            m(r#"{"error":{"message":"bad key","type":"x"}}"#),
            "bad key"
        );
        assert_eq!(
            m(
                r#"{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}"#
            ),
            "invalid x-api-key"
        );
        assert_eq!(m(r#"{"error":"model not found"}"#), "model not found");
        assert_eq!(
            m(r#"{"object":"error","message":"vllm says"}"#),
            "vllm says"
        );
        assert_eq!(m("plain text\n"), "plain text");
        assert_eq!(m(""), "Bad Request (empty body)");
    }

    #[test]
    fn base_urls_are_checked() {
        assert_eq!(
            normalise_base_url("p", "http://127.0.0.1:11434/v1/").unwrap(),
            "http://127.0.0.1:11434/v1"
        );
        assert!(normalise_base_url("p", "127.0.0.1:8080").is_err());
        assert!(normalise_base_url("p", "https://").is_err());
    }

    #[test]
    fn secret_header_errors_do_not_show_the_value() {
        let err = header_map(
            "p",
            &[("x-api-key".into(), "sk-\nsecret".into())],
            &["x-api-key"],
        )
        .unwrap_err()
        .to_string();
        assert!(!err.contains("secret"), "{err}");
    }
}
