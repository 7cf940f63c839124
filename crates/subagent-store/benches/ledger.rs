//! 10,000 background tasks spawned and collected (every result read with `TaskOutput`'s Rust
//! twin, then the ledger flushed): in memory (the baseline), with the SQLite ledger, and with the
//! PostgreSQL ledger when `SUBAGENTS_TEST_POSTGRES_URL` names a server.
//!
//! `cargo bench -p subagent-store --features ledger --bench ledger -- --warm-up-time 1 --measurement-time 3`

use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use subagent_spi::{TaskCall, TaskContext, TaskOutcome};
use subagent_store::{Db, SqlTaskLedger, StoreUrl};
use subagent_testkit::{FnKind, fn_ref};
use task_tool::{Dispatch, TaskTool};

const TASKS: usize = 10_000;

async fn tool(db: Option<&Db>) -> TaskTool {
    let kind = FnKind::new()
        .agent("echo", |c, _| async move {
            Ok(TaskOutcome::completed(c.prompt))
        })
        .into_type();
    let mut b = TaskTool::builder()
        .subagent_type(kind)
        .subagent_reference(fn_ref("echo"))
        .max_background(TASKS)
        .max_retained(TASKS);
    if let Some(db) = db {
        b = b.ledger(Arc::new(SqlTaskLedger::new(db.clone())));
    }
    b.build().await.expect("tool")
}

/// Spawns and collects `TASKS` tasks; the time includes the last ledger write.
async fn spawn_and_collect(tool: &TaskTool) -> Duration {
    let start = Instant::now();
    let ctx = TaskContext::new();
    let mut ids = Vec::with_capacity(TASKS);
    for i in 0..TASKS {
        let call = TaskCall::new("echo", "bench", format!("task {i}")).in_background(true);
        match tool.dispatch(call, &ctx).await.expect("dispatch") {
            Dispatch::Background { task_id, .. } => ids.push(task_id),
            _ => unreachable!("background"),
        }
    }
    for id in &ids {
        let snap = tool
            .output(id, Some(Duration::from_secs(30)))
            .await
            .expect("output");
        assert!(snap.outcome().is_some(), "{id} finished");
    }
    tool.flush_ledger().await.expect("ledger written");
    start.elapsed()
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let mut g = c.benchmark_group("background_10k");
    g.sample_size(10);
    g.bench_function("memory", |b| {
        b.to_async(&rt).iter_custom(|iters| async move {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let t = tool(None).await;
                total += spawn_and_collect(&t).await;
            }
            total
        });
    });
    g.bench_function("sqlite", |b| {
        b.to_async(&rt).iter_custom(|iters| async move {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let dir = tempfile::tempdir().expect("tmp");
                let url = StoreUrl::Sqlite(dir.path().join("ledger.db"));
                let db = Db::open(&url).await.expect("open").expect("db");
                let t = tool(Some(&db)).await;
                total += spawn_and_collect(&t).await;
            }
            total
        });
    });
    if let Ok(url) = std::env::var("SUBAGENTS_TEST_POSTGRES_URL") {
        let url: StoreUrl = url.parse().expect("url");
        g.bench_function("postgres", |b| {
            let url = url.clone();
            b.to_async(&rt).iter_custom(move |iters| {
                let url = url.clone();
                async move {
                    let db = Db::open(&url).await.expect("open").expect("db");
                    let mut total = Duration::ZERO;
                    for _ in 0..iters {
                        let t = tool(Some(&db)).await;
                        total += spawn_and_collect(&t).await;
                    }
                    if let Db::Postgres(p) = &db {
                        let _ = sqlx::query("DELETE FROM background_tasks WHERE agent = 'echo'")
                            .execute(p)
                            .await;
                    }
                    total
                }
            });
        });
    } else {
        eprintln!("SKIPPED background_10k/postgres: SUBAGENTS_TEST_POSTGRES_URL is not set");
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
