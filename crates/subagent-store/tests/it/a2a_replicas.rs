//! Acceptance: two A2A server processes on one PostgreSQL database serve the same tasks. A task
//! created through replica A is read, subscribed to (events produced on A reach B's stream
//! through LISTEN/NOTIFY) and cancelled (the cancel reaches A's handler) through replica B;
//! when a replica dies, its running tasks become interrupted once their lease expires.
//!
//! Needs a PostgreSQL server: `.ci/run` starts one (`.ci/postgres.sh`) and runs these with
//! `-- --ignored`.

#![cfg(feature = "a2a")]

use crate::common;

use std::time::Duration;

use common::{Sut, message, sse_events, state};
use serde_json::json;

async fn wait_state(sut: &Sut, id: &str, want: &str, within: Duration) -> serde_json::Value {
    let deadline = tokio::time::Instant::now() + within;
    loop {
        let t = sut.get(id).await;
        if state(&t) == want || tokio::time::Instant::now() > deadline {
            return t;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs PostgreSQL: set SUBAGENTS_TEST_POSTGRES_URL (.ci/postgres.sh starts one)"]
async fn two_replicas_share_tasks_events_and_cancels() {
    let (a, b) = Sut::replicas("replicas", &[], 60).await;

    // Created on A, read and listed on B.
    let done = a.send(message("tck-complete-task", None), false).await;
    let done_id = done["id"].as_str().unwrap();
    assert_eq!(state(&b.get(done_id).await), "TASK_STATE_COMPLETED");
    let listed = b.rpc("ListTasks", json!({})).await;
    assert_eq!(listed["result"]["totalSize"], 1, "{listed}");

    // A long task runs on A; B's subscriber sees it, then the cancel sent to B stops A's
    // handler and B's stream ends with the canceled status.
    let long = a
        .send(message("test-resubscribe-message-id", None), true)
        .await;
    let long_id = long["id"].as_str().unwrap().to_string();
    let t = wait_state(&b, &long_id, "TASK_STATE_WORKING", Duration::from_secs(10)).await;
    assert_eq!(state(&t), "TASK_STATE_WORKING", "{t}");
    let resp = b.subscribe(&long_id).await;
    assert_eq!(resp.status(), 200);
    let reader = tokio::spawn(sse_events(resp, Duration::from_secs(30), |v| {
        v["statusUpdate"]["status"]["state"] == "TASK_STATE_CANCELED"
    }));
    tokio::time::sleep(Duration::from_millis(300)).await;
    let asked = tokio::time::Instant::now();
    let canceled = b.rpc("CancelTask", json!({"id": long_id})).await;
    // Answered by A's handler through NOTIFY, not forced by B after its wait (7 s).
    assert!(
        asked.elapsed() < Duration::from_secs(4),
        "{:?}",
        asked.elapsed()
    );
    assert_eq!(
        canceled["result"]["status"]["state"], "TASK_STATE_CANCELED",
        "{canceled}"
    );
    let events = reader.await.unwrap();
    assert_eq!(events[0]["task"]["id"], long_id.as_str(), "{events:?}");
    assert_eq!(
        events.last().unwrap()["statusUpdate"]["status"]["state"],
        "TASK_STATE_CANCELED",
        "B's stream carries the status produced on A: {events:?}"
    );
    // A's handler saw the cancel (it answers with canceled itself, long before its 120 s).
    assert_eq!(state(&a.get(&long_id).await), "TASK_STATE_CANCELED");

    // Events produced on A while B streams: a follow-up to an input-required task on A.
    let asking = a.send(message("tck-input-required", None), false).await;
    let asking_id = asking["id"].as_str().unwrap().to_string();
    let resp = b.subscribe(&asking_id).await;
    let reader = tokio::spawn(sse_events(resp, Duration::from_secs(30), |v| {
        v["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
    }));
    tokio::time::sleep(Duration::from_millis(300)).await;
    let finished = a
        .send(message("tck-complete-task", Some(&asking_id)), false)
        .await;
    assert_eq!(state(&finished), "TASK_STATE_COMPLETED");
    let events = reader.await.unwrap();
    let states: Vec<_> = events
        .iter()
        .filter_map(|e| e["statusUpdate"]["status"]["state"].as_str())
        .collect();
    assert!(
        states.contains(&"TASK_STATE_WORKING") && states.last() == Some(&"TASK_STATE_COMPLETED"),
        "{events:?}"
    );

    // Continuing a task that runs on the other replica is refused.
    let running = a
        .send(message("test-resubscribe-message-id", None), true)
        .await;
    let running_id = running["id"].as_str().unwrap().to_string();
    wait_state(
        &b,
        &running_id,
        "TASK_STATE_WORKING",
        Duration::from_secs(10),
    )
    .await;
    let refused = b
        .rpc(
            "SendMessage",
            json!({"message": message("tck-complete-task", Some(&running_id))}),
        )
        .await;
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("still running"),
        "{refused}"
    );
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs PostgreSQL: set SUBAGENTS_TEST_POSTGRES_URL (.ci/postgres.sh starts one)"]
async fn a_dead_replicas_tasks_are_interrupted_after_its_lease() {
    let (a, b) = Sut::replicas("lease", &["--lease", "2"], 60).await;
    let id = a.start_long_task().await;
    wait_state(&b, &id, "TASK_STATE_WORKING", Duration::from_secs(10)).await;
    // A renews its lease: after several lease periods the task still runs.
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert_eq!(state(&b.get(&id).await), "TASK_STATE_WORKING");
    a.kill9().await;
    let t = wait_state(&b, &id, "TASK_STATE_FAILED", Duration::from_secs(15)).await;
    assert_eq!(state(&t), "TASK_STATE_FAILED", "{t}");
    assert_eq!(
        t["status"]["message"]["parts"][0]["text"],
        subagent_store::a2a::INTERRUPTED_BY_LEASE
    );
}
