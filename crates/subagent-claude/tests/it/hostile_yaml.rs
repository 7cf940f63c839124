//! Hostile YAML in agent files: alias expansion bombs (strict and lenient readings), deep
//! nesting and NUL bytes. Every test loads real files from a temporary directory.
//!
//! The bomb tests check the process's peak resident memory (`VmHWM`, Linux only) after loading,
//! so this binary holds only small tests: nothing here may legitimately need much memory.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::common::agent_dir;
use subagent_claude::{ClaudeError, load_agent_file_blocking, parse_agent, scan_dir_blocking};

/// Peak memory any test of this binary may reach. Before alias expansion was bounded, the 8×10
/// bomb needed more than 4 GB (and 2.2 GB at 7 levels).
const PEAK_RSS_LIMIT_KIB: u64 = 256 * 1024;

/// The classic "billion laughs": `levels` anchored lists, each holding `width` aliases of the
/// previous one (the first holds `width` plain scalars), under `indent`.
fn bomb_lines(levels: usize, width: usize, indent: &str) -> String {
    let mut out = String::new();
    for level in 0..levels {
        let name = char::from(b'a' + level as u8);
        let items: Vec<String> = if level == 0 {
            vec!["x".to_string(); width]
        } else {
            let prev = char::from(b'a' + level as u8 - 1);
            vec![format!("*{prev}"); width]
        };
        out.push_str(&format!("{indent}{name}: &{name} [{}]\n", items.join(", ")));
    }
    out
}

/// The bomb as a complete agent file (~530 bytes): a list of 10 scalars, then 8 levels of 10
/// aliases each (10^9 scalars once expanded).
fn bomb_agent() -> String {
    format!(
        "---\nname: bomb\ndescription: expands to a billion values\n{}---\nYou are a bomb.\n",
        bomb_lines(9, 10, "")
    )
}

/// The process's peak resident set size in KiB, where the OS tells it.
fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn assert_small_peak(what: &str) {
    if let Some(kib) = peak_rss_kib() {
        println!("{what}: peak RSS of the test process {kib} KiB");
        assert!(
            kib < PEAK_RSS_LIMIT_KIB,
            "{what}: peak RSS {kib} KiB is over {PEAK_RSS_LIMIT_KIB} KiB"
        );
    }
}

fn assert_limit_error(e: &ClaudeError, file: &Path) {
    let text = e.to_string();
    assert!(
        matches!(e, ClaudeError::YamlLimit { .. }),
        "expected a YAML limit error, got {e:?}"
    );
    assert!(
        text.contains(&file.display().to_string()),
        "names the file: {text}"
    );
    assert!(text.contains("MAX_YAML_"), "names the limit: {text}");
}

#[test]
fn alias_bomb_is_refused_quickly_and_the_scan_goes_on() {
    let text = bomb_agent();
    assert!((450..=650).contains(&text.len()), "{} bytes", text.len());
    let dir = agent_dir(&[
        ("bomb.md", &text),
        (
            "good.md",
            "---\nname: good\ndescription: A good agent\n---\nBe good.\n",
        ),
        // A file after the bomb in path order too.
        (
            "zz-good.md",
            "---\nname: zz-good\ndescription: Another\n---\nBe good.\n",
        ),
    ]);
    let bomb = dir.path().join("bomb.md");

    let start = Instant::now();
    let report = scan_dir_blocking(dir.path()).unwrap();
    let elapsed = start.elapsed();

    let names: Vec<_> = report
        .loaded
        .iter()
        .map(|a| a.definition.name.as_str())
        .collect();
    assert_eq!(names, ["good", "zz-good"]);
    assert_eq!(report.skipped.len(), 1, "{:?}", report.skipped);
    let skipped = &report.skipped[0];
    println!("skipped: {}", skipped.reason);
    assert_eq!(skipped.path, bomb);
    assert!(
        skipped.reason.contains("bomb.md") && skipped.reason.contains("MAX_YAML_"),
        "the reason names the file and the limit: {}",
        skipped.reason
    );
    assert!(
        elapsed < Duration::from_secs(5),
        "the scan took {elapsed:?}"
    );

    let e = load_agent_file_blocking(&bomb).unwrap_err();
    assert_limit_error(&e, &bomb);
    assert_small_peak("8x10 alias bomb");
}

