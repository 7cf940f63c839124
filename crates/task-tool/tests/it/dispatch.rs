//! Running agents: foreground, background, stop, resume, concurrency.

use crate::common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use common::{FnKind, assert_error, assert_has, assert_starts, build_tool, fn_ref, foreground};
use serde_json::json;
use subagent_spi::*;
use task_tool::{Dispatch, TaskTool};

/// Agents used across these tests.
fn kind(cancel_seen: Arc<AtomicBool>) -> FnKind {
    FnKind::new()
        .agent("echo", |c, ctx| async move {
            let mut o = TaskOutcome::completed(format!("echo[{}]: {}", ctx.depth(), c.prompt));
            o.usage.turns = 1;
            o.usage.input_tokens = 10;
            o.usage.output_tokens = c.prompt.len() as u64;
            Ok(o)
        })
        .agent("sleepy", |c, ctx| async move {
            let ms: u64 = c.prompt.parse().unwrap_or(50);
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_millis(ms)) => Ok(TaskOutcome::completed(format!("slept {ms}"))),
                _ = ctx.cancel().cancelled() => Ok(TaskOutcome::with_status("woke early", TaskStatus::Cancelled)),
            }
        })
        .agent("streamer", move |_, ctx| {
            let seen = cancel_seen.clone();
            async move {
                ctx.emit(ProgressKind::TextDelta { text: "half an ".into() });
                ctx.emit(ProgressKind::TextDelta { text: "answer".into() });
                ctx.cancel().cancelled().await;
                seen.store(true, Ordering::SeqCst);
                Err(SubagentError::Cancelled { agent: ctx.agent().to_string() })
            }
        })
        .agent("broken", |_, _| async move {
            Err(SubagentError::execution("broken", "the disk is on fire"))
        })
        .agent("chat", |c, _| async move {
            // Resumable: the session id carries the conversation so far.
            let history = c.resume.clone().map(|s| s.trim_start_matches("sess:").to_string());
            let text = match &history {
                Some(h) => format!("{h} + {}", c.prompt),
                None => c.prompt.clone(),
            };
            Ok(TaskOutcome::completed(text.clone()).with_session(format!("sess:{text}")))
        })
        .agent("asker", |c, _| async move {
            if c.resume.is_some() {
                Ok(TaskOutcome::completed(format!("thanks for {}", c.prompt)))
            } else {
                Ok(TaskOutcome::with_status("which colour?", TaskStatus::NeedsInput).with_session("ask-1"))
            }
        })
        .agent("oneshot", |c, _| async move {
            if let Some(s) = c.resume {
                return Err(SubagentError::Resume {
                    session: s,
                    reason: "this kind cannot resume".into(),
                });
            }
            Ok(TaskOutcome::completed("done").with_session("one-1"))
        })
}

async fn build(max_background: usize) -> (TaskTool, Arc<AtomicBool>) {
    let seen = Arc::new(AtomicBool::new(false));
    let task = TaskTool::builder()
        .subagent_type(kind(seen.clone()).into_type())
        .subagent_references(
            [
                "echo", "sleepy", "streamer", "broken", "chat", "asker", "oneshot",
            ]
            .map(fn_ref),
        )
        .max_background(max_background)
        .stop_grace(Duration::from_secs(2))
        .build()
        .await
        .expect("builds");
    (task, seen)
}

/// The tool of `build` and a fresh top-level context.
fn with_context((task, _): (TaskTool, Arc<AtomicBool>)) -> (TaskTool, TaskContext) {
    (task, TaskContext::new())
}

fn call(agent: &str, prompt: &str) -> serde_json::Value {
    json!({"description": "test", "prompt": prompt, "subagent_type": agent})
}

/// [`call`], continuing `session`.
fn resuming(agent: &str, prompt: &str, session: &str) -> serde_json::Value {
    let mut input = call(agent, prompt);
    input["resume"] = json!(session);
    input
}

fn bg(agent: &str, prompt: &str) -> serde_json::Value {
    json!({"description": "test", "prompt": prompt, "subagent_type": agent, "run_in_background": true})
}

