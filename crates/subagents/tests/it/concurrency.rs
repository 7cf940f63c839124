//! The concurrency cap through the facade, counted where it matters: at the (scripted) model
//! server, over real HTTP.

use crate::common;
use crate::common::Built as _;

use std::time::Duration;

use common::team_builder;
use serde_json::json;
use subagent_testkit::{Reply, ScriptedModelServer};
use subagents::{Subagents, TaskStatus};

async fn agents(server: &ScriptedModelServer, cap: usize) -> Subagents {
    team_builder(server).max_concurrent(cap).built().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hundred_parallel_task_calls_with_a_cap_of_20_never_exceed_20_model_requests() {
    let server = ScriptedModelServer::start().await;
    let calls: Vec<(&str, serde_json::Value)> = (0..100)
        .map(|i| {
            (
                "Task",
                json!({"description": format!("part {i}"), "prompt": format!("do part {i}"), "subagent_type": "leaf"}),
            )
        })
        .collect();
    server.push(Reply::tool_calls(calls));
    for i in 0..100 {
        server.push(Reply::text(format!("PART-{i}-DONE")).with_delay(Duration::from_millis(100)));
    }
    server.push(Reply::text("all parts done"));
    let agents = agents(&server, 20).await;
    let outcome = common::run_main(&agents, "split the work").await;

    assert_eq!(outcome.status, TaskStatus::Completed);
    assert_eq!(outcome.text, "all parts done");
    assert_eq!(
        server.request_count(),
        102,
        "every child asked its model once"
    );
    assert_eq!(outcome.children.len(), 100, "all 100 children completed");
    let last = server.requests().pop().expect("the main agent's last turn");
    for i in [0, 42, 99] {
        assert!(
            last.body.to_string().contains(&format!("PART-{i}-DONE")),
            "child {i}'s answer came back"
        );
    }
    let peak = server.max_concurrent_requests();
    assert!(peak <= 20, "{peak} model requests were in flight at once");
    assert!(peak >= 10, "the children do run in parallel: peak {peak}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nesting_under_a_cap_of_one_does_not_deadlock() {
    // main → coordinator → leaf: the coordinator holds the only place when it delegates.
    let server = ScriptedModelServer::start().await;
    common::push_chain(
        &server,
        ["find the answer", "look up the number"],
        [
            Reply::text("LEAF-42"),
            Reply::text("the leaf says LEAF-42"),
            Reply::text("Final: LEAF-42"),
        ],
    );
    let agents = agents(&server, 1).await;
    let outcome = tokio::time::timeout(Duration::from_secs(20), agents.main_agent().run("go"))
        .await
        .expect("no deadlock")
        .expect("runs");
    assert!(outcome.text.contains("LEAF-42"), "{}", outcome.text);
    assert_eq!(server.max_concurrent_requests(), 1);
}
