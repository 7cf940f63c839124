//! The HTTP server.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode, Uri};
use axum::response::Response;
use serde_json::Value;
use tokio::sync::{Notify, oneshot};

use crate::Reply;
use crate::cache::PromptCache;
use crate::reply::StreamEnd;
use crate::script::Script;
use crate::wire::{self, RequestShape, WireFormat};

/// One request the server received.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedRequest {
    /// HTTP method, e.g. `POST`.
    pub method: String,
    /// Request path, e.g. `/v1/chat/completions`.
    pub path: String,
    /// Headers, names lower-cased, in arrival order.
    pub headers: Vec<(String, String)>,
    /// The body parsed as JSON (`Value::Null` when it is not JSON).
    pub body: Value,
    /// The body as text (lossy UTF-8).
    pub raw_body: String,
}

impl RecordedRequest {
    /// The first value of a header (name matched case-insensitively).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The body's `model` field.
    pub fn model(&self) -> Option<&str> {
        self.body.get("model").and_then(Value::as_str)
    }

    /// True when the body asked for streaming.
    pub fn is_stream(&self) -> bool {
        self.body.get("stream").and_then(Value::as_bool) == Some(true)
    }

    /// The body's `messages` array (empty when absent).
    pub fn messages(&self) -> &[Value] {
        self.body
            .get("messages")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or(&[])
    }

    /// The request's prompt size in tokens as this server counts it: the UTF-8 bytes of the
    /// JSON of its `system`, `messages` and `tools`, divided by 4 (rounded up). See
    /// [`ScriptedModelServer::set_context_window`].
    pub fn prompt_tokens(&self) -> u64 {
        let bytes: usize = ["system", "messages", "tools"]
            .iter()
            .filter_map(|k| self.body.get(*k))
            .map(|v| v.to_string().len())
            .sum();
        crate::cache::tokens_of_bytes(bytes)
    }

    /// The body's `tools` array (empty when absent).
    pub fn tools(&self) -> &[Value] {
        self.body
            .get("tools")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or(&[])
    }

    /// The system prompt of an OpenAI-format request (its `system` message), or empty.
    pub fn system_prompt(&self) -> String {
        self.messages()
            .iter()
            .find(|m| m["role"] == "system")
            .and_then(|m| m["content"].as_str())
            .unwrap_or_default()
            .to_string()
    }

    /// The contents of the OpenAI-format tool results (`role: tool` messages), in order.
    pub fn tool_results(&self) -> Vec<String> {
        self.messages()
            .iter()
            .filter(|m| m["role"] == "tool")
            .map(|m| m["content"].as_str().unwrap_or_default().to_string())
            .collect()
    }

    /// The prompt's segments as sent (model, tools, system, then each message): see
    /// [`prompt_segments`](crate::prompt_segments). Empty when the body is no JSON object.
    pub fn prompt_segments(&self) -> Vec<String> {
        crate::prompt_segments(&self.raw_body).unwrap_or_default()
    }

    /// The names of the tools offered, sorted: `function.name` (OpenAI) or `name` (Anthropic).
    pub fn tool_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .tools()
            .iter()
            .filter_map(|t| {
                t["function"]["name"]
                    .as_str()
                    .or_else(|| t["name"].as_str())
                    .map(str::to_string)
            })
            .collect();
        names.sort();
        names
    }
}

struct ServerState {
    script: Script,
    requests: Mutex<Vec<RecordedRequest>>,
    arrived: Notify,
    seq: AtomicU64,
    in_flight: AtomicUsize,
    max_in_flight: AtomicUsize,
    /// The context window in tokens; 0: none.
    window: AtomicU64,
    /// The largest [`RecordedRequest::prompt_tokens`] seen.
    max_prompt: AtomicU64,
    /// Whether replies report prompt-cache reads (see `set_prompt_cache`).
    caching: AtomicBool,
    cache: PromptCache,
}

