//! The README's crate map cannot drift (issue 43, item 5): every workspace crate under
//! `crates/` has a row, every row names a crate that exists, and its "uses" column lists
//! exactly the workspace crates that crate depends on (normal dependencies, optional ones
//! included), as `cargo metadata` reports them. The detailed table of docs/guide/crates.md has
//! a row per crate too, and the outside crates it names are dependencies of that crate.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use crate::common::OutputOk;

/// The repository root (this crate lives in `crates/subagents-cli`).
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("the repository root")
}

/// One workspace package: its normal dependencies (by package name).
#[derive(Debug)]
struct Package {
    deps: BTreeSet<String>,
}

/// The workspace packages under `crates/`, by name, from `cargo metadata --no-deps`; also the
/// names of every workspace package (for telling workspace dependencies from outside ones).
fn workspace() -> (BTreeMap<String, Package>, BTreeSet<String>) {
    let root = root();
    let cargo = std::env::var("CARGO")
        .ok()
        .or(option_env!("CARGO").map(str::to_string))
        .unwrap_or_else(|| "cargo".to_string());
    let out = std::process::Command::new(cargo)
        .args([
            "metadata",
            "--no-deps",
            "--format-version",
            "1",
            "--offline",
        ])
        .current_dir(&root)
        .output_ok();
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).expect("metadata is JSON");
    let packages = meta["packages"].as_array().expect("packages");
    let all: BTreeSet<String> = packages
        .iter()
        .map(|p| p["name"].as_str().expect("name").to_string())
        .collect();
    let crates_dir = root.join("crates");
    let mut map = BTreeMap::new();
    for p in packages {
        let manifest = Path::new(p["manifest_path"].as_str().expect("manifest_path"));
        if !manifest.starts_with(&crates_dir) {
            continue; // `examples/` and `tests/` are the repository's, not crates of the map
        }
        let deps = p["dependencies"]
            .as_array()
            .expect("dependencies")
            .iter()
            .filter(|d| d["kind"].is_null())
            .map(|d| d["name"].as_str().expect("dependency name").to_string())
            .collect();
        map.insert(
            p["name"].as_str().expect("name").to_string(),
            Package { deps },
        );
    }
    (map, all)
}

/// The rows of the first table after `heading` in `text`: (crate, cells after the first).
fn rows(text: &str, heading: &str, file: &str) -> Vec<(String, Vec<String>)> {
    let start = text
        .find(heading)
        .unwrap_or_else(|| panic!("{file} has no heading {heading:?}"));
    text[start..]
        .lines()
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .filter(|l| l.starts_with("| [`"))
        .map(|l| {
            let cells: Vec<String> = l
                .trim_matches('|')
                .split(" | ")
                .map(|c| c.trim().to_string())
                .collect();
            let name = cells[0]
                .split('`')
                .nth(1)
                .expect("a crate name")
                .to_string();
            (name, cells[1..].to_vec())
        })
        .collect()
}

/// The names written in backticks in `cell`.
fn backticked(cell: &str) -> BTreeSet<String> {
    cell.split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect()
}

#[test]
fn the_readme_crate_map_matches_the_workspace() {
    let (crates, all) = workspace();
    let readme = std::fs::read_to_string(root().join("README.md")).expect("README.md");
    let map = rows(&readme, "## Crate map", "README.md");
    let named: BTreeSet<String> = map.iter().map(|(n, _)| n.clone()).collect();
    let missing: Vec<_> = crates.keys().filter(|c| !named.contains(*c)).collect();
    assert!(
        missing.is_empty(),
        "workspace crates missing from the README's crate map: {missing:?}"
    );
    let unknown: Vec<_> = named.iter().filter(|n| !crates.contains_key(*n)).collect();
    assert!(
        unknown.is_empty(),
        "the README's crate map names crates that are not in the workspace: {unknown:?}"
    );
    assert_eq!(map.len(), named.len(), "a crate has two rows in the map");
    for (name, cells) in &map {
        let listed = backticked(cells.last().expect("a uses column"));
        let actual: BTreeSet<String> = crates[name]
            .deps
            .iter()
            .filter(|d| all.contains(*d))
            .cloned()
            .collect();
        assert_eq!(
            listed, actual,
            "the README's crate map: the \"uses\" column of `{name}` (left) is not what its \
             Cargo.toml depends on in the workspace (right)"
        );
        let link = format!("[`{name}`](crates/{name})");
        assert!(readme.contains(&link), "the map links `{name}` as {link}");
    }
}

#[test]
fn the_crate_guide_has_a_row_per_crate_and_names_real_dependencies() {
    let (crates, _) = workspace();
    let guide =
        std::fs::read_to_string(root().join("docs/guide/crates.md")).expect("docs/guide/crates.md");
    let rows = rows(&guide, "## What each crate holds", "docs/guide/crates.md");
    let named: BTreeSet<String> = rows.iter().map(|(n, _)| n.clone()).collect();
    let expected: BTreeSet<String> = crates.keys().cloned().collect();
    assert_eq!(named, expected, "docs/guide/crates.md: one row per crate");
    for (name, cells) in &rows {
        for dep in backticked(cells.last().expect("an outside crates column")) {
            assert!(
                crates[name].deps.contains(&dep),
                "docs/guide/crates.md names `{dep}` as a dependency of `{name}`; its \
                 Cargo.toml does not depend on it"
            );
        }
    }
}
