use super::*;

#[test]
fn splits_with_blank_lines_bom_and_crlf() {
    let raw = "\u{feff}\r\n\r\n---\r\nname: a\r\n---\r\nbody\r\n";
    let n = normalize(raw);
    let s = split(&n).unwrap();
    assert_eq!(s.front, "name: a\n");
    assert_eq!(s.body, "body\n");
    assert_eq!(s.open_line, 3);
}

#[test]
fn no_frontmatter_and_unclosed() {
    assert_eq!(split("# Title\n").unwrap_err(), SplitError::NoFrontmatter);
    assert_eq!(split("").unwrap_err(), SplitError::NoFrontmatter);
    assert_eq!(
        split("\n---\nname: a\n").unwrap_err(),
        SplitError::Unclosed(2)
    );
}

#[test]
fn closing_at_end_of_file_without_newline() {
    let s = split("---\nname: a\n---").unwrap();
    assert_eq!(s.front, "name: a\n");
    assert_eq!(s.body, "");
}

#[test]
fn strict_reports_line() {
    let err = strict("name: a\ndescription: x: y\n", &mut Budget::default()).unwrap_err();
    let StrictError::Syntax(err) = err else {
        panic!("{err:?}")
    };
    assert_eq!(err.line, Some(2), "{err:?}");
}

#[test]
fn strict_converts_types() {
    let m = strict(
        "a: 1\nb: 2.5\nc: true\nd: [x, y]\ne:\n  f: g\n",
        &mut Budget::default(),
    )
    .unwrap()
    .map;
    assert_eq!(
        Value::Object(m),
        serde_json::json!({"a":1,"b":2.5,"c":true,"d":["x","y"],"e":{"f":"g"}})
    );
}

#[test]
fn lenient_reads_colons_and_examples() {
    let front = "name: x\ndescription: Use when: you want it.\n\n<example>\nContext: c\nuser: hi\nassistant: ok\n</example>\nmore text\ntools: Read, Grep\nmodel: sonnet\n";
    assert!(strict(front, &mut Budget::default()).is_err());
    let m = lenient(front, &mut Budget::default()).unwrap().map;
    assert_eq!(m["name"], "x");
    let d = m["description"].as_str().unwrap();
    assert!(d.starts_with("Use when: you want it."), "{d}");
    assert!(d.contains("user: hi"));
    assert!(d.ends_with("more text"));
    assert_eq!(m["tools"], "Read, Grep");
    assert_eq!(m["model"], "sonnet");
}

#[test]
fn lenient_keeps_yaml_lists_and_unknown_keys() {
    let front = "name: x\ndescription: a: b\ntools:\n  - Read\n  - Grep\ncustom: 3\n";
    let m = lenient(front, &mut Budget::default()).unwrap().map;
    assert_eq!(m["tools"], serde_json::json!(["Read", "Grep"]));
    assert_eq!(m["custom"], 3);
    assert_eq!(m["description"], "a: b");
}
