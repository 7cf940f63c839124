//! The `MCP` kind against real MCP servers built with rmcp: the `subagent-mcp-test-server`
//! child process over stdio, and the same server in-process over streamable HTTP.

use crate::common::cancel_and_join;
use crate::server;

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use subagent_mcp::{
    KIND, McpEndpoint, McpError, McpPool, McpSubagentDefinition, mcp_subagent_type_with_pool,
};
use subagent_spi::{
    ProgressEvent, ProgressSink, SubagentDefinition, SubagentError, SubagentReference,
    SubagentType, TaskCall, TaskContext, TaskStatus,
};
use subagent_testkit::ProgressRecorder;

const BIN: &str = env!("CARGO_BIN_EXE_subagent-mcp-test-server");

fn stdio_uri() -> String {
    format!("stdio:'{BIN}'")
}

fn reference(uri: &str, meta: &[(&str, &str)]) -> SubagentReference {
    meta.iter()
        .fold(SubagentReference::new(uri, KIND), |r, (k, v)| {
            r.with_metadata(*k, *v)
        })
}

async fn resolve(kind: &SubagentType, r: &SubagentReference) -> Arc<dyn SubagentDefinition> {
    assert!(kind.resolver().can_resolve(r));
    match kind.resolver().resolve(r).await {
        Ok(d) => d,
        Err(e) => panic!("resolving {r} failed: {e}"),
    }
}

/// The message of a resolution that must fail.
async fn resolve_err(kind: &SubagentType, r: &SubagentReference) -> String {
    match kind.resolver().resolve(r).await {
        Ok(d) => panic!("resolving {r} gave agent `{}`", d.name()),
        Err(e) => e.to_string(),
    }
}

async fn run(
    kind: &SubagentType,
    def: &Arc<dyn SubagentDefinition>,
    prompt: &str,
    ctx: TaskContext,
) -> Result<subagent_spi::TaskOutcome, SubagentError> {
    kind.executor()
        .execute(TaskCall::new(def.name(), "test", prompt), def.clone(), ctx)
        .await
}

/// `fut` within a generous guard, so a call that hangs fails the test instead of the run.
async fn bounded<T>(what: &str, fut: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(30), fut)
        .await
        .unwrap_or_else(|_| panic!("{what} did not return within 30 s"))
}

/// The error of a call to `def` that must fail, not before `limit`.
async fn fails_after(
    kind: &SubagentType,
    def: &Arc<dyn SubagentDefinition>,
    limit: Duration,
) -> SubagentError {
    let started = Instant::now();
    let out = bounded(
        "a call past its limit",
        run(kind, def, "w", TaskContext::new()),
    )
    .await;
    assert!(started.elapsed() >= limit, "{:?}", started.elapsed());
    out.unwrap_err()
}

