//! Edge cases of the `A2A` client kind against a scripted in-process axum peer on 127.0.0.1:
//! card discovery and fallback, auth headers, version headers, JSON-RPC errors, polling,
//! stream fallback to subscribe, time limits (which cancel the remote task) and bad input.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};
use subagent_a2a::client::{A2aResolver, KIND, a2a_subagent_type};
use subagent_a2a::types::ProtocolVersion;
use subagent_a2a::{A2aExecutor, A2aSubagentDefinition};
use subagent_core::BudgetExt;
use subagent_core::Inbox;
use subagent_spi::{
    InboxMessage, SubagentDefinition, SubagentError, SubagentExecutor, SubagentKind,
    SubagentReference, SubagentResolver, SubagentType, TaskCall, TaskContext, TaskStatus,
};

use crate::common;

/// What the scripted peer answers to one JSON-RPC call.
enum Reply {
    Result(Value),
    Error(i32, &'static str),
    Sse(Vec<Value>),
}

type Script = Box<dyn Fn(&str, &Value, usize) -> Reply + Send + Sync>;

#[derive(Clone)]
struct Peer {
    card: Option<Value>,
    legacy_card: Option<Value>,
    required_headers: Vec<(&'static str, &'static str)>,
    script: Arc<Script>,
    log: Arc<Mutex<Vec<(String, Value, HeaderMap)>>>,
}

impl Peer {
    fn calls(&self) -> Vec<(String, Value, HeaderMap)> {
        self.log.lock().unwrap().clone()
    }
    fn methods(&self) -> Vec<String> {
        self.calls().into_iter().map(|c| c.0).collect()
    }
}

fn authorized(peer: &Peer, headers: &HeaderMap) -> bool {
    peer.required_headers
        .iter()
        .all(|(k, v)| headers.get(*k).and_then(|h| h.to_str().ok()) == Some(*v))
}

async fn card(State(peer): State<Peer>, headers: HeaderMap) -> Response {
    if !authorized(&peer, &headers) {
        return StatusCode::UNAUTHORIZED.into_response();
    }
    match &peer.card {
        Some(c) => axum::Json(c.clone()).into_response(),
        None => StatusCode::NOT_FOUND.into_response(),
    }
}

async fn legacy_card(State(peer): State<Peer>) -> Response {
    match &peer.legacy_card {
        Some(c) => axum::Json(c.clone()).into_response(),
        None => StatusCode::NOT_FOUND.into_response(),
    }
}

async fn rpc(State(peer): State<Peer>, headers: HeaderMap, body: String) -> Response {
    if !authorized(&peer, &headers) {
        return StatusCode::UNAUTHORIZED.into_response();
    }
    let Ok(req) = serde_json::from_str::<Value>(&body) else {
        return StatusCode::BAD_REQUEST.into_response();
    };
    let method = req["method"].as_str().unwrap_or_default().to_string();
    let params = req["params"].clone();
    let id = req["id"].clone();
    let n = {
        let mut log = peer.log.lock().unwrap();
        log.push((method.clone(), params.clone(), headers.clone()));
        log.iter().filter(|c| c.0 == method).count() - 1
    };
    match (peer.script)(&method, &params, n) {
        Reply::Result(r) => {
            axum::Json(json!({"jsonrpc": "2.0", "id": id, "result": r})).into_response()
        }
        Reply::Error(code, message) => axum::Json(
            json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}),
        )
        .into_response(),
        Reply::Sse(events) => {
            let mut body = String::from(": keep-alive\n\n");
            for e in events {
                let frame = json!({"jsonrpc": "2.0", "id": id, "result": e});
                body.push_str(&format!("data: {frame}\n\n"));
            }
            Response::builder()
                .header("content-type", "text/event-stream")
                .body(Body::from(body))
                .unwrap()
        }
    }
}

async fn start(peer: Peer) -> String {
    let (listener, base) = bind().await;
    serve(listener, peer, true);
    base
}

/// Serves `peer` with a 0.3 card at `agent.json` naming its `/rpc` by absolute URL (and, with
/// `v1_card`, its 1.0 card too); the base URL.
async fn start_legacy(peer: &mut Peer, v1_card: bool) -> String {
    // The 0.3 card holds an absolute URL: bind first, then build the card.
    let (listener, base) = bind().await;
    peer.legacy_card = Some(v03_card(&format!("{base}/rpc")));
    serve(listener, peer.clone(), v1_card);
    base
}

