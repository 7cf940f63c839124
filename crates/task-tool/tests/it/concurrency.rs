//! The concurrency cap over a delegation tree: calls over it wait their turn, background ones
//! show `queued`, and nesting never deadlocks on it.

use crate::common;

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use tokio::sync::Notify;

use common::{FnKind, assert_has, build_tool, fn_ref};
use serde_json::json;
use subagent_spi::{
    SubagentError, SubagentType, TaskCall, TaskContext, TaskOutcome, TaskStatus, Tool,
};
use task_tool::TaskTool;

#[derive(Default)]
struct Gauge {
    now: AtomicUsize,
    max: AtomicUsize,
}

impl Gauge {
    fn enter(&self) {
        let n = self.now.fetch_add(1, Ordering::SeqCst) + 1;
        self.max.fetch_max(n, Ordering::SeqCst);
    }
    fn leave(&self) {
        self.now.fetch_sub(1, Ordering::SeqCst);
    }
}

fn call(agent: &str, background: bool) -> serde_json::Value {
    json!({"description": "d", "prompt": "p", "subagent_type": agent, "run_in_background": background})
}

/// Runs `agent` in the foreground through the `Task` tool the run of `ctx` is offered; its
/// answer.
async fn delegate(ctx: &TaskContext, agent: &str) -> String {
    let task = ctx
        .delegation_tools()
        .into_iter()
        .find(|t| t.name() == "Task")
        .expect("Task offered");
    task.call(call(agent, false), ctx)
        .await
        .expect("Task runs")
        .content
}

/// A `Task` tool over `kind`'s agents `names`, at most `max_concurrent` calls running at once.
async fn capped(kind: SubagentType, names: &[&str], max_concurrent: usize) -> TaskTool {
    build_tool(kind, names.iter().copied().map(fn_ref), |b| {
        b.max_concurrent(max_concurrent)
    })
    .await
}

