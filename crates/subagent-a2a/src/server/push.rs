//! Push notifications: task updates POSTed to the webhooks clients registered for a task
//! (`CreateTaskPushNotificationConfig`, 0.3 `tasks/pushNotificationConfig/set`, or the
//! `SendMessage` configuration).
//!
//! One bounded queue and one delivery task per task with webhooks; every event is POSTed to
//! every config of the task, in order: the 1.0 `StreamResponse` for tasks created over 1.0,
//! the task snapshot for tasks created over 0.3 (what 0.3 receivers expect). A config's
//! `authentication` becomes `Authorization: <scheme> <credentials>`, its `token` the
//! `X-A2A-Notification-Token` header. Failed deliveries (connection errors, 5xx, 429) are
//! retried with exponential backoff; an event that still fails is dropped and logged (without
//! its credentials). Webhooks at loopback, private, link-local and other non-public addresses
//! are refused unless [`ServerConfig::push_allow_private`](super::ServerConfig) allows them:
//! literal addresses at registration and delivery, host names when they resolve (the resolver
//! drops such addresses, so a name cannot be rebound to one between check and connect).

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::mpsc;

use super::engine::{ApiError, Event};
use super::store::TaskStore;
use crate::types::jsonrpc::codes;
use crate::types::{ProtocolVersion, v1, v03};

/// Events waiting for delivery per task; when the queue is full, new events are dropped (and
/// logged) rather than holding the agent back.
pub(crate) const QUEUE_PER_TASK: usize = 64;
/// Attempts per event and webhook (the first try and the retries).
const MAX_ATTEMPTS: u32 = 4;
/// The delay before the first retry; doubled before each further one.
const FIRST_BACKOFF: Duration = Duration::from_millis(250);
/// The time one delivery attempt may take.
const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(10);
/// The longest webhook URL, token or credential accepted.
const MAX_FIELD_BYTES: usize = 4096;

/// The delivery side of one agent: its HTTP client and its per-task queues.
pub(crate) struct Pusher {
    http: reqwest::Client,
    allow_private: bool,
    store: Arc<dyn TaskStore>,
    queues: Mutex<HashMap<String, mpsc::Sender<Delivery>>>,
}

/// One event to deliver.
pub(crate) struct Delivery {
    pub event: Event,
    /// The task snapshot after the event (sent to 0.3 receivers).
    pub snapshot: Option<v1::Task>,
    pub version: ProtocolVersion,
    /// The last event of the task: the queue closes after it.
    pub last: bool,
}

impl std::fmt::Debug for Pusher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pusher")
            .field("allow_private", &self.allow_private)
            .finish_non_exhaustive()
    }
}

/// True for addresses a webhook may not use by default: loopback, private, link-local,
/// shared (CGNAT), unspecified, broadcast, multicast, documentation and unique-local ranges.
pub(crate) fn is_private(ip: IpAddr) -> bool {
    match ip.to_canonical() {
        IpAddr::V4(v4) => {
            let o = v4.octets();
            v4.is_loopback()
                || v4.is_private()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_broadcast()
                || v4.is_multicast()
                || v4.is_documentation()
                || o[0] == 0
                || (o[0] == 100 && (o[1] & 0xc0) == 64)
                || (o[0] == 192 && o[1] == 0 && o[2] == 0)
                || o[0] >= 240
        }
        IpAddr::V6(v6) => {
            let s = v6.segments();
            v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || (s[0] & 0xfe00) == 0xfc00
                || (s[0] & 0xffc0) == 0xfe80
                || (s[0] == 0x2001 && s[1] == 0x0db8)
        }
    }
}

/// A resolver that drops non-public addresses (unless allowed), so a host name cannot lead a
/// delivery to one.
struct PublicResolver;

impl reqwest::dns::Resolve for PublicResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        Box::pin(async move {
            let host = name.as_str().to_string();
            let addrs: Vec<SocketAddr> = tokio::net::lookup_host((host.as_str(), 0))
                .await?
                .filter(|a| !is_private(a.ip()))
                .collect();
            if addrs.is_empty() {
                return Err(format!(
                    "webhook host `{host}` resolves to no public address (private, loopback and \
                     link-local addresses are refused)"
                )
                .into());
            }
            let it: reqwest::dns::Addrs = Box::new(addrs.into_iter());
            Ok(it)
        })
    }
}

