//! Prompt caching on the OpenAI wire through the facade, over real HTTP with the scripted model
//! server: a `prompt_cache_key` per agent run (stable across its requests, different across
//! runs, its caller's for a fork), the same tool list every time, and, on a llama.cpp server
//! with several slots, each run kept on a slot of its own.

use crate::common;
use crate::common::Built as _;

use serde_json::{Value, json};
use subagent_testkit::{RecordedRequest, Reply, ScriptedModelServer};
use subagents::TaskStatus;

/// The `prompt_cache_key` of a request.
fn key(r: &RecordedRequest) -> &str {
    r.body["prompt_cache_key"]
        .as_str()
        .unwrap_or_else(|| panic!("no prompt_cache_key in {}", r.raw_body))
}

/// The agent a request is from, by its system prompt.
fn who(r: &RecordedRequest) -> &'static str {
    let system = r.system_prompt();
    if system.contains("You are the leaf") {
        "leaf"
    } else if common::last_message(&r.body).contains("You are a fork") {
        "fork"
    } else {
        "main"
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_run_has_its_own_stable_prompt_cache_key_and_a_fork_its_callers() {
    let server = ScriptedModelServer::start().await;
    server.push(Reply::task_call("leaf", "look it up"));
    server.push(Reply::text("LEAF"));
    server.push(Reply::task_call("fork", "TASK-F: check it"));
    server.push(Reply::text("FORK"));
    server.push(Reply::text("first answer"));
    server.push(Reply::text("second answer"));
    let agents = common::team_builder_on(&server, "m").built().await;
    let first = common::run_main(&agents, "first question").await;
    assert_eq!(first.status, TaskStatus::Completed, "{}", first.text);
    let second = common::run_main(&agents, "second question").await;
    assert_eq!(second.text, "second answer");

    let reqs = server.requests();
    let whom: Vec<&str> = reqs.iter().map(who).collect();
    assert_eq!(whom, ["main", "leaf", "main", "fork", "main", "main"]);
    let main = key(&reqs[0]);
    assert!(main.starts_with("sa-") && !main.contains("sess_"), "{main}");
    assert_eq!(key(&reqs[2]), main, "stable across a run's requests");
    assert_eq!(key(&reqs[4]), main);
    assert_ne!(key(&reqs[1]), main, "the child's run has its own");
    assert_eq!(
        key(&reqs[3]),
        main,
        "a fork continues its caller's conversation"
    );
    assert_ne!(key(&reqs[5]), main, "another run, another key");
    assert_ne!(key(&reqs[5]), key(&reqs[1]));
    // The same tools, in the same order, for every request of the main agent, across runs.
    for r in [&reqs[2], &reqs[4], &reqs[5]] {
        assert_eq!(r.body["tools"], reqs[0].body["tools"]);
    }
    // A local server may be llama.cpp: `cache_prompt`; this one answers no `/props`: no slot.
    assert!(reqs.iter().all(|r| r.body["cache_prompt"] == json!(true)));
    assert!(reqs.iter().all(|r| r.body.get("id_slot").is_none()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_a_llama_cpp_server_with_two_slots_the_caller_keeps_its_slot() {
    let server = ScriptedModelServer::start().await;
    server.set_props(Some(json!({"total_slots": 2, "build_info": "b6000"})));
    server.push(Reply::task_call("leaf", "one"));
    server.push(Reply::text("LEAF-1"));
    server.push(Reply::task_call("leaf", "two"));
    server.push(Reply::text("LEAF-2"));
    server.push(Reply::text("done"));
    let agents = common::team_builder_on(&server, "m").built().await;
    let out = agents.main_agent().run("go").await.expect("runs");
    assert_eq!(out.text, "done");
    // Once by the facade for the context window, once by the provider for the slot count,
    // and never again however many requests follow.
    assert_eq!(
        server.props_requests(),
        2,
        "the properties are asked once each"
    );
    let reqs = server.requests();
    let slots: Vec<(&str, Value)> = reqs
        .iter()
        .map(|r| (who(r), r.body["id_slot"].clone()))
        .collect();
    assert_eq!(
        slots,
        [
            ("main", json!(0)),
            ("leaf", json!(1)),
            ("main", json!(0)),
            ("leaf", json!(1)),
            ("main", json!(0)),
        ]
    );
}