/// The test server in-process over streamable HTTP on 127.0.0.1.
struct HttpServer {
    uri: String,
    state: Arc<server::TestState>,
    ct: tokio_util::sync::CancellationToken,
    task: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl HttpServer {
    async fn start() -> Self {
        let state = Arc::new(server::TestState::default());
        let ct = tokio_util::sync::CancellationToken::new();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let service = {
            let state = state.clone();
            StreamableHttpService::new(
                move || {
                    Ok(server::TestServer {
                        state: state.clone(),
                        ..Default::default()
                    })
                },
                Arc::new(LocalSessionManager::default()),
                StreamableHttpServerConfig::default().with_cancellation_token(ct.child_token()),
            )
        };
        let router = axum::Router::new().nest_service("/mcp", service);
        let shutdown = ct.clone();
        let task = tokio::spawn(async move {
            axum::serve(listener, router)
                .with_graceful_shutdown(shutdown.cancelled_owned())
                .await
        });
        Self {
            uri: format!("http://{addr}/mcp"),
            state,
            ct,
            task,
        }
    }

    /// Waits until the server's `wait` tool has observed `n` cancellations; returns the count.
    async fn cancellations(&self, n: usize) -> usize {
        loop {
            let notified = self.state.cancel_seen.notified();
            let seen = self.state.cancelled.load(Ordering::SeqCst);
            if seen >= n {
                return seen;
            }
            bounded("the server observing the cancellation", notified).await;
        }
    }

    async fn stop(self) {
        self.ct.cancel();
        let _ = self.task.await;
    }
}

/// A context whose progress events are recorded, plus a notifier woken on each event.
fn recording_ctx() -> (TaskContext, Arc<ProgressRecorder>, Arc<tokio::sync::Notify>) {
    let events = Arc::new(ProgressRecorder::new());
    let notify = Arc::new(tokio::sync::Notify::new());
    let (e, n) = (events.clone(), notify.clone());
    let sink = move |ev: ProgressEvent| {
        e.emit(ev);
        n.notify_one();
    };
    let ctx = TaskContext::new()
        .with_progress(Arc::new(sink))
        .with_agent("tester");
    (ctx, events, notify)
}

/// The shared checks: resolve from the tool, execute, isError, progress, cancellation.
/// Returns after cancelling a `wait` call; the caller checks the server saw it.
async fn exercise(kind: &SubagentType, uri: &str) {
    // The tool named like the agent; name and description come from the tool.
    let echo = resolve(kind, &reference(uri, &[("name", "echo")])).await;
    assert_eq!(echo.name(), "echo");
    assert_eq!(kind.kind(), &KIND);
    assert_eq!(
        echo.description(),
        "Echoes the prompt back, prefixed with `echo: `."
    );
    let mcp = echo.downcast_ref::<McpSubagentDefinition>().unwrap();
    assert_eq!((mcp.tool(), mcp.argument()), ("echo", "prompt"));

    let out = run(kind, &echo, "hello there", TaskContext::new())
        .await
        .unwrap();
    assert_eq!(out.status, TaskStatus::Completed);
    assert_eq!(out.text, "echo: hello there");

    // Metadata `tool` picks the tool; metadata `name` names the agent.
    let failer = resolve(
        kind,
        &reference(uri, &[("tool", "fail"), ("name", "failer")]),
    )
    .await;
    assert_eq!(failer.name(), "failer");
    match run(kind, &failer, "boom", TaskContext::new()).await {
        Err(SubagentError::Execution { agent, message, .. }) => {
            assert_eq!(agent, "failer");
            assert_eq!(message, "failure: boom");
        }
        other => panic!("expected an execution error, got {other:?}"),
    }

    // Another argument name, then (issue 32) none: without `argument`, the prompt goes to the
    // tool's only string argument (this was an error before).
    let named: &[(&str, &str)] = &[("tool", "shout"), ("argument", "text")];
    for params in [named, &[("tool", "shout")]] {
        let shout = resolve(kind, &reference(uri, params)).await;
        let out = run(kind, &shout, "quiet", TaskContext::new()).await;
        assert_eq!(out.unwrap().text, "QUIET", "{params:?}");
    }
    // A named argument the tool lacks is an error naming its own.
    let err = resolve_err(
        kind,
        &reference(uri, &[("tool", "shout"), ("argument", "prompt")]),
    )
    .await;
    assert!(
        err.contains("no argument `prompt`") && err.contains("text"),
        "{err}"
    );

    // Structured content only -> JSON text.
    let structured = resolve(kind, &reference(uri, &[("tool", "structured")])).await;
    let text = run(kind, &structured, "", TaskContext::new())
        .await
        .unwrap()
        .text;
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["answer"], 42);

    // Several tools and no hint: a clear error listing them; an unknown tool likewise.
    let err = resolve_err(kind, &reference(uri, &[])).await;
    assert!(
        err.contains("set metadata `tool`") && err.contains("echo, fail"),
        "{err}"
    );
    let err = resolve_err(kind, &reference(uri, &[("tool", "nope")])).await;
    assert!(
        err.contains("no tool `nope`") && err.contains("progress"),
        "{err}"
    );

    // Progress notifications become status events.
    let progress = resolve(kind, &reference(uri, &[("tool", "progress")])).await;
    let (ctx, events, _) = recording_ctx();
    let out = run(kind, &progress, "p", ctx).await.unwrap();
    assert_eq!(out.text, "done: p");
    assert_eq!(
        events.statuses(),
        ["step 1 (1/3)", "step 2 (2/3)", "step 3 (3/3)"]
    );
    assert!(events.events().iter().all(|e| e.agent == "tester"));

