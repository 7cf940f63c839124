//! Nested streaming (issue 28 item 4) through the `subagents` binary over real HTTP with the
//! scripted model server: every child's text deltas, tool calls and results reach the root's
//! progress stream keyed by task id and parent id, at every depth, and
//! `--output-format stream-json` prints them one JSON object per line.

use crate::common;

use std::path::Path;

use common::{subagents_in, write_agent};
use serde_json::Value;
use subagent_testkit::{Reply, ScriptedModelServer};

/// `a` → `b` → `c`: two delegating agents and a leaf that reads a file.
fn chain(root: &Path) -> std::path::PathBuf {
    for (name, next) in [("a", "b"), ("b", "c")] {
        write_agent(
            root,
            name,
            &format!(
                "---\nname: {name}\ndescription: Delegates to {next}.\ntools: Task\n---\nDelegate to {next}.\n"
            ),
        );
    }
    write_agent(
        root,
        "c",
        "---\nname: c\ndescription: Reads a note.\ntools: Read\n---\nRead the note.\n",
    )
}

/// The lines of a stream-json stdout, each parsed (every line must be one JSON object).
fn lines(stdout: &[u8]) -> Vec<Value> {
    common::json_lines(&String::from_utf8_lossy(stdout))
}

/// The progress events of `agent`.
fn of<'a>(events: &'a [Value], agent: &str) -> Vec<&'a Value> {
    events
        .iter()
        .filter(|e| e["type"] == "progress" && e["agent"] == agent)
        .collect()
}

/// Asserts that the progress events of `who` include each kind of `kinds`.
#[track_caller]
fn has_events(events: &[&Value], who: &str, kinds: &[&str]) {
    let seen: Vec<&str> = events.iter().filter_map(|e| e["event"].as_str()).collect();
    for k in kinds {
        assert!(seen.contains(k), "{who} has no {k}: {seen:?}");
    }
}

/// Writes `ROOT/note.txt` (it says DEEP-ANSWER-7) and the chain a → b → c; the note's path and
/// the agents directory.
fn note_and_chain(root: &Path) -> (std::path::PathBuf, std::path::PathBuf) {
    let note = root.join("note.txt");
    std::fs::write(&note, "DEEP-ANSWER-7\n").expect("note");
    (note, chain(root))
}

/// The text deltas of `events`, joined.
fn deltas(events: &[&Value]) -> String {
    events
        .iter()
        .filter(|e| e["event"] == "text_delta")
        .filter_map(|e| e["text"].as_str())
        .collect()
}

/// Pushes the replies of main → a → b → c, where c calls Read on `note` and then writes a
/// two-line answer.
fn script(server: &ScriptedModelServer, note: &Path) {
    server.push(Reply::task_call("a", "go"));
    server.push(Reply::task_call("b", "go"));
    server.push(Reply::task_call("c", "go"));
    server.push(Reply::text_and_tool_calls(
        "Reading the note",
        vec![(
            "Read",
            serde_json::json!({"file_path": note.to_string_lossy()}),
        )],
    ));
    server.push(Reply::text("The note says:\nDEEP-ANSWER-7"));
    server.push(Reply::text("b: DEEP-ANSWER-7"));
    server.push(Reply::text("a: DEEP-ANSWER-7"));
    server.push(Reply::text("Final: DEEP-ANSWER-7"));
}

