//! Push notifications: task updates POSTed to the webhooks clients registered for a task
//! (`CreateTaskPushNotificationConfig`, 0.3 `tasks/pushNotificationConfig/set`, or the
//! `SendMessage` configuration).
//!
//! One bounded queue and one delivery task per task with webhooks; every event is POSTed to
//! every config of the task, in order. Bounds over all tasks and agents of a server
//! ([`PushHub`]): at most `push_max_deliveries` POSTs in flight (each on its own connection:
//! connections are not pooled, so that is also the most outbound connections), at most
//! `push_max_queued` updates of about `push_max_queued_bytes` waiting (more are dropped and
//! logged with the reason). Payloads: the 1.0 `StreamResponse` for tasks created over 1.0,
//! the task snapshot for tasks created over 0.3 (what 0.3 receivers expect). A config's
//! `authentication` becomes `Authorization: <scheme> <credentials>`, its `token` the
//! `X-A2A-Notification-Token` header. Failed deliveries (connection errors, 5xx, 429) are
//! retried with exponential backoff; an event that still fails is dropped and logged (without
//! its credentials). Webhooks at loopback, private, link-local and other non-public addresses
//! are refused unless [`ServerConfig::push_allow_private`](super::ServerConfig) allows them:
//! literal addresses at registration and delivery, host names when they resolve (the resolver
//! drops such addresses, so a name cannot be rebound to one between check and connect). The
//! HTTP client ignores proxy settings from the environment (a proxy would resolve the host
//! itself, out of the guard's reach).

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{Semaphore, mpsc};

use super::api::{ApiError, Event};
use super::store::PushConfigStore;
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

/// The delivery side of a whole server, shared by its agents: the HTTP client and the global
/// bounds (deliveries in flight, updates queued).
pub(crate) struct PushHub {
    http: reqwest::Client,
    allow_private: bool,
    /// One permit per POST in flight.
    deliveries: Arc<Semaphore>,
    max_deliveries: usize,
    max_queued: usize,
    max_queued_bytes: usize,
    queued: AtomicUsize,
    queued_bytes: AtomicUsize,
    dropped: AtomicU64,
}

/// The limits of a [`PushHub`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct PushLimits {
    pub allow_private: bool,
    pub max_deliveries: usize,
    pub max_queued: usize,
    pub max_queued_bytes: usize,
}

/// Counters of push delivery over a whole server (see
/// [`A2aServer::push_stats`](super::A2aServer::push_stats)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct PushStats {
    /// Updates waiting for delivery (or being delivered), over all tasks.
    pub queued: usize,
    /// Their approximate size in bytes.
    pub queued_bytes: usize,
    /// Webhook POSTs in flight now (each on its own outbound connection).
    pub in_flight: usize,
    /// Updates dropped since the server started because a queue (a task's, or the
    /// server's) was full.
    pub dropped: u64,
}

impl PushHub {
    /// The hub of one server.
    pub(crate) fn new(limits: PushLimits) -> Self {
        let mut b = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(ATTEMPT_TIMEOUT)
            // A proxy from the environment would resolve the webhook's host itself, where the
            // private-address guard cannot see.
            .no_proxy()
            // One connection per delivery, closed after it: the deliveries in flight are then
            // all the outbound connections (an idle pool keyed by host name would grow with
            // every name a client registers).
            .pool_max_idle_per_host(0)
            .user_agent(concat!("subagent-a2a/", env!("CARGO_PKG_VERSION"), " push"));
        if !limits.allow_private {
            b = b.dns_resolver(Arc::new(PublicResolver));
        }
        let http = b.build().unwrap_or_else(|e| {
            tracing::warn!(error = %e, "A2A push: HTTP client setup failed; using the defaults");
            reqwest::Client::builder()
                .no_proxy()
                .pool_max_idle_per_host(0)
                .build()
                .unwrap_or_default()
        });
        let max_deliveries = limits.max_deliveries.max(1);
        Self {
            http,
            allow_private: limits.allow_private,
            deliveries: Arc::new(Semaphore::new(max_deliveries)),
            max_deliveries,
            max_queued: limits.max_queued.max(1),
            max_queued_bytes: limits.max_queued_bytes.max(1),
            queued: AtomicUsize::new(0),
            queued_bytes: AtomicUsize::new(0),
            dropped: AtomicU64::new(0),
        }
    }