    // Cancellation: wait until the server reports the call is running, then cancel.
    let wait = resolve(kind, &reference(uri, &[("tool", "wait")])).await;
    let (ctx, events, notify) = recording_ctx();
    let cancel = ctx.cancel().clone();
    let running = {
        let (kind, wait) = (kind.clone(), wait.clone());
        tokio::spawn(async move { run(&kind, &wait, "w", ctx).await })
    };
    while events.statuses().is_empty() {
        tokio::time::timeout(Duration::from_secs(20), notify.notified())
            .await
            .expect("the wait tool reports progress");
    }
    let out = cancel_and_join(&cancel, running).await.unwrap();
    assert_eq!(out.status, TaskStatus::Cancelled);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdio_server_resolves_executes_reports_progress_and_is_cancelled() {
    let pool = McpPool::new();
    let kind = mcp_subagent_type_with_pool(pool.clone());
    let uri = stdio_uri();
    exercise(&kind, &uri).await;

    // The server saw the cancellation (its `wait` call observed its token).
    let stats = resolve(&kind, &reference(&uri, &[("tool", "stats")])).await;
    let mut seen = 0;
    for _ in 0..200 {
        let text = run(&kind, &stats, "", TaskContext::new())
            .await
            .unwrap()
            .text;
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        seen = v["cancelled"].as_u64().unwrap();
        if seen > 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(seen, 1, "the server observed the cancellation");

    // Every reference above used the same command line: one process served them all.
    assert_eq!(pool.len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdio_server_is_reused_and_killed_on_drop() {
    let pool = McpPool::new();
    let kind = mcp_subagent_type_with_pool(pool.clone());
    let uri = stdio_uri();
    let def = resolve(&kind, &reference(&uri, &[("tool", "pid")])).await;
    let first = run(&kind, &def, "", TaskContext::new()).await.unwrap().text;
    let second = run(&kind, &def, "", TaskContext::new()).await.unwrap().text;
    assert_eq!(first, second, "two calls, one process");
    let pid: u32 = first.parse().unwrap();
    let endpoint = McpEndpoint::from_reference(&reference(&uri, &[])).unwrap();
    assert_eq!(pool.server_pid(&endpoint), Some(pid));

    // A different environment is a different server.
    let other = resolve(&kind, &reference(&uri, &[("tool", "pid"), ("env.X", "1")])).await;
    let other_pid = run(&kind, &other, "", TaskContext::new())
        .await
        .unwrap()
        .text;
    assert_ne!(other_pid, first);
    assert_eq!(pool.len(), 2);

    // A server that dies: the next call fails at once naming the server (or, when the pool
    // already saw the connection close, starts the server again); the call after a failure
    // starts it again.
    let status = std::process::Command::new("kill")
        .arg("-9")
        .arg(&other_pid)
        .status()
        .unwrap();
    assert!(status.success());
    let after_crash = bounded(
        "the first call after the crash",
        run(&kind, &other, "", TaskContext::new()),
    )
    .await;
    let restarted = match after_crash {
        Ok(out) => out.text,
        Err(e) => {
            let closed = format!(
                "MCP server `stdio:{BIN}` closed the connection during `tools/call` (the server exited or ended the session)"
            );
            assert!(
                matches!(&e, SubagentError::Execution { message, .. } if *message == closed),
                "{e}"
            );
            bounded(
                "the call after the failed one",
                run(&kind, &other, "", TaskContext::new()),
            )
            .await
            .unwrap()
            .text
        }
    };
    assert_ne!(restarted, other_pid, "the crashed server was started again");
    assert_ne!(restarted, first);
    assert_eq!(pool.len(), 2);

    let proc_dir = format!("/proc/{pid}");
    assert!(std::path::Path::new(&proc_dir).exists());
    drop((kind, def, other));
    drop(pool);
    let mut gone = false;
    for _ in 0..400 {
        if !std::path::Path::new(&proc_dir).exists() {
            gone = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert!(
        gone,
        "server process {pid} still exists after the pool was dropped"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streamable_http_server_resolves_executes_reports_progress_and_is_cancelled() {
    let server = HttpServer::start().await;
    let pool = McpPool::new();
    let kind = mcp_subagent_type_with_pool(pool.clone());
    let uri = server.uri.clone();
    exercise(&kind, &uri).await;

    assert_eq!(server.cancellations(1).await, 1);
    assert_eq!(pool.len(), 1, "one HTTP session for every call");

    // Headers and a bearer token from the environment reach the server; a missing token
    // variable is named in the error.
    let token_var = "SUBAGENT_MCP_TEST_TOKEN";
    // (Setting variables needs `unsafe` in edition 2024, so PATH stands in for a token.)
    let whoami_ref = reference(
        &uri,
        &[
            ("tool", "whoami"),
            ("header.X-Test", "hello-header"),
            ("bearer_env", "PATH"),
        ],
    );
    let whoami = resolve(&kind, &whoami_ref).await;
    let text = run(&kind, &whoami, "", TaskContext::new())
        .await
        .unwrap()
        .text;
    let path = std::env::var("PATH").unwrap();
    assert_eq!(
        text,
        format!("x-test=hello-header authorization=Bearer {path}")
    );
    let err = resolve_err(
        &kind,
        &reference(&uri, &[("tool", "whoami"), ("bearer_env", token_var)]),
    )
    .await;
    assert!(err.contains(token_var) && err.contains("not set"), "{err}");

    // Unreachable server: a resolution error naming the URL.
    let dead = uri.replace("/mcp", "/nothing-here");
    let err = kind
        .resolver()
        .resolve(&reference(&dead, &[("tool", "echo")]))
        .await
        .unwrap_err();
    assert!(err.to_string().contains(&dead), "{err}");

    drop((kind, pool));
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_the_server_never_answers_fails_after_the_request_timeout() {
    let server = HttpServer::start().await;
    let limit = Duration::from_millis(300);
    let pool = McpPool::with_request_timeout(limit);
    assert_eq!(pool.request_timeout(), limit);
    let kind = mcp_subagent_type_with_pool(pool.clone());
    let wait = resolve(&kind, &reference(&server.uri, &[("tool", "wait")])).await;

    // The `wait` tool answers only when cancelled: the pool's limit ends the call, with an
    // error naming the server, the method and the limit, and the server is told.
    let err = fails_after(&kind, &wait, limit).await;
    let SubagentError::Execution {
        agent,
        message,
        source,
    } = &err
    else {
        panic!("expected an execution error, got {err:?}");
    };
    assert_eq!(agent, "wait");
    assert_eq!(
        message,
        &format!(
            "MCP server `{}` did not answer `tools/call` within 300 ms (its request timeout)",
            server.uri
        )
    );
    let source = source.as_ref().and_then(|s| s.downcast_ref::<McpError>());
    assert!(
        matches!(source, Some(McpError::RequestTimeout { method, after, .. })
            if method == "tools/call" && *after == limit),
        "{source:?}"
    );
    assert_eq!(server.cancellations(1).await, 1);

    // The connection stays usable.
    let echo = resolve(&kind, &reference(&server.uri, &[("name", "echo")])).await;
    let out = run(&kind, &echo, "still here", TaskContext::new()).await;
    assert_eq!(out.unwrap().text, "echo: still here");
    assert_eq!(pool.len(), 1);

    // An agent's own `timeout_secs` replaces the pool's limit and ends the call as the
    // agent's timeout.
    let patient = resolve(
        &kind,
        &reference(&server.uri, &[("tool", "wait"), ("timeout_secs", "0.5")]),
    )
    .await;
    let err = fails_after(&kind, &patient, Duration::from_millis(500)).await;
    assert!(
        matches!(&err, SubagentError::TimedOut { after, .. } if *after == Duration::from_millis(500)),
        "{err:?}"
    );
    assert_eq!(server.cancellations(2).await, 2);

    drop((kind, pool));
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn task_tool_delegates_to_an_mcp_agent() {
    let task = task_tool::TaskTool::builder()
        .subagent_type(subagent_mcp::mcp_subagent_type())
        .subagent_reference(reference(&stdio_uri(), &[("name", "echo")]))
        .build()
        .await
        .unwrap();
    assert_eq!(task.agent_names(), ["echo"]);
    let out = task
        .call_tool(
            serde_json::json!({"description": "d", "prompt": "via Task", "subagent_type": "echo"}),
            &TaskContext::new(),
        )
        .await;
    assert!(!out.is_error, "{}", out.content);
    assert!(out.content.contains("echo: via Task"), "{}", out.content);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_servers_give_clear_errors() {
    let pool = McpPool::with_connect_timeout(Duration::from_millis(500));
    let kind = mcp_subagent_type_with_pool(pool.clone());
    let cases = [
        (
            "stdio:/nonexistent/subagent-mcp-server --flag",
            "cannot start MCP server `stdio:/nonexistent/subagent-mcp-server --flag`",
        ),
        ("stdio:true", "cannot connect to MCP server `stdio:true`"),
        (
            "stdio:sleep 30",
            "MCP server `stdio:sleep 30` did not finish its handshake within 500 ms",
        ),
        ("stdio:", "empty command"),
        ("mailto:someone", "expected `stdio:COMMAND ARG...`"),
    ];
    for (uri, needle) in cases {
        let err = resolve_err(&kind, &reference(uri, &[("tool", "x")])).await;
        assert!(err.contains(needle), "{uri}: {err}");
    }
    let err = resolve_err(
        &kind,
        &reference(&stdio_uri(), &[("name", "echo"), ("timeout_secs", "soon")]),
    )
    .await;
    assert!(
        err.contains("`timeout_secs`") && err.contains("soon"),
        "{err}"
    );
    assert!(pool.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typed_results_come_from_structured_content_and_are_checked() {
    let task = task_tool::TaskTool::builder()
        .subagent_type(subagent_mcp::mcp_subagent_type())
        .subagent_reference(reference(
            &stdio_uri(),
            &[("name", "structured"), ("tool", "structured")],
        ))
        .subagent_reference(reference(
            &stdio_uri(),
            &[("name", "echo"), ("tool", "echo")],
        ))
        .build()
        .await
        .unwrap();
    let ok = serde_json::json!({"type": "object", "properties": {"answer": {"type": "integer"}},
                                "required": ["answer"]});
    let call = TaskCall::new("structured", "d", "x").with_output_schema(ok);
    let out = match task.dispatch(call, &TaskContext::new()).await.unwrap() {
        task_tool::Dispatch::Foreground { outcome, .. } => outcome,
        other => panic!("{other:?}"),
    };
    assert_eq!(
        out.status,
        subagent_spi::TaskStatus::Completed,
        "{}",
        out.text
    );
    assert_eq!(out.structured, Some(serde_json::json!({"answer": 42})));

    // Invalid structured content (and no session to retry): failed, saying why.
    let wrong = serde_json::json!({"type": "object", "required": ["question"]});
    let call = TaskCall::new("structured", "d", "x").with_output_schema(wrong);
    let out = match task.dispatch(call, &TaskContext::new()).await.unwrap() {
        task_tool::Dispatch::Foreground { outcome, .. } => outcome,
        other => panic!("{other:?}"),
    };
    assert_eq!(out.status, subagent_spi::TaskStatus::Failed);
    assert!(out.text.starts_with("invalid output:"), "{}", out.text);
    assert!(out.text.contains("question"), "{}", out.text);

    // A text-only tool's answer is not JSON: failed too.
    let call = TaskCall::new("echo", "d", "hello")
        .with_output_schema(serde_json::json!({"type": "object"}));
    let out = match task.dispatch(call, &TaskContext::new()).await.unwrap() {
        task_tool::Dispatch::Foreground { outcome, .. } => outcome,
        other => panic!("{other:?}"),
    };
    assert_eq!(out.status, subagent_spi::TaskStatus::Failed, "{}", out.text);
}
