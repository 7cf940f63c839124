//! The HTTP server.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode, Uri};
use axum::response::Response;
use serde_json::Value;
use tokio::sync::{Notify, oneshot};

use crate::Reply;
use crate::cache::{ANTHROPIC_MIN_CACHEABLE_TOKENS, AnthropicCache, CacheBill, PromptCache};
use crate::ratelimit::{RateLimit, draw};
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

    /// The body's `key` array (empty when absent).
    fn array(&self, key: &str) -> &[Value] {
        self.body
            .get(key)
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or(&[])
    }

    /// The body's `messages` array (empty when absent).
    pub fn messages(&self) -> &[Value] {
        self.array("messages")
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
        self.array("tools")
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
    /// The rate limit in force (see `set_rate_limit`).
    rate_limit: Mutex<Option<RateLimit>>,
    /// Requests refused by the rate limit.
    refused: AtomicUsize,
    /// Draws taken by `RateLimit::Random`.
    draws: AtomicU64,
    anthropic_cache: AnthropicCache,
    /// The minimum cacheable prompt length on the Anthropic wire.
    cache_min_tokens: AtomicU64,
    /// How the cache billed each request, by its index in `requests`.
    bills: Mutex<std::collections::HashMap<usize, CacheBill>>,
    /// What `GET /props` answers (llama.cpp's server properties); `None`: 404.
    props: Mutex<Option<Value>>,
    /// How many times `GET /props` was asked.
    props_asked: AtomicUsize,
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
            rate_limit: Mutex::new(None),
            refused: AtomicUsize::new(0),
            draws: AtomicU64::new(0),
            anthropic_cache: AnthropicCache::default(),
            cache_min_tokens: AtomicU64::new(ANTHROPIC_MIN_CACHEABLE_TOKENS),
            bills: Mutex::new(std::collections::HashMap::new()),
            props: Mutex::new(None),
            props_asked: AtomicUsize::new(0),
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
    /// its scripted input tokens, the prompt's tokens (counted with
    /// [`prompt_tokens`](crate::prompt_tokens)) split as the provider would bill them.
    ///
    /// - OpenAI wire, automatic caching: those read from cache are the longest run of leading
    ///   prompt segments byte-identical to an earlier request's (see
    ///   [`prompt_segments`](crate::prompt_segments)), reported as
    ///   `prompt_tokens_details.cached_tokens`.
    /// - Anthropic wire, by Anthropic's published rules: only `cache_control` breakpoints
    ///   write (at most 4, else 400; only prefixes of at least
    ///   [`set_cache_min_tokens`](Self::set_cache_min_tokens) tokens), a breakpoint reads the
    ///   longest cached prefix ending at it or at one of the 20 blocks before it, entries live
    ///   5 minutes (or one hour) from their last use; reported as `input_tokens`,
    ///   `cache_creation_input_tokens` and `cache_read_input_tokens`.
    ///
    /// [`cache_bills`](Self::cache_bills) gives each request's bill. Requests made while it is
    /// off are not remembered.
    pub fn set_prompt_cache(&self, on: bool) {
        self.state.caching.store(on, Ordering::SeqCst);
    }

    /// The minimum cacheable prompt length of the imitated Anthropic cache (default
    /// [`ANTHROPIC_MIN_CACHEABLE_TOKENS`](crate::ANTHROPIC_MIN_CACHEABLE_TOKENS), 1,024): a
    /// breakpoint ending a shorter prefix writes nothing.
    pub fn set_cache_min_tokens(&self, tokens: u64) {
        self.state.cache_min_tokens.store(tokens, Ordering::SeqCst);
    }

    /// How the imitated prompt cache billed each request, in the order of
    /// [`requests`](Self::requests) (`None` for a request it did not see: made while it was
    /// off, refused, or no chat request).
    pub fn cache_bills(&self) -> Vec<Option<CacheBill>> {
        let n = self.request_count();
        let bills = crate::locked(&self.state.bills);
        (0..n).map(|i| bills.get(&i).copied()).collect()
    }

    /// Answer `GET /props` (and `/v1/props`) with `props`, as llama.cpp's `llama-server`
    /// reports its properties (`{"total_slots": 2, ...}`); `None` (the default): 404. These
    /// requests are no chat requests: [`props_requests`](Self::props_requests) counts them,
    /// [`requests`](Self::requests) does not list them.
    pub fn set_props(&self, props: Option<Value>) {
        *crate::locked(&self.state.props) = props;
    }

    /// How many times `GET /props` was asked (see [`set_props`](Self::set_props)).
    pub fn props_requests(&self) -> usize {
        self.state.props_asked.load(Ordering::SeqCst)
    }

    /// Replies still queued.
    pub fn remaining(&self) -> usize {
        self.state.script.remaining()
    }

    /// Every request received so far, in arrival order (but llama.cpp property probes; see
    /// [`set_props`](Self::set_props)).
    pub fn requests(&self) -> Vec<RecordedRequest> {
        crate::locked(&self.state.requests).clone()
    }

    /// The most recent request.
    pub fn last_request(&self) -> Option<RecordedRequest> {
        crate::locked(&self.state.requests).last().cloned()
    }

    /// How many requests arrived so far.
    pub fn request_count(&self) -> usize {
        crate::locked(&self.state.requests).len()
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

    /// Rate-limit the requests that follow (`None`: no limit, the default): refused requests
    /// are answered `429` with a `Retry-After` and take no reply from the script (see
    /// [`RateLimit`]). Requests to an unknown path or with a prompt over the context window
    /// are answered as before, unlimited.
    ///
    /// ```no_run
    /// # async fn demo() {
    /// use std::time::Duration;
    /// use subagent_testkit::{RateLimit, Reply, ScriptedModelServer};
    /// let server = ScriptedModelServer::start().await;
    /// // Four requests answered at once, each taking 250 ms; the rest: 429, Retry-After: 1.
    /// server.set_rate_limit(Some(RateLimit::in_flight(4, Duration::from_secs(1))));
    /// server.set_fallback(Some(Reply::text("ok").with_delay(Duration::from_millis(250))));
    /// # }
    /// ```
    pub fn set_rate_limit(&self, limit: Option<RateLimit>) {
        *crate::locked(&self.state.rate_limit) = limit;
    }

    /// How many requests the rate limit refused (answered 429) so far.
    pub fn rate_limited_count(&self) -> usize {
        self.state.refused.load(Ordering::SeqCst)
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
    /// Enters, unless `max` requests are in flight already (`None`: no cap).
    fn try_enter(state: &'a ServerState, max: Option<usize>) -> Option<Self> {
        let mut cur = state.in_flight.load(Ordering::SeqCst);
        loop {
            if max.is_some_and(|m| cur >= m) {
                return None;
            }
            match state.in_flight.compare_exchange_weak(
                cur,
                cur + 1,
                Ordering::SeqCst,
                Ordering::SeqCst,
            ) {
                Ok(_) => break,
                Err(now) => cur = now,
            }
        }
        state.max_in_flight.fetch_max(cur + 1, Ordering::SeqCst);
        Some(Self(state))
    }
}

/// Enters the request under the rate limit in force: the in-flight guard, or the 429 that
/// refuses it.
fn admit(state: &ServerState, format: WireFormat) -> Result<InFlight<'_>, Box<Response>> {
    let limit = *crate::locked(&state.rate_limit);
    let (max, refused) = match limit {
        None => (None, false),
        Some(RateLimit::InFlight { max, .. }) => (Some(max), false),
        Some(RateLimit::Random { rate, seed, .. }) => {
            let n = state.draws.fetch_add(1, Ordering::SeqCst);
            (None, draw(seed, n) < rate)
        }
    };
    let guard = if refused {
        None
    } else {
        InFlight::try_enter(state, max)
    };
    match (guard, limit) {
        (Some(g), _) => Ok(g),
        (None, limit) => {
            state.refused.fetch_add(1, Ordering::SeqCst);
            let mut resp = simple(
                429,
                "application/json",
                wire::error_json(
                    format,
                    429,
                    "Rate limit reached for requests (scripted model server); please retry later.",
                ),
            );
            for (name, value) in limit.map(|l| l.headers()).unwrap_or_default() {
                if let (Ok(n), Ok(v)) = (
                    HeaderName::from_bytes(name.as_bytes()),
                    HeaderValue::from_str(&value),
                ) {
                    resp.headers_mut().append(n, v);
                }
            }
            Err(Box::new(resp))
        }
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
    // llama.cpp's properties: answered apart, counted apart (not a chat request).
    if method == Method::GET && matches!(path.as_str(), "/props" | "/v1/props") {
        state.props_asked.fetch_add(1, Ordering::SeqCst);
        let props = crate::locked(&state.props).clone();
        // Else the window of `set_context_window`, as `n_ctx`, when one is set.
        let window = state.window.load(Ordering::SeqCst);
        let props = props.or_else(|| {
            (window > 0).then(|| {
                serde_json::json!({
                    "default_generation_settings": { "n_ctx": window },
                    "total_slots": 1,
                })
            })
        });
        return match props {
            Some(p) => simple(200, "application/json", p.to_string()),
            None => simple(
                404,
                "application/json",
                wire::error_json(WireFormat::OpenAi, 404, "File Not Found"),
            ),
        };
    }
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
    let index = {
        let mut requests = crate::locked(&state.requests);
        requests.push(recorded);
        requests.len() - 1
    };
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
    // A refused request takes no reply and is not seen by the imitated prompt cache.
    let guard = match admit(&state, format) {
        Ok(g) => g,
        Err(refusal) => return *refusal,
    };
    let model = json.get("model").and_then(Value::as_str);
    let bill = if !state.caching.load(Ordering::SeqCst) {
        None
    } else if format == WireFormat::Anthropic {
        let min = state.cache_min_tokens.load(Ordering::SeqCst);
        match state.anthropic_cache.bill(&json, min) {
            Ok(bill) => Some(bill),
            Err(message) => {
                return simple(
                    400,
                    "application/json",
                    wire::error_json(format, 400, &message),
                );
            }
        }
    } else {
        state
            .cache
            .observe(&String::from_utf8_lossy(&body))
            .map(|read| CacheBill {
                prompt_tokens: read.total,
                cache_read_tokens: read.cached,
                ..CacheBill::default()
            })
    };
    if let Some(b) = bill {
        crate::locked(&state.bills).insert(index, b);
    }
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
    if let Some(b) = bill {
        reply.usage.input_tokens = b.uncached_tokens();
        reply.usage.cache_read_tokens = b.cache_read_tokens;
        reply.usage.cache_creation_tokens = b.cache_creation_tokens;
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
