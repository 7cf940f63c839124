//! Connections: the one accept loop of [`A2aServer::serve`](super::A2aServer::serve) /
//! [`serve_router`](super::A2aServer::serve_router) (HTTP/1.1) and
//! [`serve_grpc`](super::A2aServer::serve_grpc) (HTTP/2): a connection cap shared by every
//! listener of the server (closing the idle connection waiting longest at the cap), head
//! (HTTP/2: preface and first request) and idle timeouts, graceful shutdown.

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicU8, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::{Body, Bytes};
use subagent_spi::CancellationToken;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::{PEER, Shared};
use crate::server::ServerConfig;

/// Phases of a connection, for its watchdog.
const PHASE_HEAD: u8 = 0;
const PHASE_BUSY: u8 = 1;
const PHASE_IDLE: u8 = 2;

/// What one connection is doing. Written by the connection's own task only (reads, requests,
/// finished answers); atomics because the state is shared through an `Arc`.
struct ConnState {
    start: tokio::time::Instant,
    phase: AtomicU8,
    /// When the phase began, in milliseconds since `start`.
    since_ms: AtomicU64,
    /// Requests whose answer is not fully sent yet.
    in_flight: AtomicUsize,
    /// Asks an idle connection to close (the accept loop, at the connection cap).
    evict: tokio::sync::Notify,
}

impl ConnState {
    fn new() -> Self {
        Self {
            start: tokio::time::Instant::now(),
            // A new connection waits for its first request head.
            phase: AtomicU8::new(PHASE_HEAD),
            since_ms: AtomicU64::new(0),
            in_flight: AtomicUsize::new(0),
            evict: tokio::sync::Notify::new(),
        }
    }

    fn now_ms(&self) -> u64 {
        u64::try_from(self.start.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// Bytes arrived: on an idle connection they start the next request's head.
    fn on_read(&self) {
        if self.phase.load(Ordering::Relaxed) == PHASE_IDLE {
            self.since_ms.store(self.now_ms(), Ordering::Relaxed);
            self.phase.store(PHASE_HEAD, Ordering::Relaxed);
        }
    }

    fn begin(&self) {
        self.in_flight.fetch_add(1, Ordering::Relaxed);
        self.phase.store(PHASE_BUSY, Ordering::Relaxed);
    }

    fn end(&self) {
        if self.in_flight.fetch_sub(1, Ordering::Relaxed) == 1 {
            self.since_ms.store(self.now_ms(), Ordering::Relaxed);
            self.phase.store(PHASE_IDLE, Ordering::Relaxed);
        }
    }

    /// Waiting for a request (head or next request), not answering one.
    fn is_idle(&self) -> bool {
        self.phase.load(Ordering::Relaxed) != PHASE_BUSY
    }

    /// `None` when the connection overstayed its phase's limit, else when to look again.
    fn next_check(&self, limits: &ConnLimits) -> Option<tokio::time::Instant> {
        let limit = match self.phase.load(Ordering::Relaxed) {
            PHASE_HEAD => limits.header,
            PHASE_IDLE => limits.idle,
            _ => None,
        };
        let now = tokio::time::Instant::now();
        match limit {
            Some(l) => {
                let since =
                    self.start + Duration::from_millis(self.since_ms.load(Ordering::Relaxed));
                let deadline = since + l;
                // Look again at the deadline, or sooner: the phase may change meanwhile.
                (now < deadline).then_some(deadline.min(now + limits.poll))
            }
            // Busy (or no limit): look again later; the phase may have changed by then.
            None => Some(now + limits.poll),
        }
    }
}

/// The timeouts a connection's watchdog enforces.
#[derive(Clone, Copy)]
struct ConnLimits {
    header: Option<Duration>,
    idle: Option<Duration>,
    /// How often a busy connection is looked at again.
    poll: Duration,
}

impl ConnLimits {
    fn new(cfg: &ServerConfig) -> Self {
        let some = |d: Duration| (!d.is_zero()).then_some(d);
        let header = some(cfg.header_read_timeout);
        let idle = some(cfg.idle_timeout);
        let poll = match (header, idle) {
            (Some(h), Some(i)) => h.min(i),
            (Some(d), None) | (None, Some(d)) => d,
            (None, None) => Duration::from_secs(3600),
        };
        Self {
            header,
            idle,
            // A quarter of the shorter limit: a connection is closed at most that late after
            // its phase's limit (a phase change is noticed at the next look).
            poll: (poll / 4).max(Duration::from_millis(10)),
        }
    }
}

/// Marks a request in flight until dropped (with its answer's body).
struct InFlight(Arc<ConnState>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.end();
    }
}

/// The socket, noting reads for the watchdog.
struct TrackedIo {
    io: tokio::net::TcpStream,
    state: Arc<ConnState>,
}

impl tokio::io::AsyncRead for TrackedIo {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let r = Pin::new(&mut this.io).poll_read(cx, buf);
        if matches!(r, std::task::Poll::Ready(Ok(()))) && buf.filled().len() > before {
            this.state.on_read();
        }
        r
    }
}

