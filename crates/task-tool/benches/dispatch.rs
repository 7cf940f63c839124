//! Task dispatch overhead: foreground through `Task` with a no-op executor, and 10,000
//! background tasks spawned and collected.
#![allow(missing_docs)]

use std::any::Any;
use std::sync::Arc;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;
use subagent_spi::*;
use task_tool::TaskTool;

#[derive(Debug)]
struct Def(SubagentReference);

impl SubagentDefinition for Def {
    fn name(&self) -> &str {
        "noop"
    }
    fn description(&self) -> &str {
        "does nothing"
    }
    fn kind(&self) -> &str {
        "NOOP"
    }
    fn reference(&self) -> &SubagentReference {
        &self.0
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

struct Noop;

#[async_trait]
impl SubagentResolver for Noop {
    fn can_resolve(&self, r: &SubagentReference) -> bool {
        r.is_kind("NOOP")
    }
    async fn resolve(
        &self,
        r: &SubagentReference,
    ) -> Result<Arc<dyn SubagentDefinition>, SubagentError> {
        Ok(Arc::new(Def(r.clone())))
    }
}

#[async_trait]
impl SubagentExecutor for Noop {
    fn kind(&self) -> &str {
        "NOOP"
    }
    async fn execute(
        &self,
        call: TaskCall,
        _d: Arc<dyn SubagentDefinition>,
        _ctx: TaskContext,
    ) -> Result<TaskOutcome, SubagentError> {
        Ok(TaskOutcome::completed(call.prompt))
    }
}

fn build(rt: &tokio::runtime::Runtime, max_background: usize) -> TaskTool {
    let n = Arc::new(Noop);
    rt.block_on(
        TaskTool::builder()
            .subagent_type(SubagentType::new(n.clone(), n))
            .subagent_reference(SubagentReference::new("noop:", "NOOP"))
            .max_background(max_background)
            .max_retained(20_000)
            .build(),
    )
    .expect("builds")
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
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let task = build(&rt, 16);
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

fn background(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let mut g = c.benchmark_group("task_background");
    g.sample_size(10).measurement_time(Duration::from_secs(10));
    g.bench_function("spawn_and_collect_10000", |b| {
        b.to_async(&rt).iter(|| async {
            // A fresh registry each iteration, so retention does not carry over.
            let task = TaskTool::builder()
                .subagent_type({
                    let n = Arc::new(Noop);
                    SubagentType::new(n.clone(), n)
                })
                .subagent_reference(SubagentReference::new("noop:", "NOOP"))
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

criterion_group!(benches, foreground, background);
criterion_main!(benches);
