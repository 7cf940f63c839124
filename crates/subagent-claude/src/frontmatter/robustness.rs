use crate::parse_agent;
use std::path::Path;

#[test]
fn odd_inputs_never_panic() {
    let deep = format!("---\nname: {}\n---\n", "[".repeat(200_000));
    let deep_map = format!("---\n{}\n---\n", "a:\n ".repeat(50_000));
    let cases: Vec<String> = vec![
        "".into(),
        "---".into(),
        "---\n---".into(),
        "\u{feff}".into(),
        "---\r\n".into(),
        "---\n: \n---\n".into(),
        "---\n- a\n- b\n---\n".into(),
        "---\nname: |\n---\n".into(),
        "---\nname: \"unterminated\ndescription: x\n---\n".into(),
        "---\n\tname: tab\n---\n".into(),
        "---\nnäme: ü: ö\ndescription: é\n---\n".into(),
        "---\nname: a\ndescription: b\nname: c\n---\n".into(),
        "---\n&a [*a]\n---\n".into(),
        "---\nname: *nope\ndescription: d\n---\n".into(),
        deep,
        deep_map,
    ];
    for c in &cases {
        let _ = parse_agent(Path::new("odd.md"), c);
    }
}
