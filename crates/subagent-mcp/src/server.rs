//! Serving SPI tools over MCP (stdio or streamable HTTP).

use crate::results::call_result_of;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;

use axum::response::IntoResponse;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CancelTaskParams, GetTaskParams, GetTaskResult,
    Implementation, JsonObject, ListToolsResult, PaginatedRequestParams, ProgressNotificationParam,
    ProtocolVersion, ServerCapabilities, ServerConfig, UpdateTaskParams,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use subagent_core::SessionApprover;
use subagent_spi::{Approver, CancellationToken, ProgressEvent, ProgressKind, TaskContext, Tool};
use tokio::sync::mpsc;
use tracing::Instrument as _;

use crate::McpError;
use crate::caller::McpCaller;
use crate::elicit::{DEFAULT_ELICITATION_TIMEOUT, ElicitingApprover};
use crate::round_trip::{Call, DEFAULT_MAX_WAITING_CALLS, Round, RoundTripApprover, WaitingCalls};
use crate::tasks::{DEFAULT_MAX_TASKS, DEFAULT_TASK_POLL_INTERVAL, McpTaskBackend, TaskTable};

/// Progress events buffered per call before they are dropped (never blocking the tool).
const PROGRESS_BUFFER: usize = 256;
/// How long a finished call waits for its queued progress notifications to go out.
const PROGRESS_FLUSH: std::time::Duration = std::time::Duration::from_secs(5);

/// An MCP server exposing SPI [`Tool`]s as MCP tools.
///
/// `tools/list` reports each tool's name, description and input schema; `tools/call` runs
/// [`Tool::call`] with a fresh [`TaskContext`] whose cancellation token is cancelled when the
/// client cancels the request (or goes away). A failed call (`Err` or
/// [`ToolOutput::is_error`](subagent_spi::ToolOutput)) becomes a result with `isError: true`.
/// Progress events the tool emits are sent as `notifications/progress` when the client asked
/// for progress.
///
/// A tool call that needs approval (in an agent the served tools run) is answered by the
/// server's approver when it can ([`with_approver`](Self::with_approver), e.g. `--yes`), else
/// asked of the client as an MCP elicitation (a form with `decision`: `yes` / `always` / `no`
/// and an optional `reason`) when the client declared the `elicitation` capability, else
/// denied with a message the model reads. `always` lasts for the rest of that `tools/call`.
/// A client of the 2026-07-28 revision (which has no server-initiated requests) is asked by
/// a multi-round-trip result instead (SEP-2322): the call answers `input_required` with the
/// same form under `inputRequests`, waits, and goes on when the client retries with
/// `inputResponses` and the `requestState` it got.
///
/// With a [task backend](Self::with_task_backend), the server declares the MCP tasks
/// extension (`io.modelcontextprotocol/tasks`): a call of a tool the backend runs as a task,
/// from a client that declared the extension, answers at once with a task handle, and the
/// client follows it with `tasks/get` (approval questions show as `input_required`, answered
/// with `tasks/update`) and `tasks/cancel`. Other clients get the tool's ordinary answer.
///
/// Clients are kept apart: each request belongs to an [`McpCaller`] (the stdio client, an HTTP
/// session, or a stateless request's credential), and its calls run under that caller's own
/// task id ([`TaskContext::task_id`]), so tools that scope by the starting run (the `Task`
/// tool's `TaskOutput`, `TaskStop` and `SendMessage`) reach only that caller's tasks; MCP
/// tasks, their questions and `requestState`s belong to their caller too. The host adds what
/// else a caller's context needs with [`with_caller_context`](Self::with_caller_context).
///
/// ```no_run
/// # async fn demo(tools: Vec<std::sync::Arc<dyn subagent_spi::Tool>>) -> Result<(), subagent_mcp::McpError> {
/// // over stdio, until the client disconnects:
/// subagent_mcp::McpToolServer::new(tools).serve_stdio().await
/// # }
/// ```
#[derive(Clone)]
pub struct McpToolServer {
    inner: Arc<Inner>,
}