#[test]
fn stream_json_carries_every_depths_deltas_tool_calls_and_results_keyed_by_task_and_parent() {
    let (_rt, server, dir) = common::scripted_in_temp();
    let root = dir.path();
    let (note, agents) = note_and_chain(root);
    script(&server, &note);
    let out = subagents_in(root)
        .args([
            "run",
            "What does the note say?",
            "--output-format",
            "stream-json",
        ])
        .args(["--model", &server.openai_model("m"), "--agents"])
        .arg(&agents)
        .assert()
        .success();
    let events = lines(&out.get_output().stdout);

    // The last line is the outcome, as --json prints it.
    let last = events.last().expect("lines");
    assert_eq!(last["type"], "result", "{last}");
    assert_eq!(last["text"], "Final: DEEP-ANSWER-7", "{last}");
    assert_eq!(last["status"], "completed", "{last}");
    assert_eq!(
        events.iter().filter(|e| e["type"] == "result").count(),
        1,
        "one result line"
    );

    // Each run is keyed by its task id and placed under its parent's, at its depth.
    let task_of = |agent: &str, depth: u64| -> (String, Option<String>) {
        let evs = of(&events, agent);
        assert!(!evs.is_empty(), "no events of {agent}: {events:#?}");
        for e in &evs {
            assert_eq!(e["depth"], depth, "{agent}: {e}");
        }
        let id = evs[0]["task_id"].as_str().expect("task id").to_string();
        assert!(evs.iter().all(|e| e["task_id"] == id.as_str()), "{agent}");
        (id, evs[0]["parent_task_id"].as_str().map(str::to_string))
    };
    let (main_id, main_parent) = task_of("main", 0);
    let (a_id, a_parent) = task_of("a", 1);
    let (b_id, b_parent) = task_of("b", 2);
    let (c_id, c_parent) = task_of("c", 3);
    assert_eq!(main_parent, None);
    assert_eq!(a_parent.as_deref(), Some(main_id.as_str()));
    assert_eq!(b_parent.as_deref(), Some(a_id.as_str()));
    assert_eq!(c_parent.as_deref(), Some(b_id.as_str()));
    assert_ne!(b_id, c_id);

    // The deepest child's text deltas, tool call and tool result reach the root.
    let c = of(&events, "c");
    has_events(
        &c,
        "c",
        &[
            "started",
            "turn",
            "text_delta",
            "tool_call",
            "tool_result",
            "usage",
            "finished",
        ],
    );
    let text = deltas(&c);
    assert_eq!(text, "Reading the noteThe note says:\nDEEP-ANSWER-7");
    let call = c.iter().find(|e| e["event"] == "tool_call").expect("call");
    assert_eq!(call["name"], "Read");
    assert_eq!(call["input"]["file_path"], note.to_string_lossy().as_ref());
    let result = c.iter().find(|e| e["event"] == "tool_result").expect("res");
    assert_eq!(result["name"], "Read");
    assert_eq!(result["is_error"], false);
    assert!(
        result["preview"]
            .as_str()
            .is_some_and(|p| p.contains("DEEP-ANSWER-7")),
        "{result}"
    );
    assert_eq!(result["id"], call["id"]);
    // The middle runs' deltas too, and the main agent's own answer.
    for (agent, said) in [("b", "b: DEEP-ANSWER-7"), ("main", "Final: DEEP-ANSWER-7")] {
        let t = deltas(&of(&events, agent));
        assert_eq!(t, said, "{agent}");
    }
    // c finished before b, b before a: the stream is in order.
    let pos = |agent: &str| {
        events
            .iter()
            .position(|e| e["agent"] == agent && e["event"] == "finished")
            .expect("finished")
    };
    assert!(pos("c") < pos("b") && pos("b") < pos("a") && pos("a") < pos("main"));
    // The models were asked to stream (so the deltas are real).
    assert!(server.requests().iter().all(|r| r.is_stream()));
    // Nothing but JSON lines on stdout; no live progress lines on stderr.
    let stderr = String::from_utf8_lossy(&out.get_output().stderr);
    assert!(!stderr.contains("started"), "{stderr}");
}

#[test]
fn task_streams_json_too_and_json_conflicts_with_output_format() {
    let (_rt, server, dir) = common::scripted_in_temp();
    let root = dir.path();
    let (_, agents) = note_and_chain(root);
    // No main agent: `task a` starts the tree at a.
    server.push(Reply::task_call("b", "go"));
    server.push(Reply::task_call("c", "go"));
    server.push(Reply::text("c-said"));
    server.push(Reply::text("b-said"));
    server.push(Reply::text("a-said"));
    let out = subagents_in(root)
        .args(["task", "a", "go", "--output-format", "stream-json"])
        .args(["--model", &server.openai_model("m"), "--agents"])
        .arg(&agents)
        .assert()
        .success();
    let events = lines(&out.get_output().stdout);
    assert_eq!(events.last().map(|e| &e["type"]), Some(&"result".into()));
    assert_eq!(events.last().map(|e| &e["text"]), Some(&"a-said".into()));
    let c_deltas: Vec<&Value> = events
        .iter()
        .filter(|e| e["agent"] == "c" && e["event"] == "text_delta")
        .collect();
    let c_delta = c_deltas.first().expect("c's delta");
    assert_eq!(c_delta["depth"], 3, "{c_delta}");
    let said: String = c_deltas.iter().filter_map(|e| e["text"].as_str()).collect();
    assert_eq!(said, "c-said");
    let b = events.iter().find(|e| e["agent"] == "b").expect("b");
    assert_eq!(c_delta["parent_task_id"], b["task_id"]);

    subagents_in(root)
        .args([
            "task",
            "a",
            "go",
            "--json",
            "--output-format",
            "stream-json",
        ])
        .assert()
        .code(2);
}