impl tokio::io::AsyncWrite for TrackedIo {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> std::task::Poll<std::io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(
        self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_flush(cx)
    }

    fn poll_shutdown(
        self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_shutdown(cx)
    }
}

/// An answer's body, holding its request's [`InFlight`] mark until hyper drops it (sent or
/// abandoned).
struct TrackedBody {
    body: Body,
    _in_flight: Option<InFlight>,
}

impl http_body::Body for TrackedBody {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.get_mut().body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.body.size_hint()
    }
}

type RouterService = hyper_util::service::TowerToHyperService<axum::Router>;
type RouterFuture = hyper_util::service::TowerToHyperServiceFuture<
    axum::Router,
    http::Request<hyper::body::Incoming>,
>;

/// The router, marking each request in flight until its answer is sent.
struct ConnService {
    inner: RouterService,
    state: Arc<ConnState>,
    /// Handed to each request as `ConnectInfo` (HTTP/2, whose requests run on their own tasks,
    /// outside the connection's [`PEER`] scope).
    peer: Option<SocketAddr>,
}

/// The router's future, wrapping the answer's body in a [`TrackedBody`].
struct TrackedFuture {
    inner: RouterFuture,
    in_flight: Option<InFlight>,
}

impl std::future::Future for TrackedFuture {
    type Output = Result<http::Response<TrackedBody>, Infallible>;

    fn poll(
        self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Self::Output> {
        let this = self.get_mut();
        match Pin::new(&mut this.inner).poll(cx) {
            std::task::Poll::Pending => std::task::Poll::Pending,
            std::task::Poll::Ready(Ok(r)) => {
                let in_flight = this.in_flight.take();
                std::task::Poll::Ready(Ok(r.map(|body| TrackedBody {
                    body,
                    _in_flight: in_flight,
                })))
            }
            std::task::Poll::Ready(Err(e)) => match e {},
        }
    }
}

impl hyper::service::Service<http::Request<hyper::body::Incoming>> for ConnService {
    type Response = http::Response<TrackedBody>;
    type Error = Infallible;
    type Future = TrackedFuture;

    fn call(&self, mut req: http::Request<hyper::body::Incoming>) -> TrackedFuture {
        self.state.begin();
        if let Some(peer) = self.peer {
            req.extensions_mut()
                .insert(axum::extract::ConnectInfo(peer));
        }
        TrackedFuture {
            inner: hyper::service::Service::call(&self.inner, req),
            in_flight: Some(InFlight(self.state.clone())),
        }
    }
}

/// How the connections of an accept loop speak.
#[derive(Clone, Copy)]
pub(crate) enum Protocol {
    /// HTTP/1.1 with keep-alive (the JSON-RPC and HTTP+JSON bindings, the cards).
    Http1,
    /// HTTP/2 with prior knowledge (the gRPC binding).
    #[cfg(feature = "grpc-server")]
    Http2(Http2Settings),
}

impl Protocol {
    /// Whether requests get the peer as `ConnectInfo` (HTTP/2 runs each request on its own
    /// task, outside the connection's [`PEER`] scope).
    fn hands_peer(self) -> bool {
        match self {
            Self::Http1 => false,
            #[cfg(feature = "grpc-server")]
            Self::Http2(_) => true,
        }
    }
}

/// The HTTP/2 settings of the gRPC binding's connections.
#[cfg(feature = "grpc-server")]
#[derive(Clone, Copy)]
pub(crate) struct Http2Settings {
    /// `SETTINGS_MAX_CONCURRENT_STREAMS`: concurrent calls per connection.
    pub max_concurrent_streams: u32,
    /// `SETTINGS_MAX_HEADER_LIST_SIZE`: the largest metadata accepted.
    pub max_header_list_size: u32,
    /// How often a connection is pinged (a peer that does not answer within `keep_alive_timeout`
    /// is dropped).
    pub keep_alive_interval: Duration,
    pub keep_alive_timeout: Duration,
}

/// A served connection: hyper's HTTP/1.1 or HTTP/2 one, shut down the same way.
trait Graceful: std::future::Future<Output = Result<(), hyper::Error>> {
    /// Whether an idle connection is told before it is closed (HTTP/2 `GOAWAY`, so a client
    /// sending its next call right then retries it elsewhere instead of seeing a reset).
    const TELL_BEFORE_CLOSING: bool;

