//! W3C trace context across A2A (HTTP and, with the `grpc` feature, gRPC) and MCP, in one
//! process over real sockets on 127.0.0.1: the
//! server side handles each request on its own connection task (no `tracing` parent there),
//! so a server span in the caller's trace can only come from the propagated `traceparent`.
//! Spans are recorded by an OpenTelemetry tracer provider (the SDK the `otel` feature uses)
//! with a capturing exporter, behind `tracing-opentelemetry`, as `subagents::otel` installs.
#![cfg(all(feature = "otel", feature = "server", feature = "mcp"))]

#[path = "it/common/mod.rs"]
mod common;

use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock};

use common::{serve_a2a, write_agent};
use opentelemetry::trace::{SpanKind, TracerProvider as _};
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{SdkTracerProvider, SpanData, SpanExporter};
use serde_json::json;
use subagent_testkit::{FnTool, Reply, ScriptedModelServer};
use subagents::spi::ToolOutput;
use subagents::{ServeOptions, Subagents, SubagentsBuilder};
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::util::SubscriberInitExt as _;

#[derive(Debug, Clone, Default)]
struct Capture(Arc<Mutex<Vec<SpanData>>>);

impl SpanExporter for Capture {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        self.0.lock().unwrap().extend(batch);
        Ok(())
    }
}

/// One global subscriber for the test binary (servers run on other threads), as the command
/// installs it: the OpenTelemetry layer and the W3C propagator.
fn capture() -> Capture {
    static CAPTURE: OnceLock<(Capture, SdkTracerProvider)> = OnceLock::new();
    CAPTURE
        .get_or_init(|| {
            let capture = Capture::default();
            let provider = SdkTracerProvider::builder()
                .with_simple_exporter(capture.clone())
                .build();
            opentelemetry::global::set_text_map_propagator(
                opentelemetry_sdk::propagation::TraceContextPropagator::new(),
            );
            tracing_subscriber::registry()
                .with(tracing_opentelemetry::layer().with_tracer(provider.tracer("test")))
                .init();
            (capture, provider)
        })
        .0
        .clone()
}

/// The span named `name` of kind `kind` whose parent is a span named `parent`, in the same
/// trace; panics with every span's name otherwise.
fn child_of(spans: &[SpanData], name: &str, kind: SpanKind, parent: &str) -> SpanData {
    let found = spans.iter().find(|s| {
        s.name == name
            && s.span_kind == kind
            && spans.iter().any(|p| {
                p.name == parent
                    && p.span_context.span_id() == s.parent_span_id
                    && p.span_context.trace_id() == s.span_context.trace_id()
            })
    });
    found.cloned().unwrap_or_else(|| {
        let names: Vec<_> = spans
            .iter()
            .map(|s| {
                format!(
                    "{} ({:?}) {} <- {}",
                    s.name,
                    s.span_kind,
                    s.span_context.span_id(),
                    s.parent_span_id
                )
            })
            .collect();
        panic!("no {name} ({kind:?}) under {parent}: {names:#?}")
    })
}

/// Runs the main agent of `main` on `main-model` of `model` (which answers `done`); returns
/// every span recorded so far.
async fn run_main(
    capture: &Capture,
    model: &ScriptedModelServer,
    main: SubagentsBuilder,
) -> Vec<SpanData> {
    let main = main
        .model(model.openai_model("main-model"))
        .builtin_agents(false)
        .build()
        .await
        .unwrap();
    let answer = main.main_agent().run("go").await.unwrap();
    assert_eq!(answer.text, "done");
    capture.0.lock().unwrap().clone()
}