/// A listener on a free port of 127.0.0.1 and its base URL.
async fn bind() -> (tokio::net::TcpListener, String) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    (listener, base)
}

/// Serves `peer`'s routes on `listener`: its cards (the 1.0 one with `v1_card`) and `/rpc`.
fn serve(listener: tokio::net::TcpListener, peer: Peer, v1_card: bool) {
    let mut app = Router::new()
        .route("/.well-known/agent.json", get(legacy_card))
        .route("/rpc", post(rpc));
    if v1_card {
        app = app.route("/.well-known/agent-card.json", get(card));
    }
    let app = app.with_state(peer);
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
}

fn v1_card(streaming: bool) -> Value {
    json!({
        "name": "mock",
        "description": "A scripted agent.",
        "supportedInterfaces": [
            {"url": "/rpc", "protocolBinding": "GRPC", "protocolVersion": "1.0"},
            {"url": "/rpc", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}
        ],
        "version": "1",
        "capabilities": {"streaming": streaming},
        "defaultInputModes": ["text/plain"],
        "defaultOutputModes": ["text/plain"],
        "skills": [{"id": "s", "name": "Summarize", "description": "Summarizes text.", "tags": [],
                    "examples": ["summarize this article"]}]
    })
}

fn v03_card(url: &str) -> Value {
    json!({
        "name": "legacy", "description": "An old agent.", "url": url, "protocolVersion": "0.3.0",
        "version": "1", "capabilities": {}, "defaultInputModes": [], "defaultOutputModes": [], "skills": []
    })
}

fn peer(
    card: Option<Value>,
    script: impl Fn(&str, &Value, usize) -> Reply + Send + Sync + 'static,
) -> Peer {
    Peer {
        card,
        legacy_card: None,
        required_headers: vec![],
        script: Arc::new(Box::new(script)),
        log: Arc::default(),
    }
}

fn task(state: &str, extra: Value) -> Value {
    let mut t = json!({"id": "t-1", "contextId": "c-1", "status": {"state": state}});
    if let (Some(t), Some(e)) = (t.as_object_mut(), extra.as_object()) {
        for (k, v) in e {
            t.insert(k.clone(), v.clone());
        }
    }
    t
}

fn agent_msg(text: &str) -> Value {
    json!({"messageId": "a", "role": "ROLE_AGENT", "parts": [{"text": text}]})
}

async fn resolve(
    reference: SubagentReference,
) -> Result<Arc<dyn SubagentDefinition>, SubagentError> {
    A2aResolver::new().resolve(&reference).await
}

async fn exec(
    def: Arc<dyn SubagentDefinition>,
    prompt: &str,
    resume: Option<&str>,
) -> Result<subagent_spi::TaskOutcome, SubagentError> {
    let mut call = TaskCall::new(def.name(), "test", prompt);
    call.resume = resume.map(str::to_string);
    A2aExecutor::new()
        .execute(call, def, TaskContext::new())
        .await
}

/// Runs a peer reporting a `-1` usage value (see [`absurd_report_peer`]) within a budget of
/// `tokens`, with `unreported` as the estimate for a remote that reports no usable figure.
async fn absurd_peer_within(
    tokens: u64,
    unreported: u64,
) -> (
    subagent_core::Budget,
    subagent_spi::CancellationToken,
    subagent_spi::TaskOutcome,
) {
    let def = absurd_report_peer(json!(-1)).await;
    let limits = subagent_spi::BudgetLimits::new()
        .with_tokens(tokens)
        .with_remote_unreported_tokens(unreported);
    exec_within(def, limits).await
}

/// Runs `go` on `def` within a budget of `limits`: the budget, the token its trip cancels, and
/// the outcome.
async fn exec_within(
    def: Arc<dyn SubagentDefinition>,
    limits: subagent_spi::BudgetLimits,
) -> (
    subagent_core::Budget,
    subagent_spi::CancellationToken,
    subagent_spi::TaskOutcome,
) {
    let cancel = subagent_spi::CancellationToken::new();
    let budget = subagent_core::Budget::new(limits, cancel.clone());
    let ctx = TaskContext::new().with_budget(budget.clone());
    let out = A2aExecutor::new()
        .execute(TaskCall::new(def.name(), "t", "go"), def, ctx)
        .await
        .unwrap();
    (budget, cancel, out)
}

