//! The parser's and the definition's unit tests.

use std::path::Path;

use super::*;
use crate::error::ClaudeError;
use subagent_spi::SubagentDefinition;

#[test]
fn a_budget_is_read_from_the_frontmatter_and_bad_values_are_warnings() {
    let p = parse(
        "---\nname: a\ndescription: d\nbudget: {tokens: 5000, turns: 10, time: 2m, usd: 0.5}\n---\n",
    );
    let b = p.definition.budget().expect("a budget");
    assert_eq!(b.tokens, Some(5000));
    assert_eq!(b.turns, Some(10));
    assert_eq!(b.time, Some(std::time::Duration::from_secs(120)));
    assert_eq!(b.usd, Some(0.5));
    assert!(p.warnings.is_empty(), "{:?}", p.warnings);

    let p = parse(
        "---\nname: a\ndescription: d\nmaxBudgetUsd: 1.25\nbudget:\n  tokens: -3\n  time: soon\n  wallet: 9\n  turns: 4\n---\n",
    );
    let b = p.definition.budget().expect("a budget");
    assert_eq!(
        (b.usd, b.turns, b.tokens, b.time),
        (Some(1.25), Some(4), None, None)
    );
    let w = p.warnings.join("\n");
    assert!(
        w.contains("`budget.tokens` must be a positive whole number"),
        "{w}"
    );
    assert!(w.contains("`budget.time` must be a wall time"), "{w}");
    assert!(w.contains("`budget.wallet` is not a budget limit"), "{w}");

    let p = parse("---\nname: a\ndescription: d\nbudget: lots\n---\n");
    assert!(p.definition.budget().is_none());
    assert!(
        p.warnings
            .iter()
            .any(|w| w.contains("`budget` must be a map"))
    );
    assert!(
        parse("---\nname: a\ndescription: d\n---\n")
            .definition
            .budget()
            .is_none()
    );
}

fn parse(text: &str) -> ParsedAgent {
    parse_agent(Path::new("t.md"), text).unwrap()
}

#[test]
fn all_fields() {
    let p = parse(
        "---\nname: full\ndescription: d\ntools: Read, mcp__gh__*, Agent(a, b)\ndisallowedTools: [Write]\nmodel: inherit\npermissionMode: acceptEdits\nmaxTurns: 7\nskills: s1\nmcpServers:\n  gh: {command: x}\nhooks: {}\nmemory: project\nbackground: true\neffort: high\nisolation: worktree\ncolor: blue\ninitialPrompt: go\nversion: 2\n---\nbody\n",
    );
    let d = p.definition;
    assert_eq!(
        d.tools,
        Some(vec![
            ToolRule::Name("Read".into()),
            ToolRule::Prefix("mcp__gh__".into()),
            ToolRule::Scoped {
                name: "Agent".into(),
                spec: "a, b".into()
            }
        ])
    );
    assert_eq!(d.disallowed_tools, vec![ToolRule::Name("Write".into())]);
    assert_eq!(d.model, Some(ModelChoice::Inherit));
    assert_eq!(d.permission_mode, PermissionMode::AcceptEdits);
    assert_eq!(d.max_turns, Some(7));
    assert_eq!(d.skills, vec!["s1"]);
    assert!(d.mcp_servers.is_some());
    assert_eq!(d.memory, Some(Value::String("project".into())));
    assert_eq!(d.background, Some(true));
    assert_eq!(d.effort.as_deref(), Some("high"));
    assert_eq!(d.isolation.as_deref(), Some("worktree"));
    assert_eq!(d.color.as_deref(), Some("blue"));
    assert_eq!(d.initial_prompt.as_deref(), Some("go"));
    assert_eq!(d.metadata["version"], 2);
    assert_eq!(d.prompt, "body");
    assert!(d.runs_in_background_by_default());
    // Claude Code ignores other keys quietly; so do we (they stay in `metadata`).
    assert!(p.warnings.is_empty(), "{:?}", p.warnings);
}