/// The assembly a served process runs: one Markdown agent `name` on `model_name` of a fresh
/// scripted model server, in a fresh directory (kept alive with the server).
async fn served_worker(
    name: &str,
    model_name: &str,
) -> (ScriptedModelServer, tempfile::TempDir, Subagents) {
    let model = ScriptedModelServer::start().await;
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let agents = write_agent(
        dir,
        name,
        &format!(
            "---\nname: {name}\ndescription: Works.\ntools: Read\nmodel: {model_name}\n---\nWork.\n"
        ),
    );
    let served = Subagents::builder()
        .named_model(model_name, model.openai_model(model_name))
        .agents_dir(&agents)
        .workspace(dir)
        .builtin_agents(false)
        .build()
        .await
        .unwrap();
    (model, tmp, served)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a2a_requests_carry_traceparent_and_our_server_continues_the_trace() {
    let capture = capture();
    let (model, _dir, served) = served_worker("a2a-worker", "worker-model").await;
    let (url, _server) = serve_a2a(served, &ServeOptions::new(), "a2a-worker").await;

    push_remote_run(&model, "a2a-worker", "worker-model");
    let main = Subagents::builder().a2a_agent(&url);
    let mut spans = run_main(&capture, &model, main).await;
    // The request that ran the agent: a server span under the caller's A2A child run. The
    // server ends its request span once the answer has gone out, so it may be recorded just
    // after the caller has its answer: look again for up to 5 s.
    let ran_the_agent = |spans: &[SpanData]| {
        spans
            .iter()
            .filter(|s| s.span_kind == SpanKind::Server && s.name == "POST /a2a-worker")
            .find(|s| {
                spans.iter().any(|c| {
                    c.name == "invoke_agent a2a-worker"
                        && c.parent_span_id == s.span_context.span_id()
                })
            })
            .cloned()
    };
    for _ in 0..100 {
        if ran_the_agent(&spans).is_some() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        spans = capture.0.lock().unwrap().clone();
    }
    let server =
        ran_the_agent(&spans).unwrap_or_else(|| panic!("no server span that ran the agent"));
    assert!(
        server.parent_span_is_remote,
        "continued from the traceparent header"
    );
    let caller = remote_caller(&spans, &server, "a2a-worker");
    let served_run = child_of(
        &spans,
        "invoke_agent a2a-worker",
        SpanKind::Internal,
        "POST /a2a-worker",
    );
    child_of(
        &spans,
        "chat worker-model",
        SpanKind::Client,
        "invoke_agent a2a-worker",
    );
    assert_eq!(
        served_run.span_context.trace_id(),
        caller.span_context.trace_id()
    );
}

#[cfg(feature = "grpc")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a2a_grpc_calls_carry_traceparent_as_metadata_and_our_server_continues_the_trace() {
    let capture = capture();
    let (model, _dir, served) = served_worker("grpc-worker", "grpc-worker-model").await;
    // The card is served over HTTP and lists the gRPC binding, served on its own port.
    let grpc = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let grpc_addr = grpc.local_addr().unwrap().to_string();
    let (url, server) = serve_a2a(
        served,
        &ServeOptions::new().grpc_url(&grpc_addr),
        "grpc-worker",
    )
    .await;
    tokio::spawn(server.serve_grpc(grpc, std::future::pending::<()>()));

    push_remote_run(&model, "grpc-worker", "grpc-worker-model");
    let main = Subagents::builder().a2a_reference(
        subagents::spi::SubagentReference::new(&url, subagents::a2a::client::KIND)
            .with_metadata(subagents::a2a::client::keys::BINDING, "GRPC"),
    );
    let spans = run_main(&capture, &model, main).await;
    // The call that ran the agent: a gRPC server span under the caller's A2A child run.
    let server = spans
        .iter()
        .filter(|s| s.span_kind == SpanKind::Server && s.name.starts_with("lf.a2a.v1.A2AService/"))
        .find(|s| {
            spans.iter().any(|c| {
                c.name == "invoke_agent grpc-worker"
                    && c.span_kind == SpanKind::Internal
                    && c.parent_span_id == s.span_context.span_id()
            })
        })
        .cloned()
        .unwrap_or_else(|| {
            let names: Vec<_> = spans
                .iter()
                .map(|s| (&s.name, s.span_kind.clone()))
                .collect();
            panic!("no gRPC server span that ran the agent: {names:?}")
        });
    assert_continued(
        &server,
        "continued from the traceparent metadata",
        ("rpc.system", "grpc"),
    );
    remote_caller(&spans, &server, "grpc-worker");
    child_of(
        &spans,
        "chat grpc-worker-model",
        SpanKind::Client,
        "invoke_agent grpc-worker",
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_calls_carry_traceparent_in_meta_and_our_server_continues_the_trace() {
    let capture = capture();
    let web = subagents::mcp::McpToolServer::new(vec![Arc::new(FnTool::new(
        "echo",
        "Echoes the prompt.",
        json!({"type": "object", "properties": {"prompt": {"type": "string"}}, "required": ["prompt"]}),
        |input| {
            Ok(ToolOutput::text(format!(
                "echo: {}",
                input["prompt"].as_str().unwrap_or("")
            )))
        },
    ))])
        .serve_streamable_http("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let model = ScriptedModelServer::start().await;
    model.push(Reply::task_call("echo", "hello over mcp"));
    model.push(Reply::text("done"));
    let main = Subagents::builder()
        .mcp_agent(web.url())
        .workspace(Path::new(env!("CARGO_MANIFEST_DIR")));
    let spans = run_main(&capture, &model, main).await;
    let server = child_of(
        &spans,
        "tools/call echo",
        SpanKind::Server,
        "invoke_agent echo",
    );
    assert_continued(
        &server,
        "continued from `_meta.traceparent`",
        ("mcp.method.name", "tools/call"),
    );
}

/// The server span `server` continues a remote trace (`why` says through what) and carries the
/// attribute `key = value`.
fn assert_continued(server: &SpanData, why: &str, (key, value): (&str, &str)) {
    assert!(server.parent_span_is_remote, "{why}");
    assert!(
        server
            .attributes
            .iter()
            .any(|kv| kv.key.as_str() == key && kv.value.as_str() == value),
        "{key}={value} in {:?}",
        server.attributes
    );
}

/// Scripts a main agent that delegates "work remotely" to the remote `agent`, whose model
/// `worker_model` answers `REMOTE`, then answers `done`.
fn push_remote_run(model: &ScriptedModelServer, agent: &str, worker_model: &str) {
    model.push(Reply::task_call(agent, "work remotely"));
    model.push_for_model(worker_model, Reply::text("REMOTE").with_usage(3, 2));
    model.push(Reply::text("done"));
}

/// The span whose remote call `server` continued: the caller's run of `agent`, in the same
/// trace as `server`.
fn remote_caller(spans: &[SpanData], server: &SpanData, agent: &str) -> SpanData {
    let caller = spans
        .iter()
        .find(|p| p.span_context.span_id() == server.parent_span_id)
        .expect("the server span's parent was recorded");
    assert_eq!(caller.name, format!("invoke_agent {agent}"));
    assert_eq!(
        caller.span_context.trace_id(),
        server.span_context.trace_id()
    );
    caller.clone()
}

/// A client of the tasks extension (2025-11-25, by `initialize`), answering nothing itself.
struct TasksClient;

impl rmcp::ClientHandler for TasksClient {
    fn get_info(&self) -> rmcp::model::ClientConfig {
        let caps: rmcp::model::ClientCapabilities =
            serde_json::from_value(json!({"extensions": {"io.modelcontextprotocol/tasks": {}}}))
                .unwrap();
        rmcp::model::ClientConfig::new(
            caps,
            rmcp::model::Implementation::new("trace-test-client", "1.0"),
        )
        .with_protocol_version(rmcp::model::ProtocolVersion::V_2025_11_25)
    }
}

/// The spans from `span` up to its root, `span` first.
fn ancestors(spans: &[SpanData], span: &SpanData) -> Vec<SpanData> {
    let mut chain = vec![span.clone()];
    while let Some(parent) = spans.iter().find(|p| {
        p.span_context.span_id() == chain.last().unwrap().parent_span_id
            && p.span_context.trace_id() == span.span_context.trace_id()
    }) {
        chain.push(parent.clone());
    }
    chain
}

/// A `Task` call that a client of the tasks extension gets as a task: the background run
/// starts inside the `tools/call Task` server span (continued from `_meta.traceparent`), so
/// the run and its model calls are in the caller's trace, under that span.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_task_run_is_a_child_of_the_tools_call_span_continued_from_meta() {
    use rmcp::ServiceExt as _;
    use rmcp::model::{CallToolRequestParams, CallToolResponse, GetTaskParams, TaskStatus};
    let capture = capture();
    let (model, _dir, served) = served_worker("task-worker", "task-worker-model").await;
    model.push_for_model("task-worker-model", Reply::text("TASK DONE"));
    let web = served
        .mcp_server()
        .serve_streamable_http("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let client = TasksClient
        .serve(rmcp::transport::StreamableHttpClientTransport::from_uri(
            web.url(),
        ))
        .await
        .expect("connects");
    let trace = "4bf92f3577b34da6a3ce929d0e0e4736";
    let caller_span = "00f067aa0ba902b7";
    let serde_json::Value::Object(args) = json!({
        "description": "work", "prompt": "work as a task", "subagent_type": "task-worker"
    }) else {
        unreachable!()
    };
    let mut params = CallToolRequestParams::new("Task").with_arguments(args);
    let serde_json::Value::Object(meta) =
        json!({"traceparent": format!("00-{trace}-{caller_span}-01")})
    else {
        unreachable!()
    };
    params.meta = Some(meta.into());
    let handle = match client.call_tool_once(params).await.expect("answers") {
        CallToolResponse::Task(t) => t.task,
        other => panic!("expected a task handle, got {other:?}"),
    };
    let mut done = false;
    for _ in 0..600 {
        let got = client
            .get_task(GetTaskParams::new(handle.task_id.clone()))
            .await
            .expect("tasks/get answers");
        if got.task.status() == TaskStatus::Completed {
            done = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert!(done, "the task completed within 30 s");
    // The run's span ends when the task does; the simple exporter has it by now.
    let spans = capture.0.lock().unwrap().clone();
    let run = spans
        .iter()
        .find(|s| s.name == "invoke_agent task-worker")
        .cloned()
        .expect("the task's run was recorded");
    let chain = ancestors(&spans, &run);
    let names: Vec<_> = chain.iter().map(|s| s.name.to_string()).collect();
    assert_eq!(
        run.span_context.trace_id().to_string(),
        trace,
        "the run is in the caller's trace: {names:?}"
    );
    let server = chain
        .iter()
        .find(|s| s.name == "tools/call Task")
        .unwrap_or_else(|| panic!("the run is under the tools/call server span: {names:?}"));
    assert_eq!(server.span_kind, SpanKind::Server);
    assert!(server.parent_span_is_remote, "continued from `_meta`");
    assert_eq!(server.parent_span_id.to_string(), caller_span);
    child_of(
        &spans,
        "chat task-worker-model",
        SpanKind::Client,
        "invoke_agent task-worker",
    );
}
