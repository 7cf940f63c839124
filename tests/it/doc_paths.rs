//! Docs that cannot drift: every file of this repository that the README, `docs/` or a crate's
//! README names by path exists. A path is read from the repository root or, for the crate-local
//! ones the docs use (`tests/it/grpc.rs`, `benches/client.rs`), from one of `crates/*/`.
//! Changelogs are history and may name files that have moved since.

use std::path::{Path, PathBuf};

/// Where cited paths start: the top folders of the repository and of a crate.
const ROOTS: &[&str] = &[
    "crates/",
    "tests/",
    "examples/",
    "benches/",
    "scripts/",
    "docs/",
    ".ci/",
];

/// File endings that make a token a path to check.
const ENDINGS: &[&str] = &[".rs", ".md", ".py", ".sh", ".js", ".mjs", ".toml", ".json"];

/// The repository-relative paths a Markdown text names, with their line numbers.
fn cited_paths(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        for token in line.split(|c: char| !(c.is_alphanumeric() || "_./-".contains(c))) {
            let token = token.trim_end_matches(['.', '/']);
            if ROOTS.iter().any(|r| token.starts_with(r))
                && ENDINGS.iter().any(|e| token.ends_with(e))
            {
                out.push((n + 1, token.to_string()));
            }
        }
    }
    out
}

/// The Markdown files whose paths must hold.
fn docs(repo: &Path) -> Vec<PathBuf> {
    let mut files = vec![repo.join("README.md")];
    let mut dirs = vec![repo.join("docs")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "md") {
                files.push(path);
            }
        }
    }
    for entry in std::fs::read_dir(repo.join("crates")).unwrap() {
        let readme = entry.unwrap().path().join("README.md");
        if readme.is_file() {
            files.push(readme);
        }
    }
    files.sort();
    files
}

#[test]
fn every_file_the_docs_name_exists() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let crates: Vec<PathBuf> = std::fs::read_dir(repo.join("crates"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    let mut missing = Vec::new();
    let mut checked = 0;
    for doc in docs(&repo) {
        let text = std::fs::read_to_string(&doc).unwrap();
        for (line, path) in cited_paths(&text) {
            checked += 1;
            let found = repo.join(&path).exists() || crates.iter().any(|c| c.join(&path).exists());
            if !found {
                let doc = doc.strip_prefix(&repo).unwrap().display();
                missing.push(format!("{doc}:{line}: {path}"));
            }
        }
    }
    assert!(
        checked > 100,
        "only {checked} cited paths found: the scan is broken"
    );
    assert!(
        missing.is_empty(),
        "docs name files that do not exist (moved? say where they went):\n{}",
        missing.join("\n")
    );
}

#[test]
fn cited_paths_are_found_in_prose_code_and_links() {
    let text = "See `crates/a/src/lib.rs:12` and [the guide](docs/guide/x.md).\n\
                Run tests/it/grpc.rs, then https://example.com/tests/y.rs (a URL: not ours).";
    let found: Vec<String> = cited_paths(text).into_iter().map(|(_, p)| p).collect();
    assert_eq!(
        found,
        ["crates/a/src/lib.rs", "docs/guide/x.md", "tests/it/grpc.rs"]
    );
}
