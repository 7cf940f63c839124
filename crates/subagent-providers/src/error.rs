//! The providers' own error: the HTTP details behind a [`ModelError`], kept as its source.

use std::time::Duration;

use subagent_spi::ModelError;

/// What an endpoint answered or why it could not be reached: the source of the [`ModelError`]s
/// this crate returns. URLs here never carry credentials (see [`redact_url`]).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProviderError {
    /// The endpoint answered with a non-success HTTP status.
    #[error("HTTP {status} from {url}: {message}")]
    Status {
        /// The HTTP status code.
        status: u16,
        /// The endpoint (credentials redacted).
        url: String,
        /// The provider's error message.
        message: String,
    },
    /// The stream reported an error event that maps to an HTTP status (Anthropic's
    /// `overloaded_error` is 529, `rate_limit_error` 429, `api_error` 500).
    #[error("the stream reported {kind} (like HTTP {status}): {message}")]
    StreamError {
        /// The status the error kind corresponds to.
        status: u16,
        /// The error kind as the provider named it.
        kind: String,
        /// The provider's error message.
        message: String,
    },
    /// The connection failed or broke.
    #[error("connection to {url} failed: {message}")]
    Connect {
        /// The endpoint (credentials redacted).
        url: String,
        /// What failed.
        message: String,
    },
}

impl ProviderError {
    /// The HTTP status, for [`Status`](Self::Status) and [`StreamError`](Self::StreamError).
    pub fn status(&self) -> Option<u16> {
        match self {
            ProviderError::Status { status, .. } | ProviderError::StreamError { status, .. } => {
                Some(*status)
            }
            ProviderError::Connect { .. } => None,
        }
    }
}

/// The HTTP status behind a [`ModelError`] from this crate, if it had one.
pub fn http_status(err: &ModelError) -> Option<u16> {
    let source = std::error::Error::source(err)?;
    source.downcast_ref::<ProviderError>()?.status()
}

/// True for statuses worth retrying: 429 and every 5xx (Anthropic's 529 "overloaded" too).
fn retryable_status(status: u16) -> bool {
    status == 429 || status >= 500
}

/// The [`ModelError`] for an HTTP error answer: 401/403 are refused credentials, the rest a
/// rejection (retryable for 429 and 5xx) with the status and URL in the source.
pub(crate) fn status_error(
    provider: &str,
    status: u16,
    url: &str,
    message: String,
    retry_after: Option<Duration>,
) -> ModelError {
    let source = ProviderError::Status {
        status,
        url: redact_url(url),
        message: message.clone(),
    };
    let message = format!("HTTP {status}: {message}");
    if status == 401 || status == 403 {
        return ModelError::Unauthorized {
            provider: provider.to_string(),
            message,
            source: Some(Box::new(source)),
        };
    }
    ModelError::Rejected {
        provider: provider.to_string(),
        message,
        retryable: retryable_status(status),
        retry_after,
        source: Some(Box::new(source)),
    }
}

/// The [`ModelError`] for an error event inside a stream that corresponds to `status`.
pub(crate) fn stream_error(
    provider: &str,
    status: u16,
    kind: String,
    message: String,
) -> ModelError {
    let text = message.clone();
    ModelError::Rejected {
        provider: provider.to_string(),
        message: text,
        retryable: retryable_status(status),
        retry_after: None,
        source: Some(Box::new(ProviderError::StreamError {
            status,
            kind,
            message,
        })),
    }
}

/// The [`ModelError`] for a connection that failed or broke.
pub(crate) fn connect_error(provider: &str, url: &str, message: String) -> ModelError {
    let url = redact_url(url);
    ModelError::Unreachable {
        provider: provider.to_string(),
        message: format!("{url}: {message}"),
        source: Some(Box::new(ProviderError::Connect { url, message })),
    }
}

/// `url` with any password (and user name) replaced by `***`, so it can be printed or logged:
/// `http://user:secret@host/v1` → `http://***@host/v1`. Text that is not a URL with
/// credentials is returned as it is.
pub fn redact_url(url: &str) -> String {
    let Some(scheme_end) = url.find("://") else {
        return url.to_string();
    };
    let rest = &url[scheme_end + 3..];
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    match rest[..authority_end].rfind('@') {
        Some(at) => format!("{}://***@{}", &url[..scheme_end], &rest[at + 1..]),
        None => url.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_are_redacted() {
        assert_eq!(
            redact_url("http://user:PASS@host:8080/v1?q=1"),
            "http://***@host:8080/v1?q=1"
        );
        assert_eq!(redact_url("https://tok@h/x@y"), "https://***@h/x@y");
        assert_eq!(redact_url("http://host/v1"), "http://host/v1");
        assert_eq!(redact_url("not a url"), "not a url");
    }

    #[test]
    fn statuses_map_to_the_right_variant_and_keep_the_source() {
        let e = status_error("openai", 429, "http://u:p@h/v1", "slow down".into(), None);
        assert!(e.is_retryable());
        assert_eq!(http_status(&e), Some(429));
        let shown = format!("{e} / {}", std::error::Error::source(&e).unwrap());
        assert!(shown.contains("HTTP 429: slow down"), "{shown}");
        assert!(!shown.contains(":p@"), "{shown}");
        let e = status_error("openai", 401, "http://h/v1", "bad key".into(), None);
        assert!(matches!(e, ModelError::Unauthorized { .. }));
        assert!(e.is_setup_problem());
        let e = status_error("openai", 400, "http://h/v1", "bad".into(), None);
        assert!(!e.is_retryable());
        let e = connect_error("openai", "http://u:SECRET@h/v1", "refused".into());
        assert!(!e.to_string().contains("SECRET"), "{e}");
        assert!(e.is_retryable());
    }
}
