//! MCP client side: connections to servers, the shared connection pool, and tool calls with
//! progress and cancellation.

use std::collections::{HashMap, VecDeque};
use std::process::Stdio;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, CancelledNotificationParam,
    ClientCapabilities, ClientConfig, ClientRequest, Implementation, JsonObject,
    ProgressNotificationParam, ProgressToken, ServerResult,
};
use rmcp::service::{
    NotificationContext, PeerRequestOptions, RunningService, RxJsonRpcMessage, ServiceError,
    TxJsonRpcMessage,
};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess, Transport};
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use subagent_spi::CancellationToken;
use tokio::sync::{OnceCell, mpsc};
use tokio_util::sync::{CancellationToken as Signal, DropGuard};

use crate::{McpEndpoint, McpError};

/// How long a server may take to start and finish the MCP handshake.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// How long a server may take to answer one request (`tools/list`, `tools/call`) unless its
/// configuration says otherwise (`timeout_secs` of a `.mcp.json` entry or of an `MCP`
/// reference, [`McpPool::with_request_timeout`]).
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(600);

/// Progress notifications kept for requests whose subscription is not registered yet.
const ORPHAN_PROGRESS: usize = 64;
/// Progress notifications buffered per running call (more are dropped, never blocking the
/// connection).
const PROGRESS_BUFFER: usize = 64;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Every critical section here is a map insert/remove; a poisoned lock is still consistent.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Routes `notifications/progress` to the call that owns the progress token.
#[derive(Default)]
struct ProgressRouter {
    state: Mutex<RouterState>,
}

#[derive(Default)]
struct RouterState {
    subscribers: HashMap<ProgressToken, mpsc::Sender<ProgressNotificationParam>>,
    /// Notifications that arrived before their call subscribed (bounded).
    orphans: VecDeque<ProgressNotificationParam>,
}

impl ProgressRouter {
    fn deliver(&self, params: ProgressNotificationParam) {
        let mut st = lock(&self.state);
        if let Some(tx) = st.subscribers.get(&params.progress_token) {
            let _ = tx.try_send(params);
        } else {
            if st.orphans.len() >= ORPHAN_PROGRESS {
                st.orphans.pop_front();
            }
            st.orphans.push_back(params);
        }
    }

    fn subscribe(self: &Arc<Self>, token: ProgressToken) -> ProgressSubscription {
        let (tx, rx) = mpsc::channel(PROGRESS_BUFFER);
        {
            let mut st = lock(&self.state);
            let mut kept = VecDeque::with_capacity(st.orphans.len());
            for p in st.orphans.drain(..) {
                if p.progress_token == token {
                    let _ = tx.try_send(p);
                } else {
                    kept.push_back(p);
                }
            }
            st.orphans = kept;
            st.subscribers.insert(token.clone(), tx);
        }
        ProgressSubscription {
            router: self.clone(),
            token,
            rx,
        }
    }
}

struct ProgressSubscription {
    router: Arc<ProgressRouter>,
    token: ProgressToken,
    rx: mpsc::Receiver<ProgressNotificationParam>,
}

impl Drop for ProgressSubscription {
    fn drop(&mut self) {
        lock(&self.router.state).subscribers.remove(&self.token);
    }
}

/// Our side of an MCP client session: answers the server's notifications.
#[derive(Clone)]
struct ClientState {
    router: Arc<ProgressRouter>,
}

impl ClientHandler for ClientState {
    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.router.deliver(params);
    }

    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("subagents", env!("CARGO_PKG_VERSION")),
        )
    }
}

/// A transport that reports when it closed: when its input ends (the server exited, the HTTP
/// session ended), when the service closes it, or when the service task drops it.
///
/// rmcp fails the requests still waiting only once its service task has finished shutting down
/// (draining, closing stdin, waiting for the child to exit); calls watch `closed` instead, so
/// they fail as soon as the server is gone and the pool stops handing out the connection.
struct Watched<T> {
    inner: T,
    closed: Signal,
    _on_drop: DropGuard,
}

impl<T> Watched<T> {
    fn new(inner: T, closed: &Signal) -> Self {
        Self {
            inner,
            closed: closed.clone(),
            _on_drop: closed.clone().drop_guard(),
        }
    }
}

impl<T: Transport<RoleClient>> Transport<RoleClient> for Watched<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        let message = self.inner.receive().await;
        if message.is_none() {
            self.closed.cancel();
        }
        message
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.closed.cancel();
        self.inner.close()
    }
}

