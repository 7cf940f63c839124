//! Traces across processes, through the binaries and a real OTLP receiver: `subagents run`
//! (main agent → local `helper` → remote `worker`) and `subagents serve` (serving `worker`
//! over A2A) both export to a Python OTLP/HTTP receiver built on `opentelemetry-proto`
//! (`tests/support/otlp_receiver.py`, venv `target/py/otlp` from `.ci/setup-python.sh`, or
//! the interpreter named by `SUBAGENTS_OTLP_PY`). The receiver must get ONE trace holding both
//! processes' spans, parented as the delegation tree, with the GenAI attributes.

use crate::common;

use std::collections::HashMap;
use std::io::{BufRead as _, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use common::{Killed, Served, write_agent};
use serde_json::Value;
use subagent_testkit::{Reply, ScriptedModelServer};

fn python() -> PathBuf {
    common::venv_python(
        "SUBAGENTS_OTLP_PY",
        "otlp",
        "opentelemetry-proto",
        ".ci/setup-python.sh",
    )
}

/// Starts the receiver; returns it and its base URL.
fn receiver() -> (Killed, String) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support/otlp_receiver.py");
    let mut child = Command::new(python())
        .arg(script)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("the receiver starts");
    let stdout = child.stdout.take().expect("stdout");
    let child = Killed(child);
    let mut line = String::new();
    BufReader::new(stdout)
        .read_line(&mut line)
        .expect("the receiver prints its port");
    let port = line
        .trim()
        .strip_prefix("PORT ")
        .unwrap_or_else(|| panic!("unexpected receiver output: {line:?}"));
    (child, format!("http://127.0.0.1:{port}"))
}

fn spans(rt: &tokio::runtime::Runtime, receiver: &str) -> Vec<Value> {
    rt.block_on(async {
        reqwest::get(format!("{receiver}/spans"))
            .await
            .expect("the receiver answers")
            .json::<Vec<Value>>()
            .await
            .expect("JSON")
    })
}

/// `subagents serve` of a `worker` agent, exporting to `otlp` as service `remote-serve`.
fn serve_worker(
    rt: &tokio::runtime::Runtime,
    model: &ScriptedModelServer,
    root: &Path,
    otlp: &str,
) -> (Served, String) {
    common::serve_worker(
        rt,
        model,
        root,
        "---\nname: worker\ndescription: Does remote work.\ntools: Read\n---\nWork.\n",
        |cmd| {
            cmd.args(["--otlp", otlp])
                .env("OTEL_SERVICE_NAME", "remote-serve")
                .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT");
        },
    )
}

