//! What every binding shares: the [`Binding`] and [`Endpoint`] a client speaks to, the event
//! stream it reads, and the size and idle limits on what comes back.

use std::pin::Pin;
use std::time::Duration;

use futures::Stream;

use crate::error::A2aError;
use crate::types::{ProtocolVersion, binding, v1};

/// The largest SSE event accepted (16 MiB).
pub const MAX_EVENT_BYTES: usize = 16 * 1024 * 1024;
/// The largest non-streaming response body accepted (32 MiB).
pub const MAX_BODY_BYTES: usize = 32 * 1024 * 1024;
/// How long an event stream may stay silent (no bytes, not even a keep-alive comment) before
/// the call fails with an [`A2aError::Protocol`] naming the URL and the limit (60 s). Servers send keep-alive comments
/// (ours every 15 s), so only a stuck peer or network reaches it.
pub const DEFAULT_STREAM_IDLE_TIMEOUT: Duration = Duration::from_secs(60);

/// A stream of 1.0 stream responses.
pub type EventStream = Pin<Box<dyn Stream<Item = Result<v1::StreamResponse, A2aError>> + Send>>;

/// The binding a client speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Binding {
    /// JSON-RPC 2.0 over HTTP (`JSONRPC`).
    JsonRpc,
    /// The HTTP+JSON (REST) binding (`HTTP+JSON`).
    HttpJson,
    /// gRPC (`GRPC`, 1.0 only; feature `grpc-client`).
    #[cfg(feature = "grpc-client")]
    Grpc,
}

impl Binding {
    /// Parses a card's binding name (case-insensitive); `None` for unknown bindings, and for
    /// gRPC without the `grpc-client` feature.
    pub fn parse(s: &str) -> Option<Self> {
        if s.eq_ignore_ascii_case(binding::JSONRPC) {
            Some(Binding::JsonRpc)
        } else if s.eq_ignore_ascii_case(binding::HTTP_JSON) || s.eq_ignore_ascii_case("REST") {
            Some(Binding::HttpJson)
        } else if cfg!(feature = "grpc-client") && s.eq_ignore_ascii_case(binding::GRPC) {
            #[cfg(feature = "grpc-client")]
            return Some(Binding::Grpc);
            #[cfg(not(feature = "grpc-client"))]
            None
        } else {
            None
        }
    }

    /// The card name of the binding.
    pub fn as_str(self) -> &'static str {
        match self {
            Binding::JsonRpc => binding::JSONRPC,
            Binding::HttpJson => binding::HTTP_JSON,
            #[cfg(feature = "grpc-client")]
            Binding::Grpc => binding::GRPC,
        }
    }
}

/// Where and how to reach an agent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// The absolute URL (JSON-RPC endpoint, or the HTTP+JSON base URL).
    pub url: String,
    /// The binding.
    pub binding: Binding,
    /// The protocol version spoken there.
    pub version: ProtocolVersion,
    /// Tenant to pass in 1.0 requests, when the card names one.
    pub tenant: Option<String>,
}

/// The error of a stream silent for `limit`: an [`A2aError::Protocol`] whose message names the
/// URL and the limit, and contains "stream idle limit".
pub fn stream_idle_error(url: &str, limit: Duration) -> A2aError {
    A2aError::Protocol {
        url: url.to_string(),
        message: format!(
            "the event stream sent nothing (not even a keep-alive comment) for {} s, the stream \
             idle limit; the agent or the network is stuck",
            limit.as_secs_f64()
        ),
    }
}

/// Reads a body of at most [`MAX_BODY_BYTES`].
pub(crate) async fn read_body(resp: reqwest::Response, url: &str) -> Result<Vec<u8>, A2aError> {
    read_body_limited(resp, url, MAX_BODY_BYTES).await
}

/// Reads a body of at most `limit` bytes; a larger one is [`A2aError::TooLarge`].
pub(crate) async fn read_body_limited(
    mut resp: reqwest::Response,
    url: &str,
    limit: usize,
) -> Result<Vec<u8>, A2aError> {
    let mut out = Vec::new();
    while let Some(chunk) = resp.chunk().await.map_err(|e| A2aError::http(url, e))? {
        if out.len() + chunk.len() > limit {
            return Err(A2aError::TooLarge {
                url: url.to_string(),
                limit,
            });
        }
        out.extend_from_slice(&chunk);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bindings_parse_case_insensitively() {
        assert_eq!(Binding::parse("jsonrpc"), Some(Binding::JsonRpc));
        assert_eq!(Binding::parse("HTTP+JSON"), Some(Binding::HttpJson));
        #[cfg(feature = "grpc-client")]
        assert_eq!(Binding::parse("grpc"), Some(Binding::Grpc));
        #[cfg(not(feature = "grpc-client"))]
        assert_eq!(Binding::parse("GRPC"), None);
        assert_eq!(Binding::parse("SOAP"), None);
    }

    #[test]
    fn the_wire_dialect_is_chosen_once_not_matched_per_call() {
        // One `Dialect` per binding and version, selected in `A2aClient::new`: neither the
        // client nor the shared HTTP plumbing matches on the endpoint's binding.
        let needle = [".endpoint", ".binding"].concat();
        for (file, source) in [
            ("transport.rs", include_str!("transport.rs")),
            ("wire.rs", include_str!("wire.rs")),
        ] {
            assert!(!source.contains(&needle), "{file} matches on the binding");
        }
    }
}
