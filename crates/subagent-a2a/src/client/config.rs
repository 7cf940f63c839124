//! Per-reference settings read from [`SubagentReference`] metadata (and the environment).

use std::time::Duration;

use http::{HeaderMap, HeaderName, HeaderValue};
use subagent_spi::SubagentReference;

use super::endpoint::Binding;
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
    /// More origins (`scheme://host[:port]`) the credentials may be sent to, besides the
    /// reference URL's own: separated by commas or spaces, or a TOML / JSON array of strings
    /// (e.g. `["https://a2a.example.com:8443"]`). By default an agent card that names another
    /// origin for its interface, while credentials are set, is refused. A downgrade from an
    /// `https://` reference to an `http://` interface is refused whatever this says.
    pub const ALLOWED_ORIGINS: &str = "allowed_origins";
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
    /// The origin of the reference URL: where the credentials are meant to go.
    pub(crate) origin: Option<String>,
    /// More origins the credentials may go to ([`keys::ALLOWED_ORIGINS`]), normalized
    /// (`scheme://host[:port]`, default ports left out).
    pub allowed_origins: Vec<String>,
}

/// The origin of an absolute URL as `scheme://host[:port]` (lower-case host, default port
/// left out); `None` for a URL that has none (not absolute, or not a network URL).
pub(crate) fn origin_of(url: &str) -> Option<String> {
    let u = reqwest::Url::parse(url).ok()?;
    let o = u.origin();
    o.is_tuple().then(|| o.ascii_serialization())
}

/// True for an `https://` URL.
fn is_https(url: &str) -> bool {
    reqwest::Url::parse(url).is_ok_and(|u| u.scheme() == "https")
}

