//! Issue 28's A2A items against the official Python A2A SDK, through real processes: the agent
//! `py-delegate` (`crates/subagent-a2a/tests/py/delegation_v1.py` on a2a-sdk 1.x) is the
//! child, `subagents run` the parent, its model the scripted model server over HTTP.
//!
//! - steering: a message sent to the running Python child answers its next question as the
//!   follow-up on the same task and context; one sent while it works (and never asks) is not
//!   added to its task, and is reported unread;
//! - typed results: the schema travels as a data part the SDK parses, the child's data part is
//!   the value, an invalid one is sent back with the errors (bounded), and the run fails
//!   clearly when the child never gives a valid one;
//! - nested streaming: root → Markdown agent → Python child, the child's status updates and
//!   artifact chunks in `--output-format stream-json`, keyed by its task and parent ids.
//!
//! The venv comes from `.ci/setup-python.sh` (`target/py/a2a-1x`, or the interpreter named by
//! `SUBAGENTS_A2A_PY_1X`). The tests are `#[ignore]`d; `.ci/run` runs them with
//! `-- --ignored`, where a missing venv fails naming what to run.

use crate::common;

use std::path::Path;
use std::time::Duration;

use common::{report_schema, subagents_in, write_agent};
use serde_json::{Value, json};
use subagent_testkit::{Reply, ScriptedModelServer};

/// The Python peers of `subagent-a2a`'s interop tests: venvs, scripts, servers.
#[path = "../../../subagent-a2a/tests/it/python/mod.rs"]
mod python;

use python::PyServer;

/// The agent's name on its card.
const AGENT: &str = "py-delegate";

/// The Python agent on a free port, with its gates in `gates`.
fn start_py(rt: &tokio::runtime::Runtime, gates: &Path) -> PyServer {
    let gates = gates.to_string_lossy().into_owned();
    rt.block_on(PyServer::start(
        &python::interpreter(python::SDK_1X),
        "py/delegation_v1.py",
        python::free_port(),
        &["--gate-dir", &gates],
    ))
}

/// What the Python agent logged for each message it received (`RECEIVED {json}`), in order.
fn received(server: &PyServer) -> Vec<Value> {
    server
        .stderr()
        .lines()
        .filter_map(|l| l.strip_prefix("RECEIVED "))
        .map(|j| serde_json::from_str(j).unwrap_or_else(|e| panic!("bad log line ({e}): {j}")))
        .collect()
}

/// The text parts of a logged message, joined.
fn text_of(record: &Value) -> String {
    record["message"]["parts"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| p["text"].as_str())
        .collect()
}

/// `subagents run go` with `main-model` of `model` as the main agent and the Python agent at
/// `url` as an A2A agent (plus `extra` arguments); its stdout once it succeeded (120 s at most).
fn run(home: &Path, model: &ScriptedModelServer, url: &str, extra: &[&str]) -> String {
    let out = subagents_in(home)
        .args(["run", "go", "--store", "memory", "--a2a", url])
        .args(["--model", &model.openai_model("main-model")])
        .args(extra)
        .timeout(Duration::from_secs(120))
        .assert()
        .success();
    String::from_utf8_lossy(&out.get_output().stdout).into_owned()
}

/// The first `task_<hex>` id in the tool results of a request body.
fn task_id_in(body: &Value) -> Option<String> {
    body["messages"]
        .as_array()?
        .iter()
        .filter(|m| m["role"] == "tool")
        .filter_map(|m| m["content"].as_str())
        .find_map(|text| common::word(text, "task_"))
}

/// The last tool result of a request body.
fn last_result(body: &Value) -> String {
    common::last_tool_result(body)
}

/// Scripts the main agent: start the Python agent in the background on `prompt` (name `py`),
/// send it `message`, then (once told the message was delivered) open `gate` and wait for the
/// task's result, then answer `MAIN-DONE`.
fn steer_script(model: &ScriptedModelServer, gates: &Path, prompt: &str, message: &str) {
    model.push(Reply::tool_calls(vec![(
        "Task",
        json!({"description": "delegate", "prompt": prompt, "subagent_type": AGENT,
               "run_in_background": true, "name": "py"}),
    )]));
    model.push(Reply::tool_calls(vec![(
        "SendMessage",
        json!({"to": "py", "message": message}),
    )]));
    let gate = gates.join(prompt.rsplit(' ').next().unwrap_or_default());
    model.script().push_dynamic(None, move |body| {
        // The child is held before its gate until the message was sent.
        std::fs::write(&gate, "open").expect("open the gate");
        let id = task_id_in(body).expect("the background task's id");
        Reply::tool_calls(vec![(
            "TaskOutput",
            json!({"task_id": id, "timeout_ms": 60000}),
        )])
    });
    model.push(Reply::text("MAIN-DONE"));
}

