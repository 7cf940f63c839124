//! Issue 44: workflows through the real binary with the scripted model server. A run killed
//! with SIGKILL after three of its four calls finished resumes in a new process without a
//! second request for those three; hostile scripts end with clear errors within their limits;
//! typed `agent()` calls reach an A2A child (a served agent) and an MCP child (an rmcp server);
//! `list` and `show` read the journal. The 1,000-call run is an ignored test that prints its
//! wall time and peak memory (docs/PERFORMANCE.md).

use crate::common;
use common::OutputOk;

use std::path::Path;
use std::process::{Child, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use common::{process_in, rt, subagents_in, write_agent};
use serde_json::{Value, json};
use subagent_testkit::{Reply, ScriptedModelServer};

const WORKER: &str =
    "---\nname: worker\ndescription: Answers one question.\ntools: Read\n---\nAnswer briefly.\n";

/// The text of the first user message of an OpenAI request body.
fn first_user_text(body: &Value) -> String {
    body["messages"]
        .as_array()
        .and_then(|m| m.iter().find(|m| m["role"] == "user"))
        .map(|m| m["content"].to_string())
        .unwrap_or_default()
}

/// Answers every request for `model` by its first user message: `alpha` → A, `beta` → B,
/// `gamma` → G, `delta` → D, except the first `delta` request, which hangs two minutes.
fn answer_by_prompt(server: &ScriptedModelServer, model: &str, n: usize) {
    let hung = Arc::new(AtomicBool::new(false));
    for _ in 0..n {
        let hung = hung.clone();
        server.script().push_dynamic(Some(model), move |body| {
            let prompt = first_user_text(body);
            for (word, answer) in [("alpha", "A"), ("beta", "B"), ("gamma", "G")] {
                if prompt.contains(word) {
                    return Reply::text(answer).with_usage(10, 1);
                }
            }
            if prompt.contains("delta") && !hung.swap(true, Ordering::SeqCst) {
                return Reply::text("never seen").with_delay(Duration::from_secs(120));
            }
            Reply::text("D").with_usage(10, 1)
        });
    }
}

/// Requests whose first user message holds `word`.
fn requests_for(server: &ScriptedModelServer, word: &str) -> usize {
    server
        .requests()
        .iter()
        .filter(|r| first_user_text(&r.body).contains(word))
        .count()
}

fn write(dir: &Path, name: &str, text: &str) -> std::path::PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).expect("write");
    p
}

const FOUR_CALLS: &str = r#"const [a, b, c] = await parallel([
  () => agent("worker", "alpha"),
  () => agent("worker", "beta"),
  () => agent("worker", "gamma"),
]);
log("three done");
const d = await agent("worker", "delta", { description: "the slow one" });
return { a, b, c, d };
"#;

#[test]
fn a_run_killed_after_three_calls_resumes_without_repeating_them() {
    killed_run_resumes(None);
}

#[test]
#[ignore = "needs PostgreSQL: set SUBAGENTS_TEST_POSTGRES_URL (.ci/postgres.sh starts one)"]
fn postgres_a_run_killed_after_three_calls_resumes_without_repeating_them() {
    killed_run_resumes(Some(crate::durable::postgres_store()));
}