/// Stops `serve` the way Ctrl-C does, so it flushes its spans on the way out.
fn interrupt(serve: &mut Served) {
    let pid = serve.process.0.id().to_string();
    let _ = Command::new("kill").args(["-INT", &pid]).status();
    for _ in 0..600 {
        if serve.process.0.try_wait().ok().flatten().is_some() {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("serve did not stop on SIGINT");
}

#[test]
#[ignore = "needs the Python OTLP receiver venv: bash .ci/setup-python.sh, then cargo test -p subagents-cli --test it -- otel_export:: --ignored (CI does)"]
fn one_trace_spans_main_local_child_and_remote_child_in_another_process() {
    let rt = common::rt();
    let (_receiver, otlp) = receiver();
    let model = rt.block_on(ScriptedModelServer::start());
    let served = tempfile::tempdir().expect("tmp");
    let (mut serve, worker_url) = serve_worker(&rt, &model, served.path(), &otlp);

    // main → helper (local) → worker (remote, over A2A) → text.
    model.push(Reply::task_call("helper", "ask the worker").with_usage(100, 10));
    model.push(Reply::task_call("worker", "do the remote part").with_usage(50, 5));
    model.push_for_model(
        "worker-model",
        Reply::text("REMOTE-DONE").with_usage(21, 13),
    );
    model.push(Reply::text("the worker said REMOTE-DONE").with_usage(60, 6));
    model.push(Reply::text("Final: REMOTE-DONE").with_usage(120, 12));

    let home = tempfile::tempdir().expect("tmp");
    let agents = write_agent(
        home.path(),
        "helper",
        "---\nname: helper\ndescription: Delegates to the worker.\ntools: Agent(worker)\n---\nHelp.\n",
    );
    let stdout = common::stdout_of(
        common::subagents_in(home.path())
            .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
            .env_remove("OTEL_SERVICE_NAME")
            .args(["run", "--yes", "--store", "memory", "--otlp", &otlp])
            .args(["--a2a", &worker_url, "--agents"])
            .arg(agents)
            .args(["--model", &model.openai_model("main-model")])
            .arg("go")
            .assert()
            .success(),
    );
    assert!(stdout.contains("REMOTE-DONE"), "{stdout}");
    interrupt(&mut serve);

    let spans = spans(&rt, &otlp);
    let dump = || serde_json::to_string_pretty(&spans).unwrap_or_default();
    // ONE trace across both processes.
    let traces: std::collections::BTreeSet<&str> = spans
        .iter()
        .filter_map(|s| s["trace_id"].as_str())
        .collect();
    assert_eq!(traces.len(), 1, "one trace id, got {traces:?}:\n{}", dump());
    let services: std::collections::BTreeSet<&str> =
        spans.iter().filter_map(|s| s["service"].as_str()).collect();
    assert_eq!(
        services,
        ["remote-serve", "subagents"].into_iter().collect(),
        "both processes' spans, under their service names"
    );

    let by_id: HashMap<&str, &Value> = spans
        .iter()
        .map(|s| (s["span_id"].as_str().unwrap_or(""), s))
        .collect();
    let parent = |s: &Value| -> Option<&Value> {
        by_id
            .get(s["parent_span_id"].as_str().unwrap_or(""))
            .copied()
    };
    let find = |name: &str, service: &str, parent_of: Option<&Value>| -> &Value {
        spans
            .iter()
            .find(|s| {
                s["name"] == name
                    && s["service"] == service
                    && match parent_of {
                        Some(p) => s["parent_span_id"] == p["span_id"],
                        None => s["parent_span_id"] == "",
                    }
            })
            .unwrap_or_else(|| {
                panic!(
                    "no `{name}` span of {service} under {:?}:\n{}",
                    parent_of.map(|p| &p["name"]),
                    dump()
                )
            })
    };
    let attr = |s: &Value, key: &str| s["attributes"][key].clone();

    // In `run`: the main agent is the root; its Task call; the helper's run in it; the
    // helper's Task call; the A2A child's run in that.
    let root = spans
        .iter()
        .find(|s| s["parent_span_id"] == "" && s["service"] == "subagents")
        .unwrap_or_else(|| panic!("a root span in run:\n{}", dump()));
    assert!(
        root["name"]
            .as_str()
            .unwrap_or("")
            .starts_with("invoke_agent"),
        "{root}"
    );
    let main_task = find("execute_tool Task", "subagents", Some(root));
    assert_eq!(attr(main_task, "gen_ai.operation.name"), "execute_tool");
    let helper = find("invoke_agent helper", "subagents", Some(main_task));
    assert_eq!(attr(helper, "gen_ai.operation.name"), "invoke_agent");
    assert_eq!(attr(helper, "gen_ai.agent.name"), "helper");
    let helper_task = find("execute_tool Task", "subagents", Some(helper));
    let remote_call = find("invoke_agent worker", "subagents", Some(helper_task));
    assert_eq!(attr(remote_call, "subagents.kind"), "A2A", "{remote_call}");
    // Model calls in run: main's and helper's.
    let main_chat = find("chat main-model", "subagents", Some(root));
    assert_eq!(attr(main_chat, "gen_ai.operation.name"), "chat");
    assert_eq!(attr(main_chat, "gen_ai.request.model"), "main-model");
    find("chat main-model", "subagents", Some(helper));

    // In `serve`: the request's server span continues the caller's trace under the A2A
    // child's span; the served run and its model call nest in it.
    let server = spans
        .iter()
        .find(|s| {
            s["service"] == "remote-serve"
                && s["kind"] == 2
                && parent(s).is_some_and(|p| p["span_id"] == remote_call["span_id"])
                && spans.iter().any(|c| {
                    c["parent_span_id"] == s["span_id"] && c["name"] == "invoke_agent worker"
                })
        })
        .unwrap_or_else(|| {
            panic!(
                "a server span of serve (the request that ran the worker) under run's A2A call:\n{}",
                dump()
            )
        });
    assert_eq!(attr(server, "rpc.system"), "a2a");
    let served_run = find("invoke_agent worker", "remote-serve", Some(server));
    assert_eq!(attr(served_run, "gen_ai.operation.name"), "invoke_agent");
    assert_eq!(attr(served_run, "gen_ai.agent.name"), "worker");
    let chat = find("chat worker-model", "remote-serve", Some(served_run));
    assert_eq!(attr(chat, "gen_ai.operation.name"), "chat");
    assert_eq!(attr(chat, "gen_ai.request.model"), "worker-model");
    assert_eq!(attr(chat, "gen_ai.usage.input_tokens"), 21);
    assert_eq!(attr(chat, "gen_ai.usage.output_tokens"), 13);
    assert_eq!(attr(served_run, "gen_ai.usage.input_tokens"), 21);

    // Nothing secret leaves: no prompt content without the opt-in.
    assert!(
        !dump().contains("do the remote part"),
        "prompts are exported only with OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true"
    );
}