    fn shut_down(self: Pin<&mut Self>);
}

/// A connection's socket, as hyper reads it.
type ConnIo = hyper_util::rt::TokioIo<TrackedIo>;

impl Graceful for hyper::server::conn::http1::Connection<ConnIo, ConnService> {
    const TELL_BEFORE_CLOSING: bool = false;

    fn shut_down(self: Pin<&mut Self>) {
        self.graceful_shutdown();
    }
}

#[cfg(feature = "grpc-server")]
impl Graceful
    for hyper::server::conn::http2::Connection<ConnIo, ConnService, hyper_util::rt::TokioExecutor>
{
    const TELL_BEFORE_CLOSING: bool = true;

    fn shut_down(self: Pin<&mut Self>) {
        self.graceful_shutdown();
    }
}

/// What one connection is served with.
#[derive(Clone)]
struct ConnSetup {
    router: axum::Router,
    limits: ConnLimits,
    max_header_bytes: usize,
    protocol: Protocol,
    stop: CancellationToken,
}

/// Serves one connection in its protocol, closed when its head or idle time runs out, shut
/// down gracefully when `stop` fires. Holds its slot until it ends.
async fn serve_conn(
    stream: tokio::net::TcpStream,
    peer: SocketAddr,
    setup: ConnSetup,
    slot: ConnSlot,
) {
    let state = slot.state.clone();
    let io = hyper_util::rt::TokioIo::new(TrackedIo {
        io: stream,
        state: state.clone(),
    });
    let svc = ConnService {
        inner: hyper_util::service::TowerToHyperService::new(setup.router),
        state: state.clone(),
        peer: setup.protocol.hands_peer().then_some(peer),
    };
    match setup.protocol {
        Protocol::Http1 => {
            let mut builder = hyper::server::conn::http1::Builder::new();
            // The watchdog below enforces the head timeout (hyper's own one would also count
            // the idle time between requests).
            builder
                .header_read_timeout(None)
                .keep_alive(true)
                .max_buf_size(setup.max_header_bytes.max(8192));
            let conn = builder.serve_connection(io, svc);
            drive(conn, &state, &setup.limits, &setup.stop).await;
        }
        #[cfg(feature = "grpc-server")]
        Protocol::Http2(h2) => {
            let mut builder =
                hyper::server::conn::http2::Builder::new(hyper_util::rt::TokioExecutor::new());
            builder
                .timer(hyper_util::rt::TokioTimer::new())
                .max_concurrent_streams(h2.max_concurrent_streams)
                .max_header_list_size(h2.max_header_list_size)
                .keep_alive_interval(h2.keep_alive_interval)
                .keep_alive_timeout(h2.keep_alive_timeout);
            let conn = builder.serve_connection(io, svc);
            drive(conn, &state, &setup.limits, &setup.stop).await;
        }
    }
    drop(slot);
}

/// Runs a connection until it ends, `stop` fires (then gracefully), the accept loop evicts it
/// while idle, or it overstays its head or idle time.
async fn drive<C: Graceful>(
    conn: C,
    state: &ConnState,
    limits: &ConnLimits,
    stop: &CancellationToken,
) {
    let mut conn = std::pin::pin!(conn);
    let stopped = stop.cancelled();
    let mut stopped = std::pin::pin!(stopped);
    let mut stopping = false;
    // Told to go away (HTTP/2): closed when this deadline passes, whatever the peer does.
    let mut closing = false;
    let first = state
        .next_check(limits)
        .unwrap_or_else(tokio::time::Instant::now);
    let watchdog = tokio::time::sleep_until(first);
    let mut watchdog = std::pin::pin!(watchdog);
    loop {
        // Whether to close now: idle and evicted, or overstayed; HTTP/2 first says so.
        let close = tokio::select! {
            r = conn.as_mut() => {
                if let Err(e) = r {
                    tracing::debug!(error = %e, "A2A connection ended with an error");
                }
                return;
            }
            _ = &mut stopped, if !stopping => {
                stopping = true;
                conn.as_mut().shut_down();
                false
            }
            _ = state.evict.notified(), if !closing => {
                // The server is at its connection cap and this connection is the idle one
                // waiting longest: make room (unless a request arrived meanwhile).
                let idle = state.is_idle();
                if idle {
                    tracing::debug!("closing an idle A2A connection to make room for a new one");
                }
                idle
            }
            _ = &mut watchdog => {
                if closing {
                    return;
                }
                match state.next_check(limits) {
                    Some(at) => {
                        watchdog.as_mut().reset(at);
                        false
                    }
                    // Waiting for a head or for the next request too long: no request is in
                    // flight, so closing the connection loses nothing.
                    None => {
                        tracing::debug!("closing an A2A connection that timed out waiting for a request");
                        true
                    }
                }
            }
        };
        if close {
            if !C::TELL_BEFORE_CLOSING {
                return;
            }
            closing = true;
            conn.as_mut().shut_down();
            watchdog
                .as_mut()
                .reset(tokio::time::Instant::now() + GOAWAY_GRACE);
        }
    }
}

/// How long an HTTP/2 connection told to go away may take to close by itself.
const GOAWAY_GRACE: Duration = Duration::from_secs(1);

/// The open connections, so the accept loop can close an idle one at the cap.
#[derive(Default)]
struct Registry {
    next: u64,
    conns: HashMap<u64, Arc<ConnState>>,
}

fn lock_registry(r: &Mutex<Registry>) -> std::sync::MutexGuard<'_, Registry> {
    r.lock().unwrap_or_else(|e| e.into_inner())
}