/// How a tool call ended.
pub(crate) enum CallEnd {
    /// The server answered.
    Done(CallToolResult),
    /// The caller's token was cancelled; `notifications/cancelled` was sent.
    Cancelled,
    /// The timeout passed; `notifications/cancelled` was sent.
    TimedOut(Duration),
}

/// One live MCP client session (and, for stdio, the server process it owns).
///
/// Dropping the last handle closes the session; for stdio that kills the server process.
pub(crate) struct Connection {
    label: String,
    service: RunningService<RoleClient, ClientState>,
    router: Arc<ProgressRouter>,
    pid: Option<u32>,
    /// Cancelled when the transport closed (see [`Watched`]) or a request met a broken one.
    closed: Signal,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("server", &self.label)
            .field("pid", &self.pid)
            .finish_non_exhaustive()
    }
}

impl Connection {
    async fn connect(endpoint: &McpEndpoint, timeout: Duration) -> Result<Self, McpError> {
        let label = endpoint.label();
        let router = Arc::new(ProgressRouter::default());
        let state = ClientState {
            router: router.clone(),
        };
        let closed = Signal::new();
        // The handshake within `timeout`, its failures naming the server.
        let connected = |attempt: Result<Result<_, _>, tokio::time::error::Elapsed>| {
            attempt
                .map_err(|_| McpError::ConnectTimeout {
                    target: label.clone(),
                    after: timeout,
                })?
                .map_err(
                    |e: rmcp::service::ClientInitializeError| McpError::Connect {
                        target: label.clone(),
                        message: e.to_string(),
                    },
                )
        };
        let (service, pid) = match endpoint {
            McpEndpoint::Stdio { command, args, env } => {
                let mut cmd = tokio::process::Command::new(command);
                cmd.args(args).envs(env).kill_on_drop(true);
                let (transport, _stderr) = TokioChildProcess::builder(cmd)
                    .stderr(Stdio::inherit())
                    .spawn()
                    .map_err(|source| McpError::Spawn {
                        command: label.clone(),
                        source,
                    })?;
                let pid = transport.id();
                let transport = Watched::new(transport, &closed);
                let service =
                    connected(tokio::time::timeout(timeout, state.serve(transport)).await)?;
                (service, pid)
            }
            McpEndpoint::Http {
                url,
                headers,
                bearer_env,
            } => {
                let mut config = StreamableHttpClientTransportConfig::with_uri(url.as_str());
                if let Some(var) = bearer_env {
                    let token = std::env::var(var).map_err(|_| McpError::MissingEnv {
                        target: label.clone(),
                        var: var.clone(),
                    })?;
                    config = config.auth_header(token);
                }
                let mut custom = HashMap::new();
                for (name, value) in headers {
                    let n = http::HeaderName::from_bytes(name.as_bytes()).map_err(|_| {
                        McpError::InvalidTarget {
                            target: label.clone(),
                            message: format!("invalid header name `{name}`"),
                        }
                    })?;
                    let v = http::HeaderValue::from_str(value).map_err(|_| {
                        McpError::InvalidTarget {
                            target: label.clone(),
                            message: format!("invalid value for header `{name}`"),
                        }
                    })?;
                    custom.insert(n, v);
                }
                config = config.custom_headers(custom);
                let transport =
                    Watched::new(StreamableHttpClientTransport::from_config(config), &closed);
                let service =
                    connected(tokio::time::timeout(timeout, state.serve(transport)).await)?;
                (service, None)
            }
        };
        tracing::debug!(server = %label, ?pid, "connected to MCP server");
        Ok(Self {
            label,
            service,
            router,
            pid,
            closed,
        })
    }

    /// The server, for messages.
    pub(crate) fn label(&self) -> &str {
        &self.label
    }

    /// The server process id, for stdio servers.
    pub(crate) fn pid(&self) -> Option<u32> {
        self.pid
    }

    fn is_closed(&self) -> bool {
        self.closed.is_cancelled()
            || self.service.is_closed()
            || self.service.peer().is_transport_closed()
    }

    fn request_error(&self, method: &str, e: impl std::fmt::Display) -> McpError {
        McpError::Request {
            target: self.label.clone(),
            method: method.to_string(),
            message: e.to_string(),
        }
    }

    fn closed_error(&self, method: &str) -> McpError {
        McpError::Closed {
            target: self.label.clone(),
            method: method.to_string(),
        }
    }

    fn timeout_error(&self, method: &str, after: Duration) -> McpError {
        McpError::RequestTimeout {
            target: self.label.clone(),
            method: method.to_string(),
            after,
        }
    }

