//! Acceptance: a real A2A server process killed with SIGKILL mid-task and restarted on the same
//! SQLite file keeps its tasks (GetTask, ListTasks), marks the running one interrupted, and
//! continues the `input-required` one.

#![cfg(feature = "a2a")]

use crate::common;

use common::{Sut, message, state};
use serde_json::json;

#[tokio::test(flavor = "multi_thread")]
async fn kill_9_and_restart_on_the_same_sqlite_file() {
    let (_dir, store, a) = common::sut_on_new_sqlite().await;
    let asking = a.send(message("tck-input-required", None), false).await;
    assert_eq!(state(&asking), "TASK_STATE_INPUT_REQUIRED", "{asking}");
    let asking_id = asking["id"].as_str().unwrap().to_string();
    let long_id = a.start_long_task().await;
    a.kill9().await;

    let b = Sut::start(&store, &[]).await;
    let got = b.get(&asking_id).await;
    assert_eq!(state(&got), "TASK_STATE_INPUT_REQUIRED", "{got}");
    assert_eq!(got["history"][0]["role"], "ROLE_USER");
    let got = b.get(&long_id).await;
    assert_eq!(state(&got), "TASK_STATE_FAILED", "{got}");
    assert_eq!(
        got["status"]["message"]["parts"][0]["text"],
        subagent_store::a2a::INTERRUPTED_BY_RESTART
    );
    let listed = b.rpc("ListTasks", json!({})).await;
    assert_eq!(listed["result"]["totalSize"], 2, "{listed}");
    let listed = b
        .rpc("ListTasks", json!({"status": "TASK_STATE_INPUT_REQUIRED"}))
        .await;
    assert_eq!(listed["result"]["tasks"][0]["id"], asking_id.as_str());

    // The follow-up continues the task from before the crash.
    let done = b
        .send(message("tck-complete-task", Some(&asking_id)), false)
        .await;
    assert_eq!(state(&done), "TASK_STATE_COMPLETED", "{done}");
    assert_eq!(done["id"], asking_id.as_str());
    let history = done["history"].as_array().unwrap();
    assert!(history.len() >= 3, "{done}");
    // And it stays that way across another restart.
    b.kill9().await;
    let c = Sut::start(&store, &[]).await;
    assert_eq!(state(&c.get(&asking_id).await), "TASK_STATE_COMPLETED");
}