/// The kill -9 acceptance test on the default store (SQLite in the home's data directory) or
/// on `store`.
fn killed_run_resumes(store: Option<String>) {
    let store: Vec<String> = store
        .map(|s| vec!["--store".to_string(), s])
        .unwrap_or_default();
    let (rt, server) = common::scripted();
    let model = server.openai_model("child-model");
    answer_by_prompt(&server, "child-model", 8);
    let home = tempfile::tempdir().expect("home");
    let agents = write_agent(home.path(), "worker", WORKER);
    let script = write(home.path(), "four.js", FOUR_CALLS);
    let mut first: Child = process_in(home.path())
        .args(&store)
        .args(["workflow", "run"])
        .arg(&script)
        .args(["--model", &model, "--agents"])
        .arg(&agents)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("workflow run starts");
    // The fourth request comes once the first three are journaled as done.
    rt.block_on(async {
        tokio::time::timeout(Duration::from_secs(60), server.wait_for_requests(4))
            .await
            .expect("four model requests within 60 s");
    });
    first.kill().expect("SIGKILL");
    let _ = first.wait();
    assert_eq!(requests_for(&server, "delta"), 1);

    // The journal: one run, three calls done, the fourth unfinished.
    let listed = subagents_in(home.path())
        .args(&store)
        .args(["workflow", "list", "--json"])
        .json_ok();
    let runs = listed.as_array().expect("a list");
    assert_eq!(runs.len(), 1, "{listed}");
    let run_id = runs[0]["run_id"].as_str().expect("run_id").to_string();
    assert_eq!(runs[0]["status"], "running", "its process died running it");
    assert_eq!(
        (runs[0]["done"].as_u64(), runs[0]["running"].as_u64()),
        (Some(3), Some(1))
    );

    // Resume in a new process: only the fourth call runs.
    let resume = || {
        subagents_in(home.path())
            .args(&store)
            .args([
                "workflow", "resume", &run_id, "--json", "--model", &model, "--agents",
            ])
            .arg(&agents)
            .json_ok()
    };
    let out = resume();
    assert_eq!(out["run_id"], run_id.as_str());
    assert_eq!(out["status"], "completed", "{out}");
    assert_eq!(
        out["result"],
        json!({"a": "A", "b": "B", "c": "G", "d": "D"})
    );
    assert_eq!(out["calls"]["replayed"], 3, "{out}");
    assert_eq!(out["calls"]["rerun"], 1, "{out}");
    for word in ["alpha", "beta", "gamma"] {
        assert_eq!(
            requests_for(&server, word),
            1,
            "no second request for {word}"
        );
    }
    assert_eq!(
        requests_for(&server, "delta"),
        2,
        "the unfinished call ran again"
    );
    // What the journaled calls spent counts in the resumed run's usage.
    let total_input: u64 = out["usage"]["children"]
        .as_array()
        .expect("calls")
        .iter()
        .map(|c| c["usage"]["input_tokens"].as_u64().unwrap_or(0))
        .sum();
    assert_eq!(total_input, 40, "{out}");

    // `show`: every call done, with its child's task id.
    let shown = subagents_in(home.path())
        .args(&store)
        .args(["workflow", "show", &run_id, "--json"])
        .json_ok();
    assert_eq!(shown["run"]["run_id"], run_id.as_str());
    assert_eq!(shown["run"]["status"], "completed");
    let calls = shown["calls"].as_array().expect("calls");
    assert_eq!(calls.len(), 4);
    for c in calls {
        assert_eq!(c["state"], "done", "{c}");
        assert!(
            c["task_id"].as_str().unwrap_or("").starts_with("task_"),
            "{c}"
        );
    }
    assert_eq!(calls[3]["description"], "the slow one");
    // A second resume runs nothing.
    let before = server.request_count();
    let again = resume();
    assert_eq!(again["result"], out["result"]);
    assert_eq!(server.request_count(), before);
}

