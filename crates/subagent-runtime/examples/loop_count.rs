//! Callgrind driver for the loop bench: `loop_count RUNS on|off` does RUNS runs of the loop
//! bench's fixture (11 turns each: an instant model, a no-op tool) with compaction on (far
//! from the window) or off. Instructions per run = (I(6N) - I(N)) / 5N, free of the machine's
//! load:
//!
//! ```text
//! cargo build --release -p subagent-runtime --features bench-internals --example loop_count
//! valgrind --tool=callgrind --callgrind-out-file=/tmp/cg.%p target/release/examples/loop_count 200 on
//! ```

#[path = "../benches/support/loop_fixture.rs"]
mod loop_fixture;
#[path = "../benches/support/runtime.rs"]
mod runtime;

use subagent_runtime::bench_internals::set_compaction_disabled;

fn main() {
    let mut args = std::env::args().skip(1);
    let runs: u32 = args
        .next()
        .and_then(|n| n.parse().ok())
        .expect("usage: loop_count RUNS on|off");
    let off = match args.next().as_deref() {
        Some("on") => false,
        Some("off") => true,
        _ => panic!("usage: loop_count RUNS on|off"),
    };
    set_compaction_disabled(off);
    let rt = runtime::current_thread();
    let fixture = loop_fixture::LoopFixture::new();
    rt.block_on(async {
        for _ in 0..runs {
            fixture.run().await;
        }
    });
}
