//! The HTTP settings every provider shares: base URL, key, model, timeouts, retries, extra
//! headers and client. Each builder holds one [`HttpOptions`] and adds its own wire settings.

use std::time::Duration;

use derive_setters::Setters;
use subagent_spi::ModelError;

use crate::common::ApiKey;
use crate::limiter::Limiter;
use crate::transport::{RetryPolicy, Transport, build_client, header_map, normalise_base_url};

/// Default silence allowed inside a streamed reply (120 s): long enough for a reasoning model's
/// first token, short enough that a frozen server is noticed.
pub const DEFAULT_STREAM_IDLE_TIMEOUT: Duration = Duration::from_secs(120);

/// Default per-request timeout (300 s).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(300);

/// The HTTP settings shared by [`OpenAiModelBuilder`](crate::OpenAiModelBuilder) and
/// [`AnthropicModelBuilder`](crate::AnthropicModelBuilder).
///
/// Each builder has the same setters as shortcuts; this type lets one set of settings (a
/// gateway's URL, key and headers, a shared client, a retry policy) be built once and handed to
/// either builder with `http_options(..)`. The API key never shows in `Debug` output.
///
/// ```
/// use std::time::Duration;
/// use subagent_providers::{AnthropicModel, HttpOptions, OpenAiModel};
///
/// let gateway = HttpOptions::new()
///     .api_key("gateway-key")
///     .timeout(Duration::from_secs(60))
///     .max_retries(1)
///     .header("x-team", "docs");
/// let gpt = OpenAiModel::builder()
///     .http_options(gateway.clone().base_url("https://gateway.example/openai/v1"))
///     .model("gpt-4.1")
///     .build()?;
/// let claude = AnthropicModel::builder()
///     .http_options(gateway.base_url("https://gateway.example/anthropic"))
///     .model("claude-sonnet-4-5")
///     .build()?;
/// assert_eq!(gpt.base_url(), "https://gateway.example/openai/v1");
/// assert_eq!(claude.base_url(), "https://gateway.example/anthropic");
/// # Ok::<(), subagent_spi::ModelError>(())
/// ```
#[derive(Debug, Clone, Setters)]
#[setters(strip_option)]
#[non_exhaustive]
pub struct HttpOptions {
    /// The API base URL (each provider documents its form and default).
    #[setters(into)]
    base_url: Option<String>,
    #[setters(skip)] // `api_key` / `api_key_opt` wrap it
    api_key: Option<ApiKey>,
    /// The model id used when a request names none (required by `build`).
    #[setters(into)]
    model: Option<String>,
    /// Per-attempt timeout (default 300 s). For streamed calls it bounds the wait for the
    /// response headers and every silence between chunks, so long live streams are fine.
    timeout: Duration,
    /// How long a streamed reply may stay silent (no bytes at all, not even a keep-alive)
    /// before the call fails with a timeout naming the limit (default 120 s).
    stream_idle_timeout: Duration,
    /// The whole retry policy.
    #[setters(rename = "retry_policy")]
    retry: RetryPolicy,
    #[setters(skip)] // added one by one with `header`
    headers: Vec<(String, String)>,
    /// Use this HTTP client (shares its connection pool).
    client: Option<reqwest::Client>,
}

impl Default for HttpOptions {
    fn default() -> Self {
        Self::new()
    }
}

impl HttpOptions {
    /// The defaults: the provider's base URL, no key, no model, [`DEFAULT_TIMEOUT`],
    /// [`DEFAULT_STREAM_IDLE_TIMEOUT`], the default [`RetryPolicy`], no extra headers, a new
    /// client.
    pub fn new() -> Self {
        Self {
            base_url: None,
            api_key: None,
            model: None,
            timeout: DEFAULT_TIMEOUT,
            stream_idle_timeout: DEFAULT_STREAM_IDLE_TIMEOUT,
            retry: RetryPolicy::default(),
            headers: Vec::new(),
            client: None,
        }
    }

    /// The API key (each provider sends it in its own header).
    pub fn api_key(mut self, key: impl Into<String>) -> Self {
        self.api_key = Some(ApiKey(key.into()));
        self
    }

    /// Like [`api_key`](Self::api_key) but optional.
    pub fn api_key_opt(mut self, key: Option<String>) -> Self {
        self.api_key = key.map(ApiKey);
        self
    }

    /// Retries after the first attempt on 5xx and connection errors (default 3); slow-down
    /// answers (429, 503, 529) are retried for [`max_rate_limit_wait`](Self::max_rate_limit_wait)
    /// instead. See [`RetryPolicy`].
    pub fn max_retries(mut self, n: u32) -> Self {
        self.retry.max_retries = n;
        self
    }

    /// How long a call keeps retrying slow-down answers (429, 503, 529), from the first one
    /// (default 300 s; zero: they are retried `max_retries` times like other failures). See
    /// [`RetryPolicy::max_rate_limit_wait`].
    pub fn max_rate_limit_wait(mut self, wait: Duration) -> Self {
        self.retry.max_rate_limit_wait = wait;
        self
    }

    /// The first backoff delay (default 500 ms; doubles each retry).
    pub fn base_delay(mut self, d: Duration) -> Self {
        self.retry.base_delay = d;
        self
    }

