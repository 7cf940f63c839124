//! Loop overhead per turn: an instant in-process model that asks for a no-op tool for 10 turns
//! and then answers, so the time measured is the loop's own (request building, progress events,
//! tool dispatch, transcript bookkeeping, store save).
//!
//! `agent_loop/11_turns_noop_tool` is the loop as it runs (compaction on, far below the
//! window). `compaction/off` and `compaction/on_far_from_window` are the same run with
//! compaction switched off and on (the `bench-internals` switch), measured one after the other
//! in this one process, so their ratio is what compaction costs a run that never nears its
//! window.
//! For a figure free of the machine's load, count instructions with `examples/loop_count.rs`.

#[path = "support/loop_fixture.rs"]
mod loop_fixture;
#[path = "support/runtime.rs"]
mod runtime;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use loop_fixture::{LoopFixture, TOOL_TURNS};
use subagent_runtime::bench_internals::set_compaction_disabled;

fn loop_overhead(c: &mut Criterion) {
    let rt = runtime::current_thread();
    let fixture = LoopFixture::new();

    let mut group = c.benchmark_group("agent_loop");
    // One element = one turn: per-element time is the per-turn overhead.
    group.throughput(Throughput::Elements(u64::from(TOOL_TURNS + 1)));
    group.bench_function("11_turns_noop_tool", |b| {
        b.to_async(&rt).iter(|| fixture.run());
    });
    group.finish();

    let mut group = c.benchmark_group("compaction");
    group.throughput(Throughput::Elements(u64::from(TOOL_TURNS + 1)));
    for (name, off) in [("off", true), ("on_far_from_window", false)] {
        group.bench_function(name, |b| {
            b.to_async(&rt).iter_custom(|iters| {
                let fixture = &fixture;
                async move {
                    set_compaction_disabled(off);
                    let start = std::time::Instant::now();
                    for _ in 0..iters {
                        fixture.run().await;
                    }
                    let elapsed = start.elapsed();
                    set_compaction_disabled(false);
                    elapsed
                }
            });
        });
    }
    group.finish();
}

criterion_group!(benches, loop_overhead);
criterion_main!(benches);