/// Checks a config a client registers: an absolute http(s) URL whose host (when an address)
/// is allowed, bounded fields.
pub(crate) fn validate(
    config: &v1::TaskPushNotificationConfig,
    allow_private: bool,
) -> Result<(), ApiError> {
    let bad = |m: String| ApiError::new(codes::INVALID_PARAMS, m);
    let too_long = |what: &str, s: &str| {
        (s.len() > MAX_FIELD_BYTES).then(|| {
            bad(format!(
                "push notification config: `{what}` exceeds {MAX_FIELD_BYTES} bytes"
            ))
        })
    };
    if let Some(e) = too_long("url", &config.url)
        .or_else(|| config.token.as_deref().and_then(|t| too_long("token", t)))
        .or_else(|| config.id.as_deref().and_then(|t| too_long("id", t)))
        .or_else(|| {
            config
                .authentication
                .as_ref()
                .and_then(|a| a.credentials.as_deref())
                .and_then(|c| too_long("authentication.credentials", c))
        })
    {
        return Err(e);
    }
    let url = reqwest::Url::parse(&config.url).map_err(|e| {
        bad(format!(
            "push notification url `{}` is invalid: {e}",
            config.url
        ))
    })?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(bad(format!(
            "push notification url `{}` must be http or https",
            config.url
        )));
    }
    if !allow_private {
        let host = url.host_str().unwrap_or("");
        let ip = if host.eq_ignore_ascii_case("localhost") {
            Some(IpAddr::V4(std::net::Ipv4Addr::LOCALHOST))
        } else {
            host.trim_start_matches('[')
                .trim_end_matches(']')
                .parse::<IpAddr>()
                .ok()
        };
        if ip.is_some_and(is_private) {
            return Err(bad(format!(
                "push notification url `{}` points at a private or loopback address, which \
                 this server does not deliver to",
                config.url
            )));
        }
    }
    Ok(())
}

impl Pusher {
    /// The pusher of one agent, reading configs from `store`.
    pub(crate) fn new(store: Arc<dyn TaskStore>, allow_private: bool) -> Self {
        let mut b = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(ATTEMPT_TIMEOUT)
            .user_agent(concat!("subagent-a2a/", env!("CARGO_PKG_VERSION"), " push"));
        if !allow_private {
            b = b.dns_resolver(Arc::new(PublicResolver));
        }
        let http = b.build().unwrap_or_else(|e| {
            tracing::warn!(error = %e, "A2A push: HTTP client setup failed; using the defaults");
            reqwest::Client::new()
        });
        Self {
            http,
            allow_private,
            store,
            queues: Mutex::new(HashMap::new()),
        }
    }

