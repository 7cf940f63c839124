//! The `HTTP` kind against real HTTP servers on 127.0.0.1: a well-behaved endpoint, and hostile
//! ones (huge, slow, non-JSON, wrong shape, redirecting elsewhere). Each limit ends the call
//! with an error naming the agent and the limit.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Json;
use axum::body::Body;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get, post};
use serde_json::{Value, json};
use subagent_spi::{
    SubagentError, SubagentReference, SubagentType, TaskCall, TaskContext, TaskOutcome, TaskStatus,
};

/// What the servers saw.
#[derive(Default)]
struct Seen {
    bodies: Mutex<Vec<Value>>,
    keys: Mutex<Vec<Option<String>>>,
    hits: AtomicUsize,
}

/// Serves `app` on 127.0.0.1; its base URL.
pub(crate) async fn serve(app: axum::Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}")
}

/// The endpoint under test; `elsewhere` is another origin it redirects to.
async fn server(seen: Arc<Seen>, elsewhere: String) -> String {
    let app = axum::Router::new()
        .route(
            "/ask",
            post(
                |State(seen): State<Arc<Seen>>, headers: HeaderMap, Json(body): Json<Value>| async move {
                    let key = headers.get("x-api-key").map(|v| v.to_str().unwrap().to_string());
                    seen.keys.lock().unwrap().push(key.clone());
                    seen.bodies.lock().unwrap().push(body.clone());
                    if key != Some(expected_key()) {
                        return (StatusCode::UNAUTHORIZED, "missing or wrong key\n\u{1b}[31m").into_response();
                    }
                    let q = body["input"]["text"].as_str().unwrap_or("").to_string();
                    Json(json!({"output": {"text": format!("you said: {q}"), "score": 7}})).into_response()
                },
            ),
        )
        .route(
            "/search",
            get(|Query(q): Query<std::collections::HashMap<String, String>>| async move {
                Json(json!({"results": [{"title": format!("about {}", q["q"])}]}))
            }),
        )
        .route(
            "/huge",
            post(|| async { Json(json!({"answer": "x".repeat(2 * 1024 * 1024)})) }),
        )
        .route(
            "/huge-chunked",
            post(|| async {
                // No Content-Length: the size is only known by reading.
                let chunk = format!("\"{}", "y".repeat(64 * 1024));
                let stream = futures::stream::iter(
                    std::iter::repeat_n(chunk, 1000).map(Ok::<_, std::io::Error>),
                );
                Response::builder()
                    .header(header::CONTENT_TYPE, "application/json")
                    .body(Body::from_stream(stream))
                    .unwrap()
            }),
        )
        .route(
            "/slow",
            post(|| async {
                tokio::time::sleep(Duration::from_secs(30)).await;
                Json(json!({"answer": "late"}))
            }),
        )
        .route(
            "/html",
            post(|| async { ([(header::CONTENT_TYPE, "text/html")], "<html>hello</html>") }),
        )
        .route(
            "/away",
            any(move || {
                let to = format!("{elsewhere}/ask");
                async move { (StatusCode::TEMPORARY_REDIRECT, [(header::LOCATION, to)]) }
            }),
        )
        .route(
            "/home",
            any(|| async { (StatusCode::TEMPORARY_REDIRECT, [(header::LOCATION, "/ask")]) }),
        )
        .route(
            "/busy",
            post(|| async { (StatusCode::SERVICE_UNAVAILABLE, "overloaded, retry later") }),
        )
        .with_state(seen);
    serve(app).await
}

struct Fixture {
    base: String,
    seen: Arc<Seen>,
    elsewhere: Arc<Seen>,
    kind: SubagentType,
}

/// The variable holding the credential: one cargo sets for every test process (tests cannot
/// set variables: `set_var` is unsafe in Rust 2024 and the workspace forbids unsafe code).
const KEY_VAR: &str = "CARGO_PKG_NAME";

/// The header value the endpoint expects.
fn expected_key() -> String {
    format!("Key {}", env!("CARGO_PKG_NAME"))
}

async fn fixture() -> Fixture {
    let elsewhere = Arc::new(Seen::default());
    let other = {
        let seen = elsewhere.clone();
        serve(axum::Router::new().route(
            "/ask",
            any(move |headers: HeaderMap| {
                let seen = seen.clone();
                async move {
                    seen.hits.fetch_add(1, Ordering::SeqCst);
                    seen.keys.lock().unwrap().push(
                        headers
                            .get("x-api-key")
                            .map(|v| v.to_str().unwrap().to_string()),
                    );
                    Json(json!({"output": {"text": "stolen"}}))
                }
            }),
        ))
        .await
    };
    let seen = Arc::new(Seen::default());
    let base = server(seen.clone(), other).await;
    Fixture {
        base,
        seen,
        elsewhere,
        kind: subagent_http::kind(),
    }
}

