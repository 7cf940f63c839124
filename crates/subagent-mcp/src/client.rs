//! MCP client side: connections to servers, the shared connection pool, and tool calls with
//! progress and cancellation.

use std::collections::{HashMap, VecDeque};
use std::process::Stdio;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, CancelTaskParams, CancelTaskRequest,
    CancelledNotificationParam, ClientCapabilities, ClientConfig, ClientRequest, DetailedTask,
    ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationCapability,
    FormElicitationCapability, GetTaskParams, GetTaskRequest, Implementation, InputRequests,
    InputResponses, JsonObject, ProgressNotificationParam, ProgressToken, ProtocolVersion,
    RequestId, ServerResult, TASKS_EXTENSION_ID, Task, TaskPayload, TaskStatus,
    TaskStatusNotificationParams, UpdateTaskParams, UpdateTaskRequest, UrlElicitationCapability,
};
use rmcp::service::{
    NotificationContext, PeerRequestOptions, RequestContext, RunningService, RxJsonRpcMessage,
    ServiceError, TxJsonRpcMessage,
};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess, Transport};
use rmcp::{ClientHandler, RoleClient};
use subagent_spi::CancellationToken;
use tokio::sync::{OnceCell, mpsc};
use tokio::time::Instant;
use tokio_util::sync::{CancellationToken as Signal, DropGuard};

use crate::input::{Asker, MAX_INPUT_ROUNDS};
use crate::{McpEndpoint, McpError};

mod lifecycle;

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
/// Task status notifications buffered per followed task (more are dropped: the next
/// `tasks/get` catches up).
const TASK_UPDATE_BUFFER: usize = 8;
/// The shortest interval between two `tasks/get` of one task, whatever the server suggests.
pub(crate) const MIN_TASK_POLL: Duration = Duration::from_millis(100);
/// The longest interval between two `tasks/get` of one task, whatever the server suggests.
pub(crate) const MAX_TASK_POLL: Duration = Duration::from_secs(10);
/// The poll interval of a task whose server suggests none.
const DEFAULT_TASK_POLL: Duration = Duration::from_secs(1);
/// A task id longer than this (or with control characters) is refused.
const MAX_TASK_ID_LEN: usize = 256;
/// How long a `tasks/cancel` may wait for the server's acknowledgement (on the way out of a
/// followed task, or for a task of an earlier process).
const TASK_CANCEL_TIMEOUT: Duration = Duration::from_secs(5);
/// At most this many `elicitation/create` requests of a 2025-11-25 server wait for an answer
/// at once on one connection; more are declined.
const MAX_PENDING_ELICITATIONS: usize = 8;
/// The prefix of the session id of an MCP agent's call the server runs as a task: the rest is
/// the task id, and a resume follows that task instead of calling the tool again.
pub(crate) const TASK_SESSION_PREFIX: &str = "mcp-task:";

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
        let router = self.clone();
        Subscription {
            rx,
            unsubscribe: Some(Box::new(move || {
                lock(&router.state).subscribers.remove(&token);
            })),
        }
    }
}

/// The progress notifications of one call.
type ProgressSubscription = Subscription<ProgressNotificationParam>;

/// What a router delivers to one subscriber; dropping it unsubscribes.
struct Subscription<T> {
    rx: mpsc::Receiver<T>,
    unsubscribe: Option<Box<dyn FnOnce() + Send + Sync>>,
}

impl<T> Drop for Subscription<T> {
    fn drop(&mut self) {
        if let Some(unsubscribe) = self.unsubscribe.take() {
            unsubscribe();
        }
    }
}

/// Routes `notifications/tasks` to the call following the task.
#[derive(Default)]
struct TaskRouter {
    subscribers: Mutex<HashMap<String, mpsc::Sender<DetailedTask>>>,
}

impl TaskRouter {
    fn deliver(&self, task: DetailedTask) {
        if let Some(tx) = lock(&self.subscribers).get(&task.task.task_id) {
            let _ = tx.try_send(task);
        }
    }