/// A peer whose task keeps working until cancelled; the first reply's task carries `extra`.
fn working_peer(extra: Value) -> Peer {
    peer(Some(v1_card(false)), move |m, _, _| match m {
        "SendMessage" => Reply::Result(json!({"task": task("TASK_STATE_WORKING", extra.clone())})),
        "GetTask" => Reply::Result(task("TASK_STATE_WORKING", json!({}))),
        "CancelTask" => Reply::Result(task("TASK_STATE_CANCELED", json!({}))),
        _ => Reply::Error(-32601, "Method not found"),
    })
}

/// The error resolving `reference` (it must fail).
async fn resolve_err(reference: SubagentReference) -> String {
    resolve(reference).await.unwrap_err().to_string()
}

/// The error running `def` (it must fail).
async fn exec_err(def: Arc<dyn SubagentDefinition>, prompt: &str, resume: Option<&str>) -> String {
    exec(def, prompt, resume).await.unwrap_err().to_string()
}

#[tokio::test]
async fn resolves_relative_interfaces_describes_skills_and_sends_version_and_auth() {
    let mut p = peer(Some(v1_card(false)), |m, _, _| match m {
        "SendMessage" => Reply::Result(json!({"message": agent_msg("pong")})),
        _ => Reply::Error(-32601, "Method not found"),
    });
    p.required_headers = vec![("authorization", "Bearer s3cret"), ("x-api-key", "k3y")];
    let base = start(p.clone()).await;
    let reference = common::a2a_ref(
        &base,
        &[
            ("bearer", "s3cret"),
            ("api_key_header", "X-API-Key"),
            ("auth.api_key", "k3y"),
        ],
    );
    let def = resolve(reference).await.unwrap();
    let a2a = def.downcast_ref::<A2aSubagentDefinition>().unwrap();
    assert_eq!(a2a.endpoint().url, format!("{base}/rpc"));
    assert_eq!(a2a.endpoint().version, ProtocolVersion::V1);
    assert_eq!(
        def.description(),
        "A scripted agent.\n  Skills:\n  * Summarize: Summarizes text. (examples: \"summarize this article\")"
    );
    let out = exec(def, "ping", None).await.unwrap();
    assert_eq!(out.text, "pong");
    let calls = p.calls();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].2["a2a-version"], "1.0");
    assert_eq!(calls[0].1["message"]["role"], "ROLE_USER");
    assert_eq!(calls[0].1["message"]["parts"][0]["text"], "ping");

    // Without the credentials the card is refused and resolution names the URLs tried.
    let err = resolve_err(SubagentReference::new(&base, KIND)).await;
    assert!(
        err.contains("agent-card.json") && err.contains("401"),
        "{err}"
    );
}

#[tokio::test]
async fn falls_back_to_agent_json_and_speaks_0_3() {
    let mut p = peer(None, |m, params, _| match m {
        "message/send" => {
            assert_eq!(params["message"]["kind"], "message");
            assert_eq!(params["message"]["role"], "user");
            Reply::Result(json!({"kind": "task", "id": "t", "contextId": "c",
                "status": {"state": "completed"},
                "artifacts": [{"artifactId": "a", "parts": [{"kind": "data", "data": {"n": 1}}]}]}))
        }
        _ => Reply::Error(-32601, "Method not found"),
    });
    let base = start_legacy(&mut p, true).await;

    let def = resolve(SubagentReference::new(format!("{base}/"), KIND))
        .await
        .unwrap();
    let a2a = def.downcast_ref::<A2aSubagentDefinition>().unwrap();
    assert_eq!(a2a.endpoint().version, ProtocolVersion::V03);
    assert!(a2a.card_url().ends_with("/.well-known/agent.json"));
    assert!(!a2a.uses_streaming());
    let out = exec(def, "data please", None).await.unwrap();
    assert_eq!(out.text, "{\"n\":1}");
    assert_eq!(p.calls()[0].2["a2a-version"], "0.3");
}