#[derive(Clone)]
struct Inner {
    tools: Vec<Arc<dyn Tool>>,
    index: HashMap<String, usize>,
    name: String,
    version: String,
    instructions: Option<String>,
    approver: Option<Arc<dyn Approver>>,
    elicitation_timeout: std::time::Duration,
    http_auth: Option<HttpAuth>,
    /// Calls waiting for a 2026-07-28 client's next round (shared by every clone).
    waiting: Arc<WaitingCalls>,
    max_waiting: usize,
    task_backend: Option<Arc<dyn McpTaskBackend>>,
    max_tasks: usize,
    task_poll: std::time::Duration,
    /// The tasks handed out (shared by every clone), with a task backend.
    tasks: Option<Arc<TaskTable>>,
    /// The host's additions to each caller's context.
    caller_context: Option<CallerContext>,
    /// The key of the callers' ids (random per server).
    caller_keys: std::hash::RandomState,
}

impl Inner {
    /// Rebuilds the shared state after a setting changed (builders run before serving).
    fn rebuild(&mut self) {
        self.waiting = WaitingCalls::new(self.max_waiting, self.elicitation_timeout);
        self.tasks = self
            .task_backend
            .clone()
            .map(|b| Arc::new(TaskTable::new(b, self.max_tasks, self.task_poll)));
    }
}

/// Decides whether an HTTP request's headers carry an accepted credential.
pub type HttpAuth = Arc<dyn Fn(&axum::http::HeaderMap) -> bool + Send + Sync>;

/// The host's additions to the context of a caller's calls (see
/// [`McpToolServer::with_caller_context`]).
pub type CallerContext = Arc<dyn Fn(&McpCaller, TaskContext) -> TaskContext + Send + Sync>;

impl std::fmt::Debug for McpToolServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpToolServer")
            .field("name", &self.inner.name)
            .field(
                "tools",
                &self
                    .inner
                    .tools
                    .iter()
                    .map(|t| t.name())
                    .collect::<Vec<_>>(),
            )
            .finish()
    }
}

impl McpToolServer {
    /// A server exposing `tools` (a later tool with the same name as an earlier one is
    /// ignored).
    pub fn new(tools: Vec<Arc<dyn Tool>>) -> Self {
        let mut index = HashMap::new();
        let mut kept = Vec::with_capacity(tools.len());
        for tool in tools {
            if index.contains_key(tool.name()) {
                tracing::warn!(tool = tool.name(), "duplicate tool name; keeping the first");
                continue;
            }
            index.insert(tool.name().to_string(), kept.len());
            kept.push(tool);
        }
        Self {
            inner: Arc::new(Inner {
                tools: kept,
                index,
                name: "subagents".to_string(),
                version: env!("CARGO_PKG_VERSION").to_string(),
                instructions: None,
                approver: None,
                elicitation_timeout: DEFAULT_ELICITATION_TIMEOUT,
                http_auth: None,
                waiting: WaitingCalls::new(DEFAULT_MAX_WAITING_CALLS, DEFAULT_ELICITATION_TIMEOUT),
                max_waiting: DEFAULT_MAX_WAITING_CALLS,
                task_backend: None,
                max_tasks: DEFAULT_MAX_TASKS,
                task_poll: DEFAULT_TASK_POLL_INTERVAL,
                tasks: None,
                caller_context: None,
                caller_keys: std::hash::RandomState::new(),
            }),
        }
    }

    /// Sets the server name and version reported to clients (builder style).
    #[must_use]
    pub fn with_server_info(mut self, name: impl Into<String>, version: impl Into<String>) -> Self {
        let inner = Arc::make_mut(&mut self.inner);
        inner.name = name.into();
        inner.version = version.into();
        self
    }

    /// Changes a setting the shared state is built from, then rebuilds that state.
    fn rebuilt(mut self, set: impl FnOnce(&mut Inner)) -> Self {
        let inner = Arc::make_mut(&mut self.inner);
        set(inner);
        inner.rebuild();
        self
    }

    /// Sets the instructions reported to clients (builder style).
    #[must_use]
    pub fn with_instructions(mut self, instructions: impl Into<String>) -> Self {
        Arc::make_mut(&mut self.inner).instructions = Some(instructions.into());
        self
    }