/// Reads [`keys::ALLOWED_ORIGINS`]: origins separated by commas or spaces, or written as an
/// array of strings (`["https://a", "https://b:8443"]`, as a `subagents.toml` table passes an
/// array); each must be an `http://` or `https://` origin without a path.
fn parse_origins(v: &str) -> Result<Vec<String>, A2aError> {
    let inner = v.trim();
    let inner = inner
        .strip_prefix('[')
        .and_then(|s| s.strip_suffix(']'))
        .unwrap_or(inner);
    let mut out = Vec::new();
    for item in inner.split([',', ' ', '\t', '\n']) {
        let item = item.trim().trim_matches(|c| c == '"' || c == '\'');
        if item.is_empty() {
            continue;
        }
        let bad = |why: &str| A2aError::Config {
            message: format!(
                "`{}`: `{item}` {why}; write origins as scheme://host[:port], e.g. \
                 https://a2a.example.com:8443",
                keys::ALLOWED_ORIGINS
            ),
        };
        let u = reqwest::Url::parse(item).map_err(|_| bad("is not a URL"))?;
        if !matches!(u.scheme(), "http" | "https") {
            return Err(bad("is not an http:// or https:// origin"));
        }
        if u.path() != "/" || u.query().is_some() || !u.username().is_empty() {
            return Err(bad("has more than an origin (a path, query or user)"));
        }
        let o = u.origin().ascii_serialization();
        if !out.contains(&o) {
            out.push(o);
        }
    }
    Ok(out)
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
            super::endpoint::DEFAULT_STREAM_IDLE_TIMEOUT,
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
            origin: origin_of(r.uri.trim()),
            allowed_origins: match lookup(r, keys::ALLOWED_ORIGINS) {
                Some(v) => parse_origins(v)?,
                None => Vec::new(),
            },
        })
    }

    /// True when credentials are set (auth headers, or an API key waiting for the card).
    pub(crate) fn has_credentials(&self) -> bool {
        !self.headers.is_empty() || self.pending_api_key.is_some()
    }

    /// True when the credentials may be sent to `url`: it is on the reference URL's origin or
    /// an allowed one, and is not a plain-HTTP URL for an `https://` reference.
    pub(crate) fn credentials_may_go_to(&self, url: &str) -> bool {
        let Some(target) = origin_of(url) else {
            return false;
        };
        let downgrade = self.origin.as_deref().is_some_and(is_https) && !is_https(url);
        !downgrade
            && (self.origin.as_ref() == Some(&target) || self.allowed_origins.contains(&target))
    }

    /// Checks that an interface at `url`, named by the card read from `card_url`, may be
    /// called: never over plain HTTP when the card came over HTTPS (a downgrade, refused
    /// outright), and, while credentials are set, only on the reference URL's origin or an
    /// allowed one ([`keys::ALLOWED_ORIGINS`]). The error names both URLs.
    pub(crate) fn check_interface(&self, card_url: &str, url: &str) -> Result<(), A2aError> {
        if is_https(card_url) && !is_https(url) {
            return Err(A2aError::Card {
                url: card_url.to_string(),
                message: format!(
                    "the card was read over https but names the interface {url}, a downgrade \
                     to plain http; refused (it would send the task, and any credentials, \
                     unencrypted)"
                ),
            });
        }
        if !self.has_credentials() || self.credentials_may_go_to(url) {
            return Ok(());
        }
        let origin = self.origin.as_deref().unwrap_or("(none)");
        let target = origin_of(url).unwrap_or_else(|| url.to_string());
        Err(A2aError::Card {
            url: card_url.to_string(),
            message: format!(
                "the card names the interface {url}, on another origin than {origin}, which \
                 the credentials of this agent were given for; refused so they do not go to \
                 {target}. If that origin is the same agent, allow it: `{}` = [\"{target}\"]",
                keys::ALLOWED_ORIGINS
            ),
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
        let e = refusal("stream_idle_timeout_secs", "x");
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
    fn allowed_origins_are_read_as_a_list_or_an_array_and_checked() {
        let c = A2aConfig::from_reference(&r().with_metadata(
            "allowed_origins",
            "[\"https://A.example.com:443\", 'http://b:8080']",
        ))
        .unwrap();
        assert_eq!(
            c.allowed_origins,
            ["https://a.example.com", "http://b:8080"]
        );
        let c = A2aConfig::from_reference(
            &r().with_metadata("allowed_origins", "https://a, http://b:1 http://b:1"),
        )
        .unwrap();
        assert_eq!(c.allowed_origins, ["https://a", "http://b:1"]);
        for bad in ["ftp://a", "https://a/path", "not a url"] {
            let e = A2aConfig::from_reference(&r().with_metadata("allowed_origins", bad))
                .unwrap_err()
                .to_string();
            assert!(e.contains("allowed_origins"), "{e}");
        }
        // The reference's own origin, and the allowed ones; never a downgrade.
        let c = A2aConfig::from_reference(
            &SubagentReference::new("https://h/a", "A2A")
                .with_metadata("bearer", "t")
                .with_metadata("allowed_origins", "https://g:8443, http://h"),
        )
        .unwrap();
        assert!(c.credentials_may_go_to("https://h:443/x"));
        assert!(c.credentials_may_go_to("https://g:8443/x"));
        assert!(!c.credentials_may_go_to("https://g/x"));
        assert!(!c.credentials_may_go_to("http://h/x"));
    }

    /// Why a reference with `key` = `value` is refused.
    fn refusal(key: &str, value: &str) -> String {
        A2aConfig::from_reference(&r().with_metadata(key, value))
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn missing_env_and_bad_values_are_named() {
        let e = refusal("auth.bearer_env", "SUBAGENT_A2A_TEST_SURELY_UNSET_VAR");
        assert!(e.contains("SUBAGENT_A2A_TEST_SURELY_UNSET_VAR"), "{e}");
        let e = refusal("timeout_secs", "-1");
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
        let e = refusal("binding", "SOAP");
        assert!(e.contains("binding"), "{e}");
    }
}