#[tokio::test]
async fn a_refused_version_falls_back_to_the_cards_other_version() {
    let mut card = v1_card(false);
    card["supportedInterfaces"] = json!([
        {"url": "/rpc", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
        {"url": "/rpc", "protocolBinding": "JSONRPC", "protocolVersion": "0.3"}
    ]);
    let p = peer(Some(card), |m, _, _| match m {
        "SendMessage" => Reply::Error(-32009, "Version not supported"),
        "message/send" => {
            Reply::Result(json!({"kind": "message", "messageId": "r", "role": "agent",
            "parts": [{"kind": "text", "text": "spoken in 0.3"}]}))
        }
        _ => Reply::Error(-32601, "Method not found"),
    });
    let base = start(p.clone()).await;
    let def = resolve(SubagentReference::new(&base, KIND)).await.unwrap();
    let a2a = def.downcast_ref::<A2aSubagentDefinition>().unwrap();
    assert_eq!(a2a.endpoint().version, ProtocolVersion::V1);
    assert_eq!(a2a.fallback_endpoints().len(), 1);
    let out = exec(def, "hi", None).await.unwrap();
    assert_eq!(out.text, "spoken in 0.3");
    assert_eq!(p.methods(), ["SendMessage", "message/send"]);
    let calls = p.calls();
    assert_eq!(calls[1].2["a2a-version"], "0.3");
}

#[tokio::test]
async fn polls_a_working_task_to_completion() {
    let p = peer(Some(v1_card(false)), |m, params, n| match m {
        "SendMessage" => Reply::Result(json!({"task": task("TASK_STATE_WORKING", json!({}))})),
        "GetTask" => {
            assert_eq!(params["id"], "t-1");
            if n < 2 {
                Reply::Result(task("TASK_STATE_WORKING", json!({})))
            } else {
                Reply::Result(task(
                    "TASK_STATE_COMPLETED",
                    json!({"artifacts": [{"artifactId": "a", "parts": [{"text": "polled result"}]}]}),
                ))
            }
        }
        _ => Reply::Error(-32601, "Method not found"),
    });
    let base = start(p.clone()).await;
    let def = resolve(common::a2a_ref(&base, &[("poll_interval_ms", "5")]))
        .await
        .unwrap();
    let out = exec(def, "go", None).await.unwrap();
    assert_eq!(out.text, "polled result");
    assert_eq!(out.status, TaskStatus::Completed);
    assert_eq!(
        p.methods(),
        ["SendMessage", "GetTask", "GetTask", "GetTask"]
    );
}

#[tokio::test]
async fn a_stream_that_stops_early_is_followed_by_subscribe() {
    let p = peer(Some(v1_card(true)), |m, _, _| match m {
        "SendStreamingMessage" => Reply::Sse(vec![
            json!({"task": task("TASK_STATE_SUBMITTED", json!({}))}),
        ]),
        "SubscribeToTask" => Reply::Sse(vec![
            json!({"artifactUpdate": {"taskId": "t-1", "contextId": "c-1",
                   "artifact": {"artifactId": "a", "parts": [{"text": "part one"}]}}}),
            json!({"artifactUpdate": {"taskId": "t-1", "contextId": "c-1", "append": true,
                   "artifact": {"artifactId": "a", "parts": [{"text": "part two"}]}}}),
            json!({"statusUpdate": {"taskId": "t-1", "contextId": "c-1", "status": {"state": "TASK_STATE_COMPLETED"}}}),
        ]),
        _ => Reply::Error(-32601, "Method not found"),
    });
    let base = start(p.clone()).await;
    let def = resolve(SubagentReference::new(&base, KIND)).await.unwrap();
    let out = exec(def, "go", None).await.unwrap();
    assert_eq!(out.text, "part one\npart two");
    assert_eq!(p.methods(), ["SendStreamingMessage", "SubscribeToTask"]);
}

#[tokio::test]
async fn the_time_limit_cancels_the_remote_task() {
    let p = working_peer(json!({}));
    let base = start(p.clone()).await;
    let def = resolve(common::a2a_ref(
        &base,
        &[("timeout_secs", "0.2"), ("poll_interval_ms", "20")],
    ))
    .await
    .unwrap();
    let err = exec(def, "go", None).await.unwrap_err();
    assert!(
        matches!(err, SubagentError::TimedOut { ref agent, .. } if agent == "mock"),
        "{err}"
    );
    let calls = p.calls();
    let cancel = calls
        .iter()
        .find(|c| c.0 == "CancelTask")
        .expect("CancelTask sent");
    assert_eq!(cancel.1["id"], "t-1");
}

#[tokio::test]
async fn the_callers_deadline_is_a_limit_reached_outcome() {
    let p =
        working_peer(json!({"artifacts": [{"artifactId": "a", "parts": [{"text": "partial"}]}]}));
    let base = start(p.clone()).await;
    let def = resolve(common::a2a_ref(&base, &[("poll_interval_ms", "20")]))
        .await
        .unwrap();
    let ctx = TaskContext::new().with_timeout(Duration::from_millis(500));
    let out = A2aExecutor::new()
        .execute(TaskCall::new("mock", "t", "go"), def, ctx)
        .await
        .unwrap();
    assert_eq!(out.status, TaskStatus::LimitReached);
    // Once polling started, the first reply (with its partial artifact) had been read.
    if p.methods().contains(&"GetTask".to_string()) {
        assert_eq!(out.text, "partial");
    }
    assert!(out.limit.unwrap().to_string().starts_with("deadline"));
    assert!(p.methods().contains(&"CancelTask".to_string()));
}

#[tokio::test]
async fn context_cancellation_returns_a_cancelled_outcome() {
    let p = working_peer(json!({}));
    let base = start(p.clone()).await;
    let def = resolve(common::a2a_ref(&base, &[("poll_interval_ms", "10")]))
        .await
        .unwrap();
    let ctx = TaskContext::new();
    let cancel = ctx.cancel().clone();
    let log = p.log.clone();
    tokio::spawn(async move {
        while !log.lock().unwrap().iter().any(|c| c.0 == "GetTask") {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        cancel.cancel();
    });
    let out = A2aExecutor::new()
        .execute(TaskCall::new("mock", "t", "go"), def, ctx)
        .await
        .unwrap();
    assert_eq!(out.status, TaskStatus::Cancelled);
    assert!(p.methods().contains(&"CancelTask".to_string()));
}

#[tokio::test]
async fn remote_failures_rejections_and_questions() {
    let p = peer(Some(v1_card(false)), |m, params, _| {
        if m != "SendMessage" {
            return Reply::Error(-32601, "Method not found");
        }
        match params["message"]["parts"][0]["text"]
            .as_str()
            .unwrap_or_default()
        {
            "reject" => Reply::Result(json!({"task": task("TASK_STATE_REJECTED",
                json!({"status": {"state": "TASK_STATE_REJECTED", "message": agent_msg("not my job")}}))})),
            "auth" => Reply::Result(json!({"task": task("TASK_STATE_AUTH_REQUIRED",
                json!({"status": {"state": "TASK_STATE_AUTH_REQUIRED", "message": agent_msg("please sign in")}}))})),
            "missing" => Reply::Error(-32001, "Task not found"),
            "continue" => {
                assert_eq!(params["message"]["taskId"], "t-1");
                assert_eq!(params["message"]["contextId"], "c-1");
                Reply::Result(json!({"message": agent_msg("continued")}))
            }
            _ => Reply::Result(json!({"task": task("TASK_STATE_FAILED", json!({}))})),
        }
    });
    let base = start(p).await;
    let def = resolve(SubagentReference::new(&base, KIND)).await.unwrap();

    let err = exec_err(def.clone(), "reject", None).await;
    assert!(
        err.contains("rejected") && err.contains("not my job"),
        "{err}"
    );
    let err = exec_err(def.clone(), "fail", None).await;
    assert!(err.contains("failed") && err.contains("no reason"), "{err}");
    let err = exec_err(def.clone(), "missing", None).await;
    assert!(
        err.contains("-32001") && err.contains("TaskNotFoundError"),
        "{err}"
    );

    let out = exec(def.clone(), "auth", None).await.unwrap();
    assert_eq!(out.status, TaskStatus::NeedsInput);
    assert_eq!(out.text, "please sign in");
    let session = out.session_id.unwrap();
    let out = exec(def.clone(), "continue", Some(&session)).await.unwrap();
    assert_eq!(out.text, "continued");

    let err = exec(def, "x", Some("claude-session-1")).await.unwrap_err();
    assert!(matches!(err, SubagentError::Resume { .. }), "{err}");
}

#[tokio::test]
async fn unusable_cards_are_clear_resolution_errors() {
    let soap_only = json!({
        "name": "g", "description": "d", "version": "1", "capabilities": {},
        "supportedInterfaces": [{"url": "http://h:1", "protocolBinding": "SOAP", "protocolVersion": "1.0"}],
        "defaultInputModes": [], "defaultOutputModes": [], "skills": []
    });
    let base = start(peer(Some(soap_only), |_, _, _| Reply::Error(-32601, "x"))).await;
    let err = resolve_err(SubagentReference::new(&base, KIND)).await;
    assert!(
        err.contains("no usable interface") && err.contains("SOAP 1.0 at http://h:1"),
        "{err}"
    );

    let base = start(peer(Some(json!({"hello": "world"})), |_, _, _| {
        Reply::Error(-32601, "x")
    }))
    .await;
    let err = resolve_err(SubagentReference::new(&base, KIND)).await;
    assert!(
        err.contains("supportedInterfaces") && err.contains("url"),
        "{err}"
    );

    let err = resolve_err(SubagentReference::new("ftp://x", KIND)).await;
    assert!(err.contains("http://"), "{err}");

    let err = resolve(common::a2a_ref(
        &base,
        &[("bearer_env", "SUBAGENT_A2A_MOCK_UNSET_TOKEN")],
    ))
    .await
    .unwrap_err()
    .to_string();
    assert!(err.contains("SUBAGENT_A2A_MOCK_UNSET_TOKEN"), "{err}");

    // Nothing listens here.
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap()
    };
    let err = resolve_err(SubagentReference::new(format!("http://{closed}"), KIND)).await;
    assert!(err.contains(&closed.to_string()), "{err}");
}

#[tokio::test]
async fn the_type_bundles_resolver_and_executor_of_kind_a2a() {
    let t = a2a_subagent_type();
    assert_eq!(t.kind(), "A2A");
    assert!(
        t.resolver()
            .can_resolve(&SubagentReference::new("http://x", "a2a"))
    );
    assert!(
        !t.resolver()
            .can_resolve(&SubagentReference::new("http://x", "MCP"))
    );
}

/// A definition of some other kind, for the `A2A` kind to refuse.
#[derive(Debug)]
struct Foreign {
    name: String,
    description: String,
    reference: SubagentReference,
}
subagent_spi::impl_subagent_definition!(Foreign);

#[tokio::test]
async fn the_kind_resolves_and_runs_its_own_definition_typed_and_refuses_another_kinds() {
    let p = peer(Some(v1_card(false)), |m, _, _| match m {
        "SendMessage" => Reply::Result(json!({"message": agent_msg("pong")})),
        _ => Reply::Error(-32601, "Method not found"),
    });
    let base = start(p.clone()).await;
    let reference = SubagentReference::new(&base, KIND);

    // The typed kind: the definition comes back as the A2A type, and runs as that type.
    let kind = Arc::new(A2aExecutor::new());
    assert_eq!(SubagentKind::kind(&*kind), KIND);
    let def: A2aSubagentDefinition = SubagentKind::resolve(&*kind, &reference).await.unwrap();
    assert_eq!(def.endpoint().url, format!("{base}/rpc"));
    assert!(
        SubagentKind::message_delivery(&*kind, &def)
            .is_some_and(|d| d.contains("when it next asks for input"))
    );
    let out = SubagentKind::run(
        &*kind,
        &def,
        TaskCall::new("mock", "d", "ping"),
        TaskContext::new(),
    )
    .await
    .unwrap();
    assert_eq!(out.text, "pong");

    // A resolution failure names the URI, as the erased resolver's does.
    let closed = SubagentReference::new("ftp://nowhere", KIND);
    let err = SubagentKind::resolve(&*kind, &closed).await.unwrap_err();
    assert!(matches!(err, SubagentError::Resolution { .. }), "{err:?}");
    assert!(err.to_string().contains("ftp://nowhere"), "{err}");

    // Through the erased type hosts register: another kind's definition is one clear error,
    // and it takes no messages.
    let ty = SubagentType::from_kind(kind);
    let foreign: Arc<dyn SubagentDefinition> = Arc::new(Foreign {
        name: "other".into(),
        description: "d".into(),
        reference: SubagentReference::new("x:other", "OTHER"),
    });
    assert_eq!(ty.executor().message_delivery(&*foreign), None);
    let err = ty
        .executor()
        .execute(
            TaskCall::new("other", "d", "p"),
            foreign,
            TaskContext::new(),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, SubagentError::Execution { .. }), "{err:?}");
    assert!(
        err.to_string()
            .contains("the A2A kind was given a definition of another kind"),
        "{err}"
    );
    assert_eq!(p.methods(), ["SendMessage"]);
}