/// The requests the main agent's model got, as bodies.
fn bodies(model: &ScriptedModelServer) -> Vec<Value> {
    model.requests().into_iter().map(|r| r.body).collect()
}

/// A scripted model for the main agent and the Python agent, its gates in `home`.
struct Case {
    py: PyServer,
    model: ScriptedModelServer,
    home: tempfile::TempDir,
    _rt: tokio::runtime::Runtime,
}

impl Case {
    fn new() -> Self {
        let (rt, model, home) = common::scripted_in_temp();
        let py = start_py(&rt, home.path());
        Self {
            py,
            model,
            home,
            _rt: rt,
        }
    }

    /// [`run`] with `extra`, which answered `MAIN-DONE`; the main model's requests (`turns` of
    /// them when given).
    fn run_done(&self, extra: &[&str], turns: Option<usize>) -> Vec<Value> {
        let stdout = run(self.home.path(), &self.model, &self.py.base, extra);
        assert!(stdout.contains("MAIN-DONE"), "{stdout}");
        let reqs = bodies(&self.model);
        if let Some(n) = turns {
            assert_eq!(reqs.len(), n, "{reqs:#?}");
        }
        reqs
    }

    /// [`steer_script`] with `prompt` and `steer`, run: the main model's four requests, the
    /// third told the message was delivered and `told` (how the child takes it).
    fn steered(&self, prompt: &str, steer: &str, told: &str) -> Vec<Value> {
        steer_script(&self.model, self.home.path(), prompt, steer);
        let reqs = self.run_done(&[], Some(4));
        let receipt = last_result(&reqs[2]);
        assert!(receipt.starts_with("Message delivered"), "{receipt}");
        assert!(receipt.contains(told), "{receipt}");
        reqs
    }
}

#[test]
#[ignore = "needs the official Python A2A SDK venvs: bash .ci/setup-python.sh, then cargo test --workspace --all-features -- --ignored (CI does)"]
fn send_message_answers_the_python_childs_question_on_the_same_task() {
    let case = Case::new();
    let py = &case.py;
    let steer = "STEER-PLAN-B: follow plan B";
    // The sender was told how an A2A child takes it.
    let reqs = case.steered(
        "ask gate-ask",
        steer,
        "the remote A2A agent gets it as the follow-up message on the same task when it next \
         asks for input",
    );
    // The Python agent got it as the follow-up on the task that asked, in its context.
    let got = received(py);
    assert_eq!(got.len(), 2, "{got:#?}");
    let (first, follow_up) = (&got[0], &got[1]);
    assert_eq!(text_of(first), "ask gate-ask");
    assert_eq!(first["state"], Value::Null, "a new task: {first}");
    assert_eq!(text_of(follow_up), steer);
    assert_eq!(
        follow_up["state"], "TASK_STATE_INPUT_REQUIRED",
        "{follow_up}"
    );
    assert_eq!(follow_up["task_id"], first["task_id"], "{got:#?}");
    assert_eq!(follow_up["context_id"], first["context_id"], "{got:#?}");
    assert_eq!(
        follow_up["message"]["taskId"], first["task_id"],
        "{follow_up}"
    );
    assert_eq!(follow_up["message"]["role"], "ROLE_USER", "{follow_up}");
    // The result reflects it, and nothing is left unread.
    let output = last_result(&reqs[3]);
    assert!(output.contains(&format!("following: {steer}")), "{output}");
    assert!(output.contains("completed"), "{output}");
    assert!(!output.contains("Not read"), "{output}");
}