    /// An rmcp failure as our error. A transport that is closed or cannot be written marks
    /// the connection closed, so the pool replaces it on next use.
    fn service_error(&self, method: &str, e: ServiceError) -> McpError {
        match e {
            ServiceError::TransportClosed | ServiceError::TransportSend(_) => {
                self.closed.cancel();
                self.closed_error(method)
            }
            e => self.request_error(method, e),
        }
    }

    /// Lists every tool (following pagination), within `limit`.
    pub(crate) async fn list_tools(
        &self,
        limit: Duration,
    ) -> Result<Vec<rmcp::model::Tool>, McpError> {
        const METHOD: &str = "tools/list";
        tokio::select! {
            biased;
            listed = self.service.peer().list_all_tools() => {
                listed.map_err(|e| self.service_error(METHOD, e))
            }
            () = self.closed.cancelled() => Err(self.closed_error(METHOD)),
            () = tokio::time::sleep(limit) => Err(self.timeout_error(METHOD, limit)),
        }
    }

    /// Calls one tool. Progress notifications for this call go to `on_progress`. When
    /// `cancel` fires, the caller's `timeout` passes ([`CallEnd::TimedOut`]) or the server's
    /// `limit` passes first ([`McpError::RequestTimeout`]), `notifications/cancelled` is sent
    /// for the request and the call returns at once; when the connection closes, the call
    /// fails with [`McpError::Closed`].
    pub(crate) async fn call_tool(
        &self,
        tool: &str,
        arguments: JsonObject,
        cancel: &CancellationToken,
        timeout: Option<Duration>,
        limit: Duration,
        mut on_progress: impl FnMut(ProgressNotificationParam) + Send,
    ) -> Result<CallEnd, McpError> {
        const METHOD: &str = "tools/call";
        if cancel.is_cancelled() {
            return Ok(CallEnd::Cancelled);
        }
        if self.closed.is_cancelled() {
            return Err(self.closed_error(METHOD));
        }
        // The caller's deadline when it comes first (or at the same time), else the server's.
        let (wait, callers) = match timeout {
            Some(t) if t <= limit => (t, true),
            _ => (limit, false),
        };
        let peer = self.service.peer().clone();
        let mut params = CallToolRequestParams::new(tool.to_string()).with_arguments(arguments);
        let mut meta = rmcp::model::JsonObject::new();
        crate::trace_context::inject(&mut meta);
        if !meta.is_empty() {
            params.meta = Some(meta.into());
        }
        let request: ClientRequest = CallToolRequest::new(params).into();
        let handle = peer
            .send_request_with_option(request, PeerRequestOptions::no_options())
            .await
            .map_err(|e| self.service_error(METHOD, e))?;
        let id = handle.id.clone();
        let mut progress = self.router.subscribe(handle.progress_token.clone());
        let response = handle.await_response();
        tokio::pin!(response);
        let deadline = tokio::time::sleep(wait);
        tokio::pin!(deadline);
        let send_cancel = |reason: String| {
            let peer = peer.clone();
            let id = id.clone();
            // Sent from its own task so the caller returns at once.
            tokio::spawn(async move {
                let _ = peer
                    .notify_cancelled(CancelledNotificationParam::new(Some(id), Some(reason)))
                    .await;
            });
        };
        loop {
            tokio::select! {
                biased;
                result = &mut response => {
                    // rmcp hands each notification to its own task, so progress sent just
                    // before the response may still be in flight: give those tasks a few
                    // turns, then take what arrived (later progress is dropped).
                    for _ in 0..4 {
                        while let Ok(p) = progress.rx.try_recv() {
                            on_progress(p);
                        }
                        tokio::task::yield_now().await;
                    }
                    while let Ok(p) = progress.rx.try_recv() {
                        on_progress(p);
                    }
                    let result = result.map_err(|e| self.service_error(METHOD, e))?;
                    return match result {
                        ServerResult::CallToolResult(r) => Ok(CallEnd::Done(r)),
                        ServerResult::InputRequiredResult(_) => Err(self.request_error(
                            METHOD,
                            "the server asked for client input, which is not supported",
                        )),
                        ServerResult::CreateTaskResult(_) => Err(self.request_error(
                            METHOD,
                            "the server answered with a task, which is not supported",
                        )),
                        _ => Err(self.request_error(METHOD, "unexpected response type")),
                    };
                }
                Some(p) = progress.rx.recv() => on_progress(p),
                () = cancel.cancelled() => {
                    send_cancel("cancelled by the caller".to_string());
                    return Ok(CallEnd::Cancelled);
                }
                () = &mut deadline => {
                    send_cancel(format!("timed out after {} ms", wait.as_millis()));
                    return if callers {
                        Ok(CallEnd::TimedOut(wait))
                    } else {
                        Err(self.timeout_error(METHOD, wait))
                    };
                }
                () = self.closed.cancelled() => return Err(self.closed_error(METHOD)),
            }
        }
    }
}

