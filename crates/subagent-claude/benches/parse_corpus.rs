//! Parses the whole shared corpus (397 agents + 181 skills) from memory, single-threaded:
//! our typed parser side by side with bare `gray_matter` into `serde_json::Value` (baseline).
//!
//! Run: `cargo bench -p subagent-claude --bench parse_corpus`

use std::hint::black_box;
use std::path::{Path, PathBuf};

use criterion::{Criterion, criterion_group, criterion_main};
use gray_matter::Matter;
use gray_matter::engine::YAML;

fn corpus() -> Option<Vec<(PathBuf, String, bool)>> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/corpora/claude-agents");
    if !dir.is_dir() {
        eprintln!("corpus not found at {}; nothing to bench", dir.display());
        return None;
    }
    let mut files = Vec::new();
    let mut stack = vec![dir];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).ok()?.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "md") {
                let text = std::fs::read_to_string(&p).ok()?;
                let skill = p.file_name().is_some_and(|n| n == "SKILL.md");
                files.push((p, text, skill));
            }
        }
    }
    files.sort();
    Some(files)
}

fn ours(files: &[(PathBuf, String, bool)]) -> usize {
    let mut ok = 0;
    for (path, text, skill) in files {
        let loaded = if *skill {
            subagent_claude::parse_skill(path, text).map(|p| black_box(p).skill.name.len())
        } else {
            subagent_claude::parse_agent(path, text).map(|p| black_box(p).definition.name.len())
        };
        ok += usize::from(loaded.is_ok());
    }
    ok
}

fn gray(files: &[(PathBuf, String, bool)]) -> usize {
    let matter = Matter::<YAML>::new();
    let mut ok = 0;
    for (_, text, _) in files {
        let parsed = matter.parse::<serde_json::Value>(text);
        ok += usize::from(black_box(parsed).is_ok_and(|p| p.data.is_some()));
    }
    ok
}

fn bench(c: &mut Criterion) {
    let Some(files) = corpus() else { return };
    let (n_ours, n_gray) = (ours(&files), gray(&files));
    eprintln!(
        "{} files: subagent-claude loads {n_ours}, bare gray_matter loads {n_gray}",
        files.len()
    );
    let mut g = c.benchmark_group("parse_corpus");
    g.sample_size(60);
    g.bench_function("subagent_claude_typed", |b| {
        b.iter(|| ours(black_box(&files)))
    });
    g.bench_function("gray_matter_value_baseline", |b| {
        b.iter(|| gray(black_box(&files)))
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