    /// The counters now.
    pub(crate) fn stats(&self) -> PushStats {
        PushStats {
            queued: self.queued.load(Ordering::Relaxed),
            queued_bytes: self.queued_bytes.load(Ordering::Relaxed),
            in_flight: self.max_deliveries - self.deliveries.available_permits(),
            dropped: self.dropped.load(Ordering::Relaxed),
        }
    }

    /// A place in the server's queue for an update of about `bytes` bytes; `None` (the update
    /// is dropped) when the queue is full.
    fn reserve(self: &Arc<Self>, bytes: usize) -> Option<Ticket> {
        let taken = self
            .queued
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
                (n < self.max_queued).then_some(n + 1)
            });
        if taken.is_err() {
            return None;
        }
        let took_bytes =
            self.queued_bytes
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
                    // One update always fits an empty queue, however big.
                    (n == 0 || n.saturating_add(bytes) <= self.max_queued_bytes)
                        .then(|| n.saturating_add(bytes))
                });
        if took_bytes.is_err() {
            self.queued.fetch_sub(1, Ordering::Relaxed);
            return None;
        }
        Some(Ticket {
            hub: self.clone(),
            bytes,
        })
    }

    fn note_dropped(&self, task_id: &str, reason: &str) {
        self.dropped.fetch_add(1, Ordering::Relaxed);
        tracing::warn!(task_id, reason, "A2A push: an update was dropped");
    }
}

/// An update's place in the server's queue, given back when dropped (delivered or not).
struct Ticket {
    hub: Arc<PushHub>,
    bytes: usize,
}

impl Drop for Ticket {
    fn drop(&mut self) {
        self.hub.queued.fetch_sub(1, Ordering::Relaxed);
        self.hub
            .queued_bytes
            .fetch_sub(self.bytes, Ordering::Relaxed);
    }
}

/// The delivery side of one agent: its configs' store and its per-task queues, on the
/// server's [`PushHub`].
pub(crate) struct Pusher {
    hub: Arc<PushHub>,
    store: Arc<dyn PushConfigStore>,
    max_configs: usize,
    queues: Mutex<HashMap<String, mpsc::Sender<(Delivery, Ticket)>>>,
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
            .field("allow_private", &self.hub.allow_private)
            .field("max_configs", &self.max_configs)
            .finish_non_exhaustive()
    }
}

/// True for addresses a webhook may not use by default: loopback, private, link-local,
/// shared (CGNAT), benchmarking, unspecified, broadcast, multicast, documentation, reserved
/// and unique-local ranges, and IPv6 forms that carry such an IPv4 address (IPv4-mapped and
/// IPv4-compatible `::/96`, NAT64 `64:ff9b::/96`, 6to4 `2002::/16`, Teredo `2001::/32`).
pub(crate) fn is_private(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_private_v4(v4),
        IpAddr::V6(v6) => is_private_v6(v6),
    }
}

fn is_private_v4(v4: Ipv4Addr) -> bool {
    let o = v4.octets();
    v4.is_loopback()
        || v4.is_private()
        || v4.is_link_local()
        || v4.is_unspecified()
        || v4.is_broadcast()
        || v4.is_multicast()
        || v4.is_documentation()
        || o[0] == 0
        // shared address space (CGNAT), 100.64.0.0/10
        || (o[0] == 100 && (o[1] & 0xc0) == 64)
        // IETF protocol assignments, 192.0.0.0/24
        || (o[0] == 192 && o[1] == 0 && o[2] == 0)
        // benchmarking, 198.18.0.0/15
        || (o[0] == 198 && (o[1] & 0xfe) == 18)
        // the 6to4 relay anycast, 192.88.99.0/24
        || (o[0] == 192 && o[1] == 88 && o[2] == 99)
        || o[0] >= 240
}