#[test]
fn unknown_keys_are_quiet_unless_they_look_like_a_misspelled_field() {
    let p = parse(
        "---\nname: a\ndescription: d\ncategory: dev\nversion: 2\ncolor: teal\n\
         author: x\ntool: Read\npermisionMode: plan\nomitClaudeMd: true\n---\n",
    );
    assert_eq!(p.definition.metadata["category"], "dev");
    assert!(p.definition.omit_claude_md);
    let mut w = p.warnings.clone();
    w.sort();
    assert_eq!(
        w,
        [
            "field `permisionMode` is not an agent field (did you mean `permissionMode`?); it has no effect",
            "field `tool` is not an agent field (did you mean `tools`?); it has no effect",
        ],
    );
    assert!(
        !parse("---\nname: a\ndescription: d\n---\n")
            .definition
            .omit_claude_md
    );
}

#[test]
fn values_that_would_be_ignored_warn() {
    let p = parse(
        "---\nname: a\ndescription: d\nmemory: team\nisolation: remote\neffort: huge\nhooks:\n  Notification:\n    - hooks: [{type: command, command: x}]\nomitClaudeMd: maybe\n---\n",
    );
    let w = p.warnings.join("\n");
    for needle in [
        "memory",
        "isolation: remote",
        "effort: huge",
        "Notification",
        "omitClaudeMd",
    ] {
        assert!(w.contains(needle), "no warning names {needle}:\n{w}");
    }
    let p = parse(
        "---\nname: a\ndescription: d\nmemory: user\nisolation: worktree\neffort: xhigh\ncolor: Purple\nbackground: false\n---\n",
    );
    assert!(p.warnings.is_empty(), "{:?}", p.warnings);
    assert!(!p.definition.runs_in_background_by_default());
}

#[test]
fn manual_is_default_and_an_unknown_mode_is_an_error_naming_file_line_and_modes() {
    let p = parse("---\nname: a\ndescription: d\npermissionMode: manual\n---\n");
    assert_eq!(p.definition.permission_mode, PermissionMode::Default);
    let e = parse_agent(
        Path::new("agents/a.md"),
        "\n---\nname: a\ndescription: d\npermissionMode: yolo\n---\n",
    )
    .unwrap_err()
    .to_string();
    assert!(e.starts_with("agents/a.md:5:"), "{e}");
    for needle in [
        "yolo",
        "default",
        "acceptEdits",
        "plan",
        "dontAsk",
        "bypassPermissions",
    ] {
        assert!(e.contains(needle), "{needle} in {e}");
    }
    assert_eq!("plan".parse::<PermissionMode>(), Ok(PermissionMode::Plan));
    assert!(
        "yolo"
            .parse::<PermissionMode>()
            .unwrap_err()
            .contains("acceptEdits")
    );
}

/// Behaviour change (issue 27): Claude Code loads such names silently, and they never
/// become paths as written (`agent_slug`), so there is nothing to warn about.
#[test]
fn title_case_name_loads_without_a_warning() {
    let p = parse("---\nname: Code Reviewer\ndescription: d\n---\n");
    assert_eq!(p.definition.name, "Code Reviewer");
    assert_eq!(p.definition.name_line, Some(2));
    assert!(p.warnings.is_empty(), "{:?}", p.warnings);
}

#[test]
fn missing_fields_name_path_and_line() {
    let e = parse_agent(Path::new("x/y.md"), "\n---\ndescription: d\n---\n").unwrap_err();
    assert_eq!(
        e.to_string(),
        "x/y.md:2: the frontmatter has no `name` (required)"
    );
    let e = parse_agent(Path::new("y.md"), "---\nname: n\n---\n").unwrap_err();
    assert!(matches!(
        e,
        ClaudeError::MissingField {
            field: "description",
            ..
        }
    ));
}

#[test]
fn yaml_error_names_line() {
    let e = parse_agent(Path::new("y.md"), "---\n: : :\n  - [\n---\n").unwrap_err();
    let s = e.to_string();
    assert!(s.starts_with("y.md:"), "{s}");
    assert!(matches!(e, ClaudeError::Yaml { line: Some(_), .. }), "{s}");
}

#[test]
fn lenient_with_warning_and_crlf() {
    let p =
        parse("\u{feff}\r\n---\r\nname: x\r\ndescription: Use it when: things\r\n---\r\nBody\r\n");
    assert_eq!(p.definition.description, "Use it when: things");
    assert_eq!(p.definition.prompt, "Body");
    assert!(p.warnings[0].contains("leniently"), "{:?}", p.warnings);
}

