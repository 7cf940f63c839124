//! Hostile agent names: path segments (`.`, `..`, separators) that load but only ever become
//! paths through their slug, terminal control and bidi characters, NUL bytes; and the terminal
//! escaping helper for printing names and descriptions.

use std::path::Path;

use crate::common::agent_dir;
use subagent_claude::{
    ClaudeAgentDefinition, ClaudeError, load_agent_file_blocking, parse_skill, scan_dir_blocking,
};

/// Writes `---\n<front>---\nBody\n` to `<dir>/<file>` and loads it.
fn load(
    front: &str,
) -> (
    tempfile::TempDir,
    std::path::PathBuf,
    Result<String, ClaudeError>,
) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("agent.md");
    std::fs::write(&path, format!("---\n{front}---\nBody\n")).unwrap();
    let r = load_agent_file_blocking(&path).map(|(d, _)| d.name);
    (dir, path, r)
}

/// Asserts the name is refused, the message names the file, the `name` line (3 here) and
/// `why`, and carries no raw control character.
fn assert_refused(front: &str, why: &str) {
    let (_dir, path, r) = load(front);
    let e = match r {
        Err(e) => e,
        Ok(name) => panic!("{front:?}: loaded as {name:?}"),
    };
    assert!(
        matches!(e, ClaudeError::UnsafeName { line: 3, .. }),
        "{front:?}: {e:?}"
    );
    let text = e.to_string();
    assert!(
        text.starts_with(&format!("{}:3:", path.display())),
        "file and line: {text}"
    );
    assert!(text.contains(why), "{front:?}: says {why:?}: {text}");
    assert!(
        !text
            .chars()
            .any(|c| c.is_control() || ('\u{202a}'..='\u{202e}').contains(&c)),
        "the message is safe to print: {text:?}"
    );
}

/// Behaviour change (issue 27): Claude Code loads names with `/` (`LSP/Index Engineer`), so
/// they load here too; what keeps them from becoming paths is the slug.
#[test]
fn path_like_names_load_and_their_slug_is_one_safe_segment() {
    for (front, name) in [
        ("description: d\nname: ..\n", ".."),
        ("description: d\nname: '.'\n", "."),
        ("description: d\nname: '  ..  '\n", ".."),
        ("description: d\nname: a/b\n", "a/b"),
        ("description: d\nname: ../../etc\n", "../../etc"),
        ("description: d\nname: 'a\\b'\n", "a\\b"),
        (
            "description: d\nname: macOS Spatial/Metal Engineer\n",
            "macOS Spatial/Metal Engineer",
        ),
    ] {
        let (_dir, _path, r) = load(front);
        assert_eq!(r.unwrap(), name, "{front:?}");
        let slug = subagent_claude::agent_slug(name);
        assert!(!slug.is_empty() && slug != "." && slug != "..", "{slug}");
        assert!(
            slug.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-'),
            "{slug}"
        );
    }
}

#[test]
fn control_and_bidi_characters_in_names_are_refused() {
    assert_refused("description: d\nname: \"red\\e[31m\"\n", "U+001B");
    assert_refused("description: d\nname: \"bell\\a\"\n", "U+0007");
    assert_refused("description: d\nname: \"two\\nlines\"\n", "U+000A");
    assert_refused("description: d\nname: \"tab\\tbed\"\n", "U+0009");
    assert_refused("description: d\nname: \"del\\x7f\"\n", "U+007F");
    assert_refused("description: d\nname: \"c1\\x9b\"\n", "U+009B");
    assert_refused("description: d\nname: \"evil\u{202e}txt.md\"\n", "U+202E");
    assert_refused("description: d\nname: \"iso\u{2066}late\"\n", "U+2066");
    assert_refused("description: d\nname: \"emb\u{202a}ed\"\n", "U+202A");
    // Raw (not escaped) in a plain scalar.
    assert_refused("description: d\nname: a\u{202e}b\n", "U+202E");
}

#[test]
fn nul_in_name_is_reported_as_a_nul_not_as_a_missing_description() {
    // Before: yaml-rust2 stopped at the NUL and the error said there was no `description`.
    assert_refused("description: d\nname: bad\0name\n", "NUL");
    let (_dir, _path, r) = load("name: bad\0name\ndescription: d\n");
    let text = r.unwrap_err().to_string();
    assert!(text.contains("NUL"), "{text}");
    assert!(!text.contains("description"), "{text}");
}

#[test]
fn names_claude_code_loads_still_load() {
    for name in [
        "code-reviewer",
        "Code Reviewer",
        "code_reviewer",
        "Agent42",
        "dotnet-framework-4.8-expert",
        "ревьюер",
        "a..b",
        ".hidden",
        "...",
        "名前",
    ] {
        let (_dir, _path, r) = load(&format!("name: \"{name}\"\ndescription: d\n"));
        assert_eq!(r.unwrap(), name);
    }
}