/// A scripted model server on `127.0.0.1:<ephemeral port>` speaking the OpenAI Chat Completions
/// (`POST /v1/chat/completions`, also `/chat/completions`) and Anthropic Messages
/// (`POST /v1/messages`, also `/messages`) wire formats, streamed and not.
///
/// Each request takes the next [`Reply`] of its [`Script`]; every request is recorded. The server
/// stops when this value is dropped.
///
/// ```no_run
/// # async fn demo() {
/// use subagent_testkit::{Reply, ScriptedModelServer};
/// let server = ScriptedModelServer::start().await;
/// server.push(Reply::text("hi"));
/// let openai_base = server.openai_base_url(); // http://127.0.0.1:PORT/v1
/// let anthropic_base = server.base_url(); // http://127.0.0.1:PORT
/// // ... point a client at it, then:
/// let sent = server.requests();
/// # let _ = (openai_base, anthropic_base, sent);
/// # }
/// ```
pub struct ScriptedModelServer {
    addr: SocketAddr,
    state: Arc<ServerState>,
    shutdown: Option<oneshot::Sender<()>>,
}

impl std::fmt::Debug for ScriptedModelServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScriptedModelServer")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

impl ScriptedModelServer {
    /// Start a server with an empty script. Panics (test code) when no port can be bound; use
    /// [`try_start`](Self::try_start) to handle that.
    pub async fn start() -> Self {
        Self::start_with_script(Script::new()).await
    }

    /// Start a server replaying `script` (which other servers or tasks may share).
    pub async fn start_with_script(script: Script) -> Self {
        match Self::try_start_with_script(script).await {
            Ok(s) => s,
            Err(e) => panic!("scripted model server: cannot bind 127.0.0.1:0: {e}"),
        }
    }

    /// Start a server with an empty script, reporting bind errors.
    pub async fn try_start() -> std::io::Result<Self> {
        Self::try_start_with_script(Script::new()).await
    }

    /// Start a server replaying `script`, reporting bind errors.
    pub async fn try_start_with_script(script: Script) -> std::io::Result<Self> {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0)).await?;
        let addr = listener.local_addr()?;
        let state = Arc::new(ServerState {
            script,
            requests: Mutex::new(Vec::new()),
            arrived: Notify::new(),
            seq: AtomicU64::new(0),
            in_flight: AtomicUsize::new(0),
            max_in_flight: AtomicUsize::new(0),
            window: AtomicU64::new(0),
            max_prompt: AtomicU64::new(0),
            caching: AtomicBool::new(false),
            cache: PromptCache::default(),
        });
        let app = Router::new().fallback(handle).with_state(state.clone());
        let (tx, rx) = oneshot::channel::<()>();
        tokio::spawn(async move {
            let _ = axum::serve(listener, app)
                .with_graceful_shutdown(async move {
                    let _ = rx.await;
                })
                .await;
        });
        Ok(Self {
            addr,
            state,
            shutdown: Some(tx),
        })
    }

    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:PORT` (the Anthropic base URL: clients append `/v1/messages`).
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// `http://127.0.0.1:PORT/v1` (the OpenAI base URL: clients append `/chat/completions`).
    pub fn openai_base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// Same as [`base_url`](Self::base_url).
    pub fn anthropic_base_url(&self) -> String {
        self.base_url()
    }

    /// The model spec `openai-compatible:MODEL@URL` that routes `model` to this server, as
    /// `--model`, a `[models]` entry or `SUBAGENTS_MODEL` take it.
    pub fn openai_model(&self, model: &str) -> String {
        format!("openai-compatible:{model}@{}", self.openai_base_url())
    }

    /// A handle to this server's script.
    pub fn script(&self) -> Script {
        self.state.script.clone()
    }

    /// Queue a reply.
    pub fn push(&self, reply: Reply) {
        self.state.script.push(reply);
    }

    /// Queue several replies, in order.
    pub fn push_all(&self, replies: impl IntoIterator<Item = Reply>) {
        self.state.script.push_all(replies);
    }

    /// Queue a reply for the next request naming `model`.
    pub fn push_for_model(&self, model: impl Into<String>, reply: Reply) {
        self.state.script.push_for_model(model, reply);
    }

    /// Answer with this reply whenever the script is empty (`None` turns it off).
    pub fn set_fallback(&self, reply: Option<Reply>) {
        self.state.script.set_fallback(reply);
    }

    /// Imitate a provider's prompt cache (off by default): each reply then reports, instead of
    /// its scripted input tokens, the prompt's tokens split into those read from cache (the
    /// longest run of leading prompt segments byte-identical to an earlier request's; see
    /// [`prompt_segments`](crate::prompt_segments)) and the rest, counted with
    /// [`prompt_tokens`](crate::prompt_tokens): `prompt_tokens_details.cached_tokens` on the
    /// OpenAI wire, `cache_read_input_tokens` on Anthropic's. Requests made while it is off are
    /// not remembered.
    pub fn set_prompt_cache(&self, on: bool) {
        self.state.caching.store(on, Ordering::SeqCst);
    }

    /// Replies still queued.
    pub fn remaining(&self) -> usize {
        self.state.script.remaining()
    }

    /// Every request received so far, in arrival order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.state
            .requests
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The most recent request.
    pub fn last_request(&self) -> Option<RecordedRequest> {
        self.state
            .requests
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .last()
            .cloned()
    }

    /// How many requests arrived so far.
    pub fn request_count(&self) -> usize {
        self.state
            .requests
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    /// Wait until at least `n` requests have arrived (wrap in `tokio::time::timeout`).
    pub async fn wait_for_requests(&self, n: usize) {
        loop {
            let notified = self.state.arrived.notified();
            if self.request_count() >= n {
                return;
            }
            notified.await;
        }
    }

    /// Give the model a context window: a request whose
    /// [`prompt_tokens`](RecordedRequest::prompt_tokens) exceed `tokens` is answered 400 with
    /// the provider's error shape and a message starting `context_length_exceeded` (it is
    /// still recorded; no reply is taken from the script), and `GET /props` answers as
    /// llama.cpp's server does, with the window as `default_generation_settings.n_ctx`. `None`
    /// removes the window (`/props` is then 404). Requests to paths other than the two chat
    /// endpoints are never recorded.
    pub fn set_context_window(&self, tokens: Option<u64>) {
        self.state
            .window
            .store(tokens.unwrap_or(0), Ordering::SeqCst);
    }

    /// The largest [`prompt_tokens`](RecordedRequest::prompt_tokens) of any request so far.
    pub fn max_prompt_tokens(&self) -> u64 {
        self.state.max_prompt.load(Ordering::SeqCst)
    }

    /// The largest number of requests that were being answered (waiting out their delay) at
    /// the same time.
    pub fn max_concurrent_requests(&self) -> usize {
        self.state.max_in_flight.load(Ordering::SeqCst)
    }
}

