//! Loads every file of the shared real-world corpus (`<workspace>/../shared/corpora/claude-agents`)
//! in place: 397 agent files and 181 `SKILL.md` files from three public collections.

use std::path::{Path, PathBuf};

use subagent_claude::{ModelChoice, ToolRule, parse_agent, parse_skill, scan_dir_blocking};

/// The shared corpus (`../shared/corpora/claude-agents` above the project root), or `None`
/// after printing SKIPPED.
fn corpus_dir() -> Option<PathBuf> {
    subagent_testkit::claude_agents_corpus(Path::new(env!("CARGO_MANIFEST_DIR")), "corpus")
}

fn md_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            md_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "md") {
            out.push(p);
        }
    }
}

/// An independent, crude check of whether a file declares both required fields: a top-level
/// `name:` and `description:` line inside the first `---` block.
fn declares_name_and_description(text: &str) -> bool {
    let mut lines = text.lines().skip_while(|l| l.trim().is_empty());
    if lines.next().map(str::trim_end) != Some("---") {
        return false;
    }
    let front: Vec<&str> = lines.take_while(|l| l.trim_end() != "---").collect();
    let has = |k: &str| front.iter().any(|l| l.starts_with(k) && l.len() > k.len());
    has("name:") && has("description:")
}

#[test]
fn every_corpus_file_loads() {
    let Some(dir) = corpus_dir() else { return };
    let mut files = Vec::new();
    md_files(&dir, &mut files);

    let (mut agents, mut skills, mut declared, mut lenient, mut warned) = (0, 0, 0, 0, 0);
    let mut failures = Vec::new();
    for path in &files {
        let text = std::fs::read_to_string(path).unwrap();
        let should_load = declares_name_and_description(&text);
        declared += usize::from(should_load);
        let is_skill = path.file_name().is_some_and(|n| n == "SKILL.md");
        let result = if is_skill {
            parse_skill(path, &text).map(|p| {
                assert!(
                    !p.skill.body.is_empty(),
                    "{}: empty skill body",
                    path.display()
                );
                p.warnings
            })
        } else {
            parse_agent(path, &text).map(|p| {
                let d = &p.definition;
                assert!(!d.name.is_empty() && !d.description.is_empty());
                assert!(!d.prompt.is_empty(), "{}: empty prompt", path.display());
                p.warnings
            })
        };
        match result {
            Ok(warnings) => {
                if is_skill {
                    skills += 1;
                } else {
                    agents += 1;
                }
                if !warnings.is_empty() {
                    warned += 1;
                }
                if warnings.iter().any(|w| w.contains("leniently")) {
                    lenient += 1;
                }
            }
            Err(e) if should_load => failures.push(format!("{}: {e}", path.display())),
            Err(_) => {}
        }
    }
    println!(
        "corpus: {} Markdown files; loaded {agents} agents + {skills} skills; {declared} declare \
         name and description; {lenient} read leniently; {warned} with warnings; {} failures",
        files.len(),
        failures.len()
    );
    assert!(
        failures.is_empty(),
        "files that should load did not:\n{}",
        failures.join("\n")
    );
    assert_eq!(agents + skills, declared);
    assert_eq!(agents, 397, "the corpus README lists 397 agent files");
    assert_eq!(skills, 181, "the corpus README lists 181 skills");
    assert_eq!(lenient, 8, "the README lists 8 files that fail strict YAML");
}

#[test]
fn corpus_spot_checks() {
    let Some(dir) = corpus_dir() else { return };
    let load = |rel: &str| {
        let p = dir.join(rel);
        parse_agent(&p, &std::fs::read_to_string(&p).unwrap()).unwrap()
    };

    let p = load("voltagent-subagents/categories/08-business-product/growth-loops.md");
    assert_eq!(p.definition.name, "growth-loops");
    assert!(
        p.definition
            .description
            .contains("Triggers on: 'growth loop', 'flywheel'"),
        "{}",
        p.definition.description
    );
    assert_eq!(
        p.definition.tools.as_ref().map(Vec::len),
        Some(7),
        "{:?}",
        p.definition.tools
    );
    assert!(p.warnings.iter().any(|w| w.contains("leniently")));

    let p = load("lst97-sub-agents/agents/data-ai/ai-engineer.md");
    let tools = p.definition.tools.unwrap();
    assert!(tools.contains(&ToolRule::Name("mcp__context7__get-library-docs".into())));
    assert!(tools.contains(&ToolRule::Name("MultiEdit".into())));
    assert_eq!(
        p.definition.model,
        Some(ModelChoice::Named("sonnet".into()))
    );
}

#[test]
fn corpus_scan_loads_agents_and_skips_skills() {
    let Some(dir) = corpus_dir() else { return };
    let report = scan_dir_blocking(&dir).unwrap();
    println!(
        "scan_dir(corpus): loaded {}, skipped {}, warnings {}",
        report.loaded.len(),
        report.skipped.len(),
        report.warning_count()
    );
    assert_eq!(report.loaded.len(), 397);
    assert_eq!(report.skipped.len(), 181);
    // Every name (whatever it holds: capitals, spaces, `/`) has one safe, distinct slug.
    let mut slugs = std::collections::HashMap::new();
    for a in &report.loaded {
        let slug = subagent_claude::agent_slug(&a.definition.name);
        assert!(
            slug.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-'),
            "{slug}"
        );
        if let Some(other) = slugs.insert(slug.clone(), a.definition.name.to_lowercase()) {
            assert_eq!(
                other,
                a.definition.name.to_lowercase(),
                "two names, one slug {slug}"
            );
        }
    }
    assert!(report.skipped.iter().all(|s| s.reason.contains("SKILL.md")));
}

/// Every prefix (at ~97-character steps) of a sample of corpus files parses or errors cleanly.
#[test]
fn truncated_corpus_files_never_panic() {
    let Some(dir) = corpus_dir() else { return };
    let mut files = Vec::new();
    md_files(&dir, &mut files);
    let mut tried = 0usize;
    for path in files.iter().step_by(23) {
        let text = std::fs::read_to_string(path).unwrap();
        let cut_points = text.char_indices().map(|(i, _)| i).step_by(97);
        for cut in cut_points.take(60) {
            let _ = parse_agent(path, &text[..cut]);
            let _ = parse_skill(path, &text[..cut]);
            tried += 1;
        }
    }
    println!("parsed {tried} truncated inputs");
    assert!(tried > 100);
}
