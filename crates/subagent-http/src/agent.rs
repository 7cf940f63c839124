//! [`HttpAgent`]: one endpoint, read from a reference and checked once, at resolve time.

use std::fmt;
use std::net::IpAddr;
use std::time::Duration;

use reqwest::header::{HeaderName, HeaderValue};
use reqwest::{Method, Url};
use subagent_spi::SubagentReference;

use crate::usage::UsagePointers;
use crate::{
    DEFAULT_MAX_RESPONSE_BYTES, DEFAULT_TIMEOUT_SECS, HttpKindError, KEYS, MAX_RESPONSE_BYTES_CAP,
};

/// The placeholder the prompt replaces in the body template (and nothing else does).
pub(crate) const PROMPT: &str = "{{prompt}}";

/// A resolved `HTTP` agent: where to send the prompt, how, and where the answer is.
///
/// Its `Debug` output names the credential's header, never its value.
pub struct HttpAgent {
    name: String,
    description: String,
    reference: SubagentReference,
    url: Url,
    method: Method,
    /// The body template (JSON with `{{prompt}}` in its strings); `None` for `GET`.
    body: Option<serde_json::Value>,
    /// For `GET`: the query parameter of the prompt.
    query: String,
    answer: String,
    auth: Option<(HeaderName, HeaderValue)>,
    timeout: Duration,
    max_response_bytes: u64,
    /// Where the reply reports its usage (`usage_*` keys); `None`: no tokens are reported.
    usage: Option<UsagePointers>,
}

subagent_spi::impl_subagent_definition!(HttpAgent);

impl fmt::Debug for HttpAgent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpAgent")
            .field("name", &self.name)
            .field("url", &self.url.as_str())
            .field("method", &self.method)
            .field("answer", &self.answer)
            .field("auth_header", &self.auth.as_ref().map(|(h, _)| h.as_str()))
            .field("timeout", &self.timeout)
            .field("max_response_bytes", &self.max_response_bytes)
            .field("usage", &self.usage)
            .finish_non_exhaustive()
    }
}