/// `workflow run FILE` with `extra` arguments in a fresh home: (exit code, stdout, stderr).
fn run_script(script: &str, extra: &[&str]) -> (i32, String, String) {
    let home = tempfile::tempdir().expect("home");
    let agents = write_agent(home.path(), "worker", WORKER);
    let file = write(home.path(), "w.js", script);
    let out = subagents_in(home.path())
        .args(["workflow", "run"])
        .arg(&file)
        .args([
            "--model",
            "openai-compatible:m@http://127.0.0.1:9/v1",
            "--agents",
        ])
        .arg(&agents)
        .args(extra)
        .timeout(Duration::from_secs(120))
        .output()
        .expect("runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn hostile_scripts_end_with_clear_errors_within_their_limits() {
    let (code, _, err) = run_script("const a = 1;\nconst b = ;\n", &[]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("error: workflow.js:2: SyntaxError"), "{err}");

    // Each limit ends the script with exit 3, naming the limit.
    let limits: [(&str, &[&str], &str); 4] = [
        (
            "for (;;) {}",
            &["--max-steps", "50"],
            "workflow limit reached: max_steps=50",
        ),
        (
            "const a = []; for (;;) a.push('x'.repeat(65536) + a.length);",
            &["--max-memory", "4"],
            "max_memory=4194304 (the script ran out of memory)",
        ),
        (
            "const f = (n) => f(n + 1) + 1; f(0);",
            &[],
            "max_stack=1048576 (the script recursed too deeply)",
        ),
        (
            "for (let i = 0; i < 1e6; i++) agent('nobody', 'x').catch(() => {});",
            &["--max-agent-calls", "20"],
            "max_agent_calls=20 (call #20",
        ),
    ];
    for (script, flags, said) in limits {
        let (code, _, err) = run_script(script, flags);
        assert_eq!(code, 3, "{script}: {err}");
        assert!(err.contains(said), "{script}: {err}");
    }

    let (code, _, err) = run_script("\n\nreturn await agent('nobody', 'hi');", &[]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("workflow.js:3: Error: unknown subagent `nobody`; available agents:"),
        "{err}"
    );
    assert!(err.contains("subagents workflow resume wf_"), "{err}");

    let (code, out, err) = run_script("return Date.now();", &["--json"]);
    assert_eq!(code, 1, "{err}");
    let v: Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(v["status"], "failed");
    assert_eq!(v["error_kind"], "script");
    assert!(v["run_id"].as_str().unwrap().starts_with("wf_"));
    assert!(
        v["error"]
            .as_str()
            .unwrap()
            .contains("Date is not available"),
        "{v}"
    );
}

/// An MCP server (rmcp, streamable HTTP, in this process) whose tool `report` answers with
/// structured content.
mod mcp_report {
    use rmcp::model::{
        CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListToolsResult,
        PaginatedRequestParams, ServerCapabilities, ServerConfig,
    };
    use rmcp::service::RequestContext;
    use rmcp::{ErrorData, RoleServer, ServerHandler};
    use serde_json::json;

    #[derive(Clone)]
    pub(super) struct Report;

    impl ServerHandler for Report {
        fn get_info(&self) -> ServerConfig {
            ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
        }

        async fn list_tools(
            &self,
            _request: Option<PaginatedRequestParams>,
            _context: RequestContext<RoleServer>,
        ) -> Result<ListToolsResult, ErrorData> {
            Ok(crate::common::mcp_http::prompt_tool(
                "report",
                "Reports the answer as structured content.",
            ))
        }

        async fn call_tool(
            &self,
            _request: CallToolRequestParams,
            _context: RequestContext<RoleServer>,
        ) -> Result<CallToolResponse, ErrorData> {
            let mut r = CallToolResult::success(vec![ContentBlock::text("the answer is 2")]);
            r.structured_content = Some(json!({"answer": 2, "source": "mcp"}));
            Ok(r.into())
        }
    }

    /// Serves [`Report`] on `rt`; its URL.
    pub(super) fn start(rt: &tokio::runtime::Runtime) -> String {
        crate::common::mcp_http::serve(rt, Report)
    }
}

#[test]
fn typed_calls_reach_an_a2a_child_and_an_mcp_child() {
    let (rt, model) = common::scripted();
    // The served worker ends with its typed value through StructuredOutput.
    model.script().push_for_model(
        "worker-model",
        Reply::tool_calls(vec![(
            "StructuredOutput",
            json!({"answer": 40, "source": "a2a"}),
        )]),
    );
    let served_home = tempfile::tempdir().expect("served home");
    let (_served, worker_url) =
        common::serve_worker(&rt, &model, served_home.path(), WORKER, |_| {});
    let mcp_url = mcp_report::start(&rt);
    let home = tempfile::tempdir().expect("home");
    let script = write(
        home.path(),
        "typed.js",
        r#"const schema = {
  type: "object",
  properties: { answer: { type: "integer" }, source: { type: "string" } },
  required: ["answer", "source"],
};
const [remote, tool] = await parallel([
  () => agent("worker", "What is the answer?", { schema }),
  () => agent("reporter", "What is the answer?", { schema }),
]);
return { remote, tool, sum: remote.answer + tool.answer };
"#,
    );
    let out = subagents_in(home.path())
        .args(["workflow", "run"])
        .arg(&script)
        .args(["--json", "--a2a", &worker_url, "--mcp"])
        .arg(format!("{mcp_url}#tool=report&name=reporter"))
        .timeout(Duration::from_secs(120))
        .json_ok();
    assert_eq!(
        out["result"],
        json!({"remote": {"answer": 40, "source": "a2a"}, "tool": {"answer": 2, "source": "mcp"}, "sum": 42}),
        "{out}"
    );
    let kinds: Vec<&str> = out["usage"]["children"]
        .as_array()
        .expect("calls")
        .iter()
        .map(|c| c["kind"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(kinds, ["A2A", "MCP"], "{out}");
    // The schema reached the served agent (its final tool) and the A2A message (a data part).
    let req = model
        .last_request()
        .expect("the served agent asked its model");
    assert!(
        req.tool_names().contains(&"StructuredOutput".to_string()),
        "{:?}",
        req.tool_names()
    );
}

/// Peak resident memory (VmHWM, KiB) of a running process, polled until it ends.
fn run_measured(mut child: Child) -> (std::process::ExitStatus, u64) {
    let pid = child.id();
    let mut peak = 0u64;
    loop {
        if let Ok(s) = std::fs::read_to_string(format!("/proc/{pid}/status"))
            && let Some(kb) = s
                .lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|n| n.parse::<u64>().ok())
        {
            peak = peak.max(kb);
        }
        if let Some(status) = child.try_wait().expect("wait") {
            return (status, peak);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// 1,000 `agent()` calls under the concurrency cap (20), each a Markdown agent's model request
/// to the scripted server, journaled in SQLite. Prints wall time and peak RSS; no timing
/// assertion. `cargo test -p subagents-cli --all-features --test it -- --ignored
/// workflow::a_thousand_calls --nocapture` (docs/PERFORMANCE.md).
#[test]
#[ignore = "measurement: prints wall time and peak memory of a 1,000-call workflow"]
fn a_thousand_calls_complete_under_the_cap() {
    let (_rt, server) = common::scripted();
    // Each reply takes 50 ms, so calls overlap and the cap shows.
    server.set_fallback(Some(
        Reply::text("ok")
            .with_usage(20, 2)
            .with_delay(Duration::from_millis(50)),
    ));
    let model = server.openai_model("child-model");
    let home = tempfile::tempdir().expect("home");
    let agents = write_agent(home.path(), "worker", WORKER);
    let script = write(
        home.path(),
        "thousand.js",
        r#"const r = await parallel(Array.from({ length: 1000 }, (_, i) => () => agent("worker", "item " + i)));
return { calls: r.length, ok: r.filter((x) => x === "ok").length };
"#,
    );
    let started = Instant::now();
    let mut child = process_in(home.path())
        .args(["workflow", "run"])
        .arg(&script)
        .args(["--json", "--model", &model, "--agents"])
        .arg(&agents)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("starts");
    let stdout = child.stdout.take_out();
    let (status, peak_kib) = run_measured(child);
    let wall = started.elapsed();
    let out: Value = serde_json::from_str(&stdout.join().expect("stdout")).expect("JSON");
    assert!(status.success(), "{out}");
    assert_eq!(out["result"], json!({"calls": 1000, "ok": 1000}), "{out}");
    assert!(server.max_concurrent_requests() <= 20, "the cap holds");
    println!(
        "workflow of 1000 agent() calls: wall {:.2} s, peak RSS {} MiB, {} model requests, at most {} at once",
        wall.as_secs_f64(),
        peak_kib / 1024,
        server.request_count(),
        server.max_concurrent_requests()
    );
}

/// Reads a child's stdout on a thread (so the pipe never fills while we poll).
trait TakeOut {
    fn take_out(&mut self) -> std::thread::JoinHandle<String>;
}

impl TakeOut for Option<std::process::ChildStdout> {
    fn take_out(&mut self) -> std::thread::JoinHandle<String> {
        let mut pipe = self.take().expect("piped stdout");
        std::thread::spawn(move || {
            let mut s = String::new();
            std::io::Read::read_to_string(&mut pipe, &mut s).expect("read stdout");
            s
        })
    }
}

/// The main agent of `subagents run` has the `Workflow` tool beside `Task` (not with
/// `--main-tools Task`); its script's result comes back as the tool result, and stream-json
/// carries each call's events under the workflow's run id, keyed `#POSITION`.
#[test]
fn the_main_agent_runs_a_workflow_with_its_tool() {
    let (_rt, server, home) = common::scripted_in_temp();
    let config = common::child_model_config(home.path(), &server);
    let agents = write_agent(
        home.path(),
        "worker",
        "---\nname: worker\ndescription: Answers one question.\nmodel: child\ntools: Read\n---\nAnswer briefly.\n",
    );
    answer_by_prompt(&server, "child-model", 4);
    let script = server.script();
    script.push_for_model(
        "main-model",
        Reply::tool_calls(vec![(
            "Workflow",
            json!({"script": "const [a, b] = await parallel([() => agent('worker', 'alpha'), () => agent('worker', 'beta')]);\nreturn a + b + args.x;", "args": {"x": "!"}}),
        )]),
    );
    script.push_for_model("main-model", Reply::text("all done"));
    let lines = common::json_lines(&common::run_configured(
        home.path(),
        &config,
        &["run", "use a workflow", "--output-format", "stream-json"],
        &server,
        &agents,
    ));
    let main = server.requests_for("main-model");
    assert!(main[0].tool_names().contains(&"Workflow".to_string()));
    let result = common::last_tool_result(&main[1].body);
    assert!(result.starts_with("AB!\n\n[workflow wf_"), "{result}");
    assert!(result.contains("completed · 2 agent calls]"), "{result}");
    // The workflow's node, under main, and its two calls under it, keyed by position.
    let wf = lines
        .iter()
        .find(|l| l["agent"] == "workflow" && l["event"] == "started")
        .expect("the workflow's node started");
    assert_eq!(wf["parent_task_id"], "main");
    let run_id = wf["task_id"].as_str().expect("run id");
    let mut keyed: Vec<String> = lines
        .iter()
        .filter(|l| l["parent_task_id"] == run_id && l["event"] == "started")
        .map(|l| l["description"].as_str().unwrap_or("").to_string())
        .collect();
    keyed.sort();
    assert_eq!(keyed, ["#0 worker", "#1 worker"]);
    let last = lines.last().expect("result line");
    assert_eq!(last["type"], "result");
    assert_eq!(last["text"], "all done");

    // A lean main agent (`--main-tools Task`) is not offered it.
    server
        .script()
        .push_for_model("main-model", Reply::text("fine"));
    subagents_in(home.path())
        .arg("--config")
        .arg(&config)
        .args(["run", "hi", "--main-tools", "Task", "--model"])
        .arg(server.openai_model("main-model"))
        .assert()
        .success();
    let lean = server.last_request().expect("request");
    assert!(!lean.tool_names().contains(&"Workflow".to_string()));
}

/// An A2A call in flight when the workflow's process is killed is re-attached on resume: the
/// served agent's task (still working at the peer) is followed to its end by its id, with no
/// second message to the peer and no second run of the served agent.
#[test]
fn an_a2a_call_in_flight_is_re_attached_by_its_task_id() {
    let (rt, model) = common::scripted();
    model.script().push_for_model(
        "worker-model",
        Reply::text("remote answer").with_delay(Duration::from_secs(4)),
    );
    let served_home = tempfile::tempdir().expect("served home");
    let (_served, worker_url) =
        common::serve_worker(&rt, &model, served_home.path(), WORKER, |_| {});
    let home = tempfile::tempdir().expect("home");
    let script = write(
        home.path(),
        "remote.js",
        "return await agent('worker', 'a long question');",
    );
    // Killed once the call's remote task is journaled (its session names the task).
    let run_id = run_killed_once_journaled(home.path(), &script, &["--a2a", &worker_url], "a2a:");
    assert_eq!(model.request_count(), 1);
    let out = subagents_in(home.path())
        .args([
            "workflow",
            "resume",
            &run_id,
            "--json",
            "--a2a",
            &worker_url,
        ])
        .timeout(Duration::from_secs(60))
        .json_ok();
    assert_eq!(out["result"], "remote answer", "{out}");
    assert_eq!(out["calls"]["rerun"], 1, "{out}");
    assert_eq!(
        model.request_count(),
        1,
        "the served agent ran once: the resume followed its task"
    );
    // The peer got one message: the resume sent nothing to its working task.
    let tasks = rt.block_on(common::a2a_post(
        &worker_url,
        &json!({"jsonrpc": "2.0", "id": 1, "method": "ListTasks", "params": {"historyLength": 50}}),
    ));
    let tasks = tasks["result"]["tasks"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(tasks.len(), 1, "{tasks:?}");
    let user_messages: Vec<&Value> = tasks[0]["history"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["role"] == "ROLE_USER")
        .collect();
    assert_eq!(user_messages.len(), 1, "{:?}", tasks[0]["history"]);
}

/// An MCP call the server runs as a task, in flight when the workflow's process is killed, is
/// re-attached on resume by its task handle: no second `tools/call`.
#[test]
fn an_mcp_call_in_flight_is_re_attached_by_its_task_handle() {
    let rt = rt();
    let (server, url) = crate::mcp_restart::start_server(&rt);
    let home = tempfile::tempdir().expect("home");
    let script = write(
        home.path(),
        "job.js",
        "return await agent('job', 'the work');",
    );
    let spec = format!("{url}#tool=job");
    let run_id = run_killed_once_journaled(home.path(), &script, &["--mcp", &spec], "mcp-task:");
    server.release.send_replace(true);
    let out = subagents_in(home.path())
        .args(["workflow", "resume", &run_id, "--json", "--mcp", &spec])
        .timeout(Duration::from_secs(60))
        .json_ok();
    assert_eq!(out["result"], "job done: the work", "{out}");
    assert_eq!(out["calls"]["rerun"], 1, "{out}");
    assert_eq!(
        server.seen.calls.load(Ordering::SeqCst),
        1,
        "one tools/call: the resume followed the task"
    );
}

/// Starts `workflow run SCRIPT ARGS...` in `home` and kills it (SIGKILL) once its first call is
/// journaled with a session starting with `session_prefix` (bounded: 60 s); returns the run id.
fn run_killed_once_journaled(
    home: &Path,
    script: &Path,
    args: &[&str],
    session_prefix: &str,
) -> String {
    let mut first = process_in(home)
        .args(["workflow", "run"])
        .arg(script)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("workflow run starts");
    let deadline = Instant::now() + Duration::from_secs(60);
    let run_id = loop {
        assert!(
            Instant::now() < deadline,
            "no call with a `{session_prefix}` session was ever journaled"
        );
        std::thread::sleep(Duration::from_millis(100));
        let out = subagents_in(home)
            .args(["workflow", "list", "--json"])
            .output()
            .expect("list");
        let Ok(list) = serde_json::from_slice::<Value>(&out.stdout) else {
            continue;
        };
        let Some(id) = list[0]["run_id"].as_str() else {
            continue;
        };
        let shown = subagents_in(home)
            .args(["workflow", "show", id, "--json"])
            .output()
            .expect("show");
        let shown: Value = serde_json::from_slice(&shown.stdout).unwrap_or(Value::Null);
        if shown["calls"][0]["session_id"]
            .as_str()
            .is_some_and(|s| s.starts_with(session_prefix))
        {
            break id.to_string();
        }
    };
    first.kill().expect("SIGKILL");
    let _ = first.wait();
    run_id
}