/// The messageId of every message the client sent, in order.
fn sent_message_ids(p: &Peer) -> Vec<String> {
    p.calls()
        .iter()
        .filter(|c| c.0 == "SendMessage")
        .map(|c| c.1["message"]["messageId"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test]
async fn the_messages_the_client_sends_have_the_crates_time_ordered_ids() {
    // The task asks for input once; a message waiting in the run's inbox is the follow-up.
    let p = peer(Some(v1_card(false)), |m, _, n| match (m, n) {
        ("SendMessage", 0) => Reply::Result(json!({"task": task("TASK_STATE_INPUT_REQUIRED",
            json!({"status": {"state": "TASK_STATE_INPUT_REQUIRED",
                "message": agent_msg("which version?")}}))})),
        ("SendMessage", _) => Reply::Result(json!({"task": task("TASK_STATE_COMPLETED",
            json!({"artifacts": [{"artifactId": "a", "parts": [{"text": "done"}]}]}))})),
        _ => Reply::Error(-32601, "Method not found"),
    });
    let base = start(p.clone()).await;
    let def = resolve(SubagentReference::new(&base, KIND)).await.unwrap();
    let inbox = Inbox::default();
    inbox.send(InboxMessage::new("main", "two")).unwrap();
    let out = A2aExecutor::new()
        .execute(
            TaskCall::new("mock", "d", "start"),
            def,
            TaskContext::new().with_messages(Arc::new(inbox)),
        )
        .await
        .unwrap();
    assert_eq!(out.text, "done");
    let ids = sent_message_ids(&p);
    assert_eq!(ids.len(), 2, "{ids:?}");
    assert_ne!(ids[0], ids[1]);
    for id in &ids {
        // UUID version 7 (time-ordered), the server's ids: one generator in the crate.
        let uuid = uuid::Uuid::parse_str(id).unwrap();
        assert_eq!(uuid.get_version_num(), 7, "{id}");
        assert_eq!(uuid.get_variant(), uuid::Variant::RFC4122, "{id}");
    }
}

/// A usage report of the usage extension: 30 + 5 tokens over 2 turns, a child of 100 + 20.
fn usage_metadata(input: Value) -> Value {
    json!({"https://subagents.dev/a2a/ext/usage/v1": {
        "agent": "remote", "kind": "CLAUDE", "status": "completed",
        "inputTokens": input, "outputTokens": 5, "turns": 2, "durationMs": 9999, "model": "m",
        "children": [{"agent": "helper", "kind": "CLAUDE", "status": "completed",
                      "inputTokens": 100, "outputTokens": 20, "turns": 1}]}})
}

#[tokio::test]
async fn the_usage_extension_is_folded_into_the_usage_tree_over_1_0_and_0_3() {
    // 1.0: the report in the task's metadata.
    let p = peer(Some(v1_card(false)), |m, _, _| match m {
        "SendMessage" => Reply::Result(json!({"task": task("TASK_STATE_COMPLETED", json!({
            "artifacts": [{"artifactId": "a", "parts": [{"text": "done"}]}],
            "metadata": usage_metadata(json!(30))}))})),
        _ => Reply::Error(-32601, "Method not found"),
    });
    let base = start(p).await;
    let def = resolve(SubagentReference::new(&base, KIND)).await.unwrap();
    // The caller's budget counts the remote tokens: 30 + 5 + 100 + 20 = 155 > 150.
    let (budget, cancel, out) =
        exec_within(def, subagent_spi::BudgetLimits::new().with_tokens(150)).await;
    assert_eq!((out.usage.input_tokens, out.usage.output_tokens), (30, 5));
    assert_eq!(out.usage.turns, 2);
    assert_ne!(out.usage.duration_ms, 9999, "the duration is measured here");
    assert_eq!(out.children.len(), 1);
    assert_eq!(out.children[0].agent, "helper");
    assert_eq!(budget.tokens_used(), 155);
    assert_eq!(out.status, TaskStatus::LimitReached);
    assert_eq!(
        out.limit.as_ref().map(ToString::to_string).as_deref(),
        Some("budget_tokens=150")
    );
    assert_eq!(out.text, "done", "the result is kept");
    assert!(cancel.is_cancelled());

    // 0.3: the same report on a kind-tagged task.
    let mut p = peer(None, |m, _, _| match m {
        "message/send" => Reply::Result(json!({"kind": "task", "id": "t", "contextId": "c",
            "status": {"state": "completed"},
            "artifacts": [{"artifactId": "a", "parts": [{"kind": "text", "text": "old"}]}],
            "metadata": usage_metadata(json!(30))})),
        _ => Reply::Error(-32601, "Method not found"),
    });
    let base = start_legacy(&mut p, false).await;
    let def = resolve(SubagentReference::new(&base, KIND)).await.unwrap();
    let out = exec(def, "go", None).await.unwrap();
    assert_eq!(out.usage.input_tokens, 30);
    assert_eq!(out.children[0].usage.input_tokens, 100);
}

/// A peer whose usage report holds one malformed value (negative, huge, not a number).
async fn absurd_report_peer(bad: Value) -> Arc<dyn SubagentDefinition> {
    let metadata = usage_metadata(bad);
    let p = peer(Some(v1_card(false)), move |m, _, _| match m {
        "SendMessage" => Reply::Result(json!({"task": task("TASK_STATE_COMPLETED", json!({
            "artifacts": [{"artifactId": "a", "parts": [{"text": "done"}]}],
            "metadata": metadata.clone()}))})),
        _ => Reply::Error(-32601, "Method not found"),
    });
    let base = start(p).await;
    resolve(SubagentReference::new(&base, KIND)).await.unwrap()
}

/// One bad value no longer zeroes a report (it used to be ignored whole, so a peer could make
/// its spend count 0 tokens and never trip a budget): the well-formed values count, and the run
/// counts as at least the configured estimate, marked `estimated` in the usage tree.
#[tokio::test]
async fn an_absurd_usage_report_counts_its_well_formed_values_and_at_least_the_estimate() {
    for bad in [json!(-1), json!(1e300), json!("lots"), json!(u64::MAX)] {
        // Without a budget: the default estimate (the tree's figure).
        let out = exec(absurd_report_peer(bad.clone()).await, "go", None)
            .await
            .unwrap();
        assert_eq!(out.status, TaskStatus::Completed, "{bad}");
        assert!(out.usage.estimated, "{bad}: marked as an estimate");
        assert_eq!(
            out.usage.output_tokens, 5,
            "{bad}: the well-formed values count"
        );
        assert_eq!(out.usage.turns, 2, "{bad}");
        assert_eq!(out.children.len(), 1, "{bad}");
        assert_eq!(out.children[0].usage.total_tokens(), 120, "{bad}");
        let tree = out.usage.total_tokens() + out.children[0].usage.total_tokens();
        assert_eq!(
            tree,
            subagent_core::DEFAULT_REMOTE_UNREPORTED_TOKENS,
            "{bad}: at least the estimate"
        );
        let json = serde_json::to_value(&out.usage).unwrap();
        assert_eq!(json["estimated"], true, "{bad}: the usage tree says so");
    }

    // The caller's budget trips on the estimate.
    let (budget, cancel, out) = absurd_peer_within(900, 1_000).await;
    assert_eq!(budget.tokens_used(), 1_000);
    assert_eq!(out.status, TaskStatus::LimitReached);
    assert_eq!(
        out.limit.as_ref().map(ToString::to_string).as_deref(),
        Some("budget_tokens=900")
    );
    assert!(cancel.is_cancelled());

    // Well-formed values above the estimate count as they are: 5 + 100 + 20 = 125 > 100.
    let (budget, _, out) = absurd_peer_within(1_000, 100).await;
    assert_eq!(budget.tokens_used(), 125);
    assert_eq!(out.status, TaskStatus::Completed);
    assert!(out.usage.estimated);
}
