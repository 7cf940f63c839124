//! What starting a command costs under each sandbox: `true` started and waited for through
//! `ConfinedCommand` unconfined, with Landlock alone (the fallback) and in namespaces (through
//! this crate's `subagent-sandbox` helper), in an empty workspace and in one of 20,000 files
//! (the namespace plan and the fallback both scan the workspace for nested repositories).
//! Modes the machine does not offer are skipped with a note.
//!
//! Run: `cargo bench -p subagent-tools --bench confined_spawn`

use std::path::Path;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use subagent_tools::{ConfinedCommand, SandboxMode, SandboxPolicy, sandbox_report};

async fn start(policy: &SandboxPolicy, root: &Path) {
    let mut child = ConfinedCommand::new("true")
        .current_dir(root)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .spawn(policy, root)
        .await
        .expect("starts");
    assert!(child.wait().await.expect("waits").success());
}

/// A workspace of `files` files, 100 to a directory, with a control file and a repository.
fn workspace(files: usize) -> tempfile::TempDir {
    let ws = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(ws.path().join(".git/hooks")).unwrap();
    std::fs::write(ws.path().join(".git/config"), "[core]\n").unwrap();
    std::fs::write(ws.path().join("subagents.toml"), "").unwrap();
    for i in 0..files {
        let dir = ws.path().join(format!("src/d{}", i / 100));
        if i % 100 == 0 {
            std::fs::create_dir_all(&dir).unwrap();
        }
        std::fs::write(dir.join(format!("f{i}.rs")), "").unwrap();
    }
    ws
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let temp = tempfile::tempdir().unwrap();
    let base = SandboxPolicy::default().temp_dir(temp.path());
    let modes = [
        (
            "unconfined",
            SandboxPolicy::unconfined(),
            SandboxMode::Unconfined,
        ),
        (
            "landlock",
            base.clone().namespaces(false),
            SandboxMode::Landlock,
        ),
        (
            "namespaces",
            base.helper(env!("CARGO_BIN_EXE_subagent-sandbox")),
            SandboxMode::Namespaces,
        ),
    ];
    let mut group = c.benchmark_group("confined_spawn");
    group
        .sample_size(20)
        .measurement_time(Duration::from_secs(5));
    for (files, ws) in [(0, workspace(0)), (20_000, workspace(20_000))] {
        for (name, policy, mode) in &modes {
            if *mode != SandboxMode::Unconfined && sandbox_report(policy).mode != *mode {
                eprintln!("{name}: not available here; skipped");
                continue;
            }
            group.bench_function(format!("{name}/{files}_files"), |b| {
                b.to_async(&rt).iter(|| start(policy, ws.path()));
            });
        }
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