impl Drop for ScriptedModelServer {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
    }
}

struct InFlight<'a>(&'a ServerState);

impl<'a> InFlight<'a> {
    fn enter(state: &'a ServerState) -> Self {
        let now = state.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        state.max_in_flight.fetch_max(now, Ordering::SeqCst);
        Self(state)
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::SeqCst);
    }
}

fn simple(status: u16, content_type: &str, body: String) -> Response {
    let mut resp = Response::new(Body::from(body));
    *resp.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    resp.headers_mut().insert(
        axum::http::header::CONTENT_TYPE,
        HeaderValue::from_str(content_type)
            .unwrap_or(HeaderValue::from_static("application/octet-stream")),
    );
    resp
}

async fn handle(
    State(state): State<Arc<ServerState>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let path = uri.path().to_string();
    let json: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let recorded = RecordedRequest {
        method: method.to_string(),
        path: path.clone(),
        headers: headers
            .iter()
            .map(|(n, v)| {
                (
                    n.as_str().to_string(),
                    String::from_utf8_lossy(v.as_bytes()).into_owned(),
                )
            })
            .collect(),
        body: json.clone(),
        raw_body: String::from_utf8_lossy(&body).into_owned(),
    };
    let format = match path.as_str() {
        "/v1/chat/completions" | "/chat/completions" => WireFormat::OpenAi,
        "/v1/messages" | "/messages" => WireFormat::Anthropic,
        // llama.cpp's server properties: the window of `set_context_window`, as `n_ctx`.
        "/props" if method == Method::GET && state.window.load(Ordering::SeqCst) > 0 => {
            let props = serde_json::json!({
                "default_generation_settings": { "n_ctx": state.window.load(Ordering::SeqCst) },
                "total_slots": 1,
            });
            return simple(200, "application/json", props.to_string());
        }
        // Not a model request: answered, not recorded.
        _ => {
            return simple(
                404,
                "application/json",
                wire::error_json(
                    WireFormat::OpenAi,
                    404,
                    &format!(
                        "scripted model server: no endpoint at {path}; use POST /v1/chat/completions or POST /v1/messages"
                    ),
                ),
            );
        }
    };
    let prompt_tokens = recorded.prompt_tokens();
    let seq = state.seq.fetch_add(1, Ordering::SeqCst) + 1;
    state
        .requests
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .push(recorded);
    state.arrived.notify_waiters();
    if method != Method::POST {
        return simple(
            405,
            "application/json",
            wire::error_json(
                format,
                405,
                &format!("scripted model server: {method} {path} is not allowed; use POST"),
            ),
        );
    }
    state.max_prompt.fetch_max(prompt_tokens, Ordering::SeqCst);
    let window = state.window.load(Ordering::SeqCst);
    if window > 0 && prompt_tokens > window {
        return simple(
            400,
            "application/json",
            wire::error_json(
                format,
                400,
                &format!(
                    "context_length_exceeded: request #{seq} has {prompt_tokens} prompt tokens; this model's context window is {window} tokens"
                ),
            ),
        );
    }
    let model = json.get("model").and_then(Value::as_str);
    let cache_read = if state.caching.load(Ordering::SeqCst) {
        state.cache.observe(&String::from_utf8_lossy(&body))
    } else {
        None
    };
    let guard = InFlight::enter(&state);
    let Some(mut reply) = state.script.next_for(model, &json) else {
        drop(guard);
        return simple(
            500,
            "application/json",
            wire::error_json(
                format,
                500,
                &format!(
                    "scripted model server: script exhausted: no reply queued for request #{seq} (POST {path}, model {})",
                    model.unwrap_or("(none)")
                ),
            ),
        );
    };
    if let Some(read) = cache_read {
        reply.usage.input_tokens = read.total - read.cached;
        reply.usage.cache_read_tokens = read.cached;
    }
    if !reply.delay.is_zero() {
        tokio::time::sleep(reply.delay).await;
    }
    drop(guard);

    let shape = RequestShape {
        format,
        stream: json.get("stream").and_then(Value::as_bool) == Some(true),
        include_usage: json
            .pointer("/stream_options/include_usage")
            .and_then(Value::as_bool)
            == Some(true),
        model: model.unwrap_or("scripted-model"),
        seq,
    };
    let rendered = wire::render(&reply, &shape);
    let chunk_delay = reply.chunk_delay;
    let stop_after = reply.stop_after;
    let pieces = rendered.pieces.into_iter().map(Bytes::from);
    let body = if pieces.len() <= 1 && chunk_delay.is_zero() && stop_after.is_none() {
        Body::from(pieces.collect::<Vec<_>>().concat())
    } else {
        let stream = futures::stream::unfold(
            (pieces, 0usize, false),
            move |(mut it, sent, ended)| async move {
                if ended {
                    return None;
                }
                if let Some((n, end)) = stop_after
                    && sent >= n
                {
                    return match end {
                        StreamEnd::Hang => std::future::pending().await,
                        StreamEnd::Cut => {
                            // Let what was sent reach the wire before the connection breaks.
                            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                            Some((
                                Err(std::io::Error::other("scripted model server: stream cut")),
                                (it, sent, true),
                            ))
                        }
                    };
                }
                let piece = it.next()?;
                if sent > 0 && !chunk_delay.is_zero() {
                    tokio::time::sleep(chunk_delay).await;
                }
                Some((Ok::<Bytes, std::io::Error>(piece), (it, sent + 1, false)))
            },
        );
        Body::from_stream(stream)
    };
    let mut resp = Response::new(body);
    *resp.status_mut() =
        StatusCode::from_u16(rendered.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let h = resp.headers_mut();
    if let Ok(v) = HeaderValue::from_str(&rendered.content_type) {
        h.insert(axum::http::header::CONTENT_TYPE, v);
    }
    for (name, value) in rendered.headers {
        if let (Ok(n), Ok(v)) = (
            HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_str(&value),
        ) {
            h.append(n, v);
        }
    }
    resp
}