/// A tool with one place, over `held`, which runs `run` given a `Notify` the test keeps, and
/// `quick`, which answers `QUICK-DONE` at once.
async fn one_place<F, Fut>(held: &str, run: F) -> (TaskTool, Arc<Notify>)
where
    F: Fn(Arc<Notify>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<TaskOutcome, SubagentError>> + Send + 'static,
{
    let notify = Arc::new(Notify::new());
    let kept = notify.clone();
    let kind = FnKind::new()
        .agent(held, move |_c, _x| run(kept.clone()))
        .agent("quick", |_c, _x| async move {
            Ok(TaskOutcome::completed("QUICK-DONE"))
        })
        .into_type();
    (capped(kind, &[held, "quick"], 1).await, notify)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parallel_foreground_calls_wait_their_turn_under_the_cap() {
    let gauge = Arc::new(Gauge::default());
    let g = gauge.clone();
    let kind = FnKind::new()
        .agent("work", move |_c, _x| {
            let g = g.clone();
            async move {
                g.enter();
                tokio::time::sleep(Duration::from_millis(30)).await;
                g.leave();
                Ok(TaskOutcome::completed("ok"))
            }
        })
        .into_type();
    let task = capped(kind, &["work"], 5).await;
    let ctx = TaskContext::new();
    let outs =
        futures::future::join_all((0..40).map(|_| task.call_tool(call("work", false), &ctx))).await;
    assert!(outs.iter().all(|o| !o.is_error), "all complete");
    let max = gauge.max.load(Ordering::SeqCst);
    assert!(max <= 5, "never more than the cap at once: {max}");
    assert!(max >= 2, "they do run in parallel: {max}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_parent_waiting_for_its_child_gives_its_place_back() {
    // With a cap of 1, `outer` holds the only place when it delegates to `inner`: without the
    // rule, `inner` would wait for ever.
    let kind = FnKind::new()
        .agent("outer", |_c, ctx: TaskContext| async move {
            let out = delegate(&ctx, "inner").await;
            Ok(TaskOutcome::completed(format!("outer got: {out}")))
        })
        .agent("inner", |_c, _x| async move {
            Ok(TaskOutcome::completed("INNER-DONE"))
        })
        .into_type();
    let task = capped(kind, &["outer", "inner"], 1).await;
    let out = tokio::time::timeout(
        Duration::from_secs(10),
        task.call_tool(call("outer", false), &TaskContext::new()),
    )
    .await
    .expect("no deadlock on the cap");
    assert_has(&out, "INNER-DONE");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_parent_whose_child_ended_waits_its_turn_to_go_on() {
    // Cap 1, four parents at once, each working before and after delegating. A parent's child
    // ending while another run holds the only place must wait for it before working again:
    // at no time do two runs do work of their own.
    let gauge = Arc::new(Gauge::default());
    let (go, gi) = (gauge.clone(), gauge.clone());
    let work = |g: Arc<Gauge>| async move {
        g.enter();
        tokio::time::sleep(Duration::from_millis(10)).await;
        g.leave();
    };
    let kind = FnKind::new()
        .agent("outer", move |_c, ctx: TaskContext| {
            let g = go.clone();
            async move {
                work(g.clone()).await;
                let out = delegate(&ctx, "inner").await;
                work(g).await;
                Ok(TaskOutcome::completed(out))
            }
        })
        .agent("inner", move |_c, _x| {
            let g = gi.clone();
            async move {
                work(g).await;
                Ok(TaskOutcome::completed("INNER-DONE"))
            }
        })
        .into_type();
    let task = capped(kind, &["outer", "inner"], 1).await;
    let ctx = TaskContext::new();
    let outs = tokio::time::timeout(
        Duration::from_secs(20),
        futures::future::join_all((0..4).map(|_| task.call_tool(call("outer", false), &ctx))),
    )
    .await
    .expect("no deadlock on the cap");
    assert!(
        outs.iter().all(|o| o.content.contains("INNER-DONE")),
        "all complete: {outs:?}"
    );
    assert_eq!(
        gauge.max.load(Ordering::SeqCst),
        1,
        "one run works at a time"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_background_task_over_the_cap_shows_queued_then_runs() {
    let (task, release) = one_place("slow", |release| async move {
        release.notified().await;
        Ok(TaskOutcome::completed("SLOW-DONE"))
    })
    .await;
    let ctx = TaskContext::new();
    let first = task.call_tool(call("slow", true), &ctx).await;
    let second = task.call_tool(call("quick", true), &ctx).await;
    let (slow_id, quick_id) = (
        common::task_id_in(&first.content),
        common::task_id_in(&second.content),
    );
    let output = task.output_tool();
    let peek = output
        .call(json!({"task_id": quick_id, "block": false}), &ctx)
        .await
        .expect("reads");
    assert_has(&peek, "status: queued");

    release.notify_one();
    let slow = output
        .call(json!({"task_id": slow_id, "timeout_ms": 5000}), &ctx)
        .await
        .expect("reads");
    assert_has(&slow, "SLOW-DONE");
    let quick = output
        .call(json!({"task_id": quick_id, "timeout_ms": 5000}), &ctx)
        .await
        .expect("reads");
    assert_has(&quick, "QUICK-DONE");
}

#[tokio::test]
async fn a_cap_of_zero_is_refused() {
    let err = TaskTool::builder()
        .max_concurrent(0)
        .build()
        .await
        .expect_err("refused");
    assert!(err.to_string().contains("max_concurrent"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_dropped_midway_gives_its_place_back() {
    // With a cap of 1: a call holding the place is dropped (its caller gave up), and one
    // queued behind it is dropped while it waits; the next call still gets the place.
    let (task, started) = one_place("stuck", |started| async move {
        started.notify_one();
        std::future::pending::<()>().await;
        Ok(TaskOutcome::completed("never"))
    })
    .await;
    let ctx = TaskContext::new();
    let holder = {
        let (task, ctx) = (task.clone(), ctx.clone());
        tokio::spawn(async move { task.call_tool(call("stuck", false), &ctx).await })
    };
    started.notified().await;
    // Queued behind the holder, then given up on.
    let queued = tokio::time::timeout(
        Duration::from_millis(50),
        task.call_tool(call("quick", false), &ctx),
    )
    .await;
    assert!(queued.is_err(), "waits while the place is held");
    holder.abort();
    assert!(holder.await.unwrap_err().is_cancelled());
    let out = tokio::time::timeout(
        Duration::from_secs(5),
        task.call_tool(call("quick", false), &ctx),
    )
    .await
    .expect("the dropped calls' place is free again");
    assert_has(&out, "QUICK-DONE");
}

/// Callers marked with a `BackgroundCaller` share the background limit: one that starts as
/// many as it can leaves places for the next ones (on the old code it took all 16).
#[tokio::test]
async fn callers_get_a_fair_share_of_the_background_limit() {
    use task_tool::BackgroundCaller;
    let task = TaskTool::builder()
        .subagent_type(
            common::FnKind::new()
                .agent("sleeper", |_, ctx| async move {
                    ctx.cancel().cancelled().await;
                    Ok(TaskOutcome::with_status("stopped", TaskStatus::Cancelled))
                })
                .into_type(),
        )
        .subagent_reference(common::fn_ref("sleeper"))
        .build()
        .await
        .expect("builds");
    let caller = |id: &str| {
        TaskContext::new()
            .with_task_id(id)
            .with_extension(BackgroundCaller::new(id))
    };
    let start = |ctx: TaskContext| {
        let task = task.clone();
        async move {
            task.dispatch(TaskCall::new("sleeper", "d", "p").in_background(true), &ctx)
                .await
        }
    };
    let (b, c) = (caller("b"), caller("c"));
    let mut b_started = 0;
    let refusal = loop {
        match start(b.clone()).await {
            Ok(_) => b_started += 1,
            Err(e) => break e.to_string(),
        }
        assert!(b_started <= 16, "b was never refused");
    };
    assert_eq!(b_started, 8, "alone, half the limit");
    assert!(refusal.contains("your share"), "{refusal}");
    for _ in 0..5 {
        start(c.clone()).await.expect("c finds places");
    }
    let third = start(caller("d")).await;
    assert!(third.is_ok(), "{third:?}");
    // The host's own tasks count only against the limit itself (13 + 1 + 2 = 16).
    for _ in 0..2 {
        start(TaskContext::new()).await.expect("the host starts");
    }
    let full = start(TaskContext::new())
        .await
        .expect_err("the limit holds");
    assert!(
        full.to_string()
            .contains("16 background tasks are already running"),
        "{full}"
    );
    assert_eq!(task.running_background(), 16);
    for id in task.running_background_ids() {
        task.stop(&id).await.expect("stops");
    }
}