#[test]
fn hostile_name_is_skipped_in_a_scan_and_the_rest_loads() {
    let dir = agent_dir(&[
        ("a.md", "---\nname: \"a\\e[2J\"\ndescription: root\n---\n"),
        ("b.md", "---\nname: ok\ndescription: fine\n---\n"),
    ]);
    let r = scan_dir_blocking(dir.path()).unwrap();
    assert_eq!(r.loaded.len(), 1);
    assert_eq!(r.loaded[0].definition.name, "ok");
    assert_eq!(r.skipped.len(), 1);
    assert!(r.skipped[0].reason.contains("a.md:2:"), "{:?}", r.skipped);
}

#[test]
fn skill_names_are_checked_too() {
    let e = parse_skill(
        Path::new("s/SKILL.md"),
        "---\nname: \"s\\a\"\ndescription: d\n---\nbody\n",
    )
    .unwrap_err();
    assert!(matches!(e, ClaudeError::UnsafeName { .. }), "{e}");
}

#[test]
fn name_line_is_given_for_lenient_files() {
    // Strict YAML fails on the description; the lenient reading still finds the name's line.
    let (_dir, path, r) = load("description: Use when: x\nname: a\u{7}b\n");
    let text = r.unwrap_err().to_string();
    assert!(
        text.starts_with(&format!("{}:3:", path.display())),
        "{text}"
    );
}

#[test]
fn descriptions_with_terminal_controls_load_with_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("d.md");
    std::fs::write(
        &path,
        "---\nname: d\ndescription: \"Clears \\e[2J the screen\\nand more\"\n---\n",
    )
    .unwrap();
    let (def, warnings) = load_agent_file_blocking(&path).unwrap();
    assert!(def.description.contains('\u{1b}'));
    assert!(
        warnings.iter().any(|w| w.contains("U+001B")),
        "{warnings:?}"
    );
    assert!(warnings.iter().all(|w| !w.contains('\u{1b}')));
    let shown = def.description_for_terminal();
    assert_eq!(shown, "Clears \\u{1b}[2J the screen\nand more");
}

#[test]
fn escape_for_terminal_makes_controls_visible() {
    let esc = ClaudeAgentDefinition::escape_for_terminal;
    assert!(matches!(esc("plain-name"), std::borrow::Cow::Borrowed(_)));
    for (raw, shown) in [
        ("a\u{1b}[31mb", "a\\u{1b}[31mb"),
        ("bell\u{7}", "bell\\u{7}"),
        ("x\ny\tz\r", "x\\u{a}y\\u{9}z\\u{d}"),
        ("\u{202e}gpj.exe", "\\u{202e}gpj.exe"),
        ("\u{2066}\u{2069}\u{200f}", "\\u{2066}\\u{2069}\\u{200f}"),
        ("c1\u{9b}", "c1\\u{9b}"),
        ("ünïcödé 名前", "ünïcödé 名前"),
        // Invisible format characters that hide or fake text are shown too; the joiners that
        // emoji and scripts need stay.
        (
            "ma\u{200b}in\u{ad}\u{2060}\u{feff}\u{e0041}",
            "ma\\u{200b}in\\u{ad}\\u{2060}\\u{feff}\\u{e0041}",
        ),
        ("👩\u{200d}💻 \u{200c}", "👩\u{200d}💻 \u{200c}"),
    ] {
        assert_eq!(esc(raw), shown, "{raw:?}");
    }
    assert!(subagent_claude::is_terminal_hazard('\u{7f}'));
    assert!(!subagent_claude::is_terminal_hazard('é'));
    let mut def = ClaudeAgentDefinition::new("x\u{7}", "line1\nline2\u{1b}", "p");
    assert_eq!(def.name_for_terminal(), "x\\u{7}");
    assert_eq!(def.description_for_terminal(), "line1\nline2\\u{1b}");
    def.name = "fine".into();
    assert!(matches!(
        def.name_for_terminal(),
        std::borrow::Cow::Borrowed("fine")
    ));
}

#[test]
fn warnings_quote_file_values_escaped() {
    // An unknown permission mode is a load error; the value it quotes is escaped.
    let err = subagent_claude::parse_agent(
        Path::new("w.md"),
        "---\nname: w\ndescription: d\npermissionMode: \"yo\\e[2Jlo\"\n---\n",
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("yo\\u{1b}[2Jlo"), "{err}");
    assert!(!err.contains('\u{1b}'), "{err:?}");
    // A warning quoting a value escapes it too.
    let p = subagent_claude::parse_agent(
        Path::new("w.md"),
        "---\nname: w\ndescription: d\ntools: [{}, \"\\u202e\"]\n---\n",
    )
    .unwrap();
    assert!(
        p.warnings.iter().all(|w| !w.contains('\u{202e}')),
        "{:?}",
        p.warnings
    );
}