    /// How long an approval elicitation waits for the client's user before the call is
    /// denied (default 300 s; builder style). For a 2026-07-28 client asked by
    /// `input_required`, how long the call waits for the retry carrying the answer before it
    /// is denied and cancelled.
    #[must_use]
    pub fn with_elicitation_timeout(self, timeout: std::time::Duration) -> Self {
        self.rebuilt(|inner| inner.elicitation_timeout = timeout)
    }

    /// How many calls may wait at once for a 2026-07-28 client's answer (default 64; a
    /// question beyond it is denied at once; builder style).
    #[must_use]
    pub fn with_max_waiting_calls(self, max: usize) -> Self {
        self.rebuilt(|inner| inner.max_waiting = max)
    }

    /// Runs the calls of the tools `backend` accepts as MCP tasks for clients that declared
    /// the tasks extension, and declares the extension (builder style).
    #[must_use]
    pub fn with_task_backend(self, backend: Arc<dyn McpTaskBackend>) -> Self {
        self.rebuilt(|inner| inner.task_backend = Some(backend))
    }

    /// How many tasks the server keeps track of (running, or ended and not yet forgotten;
    /// default 64): a task call beyond it, when none has ended, gets a tool error (builder
    /// style).
    #[must_use]
    pub fn with_max_tasks(self, max: usize) -> Self {
        self.rebuilt(|inner| inner.max_tasks = max)
    }

    /// The polling interval suggested to task clients (`pollIntervalMs`, default 1 s; builder
    /// style).
    #[must_use]
    pub fn with_task_poll_interval(self, interval: std::time::Duration) -> Self {
        self.rebuilt(|inner| inner.task_poll = interval)
    }

    /// Requires a credential on every streamable HTTP request: requests whose headers `check`
    /// refuses get HTTP 401 with `WWW-Authenticate: Bearer` and a JSON-RPC error (builder
    /// style). `subagents mcp --listen` passes the A2A server's key check, so both servers
    /// accept the same `Authorization: Bearer KEY` / `X-API-Key: KEY`.
    #[must_use]
    pub fn with_http_auth(mut self, check: HttpAuth) -> Self {
        Arc::make_mut(&mut self.inner).http_auth = Some(check);
        self
    }

    /// The approver asked first about tool calls that need approval (in the agents the
    /// served tools run), when it can answer (e.g. `--yes`); otherwise the client is asked by
    /// elicitation, or, when it cannot be, the call is denied. A background task's question
    /// waits for the client's `TaskOutput` `approve` answer.
    #[must_use]
    pub fn with_approver(mut self, approver: Arc<dyn Approver>) -> Self {
        Arc::make_mut(&mut self.inner).approver = Some(approver);
        self
    }

    /// Adds what the host needs to the context of each caller's calls (builder style): `f`
    /// gets the caller and the context (already carrying the caller's own task id) of every
    /// tool call and task it starts. The `subagents` facade gives each HTTP caller its fair
    /// share of the background limit this way.
    #[must_use]
    pub fn with_caller_context(
        mut self,
        f: impl Fn(&McpCaller, TaskContext) -> TaskContext + Send + Sync + 'static,
    ) -> Self {
        Arc::make_mut(&mut self.inner).caller_context = Some(Arc::new(f));
        self
    }

    /// The caller of a request, and a root context of its own for a call.
    fn caller_of(&self, context: &RequestContext<RoleServer>) -> McpCaller {
        McpCaller::of(context, &self.inner.caller_keys)
    }

    /// A call's context for `caller`: its task id, then the host's additions.
    fn context_for(&self, caller: &McpCaller, ctx: TaskContext) -> TaskContext {
        let ctx = ctx.with_agent("mcp-client").with_task_id(caller.scope());
        match &self.inner.caller_context {
            Some(f) => f(caller, ctx),
            None => ctx,
        }
    }

    /// The served tools' names.
    pub fn tool_names(&self) -> Vec<String> {
        self.inner
            .tools
            .iter()
            .map(|t| t.name().to_string())
            .collect()
    }

