//! Steering running children (issue 28, `SendMessage`) through `subagents run`, over real HTTP
//! with the scripted model server, two deep: the main agent starts `coordinator` in the
//! background and sends it a message; the coordinator starts `worker` in the background and
//! sends it one. Each child reads its message at its next turn boundary.

use crate::common;

use std::time::Duration;

use serde_json::{Value, json};
use subagent_testkit::{Reply, Script};

/// The first `task_<hex>` id in the tool results of a request body.
fn task_id_in(body: &Value) -> Option<String> {
    let messages = body["messages"].as_array()?;
    messages
        .iter()
        .filter(|m| m["role"] == "tool")
        .filter_map(|m| m["content"].as_str())
        .find_map(|text| {
            let start = text.find("task_")?;
            let id: String = text[start..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            Some(id)
        })
}

/// True when a message of the body (of any role) contains `needle`.
fn has(body: &Value, needle: &str) -> bool {
    body["messages"].as_array().is_some_and(|m| {
        m.iter()
            .any(|m| m["content"].as_str().is_some_and(|c| c.contains(needle)))
    })
}

/// The user messages of a request that carry messages sent while the agent ran.
fn steering(body: &Value) -> Vec<String> {
    body["messages"]
        .as_array()
        .map(|m| {
            m.iter()
                .filter(|m| m["role"] == "user")
                .filter_map(|m| m["content"].as_str())
                .filter(|c| c.starts_with("[While you were working, you received"))
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

/// `model`'s first two turns: a background `Task` call with `task` (which names the child),
/// then a `SendMessage` of `message` to that name.
fn start_and_message(script: &Script, model: &str, task: Value, message: &str) {
    let to = task["name"].clone();
    script.push_for_model(model, Reply::tool_calls(vec![("Task", task)]));
    script.push_for_model(
        model,
        Reply::tool_calls(vec![("SendMessage", json!({"to": to, "message": message}))]),
    );
}

#[test]
fn run_steers_a_background_child_and_its_background_grandchild() {
    let (_rt, server, home) = common::scripted_in_temp();
    let agents = common::write_agents(
        home.path(),
        &[
            (
                "coordinator",
                "---\nname: coordinator\ndescription: Coordinates a worker.\nmodel: coord\ntools: Task\nmaxTurns: 100\n---\nCoordinate.\n",
            ),
            (
                "worker",
                "---\nname: worker\ndescription: Works until told.\nmodel: worker\ntools: Read\nmaxTurns: 300\n---\nWork.\n",
            ),
        ],
    );
    std::fs::write(home.path().join("notes.txt"), "notes").expect("notes");
    let config = home.path().join("subagents.toml");
    std::fs::write(
        &config,
        format!(
            "[models]\ncoord = \"{}\"\nworker = \"{}\"\n",
            server.openai_model("coord-model"),
            server.openai_model("worker-model")
        ),
    )
    .expect("config");

    let script = server.script();
    // Main: start the coordinator in the background by name, message it, then wait for it.
    // Coordinator: start the worker in the background by name, message it, then wait for its
    // answer and for the main agent's message.
    for (model, task, message) in [
        (
            "main-model",
            json!({"description": "coordinate", "prompt": "coordinate the work",
                   "subagent_type": "coordinator", "run_in_background": true, "name": "coord"}),
            "MAIN-STEER-1: report back briefly",
        ),
        (
            "coord-model",
            json!({"description": "work", "prompt": "work until told",
                   "subagent_type": "worker", "run_in_background": true, "name": "w"}),
            "COORD-STEER-2: wrap up now",
        ),
    ] {
        start_and_message(&script, model, task, message);
    }
    script.push_dynamic(Some("main-model"), |body| {
        let id = task_id_in(body).expect("the coordinator's task id");
        Reply::tool_calls(vec![(
            "TaskOutput",
            json!({"task_id": id, "timeout_ms": 120000}),
        )])
    });
    script.push_for_model("main-model", Reply::text("MAIN-DONE"));

    for _ in 0..80 {
        script.push_dynamic(Some("coord-model"), |body| {
            let id = task_id_in(body).expect("the worker's task id");
            if has(body, "WORKER-STEERED") {
                if has(body, "MAIN-STEER-1") {
                    return Reply::text("COORD-DONE: the worker wrapped up");
                }
                // Waits for the main agent's message (read at its next turn boundary).
                return Reply::tool_calls(vec![(
                    "TaskOutput",
                    json!({"task_id": id, "block": false}),
                )])
                .with_delay(Duration::from_millis(20));
            }
            Reply::tool_calls(vec![(
                "TaskOutput",
                json!({"task_id": id, "timeout_ms": 120000}),
            )])
        });
    }
    // Worker: reads a file each turn until the coordinator's message arrives.
    for _ in 0..250 {
        script.push_dynamic(Some("worker-model"), |body| {
            if has(body, "COORD-STEER-2") {
                Reply::text("WORKER-STEERED")
            } else {
                Reply::tool_calls(vec![("Read", json!({"file_path": "notes.txt"}))])
                    .with_delay(Duration::from_millis(20))
            }
        });
    }

    let stdout = common::run_configured(
        home.path(),
        &config,
        &["run", "go", "--store", "memory"],
        &server,
        &agents,
    );
    assert!(stdout.contains("MAIN-DONE"), "{stdout}");

    let reqs = server.requests();
    let of = |model: &str| -> Vec<Value> {
        reqs.iter()
            .filter(|r| r.model() == Some(model))
            .map(|r| r.body.clone())
            .collect()
    };
    // The senders were told the messages were delivered, to whom, and how they are read.
    let main_last = of("main-model").last().cloned().expect("main requests");
    assert!(
        has(
            &main_last,
            "(agent `coordinator`, name `coord`): it reads it at its next turn boundary"
        ),
        "{main_last}"
    );
    assert!(has(&main_last, "COORD-DONE"), "{main_last}");
    let coord = of("coord-model");
    assert!(
        coord.iter().any(|b| has(
            b,
            "(agent `worker`, name `w`): it reads it at its next turn boundary"
        )),
        "{coord:?}"
    );
    // Each child got its message as one user message naming the sender.
    for (bodies, message) in [
        (
            of("worker-model"),
            "[Message from coordinator]\nCOORD-STEER-2: wrap up now",
        ),
        (coord, "MAIN-STEER-1: report back briefly"),
    ] {
        let steer = bodies.last().map(steering).unwrap_or_default();
        assert_eq!(steer.len(), 1, "{bodies:?}");
        assert!(steer[0].contains(message), "{}", steer[0]);
    }
    // The main agent and the leaf are offered SendMessage with the other delegation tools.
    let first_coord = reqs
        .iter()
        .find(|r| r.model() == Some("coord-model"))
        .expect("coordinator asked");
    assert!(
        first_coord
            .tool_names()
            .contains(&"SendMessage".to_string()),
        "{:?}",
        first_coord.tool_names()
    );
}