/// The connections of one server, over all its listeners (HTTP and gRPC): at most `max` open
/// at once, the idle one waiting longest closed to make room for a new one.
pub(crate) struct ConnPool {
    slots: Arc<Semaphore>,
    registry: Mutex<Registry>,
    max: usize,
}

impl ConnPool {
    /// A pool of `max_connections`, lowered to fit the open-file limit (see
    /// [`effective_max_connections`]).
    pub(crate) fn new(max_connections: usize) -> Self {
        let max = effective_max_connections(max_connections);
        Self {
            slots: Arc::new(Semaphore::new(max)),
            registry: Mutex::default(),
            max,
        }
    }

    /// The connections open now.
    pub(crate) fn open(&self) -> usize {
        self.max - self.slots.available_permits()
    }

    /// Asks the connection that has waited longest for a request to close; false when every
    /// connection is answering one.
    fn evict_idle(&self) -> bool {
        let r = lock_registry(&self.registry);
        let victim =
            r.conns.values().filter(|c| c.is_idle()).min_by_key(|c| {
                c.start + Duration::from_millis(c.since_ms.load(Ordering::Relaxed))
            });
        match victim {
            Some(c) => {
                c.evict.notify_one();
                true
            }
            None => false,
        }
    }
}

/// A connection's place: its slot under the cap, its registry entry (both given back when the
/// connection ends) and its loop's count of open connections.
struct ConnSlot {
    state: Arc<ConnState>,
    id: u64,
    pool: Arc<ConnPool>,
    _permit: OwnedSemaphorePermit,
    _open: tokio::sync::mpsc::Sender<()>,
}

impl ConnSlot {
    fn new(
        pool: &Arc<ConnPool>,
        permit: OwnedSemaphorePermit,
        open: tokio::sync::mpsc::Sender<()>,
    ) -> Self {
        let state = Arc::new(ConnState::new());
        let mut r = lock_registry(&pool.registry);
        r.next += 1;
        let id = r.next;
        r.conns.insert(id, state.clone());
        drop(r);
        Self {
            state,
            id,
            pool: pool.clone(),
            _permit: permit,
            _open: open,
        }
    }
}