    /// Serves over this process's stdin/stdout until the client disconnects.
    pub async fn serve_stdio(self) -> Result<(), McpError> {
        let running = self
            .serve(rmcp::transport::stdio())
            .await
            .map_err(|e| McpError::Serve(format!("stdio handshake: {e}")))?;
        running
            .waiting()
            .await
            .map_err(|e| McpError::Serve(format!("stdio server task: {e}")))?;
        Ok(())
    }

    /// Serves streamable HTTP at `http://ADDR/mcp` (bind port 0 for any free port) until the
    /// returned handle is shut down or dropped.
    ///
    /// Requests must carry a `Host` of `localhost`, `127.0.0.1`, `::1` or the bound IP (a
    /// guard against DNS rebinding); use [`serve_streamable_http_with_hosts`] to allow more.
    ///
    /// [`serve_streamable_http_with_hosts`]: Self::serve_streamable_http_with_hosts
    pub async fn serve_streamable_http(self, addr: SocketAddr) -> Result<McpHttpServer, McpError> {
        self.serve_streamable_http_with_hosts(addr, Vec::new())
            .await
    }

    /// Like [`serve_streamable_http`](Self::serve_streamable_http), also accepting the given
    /// `Host` names (`name` or `name:port`).
    pub async fn serve_streamable_http_with_hosts(
        self,
        addr: SocketAddr,
        extra_hosts: Vec<String>,
    ) -> Result<McpHttpServer, McpError> {
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|e| McpError::Serve(format!("cannot bind {addr}: {e}")))?;
        let local_addr = listener
            .local_addr()
            .map_err(|e| McpError::Serve(format!("local address of {addr}: {e}")))?;
        let ct = tokio_util::sync::CancellationToken::new();
        let mut hosts = vec![
            "localhost".to_string(),
            "127.0.0.1".to_string(),
            "::1".to_string(),
        ];
        let ip = local_addr.ip().to_string();
        if !hosts.contains(&ip) {
            hosts.push(ip);
        }
        hosts.extend(extra_hosts);
        let config = StreamableHttpServerConfig::default()
            .with_cancellation_token(ct.child_token())
            .with_allowed_hosts(hosts);
        let server = self.clone();
        let service = StreamableHttpService::new(
            move || Ok(server.clone()),
            Arc::new(LocalSessionManager::default()),
            config,
        );
        let mut router = axum::Router::new()
            .nest_service("/mcp", service)
            .layer(axum::middleware::from_fn(parse_error_is_bad_request));
        if let Some(check) = self.inner.http_auth.clone() {
            router = router.layer(axum::middleware::from_fn(
                move |req: axum::extract::Request, next: axum::middleware::Next| {
                    let ok = check(req.headers());
                    async move {
                        if ok {
                            next.run(req).await
                        } else {
                            unauthorized()
                        }
                    }
                },
            ));
        }
        let shutdown = ct.clone();
        let task = tokio::spawn(async move {
            axum::serve(listener, router)
                .with_graceful_shutdown(async move { shutdown.cancelled_owned().await })
                .await
        });
        Ok(McpHttpServer {
            local_addr,
            ct,
            task: Some(task),
        })
    }

    fn mcp_tool(tool: &dyn Tool) -> rmcp::model::Tool {
        let schema = match tool.input_schema() {
            serde_json::Value::Object(m) => m,
            _ => {
                let mut m = JsonObject::new();
                m.insert("type".into(), "object".into());
                m
            }
        };
        rmcp::model::Tool::new(
            tool.name().to_string(),
            tool.description(),
            Arc::new(schema),
        )
    }

    async fn run_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let Some(tool) = self
            .inner
            .index
            .get(request.name.as_ref())
            .and_then(|i| self.inner.tools.get(*i))
            .cloned()
        else {
            return Err(ErrorData::invalid_params(
                format!(
                    "unknown tool `{}`; tools: {}",
                    request.name,
                    self.tool_names().join(", ")
                ),
                None,
            ));
        };
        let caller = self.caller_of(&context);
        // A 2026-07-28 client's retry of a call that waits for its answer.
        if let Some(state) = request.request_state.as_deref() {
            let responses = request.input_responses.clone().unwrap_or_default();
            let round = self
                .inner
                .waiting
                .resume(caller.id(), &request.name, state, responses, &context.ct)
                .await?;
            return Ok(round_response(round));
        }
        let input = serde_json::Value::Object(request.arguments.unwrap_or_default());
        // The call's server span, continuing the caller's trace (`traceparent` in `_meta`); a
        // task's background run starts inside it, so it is that run's parent too.
        let span = tracing::info_span!(
            "mcp.tools_call",
            otel.name = %format_args!("tools/call {}", request.name),
            otel.kind = "server",
            mcp.method.name = "tools/call",
            gen_ai.tool.name = %request.name,
        );
        crate::trace_context::continue_trace(&context.meta, &span);
        // A task, for a client that declared the extension.
        if let Some(tasks) = &self.inner.tasks
            && tasks.runs_as_task(&request.name)
            && context
                .client_capabilities()
                .is_some_and(|c| c.supports_tasks())
        {
            // The task outlives this request: a token and context of its own.
            let mut ctx = self.context_for(&caller, TaskContext::new());
            if let Some(a) = &self.inner.approver {
                ctx = ctx.with_approver(a.clone());
            }
            let created = tasks
                .create(caller.id(), &request.name, input, ctx)
                .instrument(span)
                .await?;
            return Ok(match created {
                Ok(handle) => {
                    // Its status changes go to this connection as `notifications/tasks`.
                    crate::task_notify::spawn(
                        tasks.clone(),
                        caller.id().to_string(),
                        handle.task.task_id.clone(),
                        context.peer.clone(),
                    );
                    CallToolResponse::Task(handle)
                }
                Err(refused) => CallToolResponse::Complete(refused),
            });
        }
        let round_trips = asks_by_round_trips(&context);
        let cancel = CancellationToken::new();
        // Cancels the tool's token if this handler is dropped mid-call (the client went
        // away). Disarmed once the call returns: background work the tool started (e.g. a
        // background `Task`) lives on under child tokens of this one.
        let mut guard = CancelOnDrop(Some(cancel.clone()));
        let mut ctx = self.context_for(&caller, TaskContext::new().with_cancel(cancel.clone()));
        let (questions_tx, questions_rx) = mpsc::channel(1);
        let approver: Arc<dyn Approver> = if round_trips {
            Arc::new(RoundTripApprover {
                questions: questions_tx,
                upstream: self.inner.approver.clone(),
            })
        } else {
            Arc::new(ElicitingApprover {
                peer: context.peer.clone(),
                upstream: self.inner.approver.clone(),
                timeout: self.inner.elicitation_timeout,
            })
        };
        ctx = ctx.with_approver(Arc::new(SessionApprover::new(approver)));

        // Forward progress while the call runs, when the client asked for it.
        let (done_tx, done_rx) = tokio::sync::oneshot::channel::<()>();
        let forwarder = context.meta.get_progress_token().map(|token| {
            let (tx, rx) = mpsc::channel::<ProgressEvent>(PROGRESS_BUFFER);
            let sink = move |event: ProgressEvent| {
                let _ = tx.try_send(event);
            };
            ctx = ctx.clone().with_progress(Arc::new(sink));
            let ct = context.ct.clone();
            let forward = forward_progress(context.peer.clone(), token, rx, done_rx);
            // A cancelled request (or a closing session) gets no more progress.
            tokio::spawn(async move {
                tokio::select! {
                    () = ct.cancelled() => {}
                    () = forward => {}
                }
            })
        });
        let watch = {
            let ct = context.ct.clone();
            let cancel = cancel.clone();
            tokio::spawn(async move {
                ct.cancelled().await;
                cancel.cancel();
            })
        };
        let response = if round_trips {
            // The call runs on its own task, so it can wait between rounds.
            let call_ctx = ctx.clone();
            let call_tool = tool.clone();
            let join =
                tokio::spawn(
                    async move { call_tool.call(input, &call_ctx).instrument(span).await },
                );
            let call = Call {
                tool: request.name.to_string(),
                join,
                questions: questions_rx,
                cancel: cancel.clone(),
            };
            round_response(
                self.inner
                    .waiting
                    .drive(caller.id(), call, 0, &context.ct)
                    .await,
            )
        } else {
            drop(questions_rx);
            let result = tool.call(input, &ctx).instrument(span).await;
            CallToolResponse::Complete(call_result_of(result))
        };
        watch.abort();
        guard.0 = None;
        drop(ctx);
        // Progress goes with the first round only: a call that waits for its client's answer
        // reports no more (its request has been answered).
        let _ = done_tx.send(());
        if let Some(f) = forwarder {
            // Progress must not follow the response; wait (boundedly) for the queued events.
            let _ = tokio::time::timeout(PROGRESS_FLUSH, f).await;
        }
        Ok(response)
    }
}

