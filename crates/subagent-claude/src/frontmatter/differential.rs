//! The new reader against `YamlLoader` (the reading before this one), on the real corpus and on
//! generated YAML; and property tests that the splitter and both readings never panic and stay
//! bounded on any input.

use super::*;
use proptest::prelude::*;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Values in a JSON tree.
fn count(v: &Value) -> usize {
    match v {
        Value::Array(a) => 1 + a.iter().map(count).sum::<usize>(),
        Value::Object(m) => 1 + m.values().map(count).sum::<usize>(),
        _ => 1,
    }
}

fn depth(v: &Value) -> usize {
    match v {
        Value::Array(a) => 1 + a.iter().map(depth).max().unwrap_or(0),
        Value::Object(m) => 1 + m.values().map(depth).max().unwrap_or(0),
        _ => 0,
    }
}

/// Asserts `strict` agrees with `YamlLoader` on `front`: the same map, or both fail (at the
/// same line). Returns whether it parsed.
fn agrees(front: &str) -> Result<bool, TestCaseError> {
    let ours = strict(front, &mut Budget::default());
    let reference = strict_reference(front);
    match (ours, reference) {
        (Ok(f), Ok(m)) => {
            prop_assert_eq!(Value::Object(f.map), Value::Object(m), "{:?}", front);
            Ok(true)
        }
        (Err(StrictError::Syntax(a)), Err(b)) => {
            prop_assert_eq!(a.line, b.line, "{:?}: {:?} vs {:?}", front, a, b);
            Ok(false)
        }
        (a, b) => {
            prop_assert!(false, "{:?}: ours {:?}, YamlLoader {:?}", front, a, b);
            Ok(false)
        }
    }
}

fn corpus_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            corpus_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "md") {
            out.push(p);
        }
    }
}

#[test]
fn strict_matches_yamlloader_on_the_corpus() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/corpora/claude-agents");
    let mut files = Vec::new();
    corpus_files(&dir, &mut files);
    if files.is_empty() {
        println!("NOTICE: no corpus at {}; skipped", dir.display());
        return;
    }
    let mut parsed = 0;
    for path in &files {
        let text = std::fs::read_to_string(path).unwrap();
        let text = normalize(&text);
        let Ok(split) = split(&text) else { continue };
        if agrees(split.front).unwrap() {
            parsed += 1;
        }
    }
    println!(
        "{parsed} of {} corpus frontmatters are strict YAML",
        files.len()
    );
    assert!(parsed > 500, "{parsed}");
}

#[test]
fn name_line_is_the_key_line() {
    let f = strict("# c\ndescription: d\n\nname: n\n", &mut Budget::default()).unwrap();
    assert_eq!(f.name_line, Some(4));
    let f = lenient("description: a: b\nname: n\n", &mut Budget::default()).unwrap();
    assert_eq!(f.name_line, Some(2));
}

#[test]
fn key_typing_and_duplicates_match_yamlloader() {
    for front in [
        "1: a\n01: b\n",
        "1: a\n'1': b\n",
        "'1': a\n1: b\n'1': c\n",
        "true: a\nTrue: b\n",
        "~: a\nnull: b\n",
        "1.0: a\n1.00: b\n",
        "[a]: 1\n[a]: 2\n",
        "{a: 1}: x\nb: y\n",
        "!!int x: 1\nb: 2\n",
        "a: !!float 1\nb: !!float .inf\nc: !!null x\nd: !!bool yes\ne: !foo 1\n",
        "a: 0x1F\nb: 0o17\nc: +5\nd: 1e3\ne: .NaN\nf: -.inf\ng: inf\n",
        "a: &x 1.50\n*x : b\n",
        "a: &x [1]\nb: *x\nc: &x [2]\nd: *x\n",
        "a: &x [*x]\n",
        "a: 1\n---\nb: *nope\n",
        "a: &x 1\n---\nb: *x\n",
        "--- 1\n",
        "- a\n",
        "--- \n...\n",
        "a: b\n... \n--- \nc: [\n",
    ] {
        agrees(front).unwrap();
    }
}