/// The Python child asks at once; its question waits in `TaskOutput` (the background task's
/// approver); a `SendMessage` then is the input it asks for: the follow-up on that task.
#[test]
#[ignore = "needs the official Python A2A SDK venvs: bash .ci/setup-python.sh, then cargo test --workspace --all-features -- --ignored (CI does)"]
fn send_message_answers_a_question_the_python_child_is_already_waiting_on() {
    let case = Case::new();
    let (model, py) = (&case.model, &case.py);
    let steer = "STEER-ANSWER: plan C";
    model.push(Reply::tool_calls(vec![(
        "Task",
        json!({"description": "delegate", "prompt": "ask-now", "subagent_type": AGENT,
               "run_in_background": true, "name": "py"}),
    )]));
    let task_id = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let keep = task_id.clone();
    model.script().push_dynamic(None, move |body| {
        let id = task_id_in(body).expect("the background task's id");
        keep.lock().expect("id").clone_from(&id);
        Reply::tool_calls(vec![(
            "TaskOutput",
            json!({"task_id": id, "timeout_ms": 60000}),
        )])
    });
    model.push(Reply::tool_calls(vec![(
        "SendMessage",
        json!({"to": "py", "message": steer}),
    )]));
    // Then reads the task until it completed (the run takes the message at once, but a read
    // right after the send may come first).
    for _ in 0..250 {
        let task_id = task_id.clone();
        model.script().push_dynamic(None, move |body| {
            if last_result(body).contains("status: completed") {
                return Reply::text("MAIN-DONE");
            }
            let id = task_id.lock().expect("id").clone();
            Reply::tool_calls(vec![("TaskOutput", json!({"task_id": id, "block": false}))])
                .with_delay(Duration::from_millis(20))
        });
    }
    model.push(Reply::text("GAVE-UP: still waiting"));

    let reqs = case.run_done(&["--max-turns", "300", "--on-exit", "cancel"], None);
    // The question waited for an answer when the message was sent.
    let waiting = last_result(&reqs[2]);
    common::assert_has(
        &waiting,
        &[
            "status: waiting_for_approval",
            "Which plan should I follow?",
        ],
    );
    let output = reqs.last().map(last_result).unwrap_or_default();
    assert!(
        output.contains(&format!("following: {steer}")),
        "the message did not answer the waiting question: {output}"
    );
    assert!(output.contains("status: completed"), "{output}");
    let got = received(py);
    assert_eq!(got.len(), 2, "{got:#?}");
    assert_eq!(text_of(&got[1]), steer);
    assert_eq!(got[1]["state"], "TASK_STATE_INPUT_REQUIRED", "{got:#?}");
    assert_eq!(got[1]["task_id"], got[0]["task_id"], "{got:#?}");
    assert_eq!(got[1]["context_id"], got[0]["context_id"], "{got:#?}");
}

#[test]
#[ignore = "needs the official Python A2A SDK venvs: bash .ci/setup-python.sh, then cargo test --workspace --all-features -- --ignored (CI does)"]
fn send_message_to_a_working_python_child_is_not_added_to_its_task() {
    let case = Case::new();
    let py = &case.py;
    let steer = "STEER-TOO-LATE: stop now";
    // The sender is told at once that A2A cannot add to a task while it works.
    let reqs = case.steered(
        "work gate-work",
        steer,
        "(A2A cannot add to a task while it works)",
    );
    // The task never asked, so the Python agent never saw the message ...
    let got = received(py);
    assert_eq!(got.len(), 1, "{got:#?}");
    assert_eq!(text_of(&got[0]), "work gate-work");
    // ... and its result says the message was not read.
    let output = last_result(&reqs[3]);
    assert!(output.contains("worked without asking"), "{output}");
    assert!(output.contains("Not read: 1 message"), "{output}");
    assert!(output.contains(steer), "{output}");
}

#[test]
#[ignore = "needs the official Python A2A SDK venvs: bash .ci/setup-python.sh, then cargo test --workspace --all-features -- --ignored (CI does)"]
fn typed_results_from_a_python_child_are_validated_and_fed_back() {
    let case = Case::new();
    let (model, py) = (&case.model, &case.py);
    for mode in ["valid", "bad-once", "never"] {
        model.push(Reply::tool_calls(vec![(
            "Task",
            json!({"description": "typed", "prompt": format!("typed {mode}"),
                   "subagent_type": AGENT, "output_schema": report_schema()}),
        )]));
    }
    model.push(Reply::text("MAIN-DONE"));

    let reqs = case.run_done(&[], Some(4));

    // The value of the child's data part, checked, is the Task result (the SDK sends JSON
    // numbers as doubles: 42.0 is an integer under JSON Schema).
    let value_of = |result: &str| -> Value {
        let json = result.lines().next().unwrap_or_default();
        serde_json::from_str(json).unwrap_or_else(|e| panic!("not JSON ({e}): {result}"))
    };
    for req in &reqs[1..3] {
        let v = value_of(&last_result(req));
        assert_eq!(v["answer"].as_f64(), Some(42.0), "{v}");
        assert_eq!(v["source"], "py", "{v}");
    }
    // The child that never answers JSON fails the call after the retries, saying why.
    let failed = last_result(&reqs[3]);
    assert!(failed.contains("invalid output"), "{failed}");
    assert!(failed.contains("after 3 attempts"), "{failed}");
    assert!(failed.contains("not a JSON value"), "{failed}");

    let got = received(py);
    assert_eq!(got.len(), 1 + 2 + 3, "{got:#?}");
    // Every request, first or retry, carried the schema as a data part the SDK parsed, and
    // accepted JSON back.
    for r in &got {
        let parts = r["message"]["parts"].as_array().expect("parts");
        assert_eq!(parts.len(), 2, "{r}");
        assert!(parts[0]["text"].is_string(), "{r}");
        assert_eq!(
            parts[1],
            json!({"data": {"output_schema": report_schema()}}),
            "{r}"
        );
        let modes = &r["configuration"]["acceptedOutputModes"];
        assert!(
            modes
                .as_array()
                .is_some_and(|m| m.contains(&json!("application/json"))),
            "{r}"
        );
    }
    assert_eq!(text_of(&got[0]), "typed valid");
    // bad-once: the retry is a new message in the same context with the validation error.
    let (bad, retry) = (&got[1], &got[2]);
    assert_eq!(text_of(bad), "typed bad-once");
    assert_eq!(retry["context_id"], bad["context_id"], "{got:#?}");
    let feedback = text_of(retry);
    assert!(
        feedback.starts_with("Your result is not valid under the output schema:"),
        "{feedback}"
    );
    assert!(feedback.contains("/answer"), "names the place: {feedback}");
    assert!(
        feedback.contains("forty-two"),
        "names the value: {feedback}"
    );
    // never: the first answer and two retries, all in one context.
    let never = &got[3..];
    assert_eq!(text_of(&never[0]), "typed never");
    for r in &never[1..] {
        assert_eq!(r["context_id"], never[0]["context_id"], "{never:#?}");
        assert!(text_of(r).contains("not a JSON value"), "{r}");
    }
}

