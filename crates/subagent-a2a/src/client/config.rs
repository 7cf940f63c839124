//! Per-reference settings read from [`SubagentReference`] metadata (and the environment).

use std::time::Duration;

use http::{HeaderMap, HeaderName, HeaderValue};
use subagent_spi::SubagentReference;

use super::transport::Binding;
use crate::error::A2aError;
use crate::types::ProtocolVersion;

/// Metadata keys understood by the `A2A` kind (each also accepted with an `auth.` prefix for
/// the auth keys, e.g. `auth.bearer_env`).
pub mod keys {
    /// A bearer token sent as `Authorization: Bearer <token>`.
    pub const BEARER: &str = "bearer";
    /// The name of an environment variable holding the bearer token.
    pub const BEARER_ENV: &str = "bearer_env";
    /// The header carrying an API key (e.g. `X-API-Key`); default: the header of the card's
    /// API-key security scheme.
    pub const API_KEY_HEADER: &str = "api_key_header";
    /// The API key.
    pub const API_KEY: &str = "api_key";
    /// The name of an environment variable holding the API key.
    pub const API_KEY_ENV: &str = "api_key_env";
    /// Overall time limit of one task, in seconds (default 300).
    pub const TIMEOUT_SECS: &str = "timeout_secs";
    /// `true` / `false`: force streaming on or off (default: what the card declares).
    pub const STREAMING: &str = "streaming";
    /// Preferred binding: `JSONRPC` (default) or `HTTP+JSON`.
    pub const BINDING: &str = "binding";
    /// Preferred protocol version: `1.0` (default when offered) or `0.3`.
    pub const PROTOCOL_VERSION: &str = "protocol_version";
    /// The agent's name as shown to the model (default: the card's name).
    pub const NAME: &str = "name";
    /// Interval between `GetTask` polls when following a task without streaming, in
    /// milliseconds (default 500).
    pub const POLL_INTERVAL_MS: &str = "poll_interval_ms";
    /// How long an event stream may stay silent (no bytes, not even a keep-alive comment)
    /// before the call fails, in seconds (default 60; `0` waits forever).
    pub const STREAM_IDLE_TIMEOUT_SECS: &str = "stream_idle_timeout_secs";
}

/// The default time limit of one task.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(300);
/// The default `GetTask` polling interval.
pub const DEFAULT_POLL_INTERVAL: Duration = Duration::from_millis(500);

/// Settings of one A2A reference.
#[derive(Clone)]
pub struct A2aConfig {
    /// Headers sent on every request (auth). Never printed.
    pub(crate) headers: HeaderMap,
    /// An API key whose header is not named yet (taken from the card).
    pub(crate) pending_api_key: Option<String>,
    /// Task time limit.
    pub timeout: Duration,
    /// Streaming override.
    pub streaming: Option<bool>,
    /// Preferred binding.
    pub binding: Option<Binding>,
    /// Preferred version.
    pub version: Option<ProtocolVersion>,
    /// Name override.
    pub name: Option<String>,
    /// Polling interval.
    pub poll_interval: Duration,
    /// Stream idle limit (zero: none); see
    /// [`A2aClient::with_stream_idle_timeout`](super::A2aClient::with_stream_idle_timeout).
    pub stream_idle_timeout: Duration,
}

impl std::fmt::Debug for A2aConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("A2aConfig")
            .field(
                "auth_headers",
                &self.headers.keys().map(|k| k.as_str()).collect::<Vec<_>>(),
            )
            .field("timeout", &self.timeout)
            .field("streaming", &self.streaming)
            .field("binding", &self.binding)
            .field("version", &self.version)
            .field("name", &self.name)
            .field("poll_interval", &self.poll_interval)
            .field("stream_idle_timeout", &self.stream_idle_timeout)
            .finish()
    }
}

fn lookup<'a>(r: &'a SubagentReference, key: &str) -> Option<&'a str> {
    r.metadata(key)
        .or_else(|| r.metadata(&format!("auth.{key}")))
        .map(str::trim)
        .filter(|v| !v.is_empty())
}

/// The setting `key` read with `parse`, or `default` when it is not set; a value `parse`
/// refuses is an error saying what the setting `must_be`.
fn setting<T>(
    r: &SubagentReference,
    key: &str,
    default: T,
    must_be: &str,
    parse: impl FnOnce(&str) -> Option<T>,
) -> Result<T, A2aError> {
    let Some(v) = lookup(r, key) else {
        return Ok(default);
    };
    parse(v).ok_or_else(|| A2aError::Config {
        message: format!("`{key}` must be {must_be}, got `{v}`"),
    })
}