impl HttpAgent {
    /// Reads and checks a reference; `env` looks up the variable named by `auth_env`.
    pub(crate) fn from_reference(
        reference: &SubagentReference,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Self, HttpKindError> {
        if let Some(key) = reference
            .metadata
            .keys()
            .find(|k| !KEYS.contains(&k.as_str()))
        {
            return Err(HttpKindError::UnknownKey { key: key.clone() });
        }
        let meta = |key: &str| {
            reference
                .metadata(key)
                .map(str::trim)
                .filter(|v| !v.is_empty())
        };
        let url = endpoint(reference.uri.trim())?;
        let name = meta("name")
            .ok_or_else(|| HttpKindError::invalid("name", "missing: the agent needs a name"))?
            .to_string();
        let description = meta("description").map_or_else(
            || {
                format!(
                    "Answers through the HTTP endpoint at {}.",
                    url.origin().ascii_serialization()
                )
            },
            str::to_string,
        );
        let method = match meta("method").map(str::to_ascii_uppercase).as_deref() {
            None | Some("POST") => Method::POST,
            Some("PUT") => Method::PUT,
            Some("PATCH") => Method::PATCH,
            Some("GET") => Method::GET,
            Some(other) => {
                return Err(HttpKindError::invalid(
                    "method",
                    format!("`{other}` is not one of POST, PUT, PATCH, GET"),
                ));
            }
        };
        let body = if method == Method::GET {
            if meta("body").is_some() {
                return Err(HttpKindError::invalid(
                    "body",
                    "a GET request has no body; the prompt goes in the `query` parameter",
                ));
            }
            None
        } else {
            Some(template(meta("body"))?)
        };
        let query = meta("query").unwrap_or("prompt").to_string();
        let answer = reference
            .metadata("answer")
            .unwrap_or("")
            .trim()
            .to_string();
        if !answer.is_empty() && !answer.starts_with('/') {
            return Err(HttpKindError::invalid(
                "answer",
                format!("`{answer}` is not a JSON Pointer: it must be empty or start with `/`"),
            ));
        }
        let auth = credential(
            meta("auth_header"),
            meta("auth_env"),
            reference.metadata("auth_prefix"),
            env,
        )?;
        let timeout = match meta("timeout_secs") {
            None => Duration::from_secs(DEFAULT_TIMEOUT_SECS),
            Some(s) => s
                .parse::<f64>()
                .ok()
                .filter(|v| *v > 0.0)
                .and_then(|v| Duration::try_from_secs_f64(v).ok())
                .ok_or_else(|| {
                    HttpKindError::invalid(
                        "timeout_secs",
                        format!("`{s}` is not a positive number of seconds"),
                    )
                })?,
        };
        let max_response_bytes = match meta("max_response_bytes") {
            None => DEFAULT_MAX_RESPONSE_BYTES,
            Some(s) => s
                .parse::<u64>()
                .ok()
                .filter(|n| (1..=MAX_RESPONSE_BYTES_CAP).contains(n))
                .ok_or_else(|| {
                    HttpKindError::invalid(
                        "max_response_bytes",
                        format!("`{s}` is not a byte count from 1 to {MAX_RESPONSE_BYTES_CAP}"),
                    )
                })?,
        };
        let usage = UsagePointers::from_meta(meta)?;
        Ok(Self {
            name,
            description,
            reference: reference.clone(),
            url,
            method,
            body,
            query,
            answer,
            auth,
            timeout,
            max_response_bytes,
            usage,
        })
    }

    /// The endpoint.
    pub fn url(&self) -> &Url {
        &self.url
    }

    /// The request method.
    pub fn method(&self) -> &Method {
        &self.method
    }

    /// The JSON Pointer to the answer in the reply (`""`: the whole reply).
    pub fn answer_pointer(&self) -> &str {
        &self.answer
    }

    /// The header the credential is sent in, if any (its value is not exposed).
    pub fn auth_header(&self) -> Option<&str> {
        self.auth.as_ref().map(|(h, _)| h.as_str())
    }

    /// The time limit of one call.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// The largest reply read, in bytes.
    pub fn max_response_bytes(&self) -> u64 {
        self.max_response_bytes
    }

    /// Whether replies are read for their usage (a `usage_input` or `usage_output` pointer).
    pub fn reports_usage(&self) -> bool {
        self.usage.is_some()
    }

    pub(crate) fn usage_pointers(&self) -> Option<&UsagePointers> {
        self.usage.as_ref()
    }

    pub(crate) fn credential(&self) -> Option<&(HeaderName, HeaderValue)> {
        self.auth.as_ref()
    }

    /// The URL of one call: the endpoint, plus the prompt as the `query` parameter for `GET`.
    pub(crate) fn url_for(&self, prompt: &str) -> Url {
        let mut url = self.url.clone();
        if self.method == Method::GET {
            url.query_pairs_mut().append_pair(&self.query, prompt);
        }
        url
    }

    /// The body of one call: the template with `{{prompt}}` replaced in its strings.
    pub(crate) fn body_for(&self, prompt: &str) -> Option<serde_json::Value> {
        self.body.as_ref().map(|t| fill(t, prompt))
    }
}

/// The endpoint URL: `https`, or `http` to a loopback host.
fn endpoint(uri: &str) -> Result<Url, HttpKindError> {
    let url = Url::parse(uri).map_err(|e| HttpKindError::invalid("uri", format!("{e}")))?;
    match url.scheme() {
        "https" => Ok(url),
        "http" if is_loopback(&url) => Ok(url),
        "http" => Err(HttpKindError::invalid(
            "uri",
            "plain http is allowed only to a loopback host (127.0.0.1, ::1, localhost); use https",
        )),
        other => Err(HttpKindError::invalid(
            "uri",
            format!("scheme `{other}` is not http(s)"),
        )),
    }
}

fn is_loopback(url: &Url) -> bool {
    let Some(host) = url.host_str() else {
        return false;
    };
    host.eq_ignore_ascii_case("localhost")
        || host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// The body template: JSON holding `{{prompt}}` in at least one string.
fn template(text: Option<&str>) -> Result<serde_json::Value, HttpKindError> {
    let Some(text) = text else {
        return Ok(serde_json::json!({ "prompt": PROMPT }));
    };
    let value: serde_json::Value = serde_json::from_str(text)
        .map_err(|e| HttpKindError::invalid("body", format!("not JSON: {e}")))?;
    if !mentions_prompt(&value) {
        return Err(HttpKindError::invalid(
            "body",
            format!("no string in it holds `{PROMPT}`, so the prompt would not be sent"),
        ));
    }
    Ok(value)
}

fn mentions_prompt(v: &serde_json::Value) -> bool {
    match v {
        serde_json::Value::String(s) => s.contains(PROMPT),
        serde_json::Value::Array(a) => a.iter().any(mentions_prompt),
        serde_json::Value::Object(o) => o.values().any(mentions_prompt),
        _ => false,
    }
}

/// The template with `{{prompt}}` replaced in every string value. The replacement happens on
/// the parsed value, so the prompt stays inside its string whatever it holds.
fn fill(v: &serde_json::Value, prompt: &str) -> serde_json::Value {
    match v {
        serde_json::Value::String(s) if s.contains(PROMPT) => {
            serde_json::Value::String(s.replace(PROMPT, prompt))
        }
        serde_json::Value::Array(a) => a.iter().map(|x| fill(x, prompt)).collect(),
        serde_json::Value::Object(o) => o
            .iter()
            .map(|(k, x)| (k.clone(), fill(x, prompt)))
            .collect(),
        other => other.clone(),
    }
}

/// The credential header: both `auth_header` and `auth_env` or neither.
fn credential(
    header: Option<&str>,
    var: Option<&str>,
    prefix: Option<&str>,
    env: impl Fn(&str) -> Option<String>,
) -> Result<Option<(HeaderName, HeaderValue)>, HttpKindError> {
    let (header, var) = match (header, var) {
        (None, None) => {
            if prefix.is_some() {
                return Err(HttpKindError::invalid(
                    "auth_prefix",
                    "set without `auth_header` and `auth_env`",
                ));
            }
            return Ok(None);
        }
        (Some(h), Some(v)) => (h, v),
        (Some(_), None) => {
            return Err(HttpKindError::invalid(
                "auth_env",
                "missing: `auth_header` needs the variable holding the credential",
            ));
        }
        (None, Some(_)) => {
            return Err(HttpKindError::invalid(
                "auth_header",
                "missing: `auth_env` needs the header to send the credential in",
            ));
        }
    };
    let name = HeaderName::from_bytes(header.as_bytes()).map_err(|_| {
        HttpKindError::invalid("auth_header", format!("`{header}` is not a header name"))
    })?;
    let secret = env(var).ok_or_else(|| HttpKindError::MissingCredential {
        var: var.to_string(),
    })?;
    let mut value =
        HeaderValue::from_str(&format!("{}{secret}", prefix.unwrap_or(""))).map_err(|_| {
            HttpKindError::invalid(
                "auth_env",
                format!("the value of `{var}` cannot be sent in a header (a control character?)"),
            )
        })?;
    value.set_sensitive(true);
    Ok(Some((name, value)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(uri: &str) -> SubagentReference {
        SubagentReference::new(uri, "HTTP").with_metadata("name", "a")
    }

    fn no_env(_: &str) -> Option<String> {
        None
    }

    fn err(reference: &SubagentReference) -> String {
        HttpAgent::from_reference(reference, no_env)
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn https_anywhere_http_only_to_loopback() {
        for ok in [
            "https://api.example.com/x",
            "http://127.0.0.1:8080/x",
            "http://[::1]:80/",
            "http://localhost/",
            "http://127.3.2.1/",
        ] {
            HttpAgent::from_reference(&r(ok), no_env).unwrap();
        }
        assert!(err(&r("http://example.com/x")).contains("use https"));
        assert!(err(&r("http://10.0.0.1/x")).contains("loopback"));
        assert!(err(&r("ftp://127.0.0.1/x")).contains("`ftp`"));
    }

    #[test]
    fn the_prompt_cannot_change_the_shape_of_the_body() {
        let a = HttpAgent::from_reference(
            &r("https://h/").with_metadata(
                "body",
                r#"{"q": "say: {{prompt}}", "n": 1, "list": ["{{prompt}}"]}"#,
            ),
            no_env,
        )
        .unwrap();
        let hostile = r#"", "admin": true, "x": ""#;
        let body = a.body_for(hostile).unwrap();
        assert_eq!(body["q"], format!("say: {hostile}"));
        assert_eq!(body["list"][0], hostile);
        assert_eq!(body["n"], 1);
        assert!(body.get("admin").is_none());
    }

    #[test]
    fn bad_settings_name_their_key() {
        assert!(err(&SubagentReference::new("https://h/", "HTTP")).starts_with("`name`: missing"));
        assert!(
            err(&r("https://h/").with_metadata("auth_evn", "X")).contains("unknown key `auth_evn`")
        );
        assert!(err(&r("https://h/").with_metadata("body", "{")).starts_with("`body`: not JSON"));
        assert!(
            err(&r("https://h/").with_metadata("body", r#"{"q": "x"}"#)).contains("{{prompt}}")
        );
        assert!(err(&r("https://h/").with_metadata("answer", "a/b")).starts_with("`answer`"));
        assert!(err(&r("https://h/").with_metadata("method", "DELETE")).starts_with("`method`"));
        assert!(
            err(&r("https://h/").with_metadata("timeout_secs", "1e300"))
                .starts_with("`timeout_secs`")
        );
        assert!(
            err(&r("https://h/").with_metadata("timeout_secs", "-1")).starts_with("`timeout_secs`")
        );
        assert!(
            err(&r("https://h/").with_metadata("max_response_bytes", "999999999999"))
                .starts_with("`max_response_bytes`")
        );
        assert!(
            err(&r("https://h/").with_metadata("auth_header", "X-Key")).starts_with("`auth_env`")
        );
    }

    #[test]
    fn the_credential_comes_from_the_environment_and_is_never_printed() {
        let reference = r("https://h/")
            .with_metadata("auth_header", "Authorization")
            .with_metadata("auth_prefix", "Bearer ")
            .with_metadata("auth_env", "TOKEN_VAR");
        let e = err(&reference);
        assert_eq!(
            e,
            "`auth_env`: the environment variable `TOKEN_VAR` is not set"
        );
        let a = HttpAgent::from_reference(&reference, |v| {
            (v == "TOKEN_VAR").then(|| "s3cr3t".to_string())
        })
        .unwrap();
        let (h, v) = a.credential().unwrap();
        assert_eq!(h.as_str(), "authorization");
        assert_eq!(v.to_str().unwrap(), "Bearer s3cr3t");
        assert!(v.is_sensitive());
        let shown = format!("{a:?}");
        assert!(!shown.contains("s3cr3t"), "{shown}");
        assert!(shown.contains("authorization"), "{shown}");
    }

    #[test]
    fn get_sends_the_prompt_in_the_query() {
        let a = HttpAgent::from_reference(
            &r("https://h/search?lang=en")
                .with_metadata("method", "get")
                .with_metadata("query", "q"),
            no_env,
        )
        .unwrap();
        assert_eq!(a.body_for("x"), None);
        assert_eq!(
            a.url_for("a b&c").as_str(),
            "https://h/search?lang=en&q=a+b%26c"
        );
    }
}