fn task_id_of(text: &str) -> String {
    let start = text.find("task_").expect("a task id in the text");
    text[start..]
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect()
}

/// Starts `agent` in the background with `prompt`; its task id.
async fn start_bg(task: &TaskTool, agent: &str, prompt: &str, ctx: &TaskContext) -> String {
    task_id_of(
        &task
            .call(bg(agent, prompt), ctx)
            .await
            .expect("call")
            .content,
    )
}

/// Calls `tool` with `input`; its output (the call itself must not fail).
async fn call_ok(tool: &impl Tool, input: serde_json::Value, ctx: &TaskContext) -> ToolOutput {
    tool.call(input, ctx).await.expect("tool call")
}

#[tokio::test]
async fn foreground_returns_the_text_with_a_footer_and_usage_tree() {
    let (task, _) = build(16).await;
    let out = call_ok(&task, call("echo", "hello"), &TaskContext::new()).await;
    assert!(!out.is_error);
    assert!(
        out.content.starts_with("echo[1]: hello"),
        "child runs at depth 1: {}",
        out.content
    );
    assert_has(&out, "[agent: echo | status: completed");
    assert_eq!(out.children.len(), 1);
    let node = &out.children[0];
    assert_eq!(node.agent, "echo");
    assert_eq!(node.kind, "FN");
    assert_eq!(node.usage.output_tokens, 5);
    assert!(
        node.task_id
            .as_deref()
            .is_some_and(|t| t.starts_with("task_"))
    );
}

#[tokio::test]
async fn case_insensitive_agent_names_work() {
    let (task, _) = build(16).await;
    let out = call_ok(&task, call("ECHO", "x"), &TaskContext::new()).await;
    assert!(out.content.starts_with("echo[1]: x"), "{}", out.content);
}

#[tokio::test]
async fn unknown_agent_is_a_readable_error_listing_agents() {
    let (task, _) = build(16).await;
    let out = call_ok(&task, call("nobody", "x"), &TaskContext::new()).await;
    assert_error(&out, "Unknown agent `nobody`");
    for name in ["echo", "sleepy", "streamer", "broken", "chat"] {
        assert!(out.content.contains(name), "lists {name}: {}", out.content);
    }
}

#[tokio::test]
async fn bad_input_is_a_readable_error() {
    let (task, _) = build(16).await;
    let out = call_ok(&task, json!({"prompt": 3}), &TaskContext::new()).await;
    assert_error(&out, "Invalid Task input");
}

#[tokio::test]
async fn executor_errors_become_error_results() {
    let (task, _) = build(16).await;
    let out = call_ok(&task, call("broken", "x"), &TaskContext::new()).await;
    assert_error(&out, "the disk is on fire");
}

#[tokio::test]
async fn background_runs_then_completes_and_reads_repeat() {
    let (task, ctx) = with_context(build(16).await);
    let started = call_ok(&task, bg("sleepy", "150"), &ctx).await;
    assert_has(&started, "in the background");
    let id = task_id_of(&started.content);
    assert_eq!(task.running_background(), 1);

    let peek = task.output(&id, None).await.expect("known id");
    assert_eq!(peek.status(), TaskStatus::Running);

    let output = task.output_tool();
    let first = call_ok(&output, json!({"task_id": id, "timeout_ms": 5000}), &ctx).await;
    assert_has(&first, "status: completed");
    assert_has(&first, "slept 150");
    assert_eq!(first.children.len(), 1, "usage reported on the first read");
    let second = call_ok(&output, json!({"task_id": id}), &ctx).await;
    assert_has(&second, "slept 150");
    assert!(second.children.is_empty(), "usage is reported once");
    assert_eq!(task.running_background(), 0);
}

#[tokio::test]
async fn a_blocked_wait_that_times_out_says_so() {
    let (task, ctx) = with_context(build(16).await);
    let id = start_bg(&task, "sleepy", "5000", &ctx).await;
    let out = call_ok(
        &task.output_tool(),
        json!({"task_id": id, "timeout_ms": 50}),
        &ctx,
    )
    .await;
    assert_has(&out, "status: running");
    assert_has(&out, "wait timed out after 50 ms");
    let too_long = task
        .output_tool()
        .call(json!({"task_id": id, "timeout_ms": 600_001}), &ctx)
        .await;
    assert!(too_long.is_err(), "timeout over the max is refused");
    task.stop(&id).await.expect("stops");
}