/// [`setting`] without a default: `None` when it is not set.
fn optional_setting<T>(
    r: &SubagentReference,
    key: &str,
    must_be: &str,
    parse: impl FnOnce(&str) -> Option<T>,
) -> Result<Option<T>, A2aError> {
    setting(r, key, None, must_be, |v| parse(v).map(Some))
}

fn secret(r: &SubagentReference, key: &str, env_key: &str) -> Result<Option<String>, A2aError> {
    if let Some(v) = lookup(r, key) {
        return Ok(Some(v.to_string()));
    }
    if let Some(var) = lookup(r, env_key) {
        return match std::env::var(var) {
            Ok(v) if !v.trim().is_empty() => Ok(Some(v.trim().to_string())),
            _ => Err(A2aError::Config {
                message: format!(
                    "metadata `{env_key}` names the environment variable `{var}`, which is not set"
                ),
            }),
        };
    }
    Ok(None)
}

fn sensitive(v: &str, key: &str) -> Result<HeaderValue, A2aError> {
    let mut hv = HeaderValue::from_str(v).map_err(|_| A2aError::Config {
        message: format!("the value of `{key}` is not a valid HTTP header value"),
    })?;
    hv.set_sensitive(true);
    Ok(hv)
}

impl A2aConfig {
    /// Reads the settings from a reference's metadata (see [`keys`]).
    pub fn from_reference(r: &SubagentReference) -> Result<Self, A2aError> {
        let mut headers = HeaderMap::new();
        if let Some(token) = secret(r, keys::BEARER, keys::BEARER_ENV)? {
            headers.insert(
                http::header::AUTHORIZATION,
                sensitive(&format!("Bearer {token}"), keys::BEARER)?,
            );
        }
        let key = secret(r, keys::API_KEY, keys::API_KEY_ENV)?;
        let mut pending_api_key = None;
        match (lookup(r, keys::API_KEY_HEADER), key) {
            (Some(h), Some(k)) => {
                let name = HeaderName::from_bytes(h.as_bytes()).map_err(|_| A2aError::Config {
                    message: format!(
                        "`{}` = `{h}` is not a valid header name",
                        keys::API_KEY_HEADER
                    ),
                })?;
                headers.insert(name, sensitive(&k, keys::API_KEY)?);
            }
            // The header comes from the card's API-key security scheme (see `apply_card`).
            (None, Some(k)) => pending_api_key = Some(k),
            (Some(_), None) => {
                return Err(A2aError::Config {
                    message: format!(
                        "`{}` is set but neither `{}` nor `{}` is",
                        keys::API_KEY_HEADER,
                        keys::API_KEY,
                        keys::API_KEY_ENV
                    ),
                });
            }
            (None, None) => {}
        }
        let seconds = |v: &str, min_ok: fn(f64) -> bool| {
            v.parse::<f64>()
                .ok()
                .filter(|s| min_ok(*s) && s.is_finite() && *s < 1e9)
                .map(Duration::from_secs_f64)
        };
        let timeout = setting(
            r,
            keys::TIMEOUT_SECS,
            DEFAULT_TIMEOUT,
            "a positive number of seconds",
            |v| seconds(v, |s| s > 0.0),
        )?;
        let poll_interval = setting(
            r,
            keys::POLL_INTERVAL_MS,
            DEFAULT_POLL_INTERVAL,
            "a positive integer",
            |v| {
                v.parse::<u64>()
                    .ok()
                    .filter(|ms| *ms > 0)
                    .map(Duration::from_millis)
            },
        )?;
        let stream_idle_timeout = setting(
            r,
            keys::STREAM_IDLE_TIMEOUT_SECS,
            super::transport::DEFAULT_STREAM_IDLE_TIMEOUT,
            "a number of seconds (0: no limit)",
            |v| seconds(v, |s| s >= 0.0),
        )?;
        let streaming = optional_setting(r, keys::STREAMING, "true or false", |v| {
            if v.eq_ignore_ascii_case("true") {
                Some(true)
            } else if v.eq_ignore_ascii_case("false") {
                Some(false)
            } else {
                None
            }
        })?;
        let binding = optional_setting(
            r,
            keys::BINDING,
            "JSONRPC, HTTP+JSON or (with the grpc-client feature) GRPC",
            Binding::parse,
        )?;
        let version = optional_setting(
            r,
            keys::PROTOCOL_VERSION,
            "1.0 or 0.3",
            ProtocolVersion::parse,
        )?;
        Ok(Self {
            headers,
            pending_api_key,
            timeout,
            streaming,
            binding,
            version,
            name: lookup(r, keys::NAME).map(str::to_string),
            poll_interval,
            stream_idle_timeout,
        })
    }

