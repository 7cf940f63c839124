//! Task dispatch overhead: foreground through `Task` with a no-op executor, nested delegation
//! (each level reaches `Task` through the delegation handle in its context), and 10,000
//! background tasks spawned and collected.
#![allow(missing_docs)]

mod common;

use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;
use subagent_spi::*;
use subagent_testkit::{FnKind, fn_ref};
use task_tool::TaskTool;

/// The bench's kind: agent `noop`. A prompt `nest N` delegates to itself with `nest N-1`
/// through the handle in its context, as a Markdown agent's model would through `Task`; any
/// other prompt is echoed.
fn noop_kind() -> SubagentType {
    FnKind::new()
        .agent("noop", |call: TaskCall, ctx: TaskContext| async move {
            if let Some(n) = call.prompt.strip_prefix("nest ")
                && let Ok(n) = n.parse::<u32>()
                && n > 0
            {
                let tools = ctx.delegation_tools();
                let task = tools.first().expect("delegation offered below the limit");
                let input = json!({"description": "nest", "prompt": format!("nest {}", n - 1), "subagent_type": "noop"});
                let out = task.call(input, &ctx).await?;
                return Ok(TaskOutcome::completed(out.content));
            }
            Ok(TaskOutcome::completed(call.prompt))
        })
        .into_type()
}

/// The reference of the bench's agent.
fn noop_ref() -> SubagentReference {
    fn_ref("noop?does nothing")
}

fn build(rt: &tokio::runtime::Runtime, max_background: usize) -> TaskTool {
    rt.block_on(
        TaskTool::builder()
            .subagent_type(noop_kind())
            .max_depth(8)
            .subagent_reference(noop_ref())
            .max_background(max_background)
            .max_retained(20_000)
            .build(),
    )
    .expect("builds")
}

/// A current-thread runtime and a `Task` tool built on it (16 background slots): the setting
/// of the foreground and nested benches.
fn on_current_thread() -> (tokio::runtime::Runtime, TaskTool) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let task = build(&rt, 16);
    (rt, task)
}

fn peak_rss_kb() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    s.lines()
        .find(|l| l.starts_with("VmHWM:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

fn foreground(c: &mut Criterion) {
    let (rt, task) = on_current_thread();
    let ctx = TaskContext::new();
    let input = json!({"description": "bench", "prompt": "ping", "subagent_type": "noop"});
    c.bench_function("task_foreground_noop", |b| {
        b.to_async(&rt).iter(|| async {
            let out = task.call_tool(input.clone(), &ctx).await;
            assert!(!out.is_error);
            out
        })
    });
}

/// Levels 1 to 4 of `Task` → agent → `Task` → ...: the slope between levels is what one
/// nesting level adds (JSON in, dispatch, child context, progress, formatting out).
fn nested(c: &mut Criterion) {
    let (rt, task) = on_current_thread();
    let ctx = TaskContext::new();
    let mut g = c.benchmark_group("task_nested");
    for levels in [1u32, 2, 3, 4] {
        let input = json!({"description": "bench", "prompt": format!("nest {}", levels - 1), "subagent_type": "noop"});
        g.bench_function(format!("levels_{levels}"), |b| {
            b.to_async(&rt).iter(|| async {
                let out = task.call_tool(input.clone(), &ctx).await;
                assert!(!out.is_error, "{}", out.content);
                out
            })
        });
    }
    g.finish();
}

fn background(c: &mut Criterion) {
    let rt = common::runtime(2);
    let mut g = c.benchmark_group("task_background");
    g.sample_size(10).measurement_time(Duration::from_secs(10));
    g.bench_function("spawn_and_collect_10000", |b| {
        b.to_async(&rt).iter(|| async {
            // A fresh registry each iteration, so retention does not carry over.
            let task = TaskTool::builder()
                .subagent_type(noop_kind())
                .subagent_reference(noop_ref())
                .max_background(10_000)
                .build()
                .await
                .expect("builds");
            let ctx = TaskContext::new();
            let mut ids = Vec::with_capacity(10_000);
            for i in 0..10_000 {
                let call = TaskCall::new("noop", "bench", format!("job {i}")).in_background(true);
                match task.dispatch(call, &ctx).await.expect("spawns") {
                    task_tool::Dispatch::Background { task_id, .. } => ids.push(task_id),
                    other => panic!("expected background, got {other:?}"),
                }
            }
            for id in &ids {
                let snap = task
                    .output(id, Some(Duration::from_secs(60)))
                    .await
                    .expect("readable");
                assert!(snap.outcome().is_some());
            }
        })
    });
    g.finish();
    let _ = build(&rt, 1);
    if let Some(kb) = peak_rss_kb() {
        eprintln!(
            "peak resident memory of the bench process (VmHWM): {:.1} MB",
            kb as f64 / 1024.0
        );
    }
}

criterion_group!(benches, foreground, nested, background);
criterion_main!(benches);