    fn subscribe(self: &Arc<Self>, id: &str) -> Subscription<DetailedTask> {
        let (tx, rx) = mpsc::channel(TASK_UPDATE_BUFFER);
        lock(&self.subscribers).insert(id.to_string(), tx);
        let (router, id) = (self.clone(), id.to_string());
        Subscription {
            rx,
            unsubscribe: Some(Box::new(move || {
                lock(&router.subscribers).remove(&id);
            })),
        }
    }
}

/// The askers of the calls running on one connection, for the `elicitation/create` requests
/// of 2025-11-25 servers (which do not say which call they belong to).
#[derive(Default)]
struct Askers {
    next: std::sync::atomic::AtomicU64,
    running: Mutex<Vec<(u64, Arc<Asker>)>>,
    pending: std::sync::atomic::AtomicUsize,
}

impl Askers {
    fn register(self: &Arc<Self>, asker: Arc<Asker>) -> AskerGuard {
        let id = self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        lock(&self.running).push((id, asker));
        AskerGuard {
            askers: self.clone(),
            id,
        }
    }

    /// The asker of the oldest running call.
    fn current(&self) -> Option<Arc<Asker>> {
        lock(&self.running).first().map(|(_, a)| a.clone())
    }
}

struct AskerGuard {
    askers: Arc<Askers>,
    id: u64,
}

impl Drop for AskerGuard {
    fn drop(&mut self) {
        lock(&self.askers.running).retain(|(id, _)| *id != self.id);
    }
}

/// Our side of an MCP client session: answers the server's notifications and its
/// `elicitation/create` requests (2025-11-25 era).
#[derive(Clone)]
struct ClientState {
    router: Arc<ProgressRouter>,
    tasks: Arc<TaskRouter>,
    askers: Arc<Askers>,
}

/// What we declare: form and URL elicitation (answered through the approval channel) and
/// the tasks extension (SEP-2663).
fn client_capabilities() -> ClientCapabilities {
    let mut caps = ClientCapabilities::default();
    caps.elicitation = Some(
        ElicitationCapability::new()
            .with_form(FormElicitationCapability::new())
            .with_url(UrlElicitationCapability::new()),
    );
    caps.extensions = Some(
        [(TASKS_EXTENSION_ID.to_string(), JsonObject::new())]
            .into_iter()
            .collect(),
    );
    caps
}

