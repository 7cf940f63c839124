//! Steering a running background task (issue 28, `SendMessage`): delivery by id and by name,
//! who may reach whom, every refusal, and messages a task ends without reading.

use crate::common;

use std::time::Duration;

use common::{FnKind, assert_error, assert_has, assert_starts, build_tool, fn_ref};
use serde_json::json;
use subagent_core::{InboxError, InboxLimits};
use subagent_spi::*;
use task_tool::{Dispatch, SendMessageError, TaskTool};

/// Polls (bounded by cancellation) until `n` messages wait in the run's inbox.
async fn wait_unread(ctx: &TaskContext, n: usize) -> bool {
    let Some(inbox) = ctx.messages() else {
        return false;
    };
    while inbox.unread() < n {
        if ctx.cancel().is_cancelled() {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    true
}

/// `listener` waits for N messages (N = its prompt), reads them and answers with them;
/// `ender` waits for one message and ends without reading it.
fn receiving_kind() -> SubagentType {
    FnKind::new()
        .agent("listener", |c, ctx| async move {
            let n: usize = c.prompt.parse().unwrap_or(1);
            if !wait_unread(&ctx, n).await {
                return Ok(TaskOutcome::with_status("stopped", TaskStatus::Cancelled));
            }
            let inbox = ctx.messages().expect("an inbox");
            let read: Vec<String> = inbox
                .take()
                .into_iter()
                .map(|m| format!("{}: {}", m.from, m.text))
                .collect();
            Ok(TaskOutcome::completed(format!(
                "heard {}",
                read.join(" | ")
            )))
        })
        .agent("ender", |_c, ctx| async move {
            wait_unread(&ctx, 1).await;
            Ok(TaskOutcome::completed("ended without reading"))
        })
        .receiving_messages()
        .into_type()
}

async fn tool_with(kind: SubagentType, refs: &[&str], limits: InboxLimits) -> TaskTool {
    let refs = refs.iter().copied().map(fn_ref);
    build_tool(kind, refs, |b| b.inbox_limits(limits)).await
}

async fn tool() -> TaskTool {
    tool_with(
        receiving_kind(),
        &["listener", "ender"],
        InboxLimits::default(),
    )
    .await
}

async fn start(
    task: &TaskTool,
    agent: &str,
    prompt: &str,
    name: Option<&str>,
    ctx: &TaskContext,
) -> String {
    let mut call = TaskCall::new(agent, "d", prompt).in_background(true);
    if let Some(n) = name {
        call = call.with_name(n);
    }
    match task.dispatch(call, ctx).await.expect("starts") {
        Dispatch::Background { task_id, .. } => task_id,
        other => panic!("not background: {other:?}"),
    }
}

async fn send(task: &TaskTool, to: &str, message: &str, ctx: &TaskContext) -> ToolOutput {
    task.send_message_tool()
        .call(json!({"to": to, "message": message}), ctx)
        .await
        .expect("SendMessage answers")
}

async fn output(task: &TaskTool, id: &str, ctx: &TaskContext) -> ToolOutput {
    task.output_tool()
        .call(json!({"task_id": id, "timeout_ms": 30000}), ctx)
        .await
        .expect("TaskOutput answers")
}

#[tokio::test]
async fn a_message_reaches_a_running_task_by_name_or_id_and_is_read() {
    let task = tool().await;
    let main = TaskContext::new().with_agent("main");
    let id = start(&task, "listener", "2", Some("ears"), &main).await;

    let by_name = send(&task, "ears", "first", &main).await;
    assert!(!by_name.is_error, "{}", by_name.content);
    assert_starts(
        &by_name,
        &format!(
            "Message delivered to task `{id}` (agent `listener`, name `ears`): the function reads it"
        ),
    );
    assert_has(&by_name, "1 message now waits unread");
    let by_id = send(&task, &id, "second", &main).await;
    assert!(!by_id.is_error, "{}", by_id.content);

    let done = output(&task, &id, &main).await;
    assert_has(&done, "heard main: first | main: second");
    assert!(!done.content.contains("Not read"), "{}", done.content);

    // Once it finished, the sender is told so, with what to do instead.
    let late = send(&task, "ears", "third", &main).await;
    assert_error(
        &late,
        &format!("task `{id}` (agent `listener`) has already finished (status completed)"),
    );
}

#[tokio::test]
async fn a_run_reaches_only_the_tasks_it_started_and_the_host_reaches_any() {
    let task = tool().await;
    let a = TaskContext::new().with_agent("a").with_task_id("task_a");
    let b = TaskContext::new().with_agent("b").with_task_id("task_b");
    let id = start(&task, "listener", "1", Some("ears"), &a).await;

    for to in [id.as_str(), "ears"] {
        let out = send(&task, to, "hijack", &b).await;
        assert_error(
            &out,
            &format!("no background task `{to}` (by task id or name) that you started"),
        );
        assert_has(&out, "your tasks: (none)");
    }
    // The host reaches it by id.
    let receipt = task.send_message(&id, "from the host").expect("host sends");
    assert_eq!(receipt.task_id, id);
    assert_eq!(receipt.name.as_deref(), Some("ears"));
    assert_eq!(receipt.unread, 1);
    let done = output(&task, &id, &a).await;
    assert_has(&done, "heard the application running you: from the host");
    // The run that started it sees it in the list of its tasks.
    let unknown = send(&task, "nobody", "x", &a).await;
    assert_has(&unknown, &format!("your tasks: {id} (name `ears`, ended)"));
}

#[tokio::test]
async fn refusals_say_why_and_name_the_limits() {
    let task = tool_with(receiving_kind(), &["listener"], InboxLimits::new(1, 8)).await;
    let main = TaskContext::new().with_agent("main");
    // Waits for 2 messages: with room for 1 it never reads; it is stopped below.
    let id = start(&task, "listener", "2", None, &main).await;

    let too_large = send(&task, &id, "123456789", &main).await;
    assert_error(
        &too_large,
        "the message is 9 bytes, over the limit of 8 bytes per message",
    );
    let empty = send(&task, &id, "  ", &main).await;
    assert_error(&empty, "the message is empty");
    let ok = send(&task, &id, "12345678", &main).await;
    assert!(!ok.is_error, "{}", ok.content);
    let full = send(&task, &id, "again", &main).await;
    assert_error(
        &full,
        "its inbox is full: 1 messages wait unread (the limit)",
    );
    match task.send_message(&id, "again") {
        Err(SendMessageError::Refused {
            source: InboxError::Full { max: 1 },
            ..
        }) => {}
        other => panic!("full: {other:?}"),
    }

    // Stopped before reading: the accepted message is reported, not lost.
    let stopped = task
        .stop_tool()
        .call(json!({"task_id": id}), &main)
        .await
        .expect("stops");
    assert_has(
        &stopped,
        "Not read: 1 message sent to this task arrived after its last step, so it never read it:\n- from main: 12345678",
    );
    let snap = task.output(&id, None).await.expect("snapshot");
    assert_eq!(
        snap.unread_messages,
        [InboxMessage::new("main", "12345678")]
    );
}

#[tokio::test]
async fn a_task_that_ends_without_reading_reports_the_message_unread() {
    let task = tool().await;
    let main = TaskContext::new().with_agent("main");
    let id = start(&task, "ender", "go", None, &main).await;
    let sent = send(&task, &id, "ping", &main).await;
    assert!(!sent.is_error, "{}", sent.content);
    let done = output(&task, &id, &main).await;
    assert_has(&done, "ended without reading");
    assert_has(&done, "- from main: ping");
}

#[tokio::test]
async fn a_kind_that_cannot_receive_says_so() {
    let deaf = FnKind::new()
        .agent("deaf", |_c, ctx| async move {
            ctx.cancel().cancelled().await;
            assert!(
                ctx.messages().is_none(),
                "no inbox for a kind that cannot read it"
            );
            Ok(TaskOutcome::with_status("stopped", TaskStatus::Cancelled))
        })
        .into_type();
    let task = tool_with(deaf, &["deaf"], InboxLimits::default()).await;
    let main = TaskContext::new().with_agent("main");
    let id = start(&task, "deaf", "x", None, &main).await;
    let out = send(&task, &id, "hello", &main).await;
    assert_error(
        &out,
        &format!(
            "task `{id}` runs agent `deaf` of kind `FN`, which cannot receive messages while it runs"
        ),
    );
    task.stop(&id).await.expect("stops");
}

#[tokio::test]
async fn names_are_plain_and_unique_among_a_callers_running_tasks() {
    let task = tool().await;
    let main = TaskContext::new().with_agent("main");
    for bad in ["two words", "\u{1b}[31mred", &"n".repeat(65)] {
        let call = TaskCall::new("listener", "d", "1")
            .in_background(true)
            .with_name(bad);
        let e = task.dispatch(call, &main).await.expect_err(bad);
        assert!(e.to_string().contains("use 1 to 64 ASCII letters"), "{e}");
    }
    let id = start(&task, "listener", "1", Some("ears"), &main).await;
    let call = TaskCall::new("listener", "d", "1")
        .in_background(true)
        .with_name("ears");
    let e = task.dispatch(call, &main).await.expect_err("taken");
    assert!(
        e.to_string().contains(&format!(
            "the name `ears` is taken by your running task `{id}`"
        )),
        "{e}"
    );
    // Another caller may use the same name for its own task.
    let other = TaskContext::new().with_task_id("task_other");
    let id2 = start(&task, "listener", "1", Some("ears"), &other).await;
    assert!(!send(&task, "ears", "a", &main).await.is_error);
    assert!(!send(&task, "ears", "b", &other).await.is_error);
    assert!(
        output(&task, &id, &main)
            .await
            .content
            .contains("heard main: a")
    );
    assert!(
        output(&task, &id2, &other)
            .await
            .content
            .contains("heard : b")
    );
}