/// True when approvals are asked of this request's client by `input_required` results: it
/// speaks the 2026-07-28 revision (which has no server-initiated requests) and declared
/// elicitation (the kind of input request the approval form is).
fn asks_by_round_trips(context: &RequestContext<RoleServer>) -> bool {
    context
        .protocol_version()
        .is_some_and(|v| v.as_str() >= ProtocolVersion::V_2026_07_28.as_str())
        && context
            .client_capabilities()
            .is_some_and(|c| c.elicitation.is_some())
}

/// The `tools/call` answer for a round of a call served by round trips.
fn round_response(round: Round) -> CallToolResponse {
    match round {
        Round::Done(result) => CallToolResponse::Complete(call_result_of(result)),
        Round::Asked(input_required) => CallToolResponse::InputRequired(input_required),
    }
}

/// The answer to a request without an accepted credential.
fn unauthorized() -> axum::response::Response {
    let body = serde_json::json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": {
            "code": -32001,
            "message": "missing or wrong credentials: send `Authorization: Bearer KEY` or \
                        `X-API-Key: KEY`",
        },
    });
    (
        axum::http::StatusCode::UNAUTHORIZED,
        [
            (axum::http::header::WWW_AUTHENTICATE, "Bearer"),
            (axum::http::header::CONTENT_TYPE, "application/json"),
        ],
        body.to_string(),
    )
        .into_response()
}