    /// True when webhooks at private and loopback addresses are allowed.
    pub(crate) fn allow_private(&self) -> bool {
        self.allow_private
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, mpsc::Sender<Delivery>>> {
        self.queues.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Queues an event of `task_id` for its webhooks (never waits: a full queue drops it).
    pub(crate) fn enqueue(self: &Arc<Self>, task_id: &str, d: Delivery) {
        let last = d.last;
        let mut queues = self.lock();
        let tx = match queues.get(task_id) {
            Some(tx) if !tx.is_closed() => tx.clone(),
            _ => {
                let (tx, rx) = mpsc::channel(QUEUE_PER_TASK);
                queues.insert(task_id.to_string(), tx.clone());
                tokio::spawn(self.clone().deliver_all(task_id.to_string(), rx));
                tx
            }
        };
        if last {
            queues.remove(task_id);
        }
        drop(queues);
        if tx.try_send(d).is_err() {
            tracing::warn!(
                task_id,
                limit = QUEUE_PER_TASK,
                "A2A push: the task's delivery queue is full; an update was dropped"
            );
        }
    }

    /// The delivery task of one task: each event, in order, to each of its configs.
    async fn deliver_all(self: Arc<Self>, task_id: String, mut rx: mpsc::Receiver<Delivery>) {
        while let Some(d) = rx.recv().await {
            let configs = match self.store.list_push_configs(&task_id).await {
                Ok(c) => c,
                Err(e) => {
                    tracing::warn!(task_id, error = %e, "A2A push: cannot read the task's configs");
                    continue;
                }
            };
            if configs.is_empty() {
                continue;
            }
            let body = match d.version {
                ProtocolVersion::V03 => match &d.snapshot {
                    Some(t) => serde_json::to_vec(&v03::Task::from(t.clone())),
                    None => continue,
                },
                _ => serde_json::to_vec(&*d.event),
            };
            let Ok(body) = body else { continue };
            let body = bytes::Bytes::from(body);
            for c in &configs {
                self.deliver(&task_id, c, body.clone()).await;
            }
            if d.last {
                break;
            }
        }
    }

    /// POSTs one event to one webhook, retrying connection errors, 5xx and 429 with
    /// exponential backoff.
    async fn deliver(&self, task_id: &str, c: &v1::TaskPushNotificationConfig, body: bytes::Bytes) {
        if !self.allow_private && validate(c, false).is_err() {
            tracing::warn!(task_id, "A2A push: webhook at a refused address skipped");
            return;
        }
        let mut backoff = FIRST_BACKOFF;
        for attempt in 1..=MAX_ATTEMPTS {
            let mut req = self
                .http
                .post(&c.url)
                .header(http::header::CONTENT_TYPE, "application/json")
                .body(body.clone());
            if let Some(a) = &c.authentication {
                let value = match &a.credentials {
                    Some(cred) => format!("{} {cred}", a.scheme),
                    None => a.scheme.clone(),
                };
                req = req.header(http::header::AUTHORIZATION, value);
            }
            if let Some(t) = &c.token {
                req = req.header("X-A2A-Notification-Token", t.as_str());
            }
            let retry = match req.send().await {
                Ok(r) if r.status().is_success() => return,
                Ok(r) => {
                    let s = r.status();
                    tracing::debug!(
                        task_id,
                        status = s.as_u16(),
                        attempt,
                        "A2A push: webhook refused an update"
                    );
                    s.is_server_error() || s == http::StatusCode::TOO_MANY_REQUESTS
                }
                Err(e) => {
                    tracing::debug!(task_id, error = %e.without_url(), attempt, "A2A push: delivery failed");
                    true
                }
            };
            if !retry || attempt == MAX_ATTEMPTS {
                break;
            }
            tokio::time::sleep(backoff).await;
            backoff *= 2;
        }
        tracing::warn!(
            task_id,
            config_id = c.id.as_deref().unwrap_or(""),
            "A2A push: an update could not be delivered to a webhook"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn private_addresses_are_recognised() {
        for a in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "::1",
            "fe80::1",
            "fd00::1",
            "::ffff:127.0.0.1",
        ] {
            assert!(is_private(a.parse().unwrap()), "{a}");
        }
        for a in ["93.184.215.14", "8.8.8.8", "2606:4700::1111"] {
            assert!(!is_private(a.parse().unwrap()), "{a}");
        }
    }

    #[test]
    fn configs_are_checked() {
        let c = |url: &str| v1::TaskPushNotificationConfig {
            tenant: None,
            id: None,
            task_id: None,
            url: url.into(),
            token: None,
            authentication: None,
        };
        assert!(validate(&c("https://example.com/hook"), false).is_ok());
        assert!(validate(&c("http://127.0.0.1:8080/hook"), false).is_err());
        assert!(validate(&c("http://127.0.0.1:8080/hook"), true).is_ok());
        assert!(validate(&c("http://LOCALHOST/hook"), false).is_err());
        assert!(validate(&c("file:///etc/passwd"), true).is_err());
        assert!(validate(&c("not a url"), true).is_err());
        let mut long = c("https://example.com/hook");
        long.token = Some("x".repeat(MAX_FIELD_BYTES + 1));
        assert!(validate(&long, true).is_err());
    }
}