/// main (here) → coordinator (a `subagents serve` process, over A2A streaming) → leaf (in
/// the served process): the remote leaf's deltas, tool call and result reach this run's
/// stream-json under the remote coordinator's task, through the A2A progress extension.
#[test]
fn a_remote_childs_own_children_stream_through_a2a_keyed_under_the_calling_task() {
    let (rt, server, served) = common::scripted_in_temp();
    let note = served.path().join("remote-note.txt");
    std::fs::write(&note, "REMOTE-LEAF-9\n").expect("note");
    // The served process's replies (its own model), in order: coordinator, leaf, leaf,
    // coordinator.
    let remote = |r: Reply| server.push_for_model("served-model", r);
    remote(Reply::task_call("leaf", "read it"));
    remote(Reply::text_and_tool_calls(
        "leaf reading",
        vec![(
            "Read",
            serde_json::json!({"file_path": note.to_string_lossy()}),
        )],
    ));
    remote(Reply::text("REMOTE-LEAF-9"));
    remote(Reply::text("coordinator: REMOTE-LEAF-9"));
    server.push(Reply::task_call("coordinator", "ask"));
    server.push(Reply::text("Final: REMOTE-LEAF-9"));
    let serve = common::spawn_serve(&rt, served.path(), |cmd| {
        cmd.args(["--store", "memory"])
            .args(["--model", &server.openai_model("served-model")])
            .arg("--agents")
            .arg(common::team());
    });

    let home = tempfile::tempdir().expect("tmp");
    let out = subagents_in(home.path())
        .args([
            "run",
            "go",
            "--output-format",
            "stream-json",
            "--store",
            "memory",
        ])
        .args(["--a2a", &format!("{}/coordinator", serve.base)])
        .args(["--model", &server.openai_model("main-model")])
        .assert()
        .success();
    let events = lines(&out.get_output().stdout);
    let last = events.last().expect("lines");
    assert_eq!(last["text"], "Final: REMOTE-LEAF-9", "{last}");

    let coordinator = of(&events, "coordinator");
    let started = coordinator
        .iter()
        .find(|e| e["event"] == "started")
        .expect("the remote child starts");
    let coord_id = started["task_id"].as_str().expect("id").to_string();
    assert_eq!(started["depth"], 1);
    assert_eq!(started["parent_task_id"], "main");
    // The remote coordinator's own tool call (its Task) and its text, streamed as its model
    // wrote it, on its node; the artifact does not repeat the text.
    assert!(
        coordinator.iter().any(|e| e["event"] == "tool_call"
            && e["name"] == "Task"
            && e["task_id"] == coord_id.as_str()),
        "{coordinator:#?}"
    );
    let said = deltas(&coordinator);
    assert_eq!(said, "coordinator: REMOTE-LEAF-9");

    // The remote leaf: its own node under the coordinator's task, one level deeper.
    let leaf = of(&events, "leaf");
    has_events(
        &leaf,
        "the remote leaf",
        &[
            "started",
            "text_delta",
            "tool_call",
            "tool_result",
            "finished",
        ],
    );
    for e in &leaf {
        assert_eq!(e["depth"], 2, "{e}");
        assert_eq!(e["parent_task_id"], coord_id.as_str(), "{e}");
        let id = e["task_id"].as_str().expect("id");
        assert!(
            id.starts_with(&format!("{coord_id}/")),
            "namespaced under the calling task: {id}"
        );
    }
    let result = leaf
        .iter()
        .find(|e| e["event"] == "tool_result")
        .expect("r");
    assert_eq!(result["name"], "Read");
    assert!(
        result["preview"]
            .as_str()
            .is_some_and(|p| p.contains("REMOTE-LEAF-9")),
        "{result}"
    );
    let leaf_text = deltas(&leaf);
    assert_eq!(leaf_text, "leaf readingREMOTE-LEAF-9");
    drop(serve);
}