impl ClientHandler for ClientState {
    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.router.deliver(params);
    }

    async fn on_task_status(
        &self,
        params: TaskStatusNotificationParams,
        _context: NotificationContext<RoleClient>,
    ) {
        self.tasks.deliver(params.task);
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, rmcp::ErrorData> {
        use std::sync::atomic::Ordering;
        let decline = ElicitResult::new(ElicitationAction::Decline);
        let Some(asker) = self.askers.current() else {
            return Ok(decline);
        };
        if self.askers.pending.fetch_add(1, Ordering::SeqCst) >= MAX_PENDING_ELICITATIONS {
            self.askers.pending.fetch_sub(1, Ordering::SeqCst);
            return Ok(decline);
        }
        let result = asker.elicit(&request).await;
        self.askers.pending.fetch_sub(1, Ordering::SeqCst);
        Ok(result)
    }

    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            client_capabilities(),
            Implementation::new("subagents", env!("CARGO_PKG_VERSION")),
        )
        // The version an `initialize` handshake names when it is the only lifecycle tried
        // (the discover lifecycle names its own versions).
        .with_protocol_version(ProtocolVersion::V_2025_11_25)
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
    state: ClientState,
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
        let state = ClientState {
            router: Arc::new(ProgressRouter::default()),
            tasks: Arc::new(TaskRouter::default()),
            askers: Arc::new(Askers::default()),
        };
        // The lifecycle within `timeout` (whatever it takes: a second transport included).
        let connected = |attempt: Result<Result<_, McpError>, tokio::time::error::Elapsed>| {
            attempt.map_err(|_| McpError::ConnectTimeout {
                target: label.clone(),
                after: timeout,
            })?
        };
        let (service, pid, closed) = match endpoint {
            McpEndpoint::Stdio { command, args, env } => {
                let spawn = || {
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
                    Ok((transport, pid))
                };
                connected(
                    tokio::time::timeout(timeout, lifecycle::serve(&state, &label, spawn)).await,
                )?
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
                let open = || {
                    Ok((
                        StreamableHttpClientTransport::from_config(config.clone()),
                        None,
                    ))
                };
                connected(
                    tokio::time::timeout(timeout, lifecycle::serve(&state, &label, open)).await,
                )?
            }
        };
        tracing::debug!(server = %label, ?pid, "connected to MCP server");
        Ok(Self {
            label,
            service,
            state,
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

    /// Calls one tool, following it to its end: SEP-2322 `input_required` results are
    /// answered through `asker` and the call retried with `inputResponses` (at most
    /// [`MAX_INPUT_ROUNDS`] rounds), and a task handle (SEP-2663) is followed with
    /// `notifications/tasks` and `tasks/get` until the task ends. With `resume_task`, no tool
    /// is called: that task is followed.
    ///
    /// Progress, the task id and status lines go to `on_event`. When `cancel` fires, the
    /// caller's `timeout` passes ([`CallEnd::TimedOut`]) or the server's `limit` passes first
    /// ([`McpError::RequestTimeout`]), `notifications/cancelled` is sent for the request in
    /// flight (and `tasks/cancel` for a task) and the call returns at once; when the
    /// connection closes, the call fails with [`McpError::Closed`].
    #[allow(clippy::too_many_arguments)]
    pub(crate) async fn call_tool(
        &self,
        tool: &str,
        arguments: JsonObject,
        cancel: &CancellationToken,
        timeout: Option<Duration>,
        limit: Duration,
        asker: Arc<Asker>,
        resume_task: Option<&str>,
        mut on_event: impl FnMut(CallEvent) + Send,
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
        let bounds = Bounds {
            cancel,
            // A limit too far away to add is as good as none (about a century).
            until: Instant::now()
                .checked_add(wait)
                .unwrap_or_else(|| Instant::now() + Duration::from_secs(3_000_000_000)),
            wait,
            callers,
        };
        let on_event: &mut (dyn FnMut(CallEvent) + Send) = &mut on_event;
        // 2025-11-25 servers ask with `elicitation/create` while the call runs.
        let _asking = self.state.askers.register(asker.clone());
        if let Some(id) = resume_task {
            let task = Task::new(id, TaskStatus::Working, "", "");
            return self
                .follow_task(task, &bounds, &asker, None, on_event)
                .await;
        }
        let mut input_responses: Option<InputResponses> = None;
        let mut request_state: Option<String> = None;
        for round in 0..=MAX_INPUT_ROUNDS {
            let mut params =
                CallToolRequestParams::new(tool.to_string()).with_arguments(arguments.clone());
            params.input_responses = input_responses.take();
            params.request_state = request_state.take();
            params.meta = crate::trace_context::request_meta();
            let request: ClientRequest = CallToolRequest::new(params).into();
            let (step, progress) = self
                .request(METHOD, request, &bounds, true, on_event)
                .await?;
            let result = match step {
                Step::Answer(result) => result,
                Step::End(end) => return Ok(end),
            };
            match result {
                ServerResult::CallToolResult(r) => return Ok(CallEnd::Done(r)),
                ServerResult::CreateTaskResult(created) => {
                    return self
                        .follow_task(created.task, &bounds, &asker, progress, on_event)
                        .await;
                }
                ServerResult::InputRequiredResult(asked) => {
                    if round == MAX_INPUT_ROUNDS {
                        return Err(self.request_error(
                            METHOD,
                            format!(
                                "the server still asked for input after {MAX_INPUT_ROUNDS} rounds"
                            ),
                        ));
                    }
                    let requests = asked.input_requests.unwrap_or_default();
                    if requests.is_empty() {
                        // State only (e.g. load shedding): retry after a short pause.
                        tokio::select! {
                            biased;
                            () = cancel.cancelled() => return Ok(CallEnd::Cancelled),
                            () = tokio::time::sleep_until(bounds.until) => {
                                return self.expired(&bounds, METHOD);
                            }
                            () = tokio::time::sleep(MIN_TASK_POLL) => {}
                        }
                    } else {
                        match self.ask(&asker, requests, &bounds, METHOD).await? {
                            Step::Answer(r) => input_responses = Some(r),
                            Step::End(end) => return Ok(end),
                        }
                    }
                    request_state = asked.request_state;
                }
                _ => return Err(self.request_error(METHOD, "unexpected response type")),
            }
        }
        Err(self.request_error(METHOD, "unreachable: input rounds exhausted"))
    }

    /// The end of a call whose deadline passed.
    fn expired(&self, bounds: &Bounds<'_>, method: &str) -> Result<CallEnd, McpError> {
        if bounds.callers {
            Ok(CallEnd::TimedOut(bounds.wait))
        } else {
            Err(self.timeout_error(method, bounds.wait))
        }
    }

    /// Sends one request and waits for its answer within `bounds`; progress for it goes to
    /// `on_event` (and its subscription is returned, for a task that keeps reporting on it).
    async fn request(
        &self,
        method: &str,
        request: ClientRequest,
        bounds: &Bounds<'_>,
        with_progress: bool,
        on_event: &mut (dyn FnMut(CallEvent) + Send),
    ) -> Result<(Step<ServerResult>, Option<ProgressSubscription>), McpError> {
        let peer = self.service.peer().clone();
        let handle = peer
            .send_request_with_option(request, PeerRequestOptions::no_options())
            .await
            .map_err(|e| self.service_error(method, e))?;
        let id = handle.id.clone();
        let mut progress =
            with_progress.then(|| self.state.router.subscribe(handle.progress_token.clone()));
        let response = handle.await_response();
        tokio::pin!(response);
        loop {
            tokio::select! {
                biased;
                result = &mut response => {
                    if let Some(progress) = progress.as_mut() {
                        // rmcp hands each notification to its own task, so progress sent just
                        // before the response may still be in flight: give those tasks a few
                        // turns, then take what arrived (later progress is dropped).
                        for _ in 0..4 {
                            while let Ok(p) = progress.rx.try_recv() {
                                on_event(CallEvent::Progress(p));
                            }
                            tokio::task::yield_now().await;
                        }
                        while let Ok(p) = progress.rx.try_recv() {
                            on_event(CallEvent::Progress(p));
                        }
                    }
                    let result = result.map_err(|e| self.service_error(method, e))?;
                    return Ok((Step::Answer(result), progress));
                }
                Some(p) = next_progress(&mut progress) => on_event(CallEvent::Progress(p)),
                () = bounds.cancel.cancelled() => {
                    self.send_cancel(id, "cancelled by the caller".to_string());
                    return Ok((Step::End(CallEnd::Cancelled), None));
                }
                () = tokio::time::sleep_until(bounds.until) => {
                    self.send_cancel(id, format!("timed out after {} ms", bounds.wait.as_millis()));
                    return self.expired(bounds, method).map(|end| (Step::End(end), None));
                }
                () = self.closed.cancelled() => return Err(self.closed_error(method)),
            }
        }
    }

    /// `notifications/cancelled` for request `id`, from its own task so the caller returns at
    /// once.
    fn send_cancel(&self, id: RequestId, reason: String) {
        let peer = self.service.peer().clone();
        tokio::spawn(async move {
            let _ = peer
                .notify_cancelled(CancelledNotificationParam::new(Some(id), Some(reason)))
                .await;
        });
    }

    /// `tasks/cancel` for task `id` on the way out of [`follow_task`](Self::follow_task):
    /// waits for the server's acknowledgement (at most [`TASK_CANCEL_TIMEOUT`]), so the cancel
    /// is not lost with a process that ends once the call returns (Ctrl-C on a foreground
    /// task). A cancel that fails or is not acknowledged in time is a warning, not the call's
    /// error: the call already ended for its own reason, and the server may still run the task.
    async fn send_task_cancel(&self, id: &str) {
        if let Err(e) = self.cancel_task(id).await {
            tracing::warn!(
                server = %self.label,
                task = %id,
                "the MCP server may still run the task: {e}"
            );
        }
    }

    /// `tasks/cancel` for task `id`, waiting for the server's acknowledgement (at most
    /// [`TASK_CANCEL_TIMEOUT`]): for a task this process follows (on the way out of
    /// [`follow_task`](Self::follow_task)) or no longer follows (its follower ended with an
    /// earlier process).
    pub(crate) async fn cancel_task(&self, id: &str) -> Result<(), McpError> {
        const METHOD: &str = "tasks/cancel";
        if !valid_task_id(id) {
            return Err(self.request_error(METHOD, invalid_task_id()));
        }
        let request: ClientRequest =
            CancelTaskRequest::new(CancelTaskParams::new(id.to_string())).into();
        let sent = self.service.peer().send_request(request);
        tokio::select! {
            biased;
            sent = sent => sent.map(|_| ()).map_err(|e| self.service_error(METHOD, e)),
            () = self.closed.cancelled() => Err(self.closed_error(METHOD)),
            () = tokio::time::sleep(TASK_CANCEL_TIMEOUT) => {
                Err(self.timeout_error(METHOD, TASK_CANCEL_TIMEOUT))
            }
        }
    }

    /// Asks `asker` the server's questions within `bounds`.
    async fn ask(
        &self,
        asker: &Asker,
        requests: InputRequests,
        bounds: &Bounds<'_>,
        method: &str,
    ) -> Result<Step<InputResponses>, McpError> {
        tokio::select! {
            biased;
            answered = asker.answer_all(requests) => answered
                .map(Step::Answer)
                .map_err(|e| self.request_error(method, e.0)),
            () = bounds.cancel.cancelled() => Ok(Step::End(CallEnd::Cancelled)),
            () = tokio::time::sleep_until(bounds.until) => {
                self.expired(bounds, method).map(Step::End)
            }
            () = self.closed.cancelled() => Err(self.closed_error(method)),
        }
    }

    /// Follows a task to its end: `notifications/tasks` when the server sends them, else
    /// `tasks/get` at the server's poll interval (within [`MIN_TASK_POLL`] and
    /// [`MAX_TASK_POLL`]); its questions are answered through `asker` with `tasks/update`.
    /// Cancellation and the deadline send `tasks/cancel`.
    async fn follow_task(
        &self,
        task: Task,
        bounds: &Bounds<'_>,
        asker: &Asker,
        mut progress: Option<ProgressSubscription>,
        on_event: &mut (dyn FnMut(CallEvent) + Send),
    ) -> Result<CallEnd, McpError> {
        const METHOD: &str = "tasks/get";
        let id = task.task_id.clone();
        if !valid_task_id(&id) {
            return Err(self.request_error(
                "tools/call",
                format!("the server answered with {}", invalid_task_id()),
            ));
        }
        on_event(CallEvent::Task(id.clone()));
        let mut updates = self.state.tasks.subscribe(&id);
        let mut interval = poll_interval(task.poll_interval_ms, DEFAULT_TASK_POLL);
        let mut next_poll = Instant::now() + interval;
        let mut answered: std::collections::HashSet<String> = std::collections::HashSet::new();
        let mut rounds = 0usize;
        let mut last_status: Option<String> = None;
        loop {
            let detailed: DetailedTask = tokio::select! {
                biased;
                () = bounds.cancel.cancelled() => {
                    self.send_task_cancel(&id).await;
                    return Ok(CallEnd::Cancelled);
                }
                () = tokio::time::sleep_until(bounds.until) => {
                    self.send_task_cancel(&id).await;
                    return self.expired(bounds, "tools/call");
                }
                () = self.closed.cancelled() => return Err(self.closed_error(METHOD)),
                Some(p) = next_progress(&mut progress) => {
                    on_event(CallEvent::Progress(p));
                    continue;
                }
                Some(t) = updates.rx.recv() => t,
                () = tokio::time::sleep_until(next_poll) => {
                    let request: ClientRequest =
                        GetTaskRequest::new(GetTaskParams::new(id.clone())).into();
                    match self.request(METHOD, request, bounds, false, on_event).await? {
                        (Step::End(end), _) => {
                            self.send_task_cancel(&id).await;
                            return Ok(end);
                        }
                        (Step::Answer(ServerResult::GetTaskResult(r)), _) => r.task,
                        (Step::Answer(_), _) => {
                            return Err(self.request_error(METHOD, "unexpected response type"));
                        }
                    }
                }
            };
            if detailed.task.task_id != id {
                continue;
            }
            interval = poll_interval(detailed.task.poll_interval_ms, interval);
            next_poll = Instant::now() + interval;
            if let Some(message) = &detailed.task.status_message
                && last_status.as_ref() != Some(message)
            {
                on_event(CallEvent::Status(message.clone()));
                last_status = Some(message.clone());
            }
            match detailed.payload {
                TaskPayload::Completed { result } => {
                    let result: CallToolResult =
                        serde_json::from_value(serde_json::Value::Object(result)).map_err(|e| {
                            self.request_error(
                                METHOD,
                                format!("task {id} completed with a malformed result: {e}"),
                            )
                        })?;
                    return Ok(CallEnd::Done(result));
                }
                TaskPayload::Failed { error } => {
                    let message = error
                        .get("message")
                        .and_then(serde_json::Value::as_str)
                        .unwrap_or("no message");
                    return Err(self.request_error(
                        METHOD,
                        format!("task {id} failed: {}", clip_line(message)),
                    ));
                }
                TaskPayload::Cancelled => {
                    return Err(
                        self.request_error(METHOD, format!("the server cancelled task {id}"))
                    );
                }
                TaskPayload::InputRequired { input_requests } => {
                    let fresh: InputRequests = input_requests
                        .into_iter()
                        .filter(|(k, _)| !answered.contains(k))
                        .collect();
                    if fresh.is_empty() {
                        continue;
                    }
                    rounds += 1;
                    if rounds > MAX_INPUT_ROUNDS {
                        self.send_task_cancel(&id).await;
                        return Err(self.request_error(
                            METHOD,
                            format!(
                                "task {id} still asked for input after {MAX_INPUT_ROUNDS} rounds"
                            ),
                        ));
                    }
                    answered.extend(fresh.keys().cloned());
                    let responses = match self.ask(asker, fresh, bounds, METHOD).await {
                        Ok(Step::Answer(r)) => r,
                        Ok(Step::End(end)) => {
                            self.send_task_cancel(&id).await;
                            return Ok(end);
                        }
                        Err(e) => {
                            self.send_task_cancel(&id).await;
                            return Err(e);
                        }
                    };
                    let request: ClientRequest =
                        UpdateTaskRequest::new(UpdateTaskParams::new(id.clone(), responses)).into();
                    if let (Step::End(end), _) = self
                        .request("tasks/update", request, bounds, false, on_event)
                        .await?
                    {
                        self.send_task_cancel(&id).await;
                        return Ok(end);
                    }
                    // Look again at once: the answers may have moved the task on.
                    next_poll = Instant::now();
                }
                _ => {}
            }
        }
    }
}

/// True when `id` can be a task id: not empty, at most [`MAX_TASK_ID_LEN`] bytes, no control
/// characters.
fn valid_task_id(id: &str) -> bool {
    !id.is_empty() && id.len() <= MAX_TASK_ID_LEN && !id.chars().any(char::is_control)
}

/// What [`valid_task_id`] refuses, for an error message.
fn invalid_task_id() -> String {
    format!("an invalid task id (empty, control characters or longer than {MAX_TASK_ID_LEN} bytes)")
}

/// The next progress notification of `progress`, or never.
async fn next_progress(
    progress: &mut Option<ProgressSubscription>,
) -> Option<ProgressNotificationParam> {
    match progress {
        Some(p) => p.rx.recv().await,
        None => std::future::pending().await,
    }
}

/// A server's suggested poll interval within [`MIN_TASK_POLL`] and [`MAX_TASK_POLL`].
fn poll_interval(suggested_ms: Option<u64>, otherwise: Duration) -> Duration {
    suggested_ms
        .map(Duration::from_millis)
        .unwrap_or(otherwise)
        .clamp(MIN_TASK_POLL, MAX_TASK_POLL)
}

/// A server's text on one line, at most 500 characters.
fn clip_line(text: &str) -> String {
    let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if line.chars().count() > 500 {
        let mut s: String = line.chars().take(500).collect();
        s.push('…');
        s
    } else {
        line
    }
}

/// One step of a call: the server's answer, or the end of the call (cancelled, timed out).
enum Step<T> {
    Answer(T),
    End(CallEnd),
}

/// The limits of one call, shared by its requests.
struct Bounds<'a> {
    cancel: &'a CancellationToken,
    until: Instant,
    wait: Duration,
    callers: bool,
}