#[test]
fn wide_bomb_under_one_key_is_refused_on_the_lenient_path_too() {
    // `description: Use when: ...` is not strict YAML (a second `: `), so the lenient reading
    // runs and reads the bomb as one indented entry.
    let text = format!(
        "---\nname: lenient-bomb\ndescription: Use when: always\nbomb:\n{}---\nBody\n",
        bomb_lines(9, 10, "  ")
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("lenient.md");
    std::fs::write(&path, &text).unwrap();
    let start = Instant::now();
    let e = load_agent_file_blocking(&path).unwrap_err();
    assert!(start.elapsed() < Duration::from_secs(5));
    assert_limit_error(&e, &path);
    assert_small_peak("lenient bomb");
}

#[test]
fn many_small_bombs_in_the_lenient_reading_share_one_budget() {
    // Each entry alone stays under the budget; together they would not.
    let mut front = String::from("name: many\ndescription: Use when: always\n");
    for i in 0..200 {
        front.push_str(&format!("k{i}:\n{}", bomb_lines(4, 10, "  ")));
    }
    let text = format!("---\n{front}---\nBody\n");
    let e = parse_agent(Path::new("many.md"), &text).unwrap_err();
    assert!(matches!(e, ClaudeError::YamlLimit { .. }), "{e}");
    assert_small_peak("many small bombs");
}

#[test]
fn a_small_alias_still_works() {
    let text = "---\nname: anchors\ndescription: uses anchors\nbase: &b {x: 1, y: [a, b]}\ncopy: *b\ntools: &t Read, Grep\ndisallowedTools: *t\n---\nBody\n";
    let p = parse_agent(Path::new("a.md"), text).unwrap();
    let d = &p.definition;
    assert_eq!(
        d.metadata["copy"],
        serde_json::json!({"x": 1, "y": ["a", "b"]})
    );
    assert_eq!(d.disallowed_tools.len(), 2);
    // Any warning names one of the two keys that are not agent fields (kept as metadata;
    // only a key that looks like a misspelled field is warned about: `base` ~ `name`).
    assert!(
        !p.warnings.is_empty() && p.warnings.len() <= 2,
        "{:?}",
        p.warnings
    );
    assert!(
        p.warnings
            .iter()
            .all(|w| w.starts_with("field `base`") || w.starts_with("field `copy`")),
        "{:?}",
        p.warnings
    );
}

#[test]
fn anchors_nested_in_anchors_count_against_the_budget() {
    // No alias at all: 40 anchors each wrapping the next around a 4,000-item list. Copying each
    // anchored node for later aliases would hold 40 copies of the list.
    let mut value = format!("[{}]", vec!["x"; 4000].join(","));
    for i in 0..40 {
        value = format!("&n{i} [{value}]");
    }
    let text = format!("---\nname: nest\ndescription: d\nv: {value}\n---\n");
    let e = parse_agent(Path::new("nest.md"), &text).unwrap_err();
    assert!(matches!(e, ClaudeError::YamlLimit { .. }), "{e}");
}

#[test]
fn aliased_long_string_is_bounded_by_bytes() {
    // 600 KB string, aliased 10 times: few nodes, many bytes.
    let long = "y".repeat(600 * 1024);
    let text = format!(
        "---\nname: bytes\ndescription: d\ns: &s {long}\nt: [*s,*s,*s,*s,*s,*s,*s,*s,*s,*s]\n---\n"
    );
    let e = parse_agent(Path::new("bytes.md"), &text).unwrap_err();
    assert!(matches!(e, ClaudeError::YamlLimit { .. }), "{e}");
    assert!(e.to_string().contains("MAX_YAML_SCALAR_BYTES"), "{e}");
}

/// Runs `parse_agent` on a thread with a small stack, like the blocking pool's (2 MiB) or
/// smaller; a stack overflow aborts the whole test binary.
fn parse_on_small_stack(text: String) -> Result<(), ClaudeError> {
    std::thread::Builder::new()
        .stack_size(256 * 1024)
        .spawn(move || parse_agent(Path::new("deep.md"), &text).map(|_| ()))
        .unwrap()
        .join()
        .expect("no panic")
}

#[test]
fn deep_nesting_is_refused_without_overflowing_the_stack() {
    // Block collections nest two bytes a level on one line: `- - - - x`, `? ? ? ? x`. The
    // recursive `YamlLoader` overflowed a 2 MiB stack at 1,000 levels.
    let depth = 50_000;
    for value in [
        format!("\n{}x", "- ".repeat(depth)),
        format!("\n{}x", "? ".repeat(depth)),
        format!("\n  k:\n    {}x", "- ".repeat(depth)),
    ] {
        let shown = value[..12].to_string();
        let text = format!("---\nname: deep\ndescription: d\nv:{value}\n---\n");
        let e = parse_on_small_stack(text).expect_err(&shown);
        assert!(matches!(e, ClaudeError::YamlLimit { .. }), "{shown:?}: {e}");
        assert!(e.to_string().contains("MAX_YAML_DEPTH"), "{shown:?}: {e}");
    }
}

#[test]
fn deep_flow_nesting_does_not_overflow_the_stack() {
    // yaml-rust2 itself stops flow nesting at 255 levels; past that the value is not YAML and
    // the lenient reading keeps it as text. Either way: no crash.
    for depth in [100, 254, 256, 50_000] {
        for value in [
            format!("{}{}", "[".repeat(depth), "]".repeat(depth)),
            format!("{}x{}", "{a: ".repeat(depth), "}".repeat(depth)),
        ] {
            let text = format!("---\nname: deep\ndescription: d\nv: {value}\n---\n");
            if let Err(e) = parse_on_small_stack(text) {
                assert!(matches!(e, ClaudeError::YamlLimit { .. }), "{e}");
            }
        }
    }
}

#[test]
fn deep_block_nesting_is_refused() {
    let mut front = String::from("name: deep\ndescription: d\nv:\n");
    for i in 1..200 {
        front.push_str(&" ".repeat(i));
        front.push_str("k:\n");
    }
    let text = format!("---\n{front}---\n");
    let e = parse_agent(Path::new("deep.md"), &text).unwrap_err();
    assert!(e.to_string().contains("MAX_YAML_DEPTH"), "{e}");
}

#[test]
fn nul_byte_in_frontmatter_is_refused_with_its_line() {
    // yaml-rust2 reads NUL as the end of the input: `permissionMode: plan` after it would be
    // silently dropped.
    let text = "---\nname: n\ndescription: d\ntools: Read\0\npermissionMode: plan\n---\n";
    let e = parse_agent(Path::new("nul.md"), text).unwrap_err();
    let s = e.to_string();
    assert!(s.starts_with("nul.md:4:"), "{s}");
    assert!(s.contains("NUL"), "{s}");
    assert!(!s.contains('\0'), "{s:?}");
}
