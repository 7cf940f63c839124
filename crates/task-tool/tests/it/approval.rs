//! Background children that need approval: the question shows in `TaskOutput`, the caller
//! answers it (`approve`), a yes is confirmed with the caller's own approver, `TaskStop` ends
//! the wait.

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use common::{FnKind, assert_error, assert_has, build_tool, fn_ref};
use serde_json::json;
use subagent_core::FixedApprover;
use subagent_spi::*;
use task_tool::{Dispatch, TaskTool};

/// An agent that asks and reports the answer; after an "allow for the session" it asks the
/// same question once more, and reports that answer too.
fn asker() -> FnKind {
    FnKind::new().agent("asker", |_, ctx| async move {
        let request = ApprovalRequest::new(ctx.agent_path(), "Bash", "touch x", "mode `default`")
            .with_session_rule("Bash(touch:*)");
        let Some(approver) = ctx.approver() else {
            return Ok(TaskOutcome::completed("no approver"));
        };
        let mut answers = Vec::new();
        loop {
            let decision = tokio::select! {
                d = approver.request(request.clone()) => d,
                () = ctx.cancel().cancelled() => return Ok(TaskOutcome::with_status("stopped while asking", TaskStatus::Cancelled)),
            };
            answers.push(format!("{decision:?}"));
            if decision != ApprovalDecision::AllowSession || answers.len() == 2 {
                break;
            }
        }
        Ok(TaskOutcome::completed(answers.join(", ")))
    })
}

async fn tool() -> TaskTool {
    build_tool(asker().into_type(), [fn_ref("asker")], |b| b).await
}

async fn start(task: &TaskTool, ctx: &TaskContext) -> String {
    let call = TaskCall::new("asker", "ask", "go").in_background(true);
    match task.dispatch(call, ctx).await.expect("starts") {
        Dispatch::Background { task_id, .. } => task_id,
        other => panic!("{other:?}"),
    }
}

async fn output(task: &TaskTool, ctx: &TaskContext, input: serde_json::Value) -> ToolOutput {
    task.output_tool()
        .call(input, ctx)
        .await
        .expect("TaskOutput answers")
}

/// Starts the asker, waits for its question and answers it with `approve`: the task id and
/// what `TaskOutput` says then.
async fn answered(task: &TaskTool, ctx: &TaskContext, approve: &str) -> (String, ToolOutput) {
    let id = start(task, ctx).await;
    output(task, ctx, json!({"task_id": id, "timeout_ms": 60000})).await;
    let done = answer_with(task, ctx, &id, approve).await;
    (id, done)
}

/// Answers the question task `id` waits on with `approve`, and waits for what follows.
async fn answer_with(task: &TaskTool, ctx: &TaskContext, id: &str, approve: &str) -> ToolOutput {
    let answer = json!({"task_id": id, "approve": approve, "timeout_ms": 60000});
    output(task, ctx, answer).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_question_shows_and_no_is_final() {
    let task = tool().await;
    let ctx = TaskContext::new().with_agent("main");
    let id = start(&task, &ctx).await;
    let waiting = output(&task, &ctx, json!({"task_id": id, "timeout_ms": 60000})).await;
    assert_has(&waiting, "status: waiting_for_approval");
    assert_has(&waiting, "asker (main > asker) wants to run Bash: touch x");
    assert_has(&waiting, "Bash(touch:*)");
    let snap = task.output(&id, None).await.unwrap();
    assert_eq!(snap.status(), TaskStatus::Running);
    assert_eq!(
        snap.pending_approval().map(|r| r.tool.as_str()),
        Some("Bash")
    );

    let done = answer_with(&task, &ctx, &id, "no").await;
    assert_has(&done, "status: completed");
    assert_has(&done, "declined");
    // Nothing left to answer.
    let again = output(
        &task,
        &ctx,
        json!({"task_id": id, "approve": "yes", "block": false}),
    )
    .await;
    assert_error(&again, "not waiting");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn always_from_a_root_caller_without_an_approver_is_final() {
    let task = tool().await;
    let ctx = TaskContext::new();
    let (id, done) = answered(&task, &ctx, "always").await;
    // The second question was answered by the session grant: the task did not wait again.
    assert_has(&done, "AllowSession, AllowSession");
    assert!(task.pending_approval(&id).is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_yes_is_confirmed_with_the_callers_approver() {
    let task = tool().await;
    let ctx = TaskContext::new()
        .with_agent("main")
        .with_approver(Arc::new(FixedApprover::deny_all("the user refused.")));
    let (_, done) = answered(&task, &ctx, "yes").await;
    assert_has(&done, "the user refused.");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_ends_the_wait_and_the_rust_api_answers() {
    let task = tool().await;
    let ctx = TaskContext::new();
    let id = start(&task, &ctx).await;
    let snap = task
        .output(&id, Some(Duration::from_secs(60)))
        .await
        .unwrap();
    assert!(snap.pending_approval().is_some());
    let stopped = task.stop(&id).await.unwrap();
    assert_eq!(stopped.status(), TaskStatus::Cancelled);
    assert!(task.pending_approval(&id).is_none());

    let id = start(&task, &ctx).await;
    task.output(&id, Some(Duration::from_secs(60)))
        .await
        .unwrap();
    let answered = task
        .answer_approval(&id, ApprovalDecision::AllowOnce)
        .unwrap();
    assert_eq!(answered.agent_path, ["asker"]);
    let done = task
        .output(&id, Some(Duration::from_secs(60)))
        .await
        .unwrap();
    assert_eq!(done.outcome().map(|o| o.text.as_str()), Some("AllowOnce"));
}

/// Another run (an MCP client's, a sibling) holding the id reads, answers and stops nothing:
/// the task is unknown to it, and the refusal lists only its own tasks.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_run_cannot_read_answer_or_stop_the_task() {
    let task = tool().await;
    let a = TaskContext::new().with_agent("a").with_task_id("caller_a");
    let b = TaskContext::new().with_agent("b").with_task_id("caller_b");
    let id = start(&task, &a).await;
    let waiting = output(&task, &a, json!({"task_id": id, "timeout_ms": 60000})).await;
    assert_has(&waiting, "waiting_for_approval");

    let read = output(&task, &b, json!({"task_id": id, "block": false})).await;
    let answer = output(
        &task,
        &b,
        json!({"task_id": id, "approve": "yes", "block": false}),
    )
    .await;
    let stop = task
        .stop_tool()
        .call(json!({"task_id": id}), &b)
        .await
        .expect("TaskStop answers");
    for out in [&read, &answer, &stop] {
        assert!(out.is_error, "{}", out.content);
        assert!(
            !out.content.contains("asker"),
            "nothing of it shows: {}",
            out.content
        );
        assert!(
            out.content.matches(id.as_str()).count() <= 1,
            "its id is named only as asked: {}",
            out.content
        );
    }
    assert_has(&read, "Your tasks: (none)");
    assert!(
        answer
            .content
            .contains("not waiting for approval (or is unknown)")
    );
    // Still waiting for its own caller, who answers it.
    assert!(task.pending_approval(&id).is_some());
    let done = answer_with(&task, &a, &id, "no").await;
    assert_has(&done, "declined");
}