#[tokio::test]
async fn stop_cancels_the_executor_and_keeps_partial_output() {
    let (task, seen) = build(16).await;
    let ctx = TaskContext::new();
    let id = start_bg(&task, "streamer", "go", &ctx).await;
    // Let it stream its partial text.
    for _ in 0..100 {
        if !task
            .output(&id, None)
            .await
            .expect("known")
            .partial
            .is_empty()
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let out = call_ok(&task.stop_tool(), json!({"task_id": id}), &ctx).await;
    assert!(
        seen.load(Ordering::SeqCst),
        "the executor saw its token cancelled"
    );
    assert_has(&out, "status: cancelled");
    assert_has(&out, "half an answer");
    let again = task.output(&id, None).await.expect("still readable");
    assert_eq!(again.status(), TaskStatus::Cancelled);
}

#[tokio::test]
async fn finished_results_expire_after_the_ttl() {
    let seen = Arc::new(AtomicBool::new(false));
    let task = build_tool(kind(seen).into_type(), [fn_ref("echo")], |b| {
        b.result_ttl(Duration::from_millis(100))
    })
    .await;
    let ctx = TaskContext::new();
    let id = start_bg(&task, "echo", "x", &ctx).await;
    let done = task
        .output(&id, Some(Duration::from_secs(5)))
        .await
        .expect("readable");
    assert_eq!(done.status(), TaskStatus::Completed);
    tokio::time::sleep(Duration::from_millis(250)).await;
    let gone = task.output(&id, None).await.expect_err("expired");
    assert!(gone.to_string().contains("expired"), "{gone}");
    assert_eq!(task.retained_background(), 0);
    let out = call_ok(&task.output_tool(), json!({"task_id": id}), &ctx).await;
    assert_error(&out, "no background task");
}

#[tokio::test]
async fn background_limit_is_a_readable_refusal() {
    let (task, _) = build(2).await;
    let ctx = TaskContext::new();
    let a = start_bg(&task, "sleepy", "5000", &ctx).await;
    let b = start_bg(&task, "sleepy", "5000", &ctx).await;
    let refused = task.call(bg("sleepy", "5000"), &ctx).await.expect("call");
    assert_error(&refused, "max_background=2");
    task.stop(&a).await.expect("stop a");
    let ok = task.call(bg("echo", "after"), &ctx).await.expect("call");
    assert!(!ok.is_error, "a slot was freed: {}", ok.content);
    task.stop(&b).await.expect("stop b");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_background_tasks_return_their_own_results() {
    let (task, _) = build(1000).await;
    let ctx = TaskContext::new();
    let ids: Vec<(usize, String)> = futures::future::join_all((0..1000).map(|i| {
        let task = task.clone();
        let ctx = ctx.clone();
        async move {
            let out = task
                .call(bg("echo", &format!("job-{i}")), &ctx)
                .await
                .expect("call");
            assert!(!out.is_error, "{}", out.content);
            (i, task_id_of(&out.content))
        }
    }))
    .await;
    let distinct: std::collections::HashSet<&String> = ids.iter().map(|(_, id)| id).collect();
    assert_eq!(distinct.len(), 1000, "ids are unique");
    for (i, id) in &ids {
        let snap = task
            .output(id, Some(Duration::from_secs(30)))
            .await
            .expect("readable");
        let o = snap.outcome().expect("finished");
        assert_eq!(o.text, format!("echo[1]: job-{i}"));
    }
    assert_eq!(task.running_background(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn foreground_calls_run_concurrently() {
    let (task, ctx) = with_context(build(16).await);
    let barrier = Arc::new(tokio::sync::Barrier::new(8));
    let b = barrier.clone();
    // 8 calls that each wait for all 8 to be in flight: sequential dispatch would deadlock.
    let kind = FnKind::new().agent("meet", move |_, _| {
        let b = b.clone();
        async move {
            b.wait().await;
            Ok(TaskOutcome::completed("met"))
        }
    });
    let task2 = build_tool(kind.into_type(), [fn_ref("meet")], |b| b).await;
    drop(task);
    let all = tokio::time::timeout(
        Duration::from_secs(10),
        futures::future::join_all((0..8).map(|_| task2.call(call("meet", "x"), &ctx))),
    )
    .await
    .expect("all eight met, so they ran at once");
    assert!(
        all.iter()
            .all(|r| r.as_ref().is_ok_and(|o| o.content.starts_with("met")))
    );
}

#[tokio::test]
async fn parent_cancellation_reaches_a_foreground_child() {
    let (task, ctx) = with_context(build(16).await);
    let cancel = ctx.cancel().clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(50)).await;
        cancel.cancel();
    });
    let out = tokio::time::timeout(
        Duration::from_secs(5),
        task.call(call("sleepy", "60000"), &ctx),
    )
    .await
    .expect("returns promptly")
    .expect("tool call");
    assert_has(&out, "was cancelled");
    assert_has(&out, "woke early");
}

#[tokio::test]
async fn resume_routes_to_the_agent_that_produced_the_session() {
    let (task, ctx) = with_context(build(16).await);
    let (_, outcome) = foreground(&task, TaskCall::new("chat", "d", "hello"), &ctx).await;
    let session = outcome.session_id.expect("resumable");
    // The model names the wrong agent; the session decides.
    let again = TaskCall::new("echo", "d", "again").resuming(session);
    let (agent, outcome) = foreground(&task, again, &ctx).await;
    assert_eq!(agent, "chat");
    assert_eq!(outcome.text, "hello + again");
}

#[tokio::test]
async fn needs_input_explains_how_to_resume() {
    let (task, ctx) = with_context(build(16).await);
    let out = call_ok(&task, call("asker", "paint it"), &ctx).await;
    assert_has(&out, "needs input");
    assert_has(&out, "which colour?");
    assert_has(&out, "resume `ask-1`");
    let done = call_ok(&task, resuming("asker", "blue", "ask-1"), &ctx).await;
    assert_starts(&done, "thanks for blue");
}

#[tokio::test]
async fn an_executor_that_cannot_resume_says_so() {
    let (task, ctx) = with_context(build(16).await);
    let out = call_ok(&task, resuming("oneshot", "more", "one-1"), &ctx).await;
    assert_error(&out, "cannot resume `one-1`: this kind cannot resume");
}

#[tokio::test]
async fn progress_events_carry_the_task_tree() {
    let (task, _) = build(16).await;
    let events = Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink_events = events.clone();
    let count = Arc::new(AtomicUsize::new(0));
    let c2 = count.clone();
    let ctx = TaskContext::new()
        .with_progress(Arc::new(move |e: ProgressEvent| {
            c2.fetch_add(1, Ordering::SeqCst);
            sink_events.lock().expect("lock").push(e);
        }))
        .with_task_id("task_parent");
    task.call(call("echo", "hi"), &ctx).await.expect("call");
    let ev = events.lock().expect("lock").clone();
    assert!(matches!(
        ev.first().map(|e| &e.kind),
        Some(ProgressKind::Started { .. })
    ));
    assert!(matches!(
        ev.last().map(|e| &e.kind),
        Some(ProgressKind::Finished {
            status: TaskStatus::Completed,
            ..
        })
    ));
    assert!(
        ev.iter()
            .all(|e| e.parent_task_id.as_deref() == Some("task_parent")
                && e.depth == 1
                && e.agent == "echo")
    );
}

/// A kind whose agent `nest` delegates to itself through the handle in its context until it is
/// no longer offered `Task`, and reports the depth at which it stopped.
fn nesting_kind() -> SubagentType {
    FnKind::new()
        .agent("nest", |c, ctx| async move {
            let tools = ctx.delegation_tools();
            match tools.first() {
                Some(task) => {
                    assert_eq!(task.name(), "Task");
                    let names: Vec<&str> = tools.iter().map(|t| t.name()).collect();
                    assert_eq!(names, ["Task", "TaskOutput", "TaskStop", "SendMessage"]);
                    let out = task
                        .call(
                            json!({"description": "deeper", "prompt": c.prompt, "subagent_type": "nest"}),
                            &ctx,
                        )
                        .await?;
                    // Only the child's first line (its own answer) is passed up.
                    let first = out.content.lines().next().unwrap_or_default().to_string();
                    Ok(TaskOutcome::completed(format!("{}>{first}", ctx.depth())))
                }
                None => Ok(TaskOutcome::completed(format!("leaf@{}", ctx.depth()))),
            }
        })
        .into_type()
}

/// A Task tool with the `nest` agent and `max_depth`.
async fn nesting_task(max_depth: u32) -> TaskTool {
    build_tool(nesting_kind(), [fn_ref("nest")], |b| b.max_depth(max_depth)).await
}

#[tokio::test]
async fn children_delegate_through_the_handle_until_the_depth_limit() {
    for (max_depth, expected) in [(1, "leaf@1"), (2, "1>leaf@2"), (3, "1>2>leaf@3")] {
        let task = nesting_task(max_depth).await;
        match task
            .dispatch(TaskCall::new("nest", "d", "go"), &TaskContext::new())
            .await
            .expect("runs")
        {
            Dispatch::Foreground { outcome, .. } => {
                assert_eq!(outcome.text, expected, "max_depth {max_depth}")
            }
            other => panic!("foreground expected, got {other:?}"),
        }
    }
}

#[tokio::test]
async fn the_usage_tree_has_the_shape_of_the_delegation() {
    let task = build_tool(nesting_kind(), [fn_ref("nest")], |b| b).await;
    let out = task
        .call_tool(
            json!({"description": "d", "prompt": "go", "subagent_type": "nest"}),
            &TaskContext::new(),
        )
        .await;
    assert!(!out.is_error, "{}", out.content);
    assert_eq!(out.children.len(), 1);
    assert_eq!(out.children[0].agent, "nest");
    assert_eq!(out.children[0].kind, "FN");
}

#[tokio::test]
async fn a_call_at_the_depth_limit_is_refused() {
    let task = nesting_task(2).await;
    let deep = TaskContext::new().with_depth(2);
    let err = task
        .dispatch(TaskCall::new("nest", "d", "go"), &deep)
        .await
        .expect_err("refused");
    assert!(
        err.to_string().contains("max_depth=2"),
        "the error names the limit: {err}"
    );
    let err = TaskTool::builder()
        .max_depth(task_tool::MAX_DEPTH_CAP + 1)
        .build()
        .await
        .expect_err("over the cap");
    assert!(err.to_string().contains("cap"), "{err}");
}

#[tokio::test]
async fn progress_reports_start_and_finish_once_per_child_with_parent_links() {
    let events = Arc::new(std::sync::Mutex::new(Vec::<ProgressEvent>::new()));
    let sink = events.clone();
    let task = nesting_task(2).await;
    let ctx = TaskContext::new()
        .with_task_id("main")
        .with_progress(Arc::new(move |e: ProgressEvent| {
            sink.lock().expect("lock").push(e)
        }));
    task.dispatch(TaskCall::new("nest", "d", "go"), &ctx)
        .await
        .expect("runs");
    let ev = events.lock().expect("lock").clone();
    let (mut started, mut finished) = (Vec::<&ProgressEvent>::new(), 0);
    for e in &ev {
        match e.kind {
            ProgressKind::Started { .. } => started.push(e),
            ProgressKind::Finished { .. } => finished += 1,
            _ => {}
        }
    }
    assert_eq!(started.len(), 2, "one start per child: {ev:?}");
    assert_eq!(finished, 2, "one finish per child: {ev:?}");
    assert_eq!(started[0].parent_task_id.as_deref(), Some("main"));
    assert_eq!(started[0].depth, 1);
    assert_eq!(started[1].depth, 2);
    assert_eq!(started[1].parent_task_id, started[0].task_id);
}