/// Pieces of YAML, including every construct the reader types or tracks.
fn token() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec![
        "a",
        "b",
        "name",
        "description",
        "\"q\"",
        "'s'",
        "\"\\e[1m\"",
        "1",
        "01",
        "0x1f",
        "0o7",
        "+3",
        "1.5",
        "1e3",
        ".inf",
        "-.Inf",
        ".nan",
        "true",
        "False",
        "~",
        "null",
        ": ",
        ":",
        "- ",
        "-",
        "? ",
        "[",
        "]",
        "{",
        "}",
        ", ",
        ",",
        "\n",
        "\n  ",
        "\n    ",
        "  ",
        "&a ",
        "&b ",
        "*a",
        "*b",
        "!!int ",
        "!!str ",
        "!!float ",
        "!!bool ",
        "!!null ",
        "!x ",
        "|\n  ",
        ">-\n  ",
        " #c",
        "---\n",
        "...\n",
        "\t",
        "%YAML 1.2\n",
        "<example>",
        "</example>",
        "é",
        "\u{202e}",
    ])
}

fn yamlish() -> impl Strategy<Value = String> {
    prop::collection::vec(token(), 0..48).prop_map(|t| t.concat())
}

/// Anchored lists of aliases to earlier anchors, of random width and shape: the family of
/// alias bombs.
fn bomb() -> impl Strategy<Value = String> {
    (1usize..12, 1usize..14, any::<bool>(), any::<bool>()).prop_map(
        |(levels, width, block, mapping)| {
            let mut out = String::from("name: n\n");
            for level in 0..levels {
                let item = if level == 0 {
                    "x".to_string()
                } else {
                    format!("*l{}", level - 1)
                };
                let items: Vec<String> = (0..width)
                    .map(|i| {
                        if mapping {
                            format!("k{i}: {item}")
                        } else {
                            item.clone()
                        }
                    })
                    .collect();
                let (open, close) = if mapping { ("{", "}") } else { ("[", "]") };
                if block {
                    out.push_str(&format!("l{level}: &l{level}\n"));
                    for i in items {
                        if mapping {
                            out.push_str(&format!("  {i}\n"));
                        } else {
                            out.push_str(&format!("  - {i}\n"));
                        }
                    }
                } else {
                    out.push_str(&format!(
                        "l{level}: &l{level} {open}{}{close}\n",
                        items.join(", ")
                    ));
                }
            }
            out
        },
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn split_never_panics_and_slices_the_input(text in "(---|\r|\n|\u{feff}| |a|:|-){0,64}") {
        let normalized = normalize(&text);
        prop_assert!(!normalized.contains('\r'));
        if let Ok(s) = split(&normalized) {
            prop_assert!(s.open_line >= 1);
            prop_assert!(normalized.ends_with(s.body));
            prop_assert!(normalized.contains(s.front));
            prop_assert!(s.front.len() + s.body.len() <= normalized.len());
        }
    }

    #[test]
    fn split_never_panics_on_any_text(text in any::<String>()) {
        let normalized = normalize(&text);
        let _ = split(&normalized);
        let _ = split(&text);
    }

    #[test]
    fn strict_matches_yamlloader_on_generated_yaml(front in yamlish()) {
        agrees(&front)?;
    }

    #[test]
    fn readings_never_panic_and_stay_bounded(front in prop_oneof![yamlish(), any::<String>()]) {
        let readings = [
            strict(&front, &mut Budget::default()).ok(),
            lenient(&front, &mut Budget::default()).ok(),
        ];
        for f in readings.into_iter().flatten() {
            let v = Value::Object(f.map);
            prop_assert!(count(&v) <= MAX_YAML_NODES);
            prop_assert!(depth(&v) <= MAX_YAML_DEPTH);
        }
    }

}

proptest! {
    // Each case may build up to the whole budget, twice: fewer cases keep this quick.
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn alias_bombs_of_any_shape_are_refused_or_small(front in bomb()) {
        let start = Instant::now();
        let result = strict(&front, &mut Budget::default());
        prop_assert!(start.elapsed() < Duration::from_secs(2));
        match result {
            Ok(f) => prop_assert!(count(&Value::Object(f.map)) <= MAX_YAML_NODES),
            Err(StrictError::Limit(hit)) => prop_assert!(hit.limit.starts_with("MAX_YAML_")),
            Err(e) => prop_assert!(false, "{:?}: {:?}", front, e),
        }
        // The same bomb under one key of a frontmatter that only the lenient reading takes.
        let indented: String = front.lines().map(|l| format!("  {l}\n")).collect();
        let lenient_front = format!("description: a: b\nbomb:\n{indented}");
        match lenient(&lenient_front, &mut Budget::default()) {
            Ok(f) => prop_assert!(count(&Value::Object(f.map)) <= MAX_YAML_NODES),
            Err(hit) => prop_assert!(hit.limit.starts_with("MAX_YAML_")),
        }
    }
}