impl Drop for ConnSlot {
    fn drop(&mut self) {
        lock_registry(&self.pool.registry).conns.remove(&self.id);
    }
}

/// The open-file limit of this process (soft), where the platform tells it.
fn open_file_limit() -> Option<usize> {
    let limits = std::fs::read_to_string("/proc/self/limits").ok()?;
    let line = limits.lines().find(|l| l.starts_with("Max open files"))?;
    line.split_whitespace().nth(3)?.parse().ok()
}

/// `max_connections`, lowered to three quarters of the open-file limit when that is smaller
/// (the rest is left for the listeners, handlers and outgoing connections).
fn effective_max_connections(configured: usize) -> usize {
    let configured = configured.clamp(1, u32::MAX as usize >> 1);
    match open_file_limit() {
        Some(fds) if fds / 4 * 3 < configured => {
            let lowered = (fds / 4 * 3).max(1);
            tracing::warn!(
                configured,
                lowered,
                open_file_limit = fds,
                "A2A server: max_connections lowered to fit the open-file limit"
            );
            lowered
        }
        _ => configured,
    }
}

/// Accepts connections on `listener` until `signal` completes, speaking `protocol`, within the
/// server's connection pool (shared with its other listeners), then shuts this listener's
/// connections down gracefully and waits for them to end.
pub(crate) async fn serve_loop(
    shared: Arc<Shared>,
    listener: tokio::net::TcpListener,
    router: axum::Router,
    protocol: Protocol,
    signal: impl std::future::Future<Output = ()> + Send,
) -> std::io::Result<()> {
    let pool = shared.conn_pool();
    let setup = ConnSetup {
        router,
        limits: ConnLimits::new(&shared.cfg),
        max_header_bytes: shared.cfg.max_header_bytes,
        protocol,
        stop: CancellationToken::new(),
    };
    // Every connection of this loop holds a sender; `finish` waits for the last to go.
    let (open, mut all_closed) = tokio::sync::mpsc::channel::<()>(1);
    let mut signal = std::pin::pin!(signal);
    'accept: loop {
        let (stream, peer) = tokio::select! {
            r = listener.accept() => match r {
                Ok(x) => x,
                Err(e) => {
                    if !matches!(
                        e.kind(),
                        std::io::ErrorKind::ConnectionAborted
                            | std::io::ErrorKind::ConnectionReset
                            | std::io::ErrorKind::ConnectionRefused
                            | std::io::ErrorKind::Interrupted
                    ) {
                        // Out of file descriptors and the like: back off instead of spinning.
                        tracing::warn!(error = %e, "A2A server: accept failed");
                        tokio::select! {
                            _ = tokio::time::sleep(Duration::from_millis(200)) => {}
                            _ = &mut signal => break 'accept,
                        }
                    }
                    continue;
                }
            },
            _ = &mut signal => break 'accept,
        };
        // At the cap, close the connection idle longest to make room; when every connection
        // is answering a request, wait for one to end (further connections wait in the
        // listen backlog meanwhile).
        let permit = match pool.slots.clone().try_acquire_owned() {
            Ok(p) => p,
            Err(_) => loop {
                let evicting = pool.evict_idle();
                tokio::select! {
                    p = pool.slots.clone().acquire_owned() => match p {
                        Ok(p) => break p,
                        Err(_) => break 'accept,
                    },
                    // The idle one may have become busy meanwhile: pick another.
                    _ = tokio::time::sleep(Duration::from_millis(50)), if evicting => {}
                    _ = &mut signal => {
                        drop(stream);
                        break 'accept;
                    }
                }
            },
        };
        let _ = stream.set_nodelay(true);
        let slot = ConnSlot::new(&pool, permit, open.clone());
        tokio::spawn(PEER.scope(peer, serve_conn(stream, peer, setup.clone(), slot)));
    }
    // Stop accepting, shut this loop's connections down gracefully, wait for them to end.
    drop(listener);
    setup.stop.cancel();
    drop(open);
    let _ = all_closed.recv().await;
    Ok(())
}