/// A body that is not JSON answers 400 with a JSON-RPC parse error (-32700), as JSON-RPC over
/// HTTP has it; rmcp answers it 415, the status of a wrong `Content-Type` (which keeps its 415:
/// only a 415 to a request that did say `application/json` is rewritten).
async fn parse_error_is_bad_request(
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    let said_json = req
        .headers()
        .get(axum::http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.split(';')
                .next()
                .is_some_and(|m| m.trim().eq_ignore_ascii_case("application/json"))
        });
    let response = next.run(req).await;
    if !said_json || response.status() != axum::http::StatusCode::UNSUPPORTED_MEDIA_TYPE {
        return response;
    }
    let body = serde_json::json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": {"code": -32700, "message": "parse error: the request body is not a JSON-RPC message"},
    });
    (
        axum::http::StatusCode::BAD_REQUEST,
        [(axum::http::header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

/// Cancels the SPI token when the MCP handler future is dropped mid-call.
struct CancelOnDrop(Option<CancellationToken>);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if let Some(t) = self.0.take() {
            t.cancel();
        }
    }
}

/// Sends the call's progress events as `notifications/progress` until the call is done, then
/// flushes what is queued (events from work that outlives the call are dropped).
async fn forward_progress(
    peer: rmcp::Peer<RoleServer>,
    token: rmcp::model::ProgressToken,
    mut rx: mpsc::Receiver<ProgressEvent>,
    mut done: tokio::sync::oneshot::Receiver<()>,
) {
    let mut n = 0u32;
    let send = |n: u32, event: ProgressEvent| {
        let param = ProgressNotificationParam::new(token.clone(), f64::from(n))
            .with_message(progress_message(&event));
        let peer = peer.clone();
        async move { peer.notify_progress(param).await.is_ok() }
    };
    loop {
        tokio::select! {
            biased;
            event = rx.recv() => match event {
                Some(event) => {
                    n += 1;
                    if !send(n, event).await {
                        return;
                    }
                }
                None => return,
            },
            _ = &mut done => {
                while let Ok(event) = rx.try_recv() {
                    n += 1;
                    if !send(n, event).await {
                        return;
                    }
                }
                return;
            }
        }
    }
}

fn progress_message(event: &ProgressEvent) -> String {
    let what = match &event.kind {
        ProgressKind::Started { description } => format!("started: {description}"),
        ProgressKind::Turn { turn } => format!("turn {turn}"),
        ProgressKind::ToolCall { name, .. } => format!("calling {name}"),
        ProgressKind::ToolResult { name, is_error, .. } => {
            format!("{name} {}", if *is_error { "failed" } else { "done" })
        }
        ProgressKind::TextDelta { text } => text.clone(),
        ProgressKind::Status { message } => message.clone(),
        ProgressKind::Usage { usage } => format!(
            "{} in / {} out tokens",
            usage.input_tokens, usage.output_tokens
        ),
        ProgressKind::Finished { status, .. } => format!("finished: {status}"),
        _ => "progress".to_string(),
    };
    if event.agent.is_empty() {
        what
    } else {
        format!("[{}] {what}", event.agent)
    }
}

impl ServerHandler for McpToolServer {
    fn get_info(&self) -> ServerConfig {
        // `prompts`: none, but `prompts/list` is answered (with an empty list), so it is
        // declared (a 2026-07-28 server's discovery must match the methods it serves).
        let capabilities = ServerCapabilities::builder()
            .enable_prompts()
            .enable_tools();
        let capabilities = if self.inner.tasks.is_some() {
            capabilities.enable_tasks()
        } else {
            capabilities
        };
        let mut config = ServerConfig::new(capabilities.build()).with_server_info(
            Implementation::new(self.inner.name.clone(), self.inner.version.clone()),
        );
        if let Some(i) = &self.inner.instructions {
            config = config.with_instructions(i.clone());
        }
        config
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(
            self.inner
                .tools
                .iter()
                .map(|t| Self::mcp_tool(t.as_ref()))
                .collect(),
        ))
    }

    fn get_tool(&self, name: &str) -> Option<rmcp::model::Tool> {
        let i = self.inner.index.get(name)?;
        self.inner.tools.get(*i).map(|t| Self::mcp_tool(t.as_ref()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        self.run_tool(request, context).await
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        let (tasks, caller) = self.task_table::<rmcp::model::GetTaskMethod>(&context)?;
        tasks
            .get(caller.id(), &request.task_id)
            .await
            .map(GetTaskResult::new)
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let (tasks, caller) = self.task_table::<rmcp::model::UpdateTaskMethod>(&context)?;
        tasks.update(caller.id(), &request.task_id, request.input_responses)
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let (tasks, caller) = self.task_table::<rmcp::model::CancelTaskMethod>(&context)?;
        tasks.cancel(caller.id(), &request.task_id).await
    }
}

impl McpToolServer {
    /// The task table and the request's caller, or "method not found" when the server has no
    /// task backend.
    fn task_table<M: rmcp::model::ConstString>(
        &self,
        context: &RequestContext<RoleServer>,
    ) -> Result<(&Arc<TaskTable>, McpCaller), ErrorData> {
        let tasks = self
            .inner
            .tasks
            .as_ref()
            .ok_or_else(ErrorData::method_not_found::<M>)?;
        Ok((tasks, self.caller_of(context)))
    }
}

/// A running streamable-HTTP MCP server. Dropping it stops the server.
#[derive(Debug)]
pub struct McpHttpServer {
    local_addr: SocketAddr,
    ct: tokio_util::sync::CancellationToken,
    task: Option<tokio::task::JoinHandle<std::io::Result<()>>>,
}

impl McpHttpServer {
    /// The bound address.
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// The MCP endpoint URL, `http://ADDR/mcp`.
    pub fn url(&self) -> String {
        format!("http://{}/mcp", self.local_addr)
    }

    /// Stops accepting requests, ends open sessions and waits for the server task.
    pub async fn shutdown(mut self) -> Result<(), McpError> {
        self.ct.cancel();
        if let Some(task) = self.task.take() {
            task.await
                .map_err(|e| McpError::Serve(format!("server task: {e}")))?
                .map_err(|e| McpError::Serve(format!("server on {}: {e}", self.local_addr)))?;
        }
        Ok(())
    }
}

impl Drop for McpHttpServer {
    fn drop(&mut self) {
        self.ct.cancel();
    }
}