impl Fixture {
    fn reference(&self, path: &str) -> SubagentReference {
        SubagentReference::new(format!("{}{path}", self.base), "HTTP")
            .with_metadata("name", "asker")
            .with_metadata("description", "Answers questions.")
            .with_metadata("body", r#"{"input": {"text": "{{prompt}}"}, "lang": "en"}"#)
            .with_metadata("answer", "/output/text")
            .with_metadata("auth_header", "X-Api-Key")
            .with_metadata("auth_prefix", "Key ")
            .with_metadata("auth_env", KEY_VAR)
    }

    async fn run(&self, r: SubagentReference, prompt: &str) -> Result<TaskOutcome, SubagentError> {
        self.run_with(r, TaskCall::new("asker", "t", prompt), TaskContext::new())
            .await
    }

    /// Runs `r` on "x", which must fail: the error and its text.
    async fn refusal(&self, r: SubagentReference) -> (SubagentError, String) {
        let err = self.run(r, "x").await.expect_err("the run fails");
        let text = err.to_string();
        (err, text)
    }

    async fn run_with(
        &self,
        r: SubagentReference,
        call: TaskCall,
        ctx: TaskContext,
    ) -> Result<TaskOutcome, SubagentError> {
        let def = self.kind.resolver().resolve(&r).await?;
        self.kind.executor().execute(call, def, ctx).await
    }
}

/// Asserts that `text` contains each of `parts`.
#[track_caller]
fn assert_mentions(text: &str, parts: &[&str]) {
    for part in parts {
        assert!(text.contains(part), "{part:?} is not in {text}");
    }
}

#[tokio::test]
async fn a_task_is_one_request_and_the_answer_is_read_at_the_pointer() {
    let f = fixture().await;
    let hostile = r#"hi", "lang": "xx"#;
    let out = f.run(f.reference("/ask"), hostile).await.unwrap();
    assert_eq!(out.status, TaskStatus::Completed);
    assert_eq!(out.text, format!("you said: {hostile}"));
    // The body is the template with the prompt inside its string, whatever the prompt holds.
    let bodies = f.seen.bodies.lock().unwrap().clone();
    assert_eq!(
        bodies,
        vec![json!({"input": {"text": hostile}, "lang": "en"})]
    );
    assert_eq!(*f.seen.keys.lock().unwrap(), vec![Some(expected_key())]);
}

#[tokio::test]
async fn a_non_string_answer_is_its_json_and_a_typed_call_gets_the_value() {
    let f = fixture().await;
    let r = f.reference("/ask").with_metadata("answer", "/output");
    let call = TaskCall::new("asker", "t", "x").with_output_schema(json!({"type": "object"}));
    let out = f.run_with(r, call, TaskContext::new()).await.unwrap();
    assert_eq!(
        out.structured,
        Some(json!({"text": "you said: x", "score": 7}))
    );
    let v: Value = serde_json::from_str(&out.text).unwrap();
    assert_eq!(v["score"], 7);
}

#[tokio::test]
async fn get_sends_the_prompt_in_the_query() {
    let f = fixture().await;
    let r = SubagentReference::new(format!("{}/search", f.base), "HTTP")
        .with_metadata("name", "search")
        .with_metadata("method", "GET")
        .with_metadata("query", "q")
        .with_metadata("answer", "/results/0/title");
    assert_eq!(
        f.run(r, "rust & tokio").await.unwrap().text,
        "about rust & tokio"
    );
}

#[tokio::test]
async fn a_huge_reply_stops_at_the_limit() {
    let f = fixture().await;
    // With a Content-Length (2 MiB > the default 1 MiB): refused before reading.
    let (err, text) = f.refusal(f.reference("/huge")).await;
    assert!(matches!(err, SubagentError::LimitReached { .. }), "{err:?}");
    assert_mentions(&text, &["agent `asker`", "max_response_bytes=1048576"]);
    // Without one (64 MB streamed): cut while reading, at the reference's own limit.
    let r = f
        .reference("/huge-chunked")
        .with_metadata("max_response_bytes", "100000");
    let (err, text) = f.refusal(r).await;
    assert!(matches!(err, SubagentError::LimitReached { .. }), "{err:?}");
    assert_mentions(&text, &["max_response_bytes=100000"]);
}

#[tokio::test]
async fn a_slow_reply_times_out_naming_the_limit() {
    let f = fixture().await;
    let r = f.reference("/slow").with_metadata("timeout_secs", "0.2");
    let err = f.run(r, "x").await.unwrap_err();
    assert!(matches!(err, SubagentError::TimedOut { .. }), "{err:?}");
    assert_eq!(err.to_string(), "agent `asker` timed out after 200 ms");
    // The caller's deadline applies too, when it is the shorter.
    let ctx = TaskContext::new().with_timeout(Duration::from_millis(150));
    let err = f
        .run_with(f.reference("/slow"), TaskCall::new("asker", "t", "x"), ctx)
        .await
        .unwrap_err();
    assert!(matches!(err, SubagentError::TimedOut { .. }), "{err:?}");
}

#[tokio::test]
async fn cancelling_drops_the_request() {
    let f = fixture().await;
    let ctx = TaskContext::new();
    let cancel = ctx.cancel().clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(100)).await;
        cancel.cancel();
    });
    let out = f
        .run_with(f.reference("/slow"), TaskCall::new("asker", "t", "x"), ctx)
        .await
        .unwrap();
    assert_eq!(out.status, TaskStatus::Cancelled);
}

