//! Steering a running background task from the host through the facade (`Subagents::send`),
//! over real HTTP with the scripted model server.

use crate::common;
use crate::common::Built as _;

use std::time::Duration;

use common::team_builder;
use serde_json::json;
use subagent_testkit::{Reply, ScriptedModelServer};
use subagents::{CancellationToken, Dispatch, SendMessageError, TaskCall, TaskContext, TaskStatus};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_host_sends_a_message_a_background_agent_reads_at_its_next_turn() {
    let server = ScriptedModelServer::start().await;
    // The leaf reads a file each turn until the host's message arrives.
    for _ in 0..250 {
        server.script().push_dynamic(None, |body| {
            if body.to_string().contains("HOST-STEER") {
                Reply::text("LEAF-STEERED")
            } else {
                Reply::tool_calls(vec![("Read", json!({"file_path": "notes.txt"}))])
                    .with_delay(Duration::from_millis(20))
            }
        });
    }
    let agents = team_builder(&server).built().await;
    let call = TaskCall::new("leaf", "look", "look it up")
        .in_background(true)
        .with_name("finder");
    let Dispatch::Background { task_id, .. } = agents
        .dispatch(call, &TaskContext::new())
        .await
        .expect("starts")
    else {
        panic!("not in the background");
    };

    let receipt = agents
        .send("finder", "HOST-STEER: answer now")
        .expect("delivered");
    assert_eq!(receipt.task_id, task_id);
    assert_eq!(receipt.agent, "leaf");
    assert_eq!(receipt.delivery, "it reads it at its next turn boundary");

    let done = agents.finish_background(&CancellationToken::new()).await;
    assert_eq!(done.len(), 1);
    let outcome = done[0].outcome().expect("finished");
    assert_eq!(outcome.status, TaskStatus::Completed);
    assert_eq!(outcome.text, "LEAF-STEERED");
    assert!(done[0].unread_messages.is_empty());
    let last = server.requests().pop().expect("the leaf's last turn");
    assert!(
        last.body
            .to_string()
            .contains("[Message from the application running you]\\nHOST-STEER: answer now"),
        "{}",
        last.body
    );

    // Once it ended, a send is refused, naming the task and its status.
    match agents.send(&task_id, "more") {
        Err(SendMessageError::Finished {
            task_id: t, status, ..
        }) => {
            assert_eq!(t, task_id);
            assert_eq!(status, TaskStatus::Completed);
        }
        other => panic!("finished: {other:?}"),
    }
    assert!(matches!(
        agents.send("nobody", "x"),
        Err(SendMessageError::Unknown { .. })
    ));
}
