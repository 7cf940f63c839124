//! Property tests through the public parsers: on any text, `parse_agent` and `parse_skill`
//! return (no panic), quickly, and whatever loads has a name that is a safe path segment and a
//! bounded amount of metadata.

use std::path::Path;
use std::time::{Duration, Instant};

use proptest::prelude::*;
use subagent_claude::{parse_agent, parse_skill};

/// Frontmatter-shaped documents: a `---` block of YAML-ish lines, then a body.
fn document() -> impl Strategy<Value = String> {
    let value = prop_oneof![
        "[a-zA-Z0-9 ._/\\\\-]{0,12}",
        Just("..".to_string()),
        Just(".".to_string()),
        Just("\"\\e[31mred\"".to_string()),
        Just("\"a\\u202Eb\"".to_string()),
        Just("\"x\\0y\"".to_string()),
        Just("&a [x, x, x]".to_string()),
        Just("[*a, *a, *a]".to_string()),
        Just("{k: [1, 2]}".to_string()),
        Just("|\n  text".to_string()),
        any::<String>(),
    ];
    let key = prop_oneof![
        Just("name"),
        Just("description"),
        Just("tools"),
        Just("model"),
        Just("permissionMode"),
        Just("maxTurns"),
        Just("skills"),
        Just("\"k\\e\""),
        Just("x"),
    ];
    (
        prop::collection::vec((key, value), 0..8),
        any::<String>(),
        any::<bool>(),
    )
        .prop_map(|(fields, body, crlf)| {
            let mut text = String::from("---\n");
            for (k, v) in fields {
                text.push_str(&format!("{k}: {v}\n"));
            }
            text.push_str("---\n");
            text.push_str(&body);
            if crlf {
                text.replace('\n', "\r\n")
            } else {
                text
            }
        })
}

/// A name that loads: not blank, no control or bidi characters; and its slug (what paths and
/// URLs use) is one safe segment.
fn is_safe_name(name: &str) -> bool {
    let slug = subagent_claude::agent_slug(name);
    !slug.is_empty()
        && slug != "."
        && slug != ".."
        && slug
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.trim().is_empty()
        && !name.chars().any(|c| {
            c.is_control()
                || ('\u{202a}'..='\u{202e}').contains(&c)
                || ('\u{2066}'..='\u{2069}').contains(&c)
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 384, ..ProptestConfig::default() })]

    #[test]
    fn parse_agent_never_panics_and_loads_only_safe_names(
        text in prop_oneof![document(), any::<String>()]
    ) {
        let start = Instant::now();
        let agent = parse_agent(Path::new("p.md"), &text);
        let skill = parse_skill(Path::new("p/SKILL.md"), &text);
        prop_assert!(start.elapsed() < Duration::from_secs(2));
        if let Ok(p) = agent {
            let d = &p.definition;
            prop_assert!(is_safe_name(&d.name), "{:?}", d.name);
            prop_assert!(!d.description.trim().is_empty());
            prop_assert!(serde_json::to_string(&d.metadata).unwrap().len() <= 8 * 1024 * 1024);
            for w in &p.warnings {
                prop_assert!(
                    !w.chars().any(|c| c.is_control() || ('\u{202a}'..='\u{202e}').contains(&c)),
                    "{:?}",
                    w
                );
            }
        }
        if let Ok(p) = skill {
            prop_assert!(is_safe_name(&p.skill.name), "{:?}", p.skill.name);
        }
    }
}