fn is_private_v6(v6: Ipv6Addr) -> bool {
    let s = v6.segments();
    let o = v6.octets();
    let v4_at = |i: usize| Ipv4Addr::new(o[i], o[i + 1], o[i + 2], o[i + 3]);
    // IPv4-mapped ::ffff:0:0/96: the IPv4 address decides.
    if let Some(v4) = v6.to_ipv4_mapped() {
        return is_private_v4(v4);
    }
    // IPv4-compatible ::/96 (deprecated; `::`, `::1` and `::a.b.c.d`): never public.
    if s[..6].iter().all(|&x| x == 0) {
        return true;
    }
    // NAT64 64:ff9b::/96: the embedded IPv4 address decides; the local-use 64:ff9b:1::/48 is
    // private.
    if s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        return is_private_v4(v4_at(12));
    }
    if s[0] == 0x64 && s[1] == 0xff9b && s[2] == 1 {
        return true;
    }
    // 6to4 2002::/16: the IPv4 address in bits 16..48 decides.
    if s[0] == 0x2002 {
        return is_private_v4(v4_at(2));
    }
    // Teredo 2001:0::/32: the client's IPv4 address (the last 32 bits, inverted) decides.
    if s[0] == 0x2001 && s[1] == 0 {
        let c = v4_at(12).to_bits() ^ u32::MAX;
        return is_private_v4(Ipv4Addr::from_bits(c));
    }
    v6.is_loopback()
        || v6.is_unspecified()
        || v6.is_multicast()
        // unique local fc00::/7
        || (s[0] & 0xfe00) == 0xfc00
        // link-local fe80::/10 and the deprecated site-local fec0::/10
        || (s[0] & 0xffc0) == 0xfe80
        || (s[0] & 0xffc0) == 0xfec0
        // documentation 2001:db8::/32, benchmarking 2001:2::/48, ORCHID 2001:10::/28 and
        // 2001:20::/28
        || (s[0] == 0x2001 && s[1] == 0x0db8)
        || (s[0] == 0x2001 && s[1] == 0x0002 && s[2] == 0)
        || (s[0] == 0x2001 && (s[1] & 0xffe0) == 0x0000 && s[1] >= 0x10)
        // discard-only 100::/64
        || (s[0] == 0x0100 && s[1] == 0 && s[2] == 0 && s[3] == 0)
}