    /// Completes the settings with the card: an API key given without `api_key_header` goes in
    /// the header named by the card's API-key security scheme (location `header`).
    pub(crate) fn apply_card(
        &mut self,
        card: &crate::types::v1::AgentCard,
    ) -> Result<(), A2aError> {
        let Some(key) = self.pending_api_key.take() else {
            return Ok(());
        };
        let header = card.security_schemes.values().find_map(|s| match s {
            crate::types::v1::SecurityScheme::ApiKeySecurityScheme(k)
                if k.location.eq_ignore_ascii_case("header") =>
            {
                Some(k.name.clone())
            }
            _ => None,
        });
        let Some(h) = header else {
            return Err(A2aError::Config {
                message: format!(
                    "an API key is set but `{}` is missing and the agent card declares no API-key header scheme",
                    keys::API_KEY_HEADER
                ),
            });
        };
        let name = HeaderName::from_bytes(h.as_bytes()).map_err(|_| A2aError::Config {
            message: format!("the card's API-key header name `{h}` is not a valid header name"),
        })?;
        self.headers.insert(name, sensitive(&key, keys::API_KEY)?);
        Ok(())
    }

    /// The names of the auth headers that will be sent (values are secret).
    pub fn auth_header_names(&self) -> Vec<String> {
        self.headers
            .keys()
            .map(|k| k.as_str().to_string())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r() -> SubagentReference {
        SubagentReference::new("http://127.0.0.1:1/a", "A2A")
    }

    #[test]
    fn defaults() {
        let c = A2aConfig::from_reference(&r()).unwrap();
        assert_eq!(c.timeout, DEFAULT_TIMEOUT);
        assert!(c.headers.is_empty());
        assert_eq!(c.streaming, None);
        assert_eq!(c.stream_idle_timeout, Duration::from_secs(60));
        let c = A2aConfig::from_reference(&r().with_metadata("stream_idle_timeout_secs", "2.5"))
            .unwrap();
        assert_eq!(c.stream_idle_timeout, Duration::from_millis(2500));
        let e = A2aConfig::from_reference(&r().with_metadata("stream_idle_timeout_secs", "x"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("stream_idle_timeout_secs"), "{e}");
    }

    #[test]
    fn auth_from_metadata_and_env_is_never_printed() {
        let c = A2aConfig::from_reference(
            &r().with_metadata("bearer", "s3cret")
                .with_metadata("api_key_header", "X-API-Key")
                .with_metadata("api_key", "k3y")
                .with_metadata("timeout_secs", "2.5"),
        )
        .unwrap();
        assert_eq!(c.headers["authorization"], "Bearer s3cret");
        assert_eq!(c.headers["x-api-key"], "k3y");
        assert_eq!(c.timeout, Duration::from_millis(2500));
        let dbg = format!("{c:?}");
        assert!(!dbg.contains("s3cret") && !dbg.contains("k3y"), "{dbg}");
    }

    #[test]
    fn missing_env_and_bad_values_are_named() {
        let e = A2aConfig::from_reference(
            &r().with_metadata("auth.bearer_env", "SUBAGENT_A2A_TEST_SURELY_UNSET_VAR"),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("SUBAGENT_A2A_TEST_SURELY_UNSET_VAR"), "{e}");
        let e = A2aConfig::from_reference(&r().with_metadata("timeout_secs", "-1"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("timeout_secs"), "{e}");
        // Without a header name the key waits for the card.
        let mut c = A2aConfig::from_reference(&r().with_metadata("api_key", "x")).unwrap();
        assert!(c.headers.is_empty());
        let card: crate::types::v1::AgentCard = serde_json::from_value(serde_json::json!({
            "name": "n", "description": "d", "supportedInterfaces": [], "version": "1",
            "securitySchemes": {"k": {"apiKeySecurityScheme": {"location": "header", "name": "X-Key"}}}
        }))
        .unwrap();
        c.apply_card(&card).unwrap();
        assert_eq!(c.headers["x-key"], "x");
        let mut c = A2aConfig::from_reference(&r().with_metadata("api_key", "x")).unwrap();
        let e = c
            .apply_card(&crate::types::v1::AgentCard {
                security_schemes: Default::default(),
                ..card
            })
            .unwrap_err()
            .to_string();
        assert!(e.contains("api_key_header"), "{e}");
        let e = A2aConfig::from_reference(&r().with_metadata("binding", "SOAP"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("binding"), "{e}");
    }
}