#[test]
fn lenient_multiline_description_with_examples() {
    let text = "\n\n---\nname: code-reviewer\ndescription: Use this agent after writing code. Examples:\n\n<example>\nContext: The user wrote a function.\nuser: \"Please review it\"\nassistant: \"I'll use the code-reviewer agent\"\n<commentary>\nreview: needed\n</commentary>\n</example>\n\nAlso proactively.\ntools: Read, Grep\nmodel: sonnet\ncolor: red\n---\nYou review code.\n";
    let p = parse(text);
    let d = &p.definition;
    assert!(p.warnings.iter().any(|w| w.contains("leniently")));
    assert!(
        d.description
            .starts_with("Use this agent after writing code. Examples:\n\n<example>")
    );
    assert!(d.description.contains("user: \"Please review it\""));
    assert!(d.description.contains("review: needed"));
    assert!(
        d.description.ends_with("</example>\n\nAlso proactively."),
        "{}",
        d.description
    );
    assert_eq!(d.tools.as_ref().map(Vec::len), Some(2));
    assert_eq!(d.model, Some(ModelChoice::Named("sonnet".into())));
    assert_eq!(d.color.as_deref(), Some("red"));
    assert!(d.metadata.is_empty(), "{:?}", d.metadata);
    assert_eq!(d.prompt, "You review code.");
}

#[test]
fn tool_list_forms() {
    assert_eq!(
        parse_tool_list("Read Write, Bash(git:*),"),
        vec![
            ToolRule::Name("Read".into()),
            ToolRule::Name("Write".into()),
            ToolRule::Scoped {
                name: "Bash".into(),
                spec: "git:*".into()
            }
        ]
    );
    assert!(ToolRule::Name("Task".into()).matches("Agent"));
    assert!(ToolRule::Prefix("mcp__a__".into()).matches("mcp__a__b"));
    assert!(!ToolRule::Prefix("mcp__a__".into()).matches("mcp__b__c"));
}

#[test]
fn bad_values_warn() {
    let p = parse("---\nname: a\ndescription: d\nmaxTurns: lots\nbackground: maybe\n---\n");
    assert_eq!(p.definition.max_turns, None);
    assert_eq!(p.warnings.len(), 2, "{:?}", p.warnings);
}

#[test]
fn name_as_list_is_invalid() {
    let e = parse_agent(Path::new("y.md"), "---\nname: [a]\ndescription: d\n---\n").unwrap_err();
    assert!(matches!(e, ClaudeError::InvalidField { .. }), "{e}");
}

#[test]
fn output_schema_is_read_inline_and_checked() {
    use subagent_spi::SubagentDefinition as _;
    let p = parse(
        "---\nname: a\ndescription: d\noutputSchema:\n  type: object\n  properties:\n    n: {type: integer}\n  required: [n]\n---\nbody\n",
    );
    let want = serde_json::json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]});
    assert_eq!(p.definition.output_schema, Some(want.clone()));
    assert_eq!(p.definition.output_schema(), Some(want));
    assert!(p.warnings.is_empty(), "{:?}", p.warnings);
    assert!(!p.definition.metadata.contains_key("outputSchema"));
    // JSON text works too
    let p = parse("---\nname: a\ndescription: d\noutput-schema: '{\"type\": \"array\"}'\n---\n");
    assert_eq!(
        p.definition.output_schema,
        Some(serde_json::json!({"type": "array"}))
    );
    // an agent file is not trusted with references, nor with a schema that is not one
    for bad in [
        "outputSchema:\n  $ref: 'https://example.com/s.json'\n",
        "outputSchema: 'not json'\n",
        "outputSchema:\n  type: no-such-type\n",
    ] {
        let p = parse(&format!("---\nname: a\ndescription: d\n{bad}---\n"));
        assert_eq!(p.definition.output_schema, None, "{bad}");
        assert!(
            p.warnings
                .iter()
                .any(|w| w.contains("outputSchema") || w.contains("output-schema")),
            "{bad}: {:?}",
            p.warnings
        );
    }
}