/// True for a host name that names this machine whatever the resolver says: `localhost`, its
/// subdomains (RFC 6761), with or without the trailing dot.
fn is_local_name(host: &str) -> bool {
    let h = host.trim_end_matches('.').to_ascii_lowercase();
    h == "localhost" || h.ends_with(".localhost")
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
        // The URL parser has normalised the host: IPv4 in dotted decimal (also from forms
        // like `0x7f.1`), IPv6 in brackets.
        let host = url.host_str().unwrap_or("");
        let refused = match host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<IpAddr>()
        {
            Ok(ip) => is_private(ip),
            Err(_) => host.is_empty() || is_local_name(host),
        };
        if refused {
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
    /// The pusher of one agent, reading configs from `store` (at most `max_configs` per task),
    /// delivering through `hub`.
    pub(crate) fn new(
        hub: Arc<PushHub>,
        store: Arc<dyn PushConfigStore>,
        max_configs: usize,
    ) -> Self {
        Self {
            hub,
            store,
            max_configs: max_configs.max(1),
            queues: Mutex::new(HashMap::new()),
        }
    }

    /// True when webhooks at private and loopback addresses are allowed.
    pub(crate) fn allow_private(&self) -> bool {
        self.hub.allow_private
    }

    /// The most configs one task may have.
    pub(crate) fn max_configs(&self) -> usize {
        self.max_configs
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, mpsc::Sender<(Delivery, Ticket)>>> {
        self.queues.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Queues an event of `task_id` for its webhooks (never waits: a full queue, the task's or
    /// the server's, drops it with a logged reason).
    pub(crate) fn enqueue(self: &Arc<Self>, task_id: &str, d: Delivery) {
        let last = d.last;
        let bytes = d.bytes();
        let ticket = self.hub.reserve(bytes);
        let mut queues = self.lock();
        let tx = match queues.get(task_id) {
            Some(tx) if !tx.is_closed() => Some(tx.clone()),
            // No delivery task yet: start one only for an update that has a place.
            _ if ticket.is_some() => {
                let (tx, rx) = mpsc::channel(QUEUE_PER_TASK);
                queues.insert(task_id.to_string(), tx.clone());
                tokio::spawn(self.clone().deliver_all(task_id.to_string(), rx));
                Some(tx)
            }
            _ => None,
        };
        if last {
            queues.remove(task_id);
        }
        drop(queues);
        let Some(ticket) = ticket else {
            self.hub.note_dropped(
                task_id,
                "the server's push queue is full (push_max_queued / push_max_queued_bytes)",
            );
            return;
        };
        let Some(tx) = tx else { return };
        if tx.try_send((d, ticket)).is_err() {
            self.hub
                .note_dropped(task_id, "the task's push queue is full");
        }
    }

    /// The delivery task of one task: each event, in order, to each of its configs.
    async fn deliver_all(
        self: Arc<Self>,
        task_id: String,
        mut rx: mpsc::Receiver<(Delivery, Ticket)>,
    ) {
        while let Some((d, _ticket)) = rx.recv().await {
            let configs = match self.store.list_push_configs(&task_id).await {
                Ok(c) => c,
                Err(e) => {
                    tracing::warn!(task_id, error = %e, "A2A push: cannot read the task's configs");
                    continue;
                }
            };
            if !configs.is_empty() {
                let body = match d.version {
                    ProtocolVersion::V03 => d
                        .snapshot
                        .as_ref()
                        .map(|t| serde_json::to_vec(&v03::Task::from(t.clone()))),
                    _ => Some(serde_json::to_vec(&*d.event)),
                };
                if let Some(Ok(body)) = body {
                    let body = bytes::Bytes::from(body);
                    for c in &configs {
                        self.deliver(&task_id, c, body.clone()).await;
                    }
                }
            }
            if d.last {
                break;
            }
        }
    }

    /// POSTs one event to one webhook, retrying connection errors, 5xx and 429 with
    /// exponential backoff; each attempt waits for a place among the server's deliveries in
    /// flight.
    async fn deliver(&self, task_id: &str, c: &v1::TaskPushNotificationConfig, body: bytes::Bytes) {
        if !self.hub.allow_private && validate(c, false).is_err() {
            tracing::warn!(task_id, "A2A push: webhook at a refused address skipped");
            return;
        }
        let mut backoff = FIRST_BACKOFF;
        for attempt in 1..=MAX_ATTEMPTS {
            let Ok(_permit) = self.hub.deliveries.clone().acquire_owned().await else {
                return;
            };
            let mut req = self
                .hub
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
            drop(_permit);
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

impl Delivery {
    /// The approximate memory the queued update holds.
    fn bytes(&self) -> usize {
        super::store::event_bytes(&self.event)
            + self.snapshot.as_ref().map_or(0, super::store::task_bytes)
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
            "::7f00:1",
            "::",
            "64:ff9b::7f00:1",
            "64:ff9b::a9fe:a9fe",
            "64:ff9b:1::1",
            "2002:7f00:1::",
            "2002:a9fe:a9fe::1",
            "2001:0:4136:e378:8000:63bf:80ff:fffe",
            "198.18.0.1",
            "198.19.1.1",
            "fec0::1",
        ] {
            assert!(is_private(a.parse().unwrap()), "{a}");
        }
        for a in [
            "93.184.215.14",
            "8.8.8.8",
            "2606:4700::1111",
            "64:ff9b::808:808",
            "2002:808:808::1",
            "198.20.0.1",
        ] {
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
