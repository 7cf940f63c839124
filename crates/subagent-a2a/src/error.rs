//! Errors of the A2A client.

use crate::types::jsonrpc::{RpcError, codes};

/// Everything that can go wrong talking to a remote A2A agent. Messages name the URL and, for
/// JSON-RPC errors, the method and the A2A error name. Credentials never appear in them.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum A2aError {
    /// The HTTP request failed (connect, TLS, reset...).
    #[error("HTTP request to {url} failed: {source}")]
    Http {
        /// The URL.
        url: String,
        /// The transport error.
        #[source]
        source: reqwest::Error,
    },
    /// The server answered with an unexpected HTTP status.
    #[error("{url} answered HTTP {status}: {body}")]
    Status {
        /// The URL.
        url: String,
        /// The status code.
        status: u16,
        /// The start of the body.
        body: String,
    },
    /// The server answered with a JSON-RPC error.
    #[error("`{method}` at {url} failed with {} {}: {}", .error.code, codes::name(.error.code).unwrap_or("error"), .error.message)]
    Rpc {
        /// The method called.
        method: String,
        /// The URL.
        url: String,
        /// The error object.
        error: RpcError,
    },
    /// The HTTP+JSON binding answered with an error object.
    #[error("{url} answered HTTP {status}: {message}{}", .reason.as_deref().map(|r| format!(" ({r})")).unwrap_or_default())]
    Rest {
        /// The URL.
        url: String,
        /// The HTTP status.
        status: u16,
        /// The error message.
        message: String,
        /// The `ErrorInfo` reason, e.g. `TASK_NOT_FOUND`.
        reason: Option<String>,
    },
    /// A body or event could not be decoded.
    #[error("cannot decode {what} from {url}: {message}")]
    Decode {
        /// The URL.
        url: String,
        /// What was being decoded.
        what: String,
        /// The decoder's message.
        message: String,
        /// The JSON error itself (line, column, category).
        #[source]
        source: Option<serde_json::Error>,
    },
    /// The peer broke the protocol in another way.
    #[error("protocol error from {url}: {message}")]
    Protocol {
        /// The URL.
        url: String,
        /// What was wrong.
        message: String,
    },
    /// The agent card could not be fetched or used.
    #[error("agent card at {url}: {message}")]
    Card {
        /// The card URL (or URLs tried).
        url: String,
        /// What was wrong.
        message: String,
    },
    /// The agent card's signatures were not accepted under the resolver's
    /// [`CardTrust`](crate::signing::CardTrust) (the message names the card URL and key id).
    #[error(transparent)]
    CardSignature(#[from] crate::signing::CardSignatureError),
    /// A body or event exceeded its size limit.
    #[error("response from {url} exceeds the {limit}-byte limit")]
    TooLarge {
        /// The URL.
        url: String,
        /// The limit in bytes.
        limit: usize,
    },
    /// The combination asked for is not supported by this client.
    #[error("not supported: {message}")]
    Unsupported {
        /// What.
        message: String,
    },
    /// A reference's configuration is invalid.
    #[error("invalid configuration: {message}")]
    Config {
        /// What was wrong (names the metadata key, never a secret value).
        message: String,
    },
}

impl A2aError {
    pub(crate) fn http(url: &str, source: reqwest::Error) -> Self {
        A2aError::Http {
            url: url.to_string(),
            source: source.without_url(),
        }
    }

    /// A [`Decode`](Self::Decode) error for `what` from `url`, keeping the JSON error.
    pub(crate) fn decode(url: &str, what: impl Into<String>, source: serde_json::Error) -> Self {
        A2aError::Decode {
            url: url.to_string(),
            what: what.into(),
            message: crate::types::json_error_message(&source),
            source: Some(source),
        }
    }

    pub(crate) fn status(url: &str, status: u16, body: &[u8]) -> Self {
        let text = String::from_utf8_lossy(body);
        let mut body: String = text.chars().take(300).collect();
        if text.chars().count() > 300 {
            body.push('…');
        }
        A2aError::Status {
            url: url.to_string(),
            status,
            body,
        }
    }

    /// True when the peer refused the protocol version (`VersionNotSupported`, -32009, or the
    /// HTTP+JSON reason `VERSION_NOT_SUPPORTED`).
    pub fn is_version_not_supported(&self) -> bool {
        match self {
            A2aError::Rpc { error, .. } => error.code == codes::VERSION_NOT_SUPPORTED,
            A2aError::Rest { reason, .. } => reason.as_deref() == Some("VERSION_NOT_SUPPORTED"),
            _ => false,
        }
    }

    /// The JSON-RPC error code, when the peer answered with one.
    pub fn rpc_code(&self) -> Option<i32> {
        match self {
            A2aError::Rpc { error, .. } => Some(error.code),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_decode_error_keeps_the_json_error_as_its_source() {
        let json = serde_json::from_str::<serde_json::Value>("{\"a\": tru}").unwrap_err();
        let (line, column) = (json.line(), json.column());
        let err = A2aError::decode("http://peer/a2a", "the `SendMessage` response", json);
        assert!(
            err.to_string().starts_with(
                "cannot decode the `SendMessage` response from http://peer/a2a: expected ident"
            ),
            "{err}"
        );
        let source = std::error::Error::source(&err).expect("a source");
        let json = source
            .downcast_ref::<serde_json::Error>()
            .expect("the serde_json error");
        assert_eq!((json.line(), json.column()), (line, column));
    }
}