    /// An extra header sent with every request (e.g. `OpenAI-Organization`, `anthropic-beta`).
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Checks the settings and builds the endpoint at `<base>{path}`: the model id, the
    /// normalised base URL and the transport. `auth` turns the key into the provider's header;
    /// `fixed` headers go first, the user's extra headers last; `secret_headers` never show in
    /// errors.
    pub(crate) fn endpoint(
        self,
        provider: String,
        default_base_url: &str,
        path: &str,
        fixed: &[(&str, &str)],
        auth: impl FnOnce(&str) -> (&'static str, String),
        secret_headers: &[&str],
    ) -> Result<Endpoint, ModelError> {
        let model = match self.model {
            Some(m) if !m.trim().is_empty() => m,
            _ => {
                return Err(ModelError::Config(format!(
                    "{provider}: no model id given (call .model(..))"
                )));
            }
        };
        let base = normalise_base_url(
            &provider,
            self.base_url.as_deref().unwrap_or(default_base_url),
        )?;
        let mut pairs = vec![
            ("content-type".to_string(), "application/json".to_string()),
            (
                "accept".to_string(),
                "application/json, text/event-stream".to_string(),
            ),
        ];
        pairs.extend(fixed.iter().map(|(n, v)| (n.to_string(), v.to_string())));
        if let Some(key) = &self.api_key {
            let (name, value) = auth(&key.0);
            pairs.push((name.to_string(), value));
        }
        pairs.extend(self.headers);
        let headers = header_map(&provider, &pairs, secret_headers)?;
        let client = match self.client {
            Some(c) => c,
            None => build_client()?,
        };
        let url = format!("{base}{path}");
        // One limiter per endpoint and key: the credentials are the headers marked secret.
        let limiter = Limiter::for_endpoint(
            &url,
            headers
                .values()
                .filter(|v| v.is_sensitive())
                .map(|v| v.as_bytes()),
        );
        Ok(Endpoint {
            model,
            transport: Transport {
                limiter,
                url,
                provider,
                client,
                headers,
                retry: self.retry,
                timeout: self.timeout,
                idle_timeout: self.stream_idle_timeout,
            },
            base_url: base,
        })
    }
}

/// What [`HttpOptions::endpoint`] checked and built.
#[derive(Debug)]
pub(crate) struct Endpoint {
    pub(crate) model: String,
    pub(crate) base_url: String,
    pub(crate) transport: Transport,
}

/// The shortcuts every provider builder has, each setting the same-named [`HttpOptions`]
/// field of the builder's `http` (so the docs and behaviour are written once, there). The
/// three whose meaning differs by provider (`base_url`, `api_key`, `header`) take their docs
/// from the caller.
macro_rules! http_option_setters {
    (base_url: $base_url:literal, api_key: $api_key:literal, header: $header:literal $(,)?) => {
        #[doc = $base_url]
        pub fn base_url(mut self, url: impl Into<String>) -> Self {
            self.http = self.http.base_url(url);
            self
        }

        #[doc = $api_key]
        pub fn api_key(mut self, key: impl Into<String>) -> Self {
            self.http = self.http.api_key(key);
            self
        }

        #[doc = $header]
        pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
            self.http = self.http.header(name, value);
            self
        }

        /// Replaces all the HTTP settings (base URL, key, model, timeouts, retries, headers,
        /// client) with `options`; see [`HttpOptions`](crate::HttpOptions).
        pub fn http_options(mut self, options: $crate::HttpOptions) -> Self {
            self.http = options;
            self
        }

        /// See [`HttpOptions::api_key_opt`](crate::HttpOptions::api_key_opt).
        pub fn api_key_opt(mut self, key: Option<String>) -> Self {
            self.http = self.http.api_key_opt(key);
            self
        }

        /// The model id used when a request names none (required).
        pub fn model(mut self, model: impl Into<String>) -> Self {
            self.http = self.http.model(model);
            self
        }

        /// See [`HttpOptions::timeout`](crate::HttpOptions::timeout) (default 300 s).
        pub fn timeout(mut self, timeout: std::time::Duration) -> Self {
            self.http = self.http.timeout(timeout);
            self
        }

        /// See [`HttpOptions::stream_idle_timeout`](crate::HttpOptions::stream_idle_timeout)
        /// (default 120 s).
        pub fn stream_idle_timeout(mut self, limit: std::time::Duration) -> Self {
            self.http = self.http.stream_idle_timeout(limit);
            self
        }

        /// See [`HttpOptions::max_retries`](crate::HttpOptions::max_retries) (default 3).
        pub fn max_retries(mut self, n: u32) -> Self {
            self.http = self.http.max_retries(n);
            self
        }

        /// The first backoff delay (default 500 ms; doubles each retry).
        pub fn base_delay(mut self, d: std::time::Duration) -> Self {
            self.http = self.http.base_delay(d);
            self
        }

        /// See [`HttpOptions::max_rate_limit_wait`](crate::HttpOptions::max_rate_limit_wait)
        /// (default 300 s).
        pub fn max_rate_limit_wait(mut self, wait: std::time::Duration) -> Self {
            self.http = self.http.max_rate_limit_wait(wait);
            self
        }

        /// The whole retry policy.
        pub fn retry_policy(mut self, policy: $crate::RetryPolicy) -> Self {
            self.http = self.http.retry_policy(policy);
            self
        }

        /// Use this HTTP client (shares its connection pool).
        pub fn client(mut self, client: reqwest::Client) -> Self {
            self.http = self.http.client(client);
            self
        }
    };
}
pub(crate) use http_option_setters;
