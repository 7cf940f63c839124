//! Server-sent events: one `data:` event per stream event in the caller's binding and
//! version, keep-alive comments, and the stream caps (over all clients and per client).

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::response::Response;
use futures::Stream;
use http::{HeaderValue, header};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc};

use super::Shared;
use super::reply::{RpcOk, Wire};
use crate::server::engine::{ApiError, Event, trim_history};
use crate::types::jsonrpc::codes;
use crate::types::{v1, v03};

/// Open streams per client.
pub(super) type ClientStreams = Arc<Mutex<HashMap<IpAddr, usize>>>;

/// The stream caps: over all clients, and per client (peer IP; IPv6 per /64).
pub(crate) struct StreamLimits {
    global: Arc<Semaphore>,
    per_client: usize,
    clients: ClientStreams,
}

impl StreamLimits {
    pub(crate) fn new(global: usize, per_client: usize) -> Self {
        Self {
            global: Arc::new(Semaphore::new(global)),
            per_client,
            clients: Arc::new(Mutex::new(HashMap::new())),
        }
    }
}

/// One open stream: returns its slots (global and the client's) when dropped.
pub(crate) struct StreamPermit {
    _global: OwnedSemaphorePermit,
    client: Option<(ClientStreams, IpAddr)>,
}

impl Drop for StreamPermit {
    fn drop(&mut self) {
        if let Some((clients, ip)) = self.client.take() {
            let mut m = clients.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(n) = m.get_mut(&ip) {
                *n = n.saturating_sub(1);
                if *n == 0 {
                    m.remove(&ip);
                }
            }
        }
    }
}

/// The key a client's streams are counted under: its IPv4 address, or the /64 of its IPv6
/// address (one host usually holds a whole /64).
pub(super) fn client_key(ip: IpAddr) -> IpAddr {
    match ip.to_canonical() {
        IpAddr::V6(v6) => {
            let s = v6.segments();
            IpAddr::V6(std::net::Ipv6Addr::new(s[0], s[1], s[2], s[3], 0, 0, 0, 0))
        }
        v4 @ IpAddr::V4(_) => v4,
    }
}

tokio::task_local! {
    /// The peer of the connection being served: set per connection by
    /// [`serve_router`](super::A2aServer::serve_router), or per request from axum's
    /// `ConnectInfo<SocketAddr>` when the router is served another way.
    pub(crate) static PEER: SocketAddr;
}

/// Takes a stream slot, or answers ServerBusy (503 + `Retry-After`) at either cap.
pub(super) fn acquire_stream(shared: &Shared) -> Result<StreamPermit, ApiError> {
    let limits = &shared.streams;
    let global = limits.global.clone().try_acquire_owned().map_err(|_| {
        ApiError::new(
            codes::SERVER_BUSY,
            format!(
                "too many concurrent streams (limit {}); retry later",
                shared.cfg.max_streams
            ),
        )
    })?;
    let mut permit = StreamPermit {
        _global: global,
        client: None,
    };
    if limits.per_client == 0 {
        return Ok(permit);
    }
    let Ok(ip) = PEER.try_with(|a| client_key(a.ip())) else {
        return Ok(permit);
    };
    let mut m = limits.clients.lock().unwrap_or_else(|e| e.into_inner());
    let n = m.entry(ip).or_insert(0);
    if *n >= limits.per_client {
        return Err(ApiError::new(
            codes::SERVER_BUSY,
            format!(
                "client {ip} has too many concurrent streams (limit {} per client); retry later",
                limits.per_client
            ),
        ));
    }
    *n += 1;
    drop(m);
    permit.client = Some((limits.clients.clone(), ip));
    Ok(permit)
}

/// Appends one SSE event (`data: <json>\n\n`) for the wire's version and binding. serde_json
/// escapes newlines, so the JSON always fits one `data:` line.
pub(super) fn push_event(
    buf: &mut Vec<u8>,
    wire: &Wire,
    ev: &v1::StreamResponse,
    history_length: Option<i32>,
) {
    let trimmed;
    let ev = match (ev, history_length) {
        (v1::StreamResponse::Task(t), Some(_)) => {
            let mut t = t.clone();
            trim_history(&mut t, history_length);
            trimmed = v1::StreamResponse::Task(t);
            &trimmed
        }
        _ => ev,
    };
    buf.extend_from_slice(b"data: ");
    // Writing our own types into a Vec cannot fail.
    let _ = match wire {
        Wire::Rest => serde_json::to_writer(&mut *buf, ev),
        Wire::RestV03 => serde_json::to_writer(
            &mut *buf,
            &crate::types::v03_rest::event_to_proto(
                &serde_json::to_value(v03::Event::from(ev.clone())).unwrap_or_default(),
            ),
        ),
        Wire::RpcV1(id) => serde_json::to_writer(
            &mut *buf,
            &RpcOk {
                jsonrpc: "2.0",
                id,
                result: ev,
            },
        ),
        Wire::RpcV03(id) => serde_json::to_writer(
            &mut *buf,
            &RpcOk {
                jsonrpc: "2.0",
                id,
                result: &v03::Event::from(ev.clone()),
            },
        ),
    };
    buf.extend_from_slice(b"\n\n");
}

pub(super) type EventStream = Pin<Box<dyn Stream<Item = Result<Bytes, Infallible>> + Send>>;

/// Events already queued that one body chunk may carry.
pub(super) const MAX_BATCH: usize = 64;

pub(super) struct StreamState {
    first: Option<Event>,
    rx: mpsc::Receiver<Event>,
    wire: Wire,
    history_length: Option<i32>,
    keep_alive: Duration,
    shutdown: Pin<Box<subagent_spi::CancelledFuture>>,
    _permit: StreamPermit,
}

/// An SSE response: one `data:` event per stream event (events already queued go out in one
/// chunk), a `:` keep-alive comment after each idle interval; ends when the task stops (the
/// receiver closes) or the server shuts down.
pub(super) fn sse(
    shared: &Shared,
    first: Option<Event>,
    rx: mpsc::Receiver<Event>,
    wire: Wire,
    permit: StreamPermit,
    history_length: Option<i32>,
) -> Response {
    let state = StreamState {
        first,
        rx,
        wire,
        history_length,
        keep_alive: if shared.cfg.keep_alive.is_zero() {
            Duration::from_secs(15)
        } else {
            shared.cfg.keep_alive
        },
        shutdown: Box::pin(shared.shutdown.cancelled()),
        _permit: permit,
    };
    let stream: EventStream = Box::pin(futures::stream::unfold(state, |mut st| async move {
        let ev = match st.first.take() {
            Some(e) => Some(e),
            None => {
                tokio::select! {
                    biased;
                    e = st.rx.recv() => Some(e?),
                    _ = &mut st.shutdown => return None,
                    _ = tokio::time::sleep(st.keep_alive) => None,
                }
            }
        };
        let mut buf = Vec::with_capacity(512);
        match ev {
            None => buf.extend_from_slice(b":\n\n"),
            Some(e) => {
                push_event(&mut buf, &st.wire, &e, st.history_length);
                for _ in 0..MAX_BATCH {
                    match st.rx.try_recv() {
                        Ok(e) => push_event(&mut buf, &st.wire, &e, st.history_length),
                        Err(_) => break,
                    }
                }
            }
        }
        Some((Ok(Bytes::from(buf)), st))
    }));
    let mut r = Response::new(Body::from_stream(stream));
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    r
}