#[tokio::test]
async fn a_reply_that_is_not_json_or_lacks_the_answer_is_a_protocol_error() {
    let f = fixture().await;
    let (err, text) = f.refusal(f.reference("/html")).await;
    assert!(matches!(err, SubagentError::Protocol { .. }), "{err:?}");
    assert_mentions(&text, &["`asker`", "is not JSON (text/html, 18 bytes)"]);

    let r = f
        .reference("/ask")
        .with_metadata("answer", "/output/missing");
    let (_, text) = f.refusal(r).await;
    assert_mentions(
        &text,
        &[
            "`asker`",
            "nothing at the answer pointer `/output/missing`",
            "an object with keys `output`",
        ],
    );
}

#[tokio::test]
async fn an_error_status_is_quoted_in_one_line() {
    let f = fixture().await;
    let (err, text) = f.refusal(f.reference("/busy")).await;
    assert!(matches!(err, SubagentError::Execution { .. }), "{err:?}");
    assert_mentions(
        &text,
        &["HTTP 503 Service Unavailable: overloaded, retry later"],
    );
    // A wrong credential: the server's words, control characters removed.
    let r = f
        .reference("/ask")
        .with_metadata("auth_env", "CARGO_PKG_VERSION");
    let (_, text) = f.refusal(r).await;
    assert_mentions(&text, &["HTTP 401 Unauthorized: missing or wrong key"]);
    assert!(!text.contains('\u{1b}'), "{text:?}");
}

#[tokio::test]
async fn redirects_stay_in_the_origin_so_the_credential_does_too() {
    let f = fixture().await;
    let out = f.run(f.reference("/home"), "x").await.unwrap();
    assert_eq!(out.text, "you said: x");
    let (_, text) = f.refusal(f.reference("/away")).await;
    assert_mentions(&text, &["HTTP 307", "not followed"]);
    assert_eq!(
        f.elsewhere.hits.load(Ordering::SeqCst),
        0,
        "the other origin was called"
    );
}

#[tokio::test]
async fn references_are_checked_at_resolve_time() {
    let f = fixture().await;
    let unset = f
        .reference("/ask")
        .with_metadata("auth_env", "SUBAGENT_HTTP_TEST_SURELY_UNSET_VAR");
    let err = f.run(unset, "x").await.unwrap_err();
    assert!(matches!(err, SubagentError::Resolution { .. }), "{err:?}");
    assert!(
        err.to_string()
            .ends_with("the environment variable `SUBAGENT_HTTP_TEST_SURELY_UNSET_VAR` is not set"),
        "{err}"
    );
    let remote =
        SubagentReference::new("http://example.com/ask", "HTTP").with_metadata("name", "a");
    let err = f.run(remote, "x").await.unwrap_err().to_string();
    assert!(err.contains("use https"), "{err}");
    let resume = TaskCall::new("asker", "t", "x").resuming("s1");
    let err = f
        .run_with(f.reference("/ask"), resume, TaskContext::new())
        .await
        .unwrap_err();
    assert!(matches!(err, SubagentError::Resume { .. }), "{err:?}");
}

#[tokio::test]
async fn a_task_call_reaches_the_kind_through_the_facade() {
    let f = fixture().await;
    let agents = subagents::Subagents::builder()
        .builtin_agents(false)
        .kind(subagent_http::kind())
        .reference(f.reference("/ask"))
        .build()
        .await
        .unwrap();
    let tools = agents.tools();
    let task: &dyn subagent_spi::Tool = &tools.task;
    assert!(task.description().contains("- asker: Answers questions."));
    let out = task
        .call(
            json!({"description": "ask", "prompt": "hello", "subagent_type": "asker"}),
            &TaskContext::new(),
        )
        .await
        .unwrap();
    assert!(!out.is_error, "{}", out.content);
    assert!(out.content.contains("you said: hello"), "{}", out.content);
}

#[tokio::test]
async fn the_json_form_resolves_like_metadata() {
    let f = fixture().await;
    let text = json!({
        "url": format!("{}/ask", f.base),
        "name": "asker",
        "body": {"input": {"text": "{{prompt}}"}, "lang": "en"},
        "answer": "/output/text",
        "auth_header": "X-Api-Key",
        "auth_prefix": "Key ",
        "auth_env": KEY_VAR,
        "timeout_secs": 5
    })
    .to_string();
    let r = subagent_http::reference_from_json(&text).unwrap();
    assert_eq!(f.run(r, "json").await.unwrap().text, "you said: json");
}
