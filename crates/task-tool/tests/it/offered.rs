//! The texts a model reads name only the delegation tools it is offered: `Task` alone (a lean
//! main agent, `subagents run --main-tools Task`) names neither `TaskOutput` nor `TaskStop`,
//! offers no background run and runs a background-by-default agent in the foreground; with
//! every companion the texts are as they always were.

use crate::common;
use crate::common::offer::offer_tool;
use crate::common::{assert_error, assert_has, assert_starts};

use std::time::Duration;

use subagent_spi::*;
use task_tool::{Companions, TaskTool};

async fn task() -> TaskTool {
    offer_tool(&["bg-worker", "fg-worker", "slow", "listener"], |b| b).await
}

fn has_background_param(tool: &dyn Tool) -> bool {
    tool.input_schema()["properties"]
        .get("run_in_background")
        .is_some()
}

fn call(agent: &str, background: Option<bool>) -> serde_json::Value {
    let mut v = serde_json::json!({"description": "d", "prompt": "it", "subagent_type": agent});
    if let Some(b) = background {
        v["run_in_background"] = b.into();
    }
    v
}

#[tokio::test]
async fn task_alone_names_no_absent_tool_and_runs_in_the_foreground() {
    let full = task().await;
    let lean = full.offering(Companions::from_names(["Task"]));
    assert_eq!(lean.companions(), Companions::none());

    let description = Tool::description(&lean);
    for absent in [
        "TaskOutput",
        "TaskStop",
        "run_in_background",
        "in the background",
    ] {
        assert!(!description.contains(absent), "{absent}: {description}");
    }
    assert!(description.contains("bg-worker"), "{description}");
    assert!(!has_background_param(&lean), "{}", lean.input_schema());
    // `name` only names a background agent.
    assert!(lean.input_schema()["properties"].get("name").is_none());
    assert!(full.input_schema()["properties"].get("name").is_some());

    // An agent that runs in the background by default runs in the foreground: its answer
    // comes back, and no text names a tool that is not there.
    let out = lean
        .call_tool(call("bg-worker", None), &TaskContext::new())
        .await;
    assert!(!out.is_error, "{}", out.content);
    assert_has(&out, "bg-worker did it");
    for absent in ["TaskOutput", "TaskStop"] {
        assert!(!out.content.contains(absent), "{}", out.content);
    }
    assert!(full.running_background_ids().is_empty());

    // Asking for a background run is refused, saying why and what to do instead.
    let out = lean
        .call_tool(call("fg-worker", Some(true)), &TaskContext::new())
        .await;
    assert_error(&out, "`run_in_background` is not available");
    assert_has(&out, "without it");
    for absent in ["TaskOutput", "TaskStop"] {
        assert!(!out.content.contains(absent), "{}", out.content);
    }
    assert!(full.running_background_ids().is_empty());

    // The children it starts still get every delegation tool.
    let child_tools = lean.delegation().tools();
    let names: Vec<&str> = child_tools.iter().map(|t| t.name()).collect();
    assert!(
        names.contains(&"TaskOutput") && names.contains(&"TaskStop"),
        "{names:?}"
    );
    let child_task = child_tools.iter().find(|t| t.name() == "Task").unwrap();
    assert!(child_task.description().contains("TaskOutput"));
    assert!(has_background_param(child_task.as_ref()));
}

#[tokio::test]
async fn with_all_three_the_texts_are_as_before() {
    let full = task().await;
    let same = full.offering(Companions::all());
    assert_eq!(full.companions(), Companions::all());
    assert_eq!(Tool::description(&full), Tool::description(&same));
    assert_eq!(full.input_schema(), same.input_schema());
    let description = Tool::description(&full);
    assert!(
        description.contains(
            "`run_in_background: true` returns a task id at once: read the result with \
             TaskOutput, cancel with TaskStop.\n"
        ),
        "{description}"
    );
    assert!(
        description.contains(
            "bg-worker: test agent (runs in the background unless you set `run_in_background: false`)"
        ),
        "{description}"
    );
    assert!(has_background_param(&full));

    let out = full
        .call_tool(call("bg-worker", None), &TaskContext::new())
        .await;
    let id = full
        .running_background_ids()
        .first()
        .cloned()
        .unwrap_or_else(|| {
            // It may have finished already; its id is in the text either way.
            common::task_id_in(&out.content)
        });
    assert_eq!(
        out.content,
        format!(
            "Started agent `bg-worker` in the background with task id {id}.\nRead its result \
             with TaskOutput {{\"task_id\": \"{id}\"}} (waits for it by default); stop it with \
             TaskStop {{\"task_id\": \"{id}\"}}."
        )
    );
}

#[tokio::test]
async fn without_task_stop_no_text_says_to_cancel_with_it() {
    let full = task().await;
    let view = full.offering(Companions::from_names(["Task", "TaskOutput"]));
    let description = Tool::description(&view);
    assert!(description.contains("TaskOutput"), "{description}");
    assert!(!description.contains("TaskStop"), "{description}");

    let ctx = TaskContext::new();
    let out = view.call_tool(call("slow", Some(true)), &ctx).await;
    assert!(!out.is_error, "{}", out.content);
    assert_has(&out, "TaskOutput");
    assert!(!out.content.contains("TaskStop"), "{}", out.content);
    let id = full.running_background_ids()[0].clone();

    // A wait that times out says to call TaskOutput again, and nothing of TaskStop.
    let output = view.tools().output;
    let read = output
        .call(serde_json::json!({"task_id": id, "timeout_ms": 50}), &ctx)
        .await
        .expect("reads");
    assert_has(&read, "Call TaskOutput again to keep waiting.");
    assert!(!read.content.contains("TaskStop"), "{}", read.content);

    // The full view's TaskOutput still names TaskStop.
    let read = full
        .output_tool()
        .call(serde_json::json!({"task_id": id, "timeout_ms": 50}), &ctx)
        .await
        .expect("reads");
    assert_has(&read, "or TaskStop to cancel it.");
    full.stop(&id).await.expect("stops");
    let _ = tokio::time::timeout(Duration::from_secs(5), full.output(&id, None)).await;
}