/// Shared MCP client connections, keyed by [`McpEndpoint`] (command line + environment, or
/// URL + headers).
///
/// A server is started (or an HTTP session opened) once per distinct endpoint, on first use,
/// and reused by every later resolve, call and tool. Cloning the pool shares it. When the pool
/// and every tool holding a connection are dropped, sessions close and stdio server processes
/// are killed. A connection whose transport closed (the server exited) is replaced on next use.
#[derive(Clone)]
pub struct McpPool {
    inner: Arc<PoolInner>,
}

struct PoolInner {
    slots: Mutex<HashMap<McpEndpoint, Arc<OnceCell<Arc<Connection>>>>>,
    connect_timeout: Duration,
    request_timeout: Duration,
}

impl Default for McpPool {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for McpPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpPool")
            .field("connections", &self.len())
            .finish()
    }
}

impl McpPool {
    /// An empty pool with the default handshake and request timeouts
    /// ([`DEFAULT_CONNECT_TIMEOUT`], [`DEFAULT_REQUEST_TIMEOUT`]).
    pub fn new() -> Self {
        Self::with_timeouts(DEFAULT_CONNECT_TIMEOUT, DEFAULT_REQUEST_TIMEOUT)
    }

    /// An empty pool whose servers must finish the handshake within `timeout`.
    pub fn with_connect_timeout(timeout: Duration) -> Self {
        Self::with_timeouts(timeout, DEFAULT_REQUEST_TIMEOUT)
    }

    /// An empty pool whose servers must answer each request within `timeout`, unless their
    /// own configuration sets another limit (`timeout_secs`).
    pub fn with_request_timeout(timeout: Duration) -> Self {
        Self::with_timeouts(DEFAULT_CONNECT_TIMEOUT, timeout)
    }

    /// An empty pool with both limits: the handshake (`connect`) and each request
    /// (`request`, unless a server's configuration sets another).
    pub fn with_timeouts(connect: Duration, request: Duration) -> Self {
        Self {
            inner: Arc::new(PoolInner {
                slots: Mutex::new(HashMap::new()),
                connect_timeout: connect,
                request_timeout: request,
            }),
        }
    }

    /// The request limit of servers whose configuration sets none.
    pub fn request_timeout(&self) -> Duration {
        self.inner.request_timeout
    }

    /// The number of live connections.
    pub fn len(&self) -> usize {
        lock(&self.inner.slots)
            .values()
            .filter(|c| c.get().is_some_and(|c| !c.is_closed()))
            .count()
    }

    /// True when no connection is live.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The process id of the stdio server started for `endpoint`, when it is running.
    pub fn server_pid(&self, endpoint: &McpEndpoint) -> Option<u32> {
        lock(&self.inner.slots)
            .get(endpoint)
            .and_then(|c| c.get().filter(|c| !c.is_closed()).and_then(|c| c.pid()))
    }

    /// Drops every connection held by the pool (servers still used by live tools keep running
    /// until those are dropped).
    pub fn clear(&self) {
        let slots = std::mem::take(&mut *lock(&self.inner.slots));
        drop(slots);
    }

    /// The connection for `endpoint`, connecting on first use.
    pub(crate) async fn connection(
        &self,
        endpoint: &McpEndpoint,
    ) -> Result<Arc<Connection>, McpError> {
        for _ in 0..2 {
            let cell = lock(&self.inner.slots)
                .entry(endpoint.clone())
                .or_default()
                .clone();
            let conn = cell
                .get_or_try_init(|| async {
                    Connection::connect(endpoint, self.inner.connect_timeout)
                        .await
                        .map(Arc::new)
                })
                .await?;
            if !conn.is_closed() {
                return Ok(conn.clone());
            }
            tracing::debug!(server = %conn.label(), "MCP connection closed; reconnecting");
            let mut slots = lock(&self.inner.slots);
            if slots.get(endpoint).is_some_and(|c| Arc::ptr_eq(c, &cell)) {
                slots.remove(endpoint);
            }
        }
        Err(McpError::Connect {
            target: endpoint.label(),
            message: "the connection closed right after it was opened".to_string(),
        })
    }
}
