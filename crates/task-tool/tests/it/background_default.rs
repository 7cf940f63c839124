//! An agent whose definition says "background by default" (a Markdown agent's
//! `background: true`): a call without `run_in_background` starts it in the background, an
//! explicit `run_in_background: false` keeps it in the foreground.

use crate::common::offer::offer_tool;

use std::time::Duration;

use subagent_spi::*;
use task_tool::{BackgroundState, Dispatch, TaskTool};

/// `bg-worker` runs in the background by default, `fg-worker` does not.
async fn task() -> TaskTool {
    offer_tool(&["bg-worker", "fg-worker"], |b| b).await
}

#[tokio::test]
async fn background_by_default_unless_the_call_says_otherwise() {
    let task = task().await;
    let ctx = TaskContext::new();
    match task
        .dispatch(TaskCall::new("bg-worker", "d", "it"), &ctx)
        .await
        .expect("dispatch")
    {
        Dispatch::Background { task_id, .. } => {
            let snap = task
                .output(&task_id, Some(Duration::from_secs(10)))
                .await
                .expect("output");
            match snap.state {
                BackgroundState::Finished(o) => assert_eq!(o.text, "bg-worker did it"),
                other => panic!("unexpected state {other:?}"),
            }
        }
        other => panic!("expected a background start, got {other:?}"),
    }
    let explicit = TaskCall::new("bg-worker", "d", "it").in_background(false);
    assert!(matches!(
        task.dispatch(explicit, &ctx).await.expect("dispatch"),
        Dispatch::Foreground { .. }
    ));
    assert!(matches!(
        task.dispatch(TaskCall::new("fg-worker", "d", "it"), &ctx)
            .await
            .expect("dispatch"),
        Dispatch::Foreground { .. }
    ));
}

#[tokio::test]
async fn the_task_description_says_which_agents_default_to_the_background() {
    let task = task().await;
    let description = Tool::description(&task);
    let line = description
        .lines()
        .find(|l| l.starts_with("- bg-worker"))
        .expect("listed");
    assert!(line.contains("runs in the background"), "{line}");
    let line = description
        .lines()
        .find(|l| l.starts_with("- fg-worker"))
        .expect("listed");
    assert!(!line.contains("background"), "{line}");
}