/// The `max_background` refusal names `TaskStop` only when it is offered.
#[tokio::test]
async fn the_max_background_refusal_names_task_stop_only_when_offered() {
    let full = offer_tool(&["slow", "fg-worker"], |b| b.max_background(1)).await;
    let view = full.offering(Companions::from_names(["Task", "TaskOutput"]));
    let ctx = TaskContext::new();
    let out = view.call_tool(call("slow", Some(true)), &ctx).await;
    assert!(!out.is_error, "{}", out.content);
    let id = full.running_background_ids()[0].clone();

    let refused = view.call_tool(call("fg-worker", Some(true)), &ctx).await;
    assert_error(&refused, "max_background=1");
    assert_has(&refused, "Wait for one with TaskOutput, or run this task");
    assert!(!refused.content.contains("TaskStop"), "{}", refused.content);

    // With every companion it still says to stop one with TaskStop.
    let refused = full.call_tool(call("fg-worker", Some(true)), &ctx).await;
    assert_has(&refused, "stop one with TaskStop");
    full.stop(&id).await.expect("stops");
    let _ = tokio::time::timeout(Duration::from_secs(5), full.output(&id, None)).await;
}

/// `SendMessage`'s description names background tasks only when `TaskOutput` is offered
/// (without it, `Task` has no `run_in_background`), and never the parameter itself.
#[tokio::test]
async fn the_send_message_description_names_background_tasks_only_with_task_output() {
    let full = task().await;
    let lean = full.offering(Companions::from_names(["Task", "SendMessage"]));
    let description = Tool::description(&lean.send_message_tool());
    for absent in ["run_in_background", "TaskOutput", "TaskStop"] {
        assert!(!description.contains(absent), "{absent}: {description}");
    }
    assert!(
        description.starts_with("Send a message to a task you started with Task while it runs"),
        "{description}"
    );

    let description = Tool::description(&full.send_message_tool());
    assert!(
        description
            .starts_with("Send a message to a background task you started with Task while it runs"),
        "{description}"
    );
}

/// `SendMessage`'s refusals name only the companions offered: without `TaskStop`, the task
/// that cannot receive messages is not said to be stoppable with it; with `Task` alone, the
/// finished task is not said to be readable with `TaskOutput`. With all of them, as before.
#[tokio::test]
async fn send_message_refusals_name_only_the_companions_offered() {
    let full = task().await;
    let ctx = TaskContext::new();
    let send = |view: &TaskTool, to: &str| {
        let send = view.tools().send;
        let input = serde_json::json!({"to": to, "message": "hi"});
        let ctx = ctx.clone();
        async move { send.call(input, &ctx).await.expect("answers") }
    };

    // `slow` runs until stopped and cannot receive messages.
    let out = full.call_tool(call("slow", Some(true)), &ctx).await;
    assert!(!out.is_error, "{}", out.content);
    let slow = full.running_background_ids()[0].clone();
    let no_stop = full.offering(Companions::from_names([
        "Task",
        "TaskOutput",
        "SendMessage",
    ]));
    let refused = send(&no_stop, &slow).await;
    assert_error(&refused, "cannot receive messages");
    assert_has(&refused, "wait for its result with TaskOutput.");
    assert!(!refused.content.contains("TaskStop"), "{}", refused.content);
    let refused = send(&full, &slow).await;
    assert_has(
        &refused,
        "wait for its result with TaskOutput, or stop it with TaskStop.",
    );
    let lean = full.offering(Companions::none());
    let refused = send(&lean, &slow).await;
    assert!(refused.content.contains("cannot receive messages"));
    for absent in ["TaskOutput", "TaskStop"] {
        assert!(!refused.content.contains(absent), "{}", refused.content);
    }
    full.stop(&slow).await.expect("stops");

    // A delivered message: TaskOutput lists it if unread, said only where TaskOutput is offered.
    full.call_tool(call("listener", Some(true)), &ctx).await;
    let listener = full.running_background_ids()[0].clone();
    let delivered = send(&lean, &listener).await;
    assert!(!delivered.is_error, "{}", delivered.content);
    assert_starts(&delivered, "Message delivered");
    for absent in ["TaskOutput", "TaskStop"] {
        assert!(!delivered.content.contains(absent), "{}", delivered.content);
    }
    let delivered = send(&no_stop, &listener).await;
    assert_has(&delivered, "TaskOutput lists it as unread");
    full.stop(&listener).await.expect("stops");

    // A finished task: read it with TaskOutput only where TaskOutput is offered.
    let out = full.call_tool(call("fg-worker", Some(true)), &ctx).await;
    let done = common::task_id_in(&out.content);
    full.output(&done, Some(Duration::from_secs(30)))
        .await
        .expect("ends");
    let refused = send(&lean, &done).await;
    assert_has(&refused, "has already finished (status completed).");
    for absent in ["TaskOutput", "TaskStop"] {
        assert!(!refused.content.contains(absent), "{}", refused.content);
    }
    let refused = send(&no_stop, &done).await;
    assert_has(&refused, "read its result with TaskOutput.");
}