#[test]
#[ignore = "needs the official Python A2A SDK venvs: bash .ci/setup-python.sh, then cargo test --workspace --all-features -- --ignored (CI does)"]
fn stream_json_carries_a_python_grandchilds_updates_keyed_by_task_and_parent() {
    let case = Case::new();
    let (model, home, py) = (&case.model, &case.home, &case.py);
    let agents = write_agent(
        home.path(),
        "relay",
        "---\nname: relay\ndescription: Relays to the Python agent.\ntools: Task\n---\nRelay.\n",
    );
    // main → relay → py-delegate, one model for both local agents.
    model.push(Reply::task_call("relay", "get the news"));
    model.push(Reply::task_call(AGENT, "stream the news"));
    model.push(Reply::text("relay: done"));
    model.push(Reply::text("MAIN-DONE"));

    let agents = agents.to_string_lossy().into_owned();
    let stdout = run(
        home.path(),
        model,
        &py.base,
        &["--agents", &agents, "--output-format", "stream-json"],
    );
    let events = common::json_lines(&stdout);
    let last = events.last().expect("lines");
    assert_eq!(last["type"], "result", "{last}");
    assert_eq!(last["text"], "MAIN-DONE", "{last}");

    let of = |agent: &str| -> Vec<&Value> {
        events
            .iter()
            .filter(|e| e["type"] == "progress" && e["agent"] == agent)
            .collect()
    };
    let relay = of("relay");
    let relay_id = relay
        .first()
        .and_then(|e| e["task_id"].as_str())
        .expect("relay's task id");
    let child = of(AGENT);
    assert!(
        !child.is_empty(),
        "no events of the Python child: {events:#?}"
    );
    // Keyed by its own task id, under relay's, two deep.
    let child_id = child[0]["task_id"].as_str().expect("task id");
    assert_ne!(child_id, relay_id);
    for e in &child {
        assert_eq!(e["task_id"], child_id, "{e}");
        assert_eq!(e["parent_task_id"], relay_id, "{e}");
        assert_eq!(e["depth"], 2, "{e}");
    }
    // Its status updates and artifact chunks, in the order the SDK sent them.
    let seen: Vec<String> = child
        .iter()
        .filter_map(|e| match e["event"].as_str() {
            Some("status") => e["message"]
                .as_str()
                .filter(|m| m.starts_with("phase "))
                .map(str::to_string),
            Some("text_delta") => e["text"].as_str().map(|t| format!("text {t}")),
            _ => None,
        })
        .collect();
    assert_eq!(
        seen,
        [
            "phase 1",
            "text chunk-1 ",
            "phase 2",
            "text chunk-2 ",
            "phase 3",
            "text chunk-3 "
        ],
        "{child:#?}"
    );
    let kinds: Vec<&str> = child.iter().filter_map(|e| e["event"].as_str()).collect();
    assert_eq!(kinds.first(), Some(&"started"), "{kinds:?}");
    assert_eq!(kinds.last(), Some(&"finished"), "{kinds:?}");
    // The child finished before relay, relay before main.
    let finished = |agent: &str| {
        events
            .iter()
            .position(|e| e["agent"] == agent && e["event"] == "finished")
            .unwrap_or_else(|| panic!("{agent} never finished"))
    };
    assert!(finished(AGENT) < finished("relay") && finished("relay") < finished("main"));
    assert_eq!(received(py).len(), 1);
}