/// What a running call reports.
pub(crate) enum CallEvent {
    /// A `notifications/progress` for the call (or its task).
    Progress(ProgressNotificationParam),
    /// The server runs the call as this task (announced once, before it is followed).
    Task(String),
    /// The task's status message changed.
    Status(String),
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
    launch_check: Option<LaunchCheck>,
}

/// Asked before every start of a stdio server, restarts included ([`McpPool::with_launch_check`]):
/// `Err` says why it must not start. Runs on a blocking thread (it may read files).
pub type LaunchCheck = Arc<dyn Fn(&McpEndpoint) -> Result<(), String> + Send + Sync>;

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
                launch_check: None,
            }),
        }
    }

    /// An empty pool with this pool's timeouts that asks `check` before every start of a stdio
    /// server, restarts included; a refused start fails that connection
    /// ([`McpError::Connect`], `not started: WHY`). The host decides there, per start, whether
    /// a command may run: the `subagents` facade refuses a server whose workspace script
    /// changed since the session started. (A host that confines servers instead would start
    /// them there too.)
    #[must_use]
    pub fn with_launch_check(self, check: LaunchCheck) -> Self {
        Self {
            inner: Arc::new(PoolInner {
                slots: Mutex::new(HashMap::new()),
                connect_timeout: self.inner.connect_timeout,
                request_timeout: self.inner.request_timeout,
                launch_check: Some(check),
            }),
        }
    }

    /// The launch check's verdict on starting `endpoint` (stdio servers only).
    async fn may_start(&self, endpoint: &McpEndpoint) -> Result<(), McpError> {
        let (Some(check), McpEndpoint::Stdio { .. }) = (&self.inner.launch_check, endpoint) else {
            return Ok(());
        };
        let (check, ep) = (check.clone(), endpoint.clone());
        tokio::task::spawn_blocking(move || check(&ep))
            .await
            .unwrap_or_else(|_| Err("the launch check failed".to_string()))
            .map_err(|why| McpError::Connect {
                target: endpoint.label(),
                message: format!("not started: {why}"),
            })
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

    /// Cancels task `task_id` on `endpoint`'s server with `tasks/cancel` and waits for the
    /// acknowledgement (at most 5 s): for a task whose follower ended with an earlier process
    /// (its session `mcp-task:ID`, which a resume follows), so the server stops working on it.
    /// An error when the id is invalid, the server cannot be reached, or it refuses (e.g. the
    /// task is unknown to it or already ended).
    pub async fn cancel_task(&self, endpoint: &McpEndpoint, task_id: &str) -> Result<(), McpError> {
        self.connection(endpoint).await?.cancel_task(task_id).await
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
                    self.may_start(endpoint).await?;
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
