//! Registration: resolution failures, duplicates, overrides of defaults, lookup.

use crate::common;

use std::time::Duration;

use common::{FnKind, build_tool, fn_ref};
use subagent_spi::*;
use task_tool::{BuildError, TaskTool};

fn kind() -> FnKind {
    FnKind::new()
        .agent("echo", |c, _| async move {
            Ok(TaskOutcome::completed(c.prompt))
        })
        .agent("other", |_, _| async move {
            Ok(TaskOutcome::completed("other"))
        })
}

#[tokio::test]
async fn build_lists_every_failing_reference() {
    let err = TaskTool::builder()
        .subagent_type(kind().into_type())
        .subagent_references([
            fn_ref("echo"),
            fn_ref("missing-one"),
            SubagentReference::new("http://127.0.0.1:1/agent", "A2A"),
            fn_ref("missing-two"),
        ])
        .build()
        .await
        .expect_err("three references cannot resolve");
    let BuildError::Unresolvable { failures } = &err else {
        panic!("unexpected error {err}");
    };
    assert_eq!(failures.len(), 3, "{err}");
    let text = err.to_string();
    assert!(
        text.contains("fn:missing-one") && text.contains("no function named `missing-one`"),
        "{text}"
    );
    assert!(text.contains("fn:missing-two"), "{text}");
    assert!(
        text.contains("http://127.0.0.1:1/agent")
            && text.contains("no resolver accepts")
            && text.contains("registered kinds: FN"),
        "{text}"
    );
    // Each failure keeps the resolver's error as its source, not only its text.
    let no_resolver = &failures[1];
    assert!(
        matches!(no_resolver.error(), Some(SubagentError::NoResolver { registered, .. }) if registered == &["FN".to_string()]),
        "{no_resolver:?}"
    );
    let source = std::error::Error::source(no_resolver).expect("a source");
    assert_eq!(source.to_string(), no_resolver.reason);
    assert!(
        failures[0].error().is_some(),
        "the fn kind's own error is kept"
    );
}

#[tokio::test]
async fn skip_unresolvable_keeps_the_good_ones() {
    let task = TaskTool::builder()
        .subagent_type(kind().into_type())
        .subagent_references([fn_ref("echo"), fn_ref("missing")])
        .skip_unresolvable(true)
        .build()
        .await
        .expect("bad references are skipped");
    assert_eq!(task.agent_names(), vec!["echo".to_string()]);
}

#[tokio::test]
async fn resolution_has_a_timeout() {
    let err = TaskTool::builder()
        .subagent_type(
            kind()
                .agent("slow-resolve", |_, _| async {
                    Ok(TaskOutcome::completed(""))
                })
                .into_type(),
        )
        .subagent_reference(fn_ref("slow-resolve"))
        .resolve_timeout(Duration::from_millis(50))
        .build()
        .await
        .expect_err("resolution times out");
    assert!(err.to_string().contains("longer than 50 ms"), "{err}");
    let BuildError::Unresolvable { failures } = &err else {
        panic!("unexpected error {err}");
    };
    assert!(
        failures[0].error().is_none(),
        "a timeout has no error behind it"
    );
}

#[tokio::test]
async fn duplicate_user_names_name_both_uris() {
    let err = TaskTool::builder()
        .subagent_type(kind().into_type())
        .subagent_references([fn_ref("echo#twin?first"), fn_ref("other#Twin?second")])
        .build()
        .await
        .expect_err("two agents named twin");
    match &err {
        BuildError::DuplicateName {
            name,
            first_uri,
            second_uri,
        } => {
            assert_eq!(name, "Twin");
            assert_eq!(first_uri, "fn:echo#twin?first");
            assert_eq!(second_uri, "fn:other#Twin?second");
        }
        other => panic!("unexpected error {other}"),
    }
}

#[tokio::test]
async fn user_reference_overrides_a_type_default() {
    let t = kind().into_type().with_default_references([
        fn_ref("echo#Explore?built-in explorer"),
        fn_ref("other#Plan?built-in planner"),
    ]);
    let task = build_tool(t, [fn_ref("other#explore?my own explorer")], |b| b).await;
    assert_eq!(
        task.agent_names(),
        vec!["Plan".to_string(), "explore".to_string()]
    );
    let d = task.find("Explore").expect("case-insensitive lookup");
    assert_eq!(d.description(), "my own explorer");
    let desc = Tool::description(&task);
    assert!(desc.contains("- explore: my own explorer"), "{desc}");
    assert!(desc.contains("- Plan: built-in planner"), "{desc}");
    assert!(!desc.contains("built-in explorer"), "{desc}");
}

#[tokio::test]
async fn duplicate_kinds_are_refused() {
    let err = TaskTool::builder()
        .subagent_types([kind().into_type(), kind().into_type()])
        .build()
        .await
        .expect_err("two FN types");
    assert!(matches!(err, BuildError::DuplicateKind { .. }), "{err}");
}

#[tokio::test]
async fn lookup_is_exact_then_case_insensitive() {
    let task = build_tool(
        kind().into_type(),
        [fn_ref("echo#Reviewer"), fn_ref("other#reviewer-two")],
        |b| b,
    )
    .await;
    assert_eq!(
        task.find("reviewer").map(|d| d.name().to_string()),
        Some("Reviewer".into())
    );
    assert_eq!(
        task.find("REVIEWER-TWO").map(|d| d.name().to_string()),
        Some("reviewer-two".into())
    );
    assert!(task.find("nobody").is_none());
}

#[tokio::test]
async fn input_schema_is_the_task_call() {
    let task = TaskTool::builder()
        .subagent_type(kind().into_type())
        .build()
        .await
        .expect("builds");
    let schema = task.input_schema();
    let props = schema["properties"].as_object().expect("properties");
    let mut keys: Vec<&str> = props.keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        [
            "description",
            "model",
            "name",
            "output_schema",
            "prompt",
            "resume",
            "run_in_background",
            "subagent_type"
        ]
    );
    let mut required: Vec<&str> = schema["required"]
        .as_array()
        .expect("required")
        .iter()
        .filter_map(|v| v.as_str())
        .collect();
    required.sort_unstable();
    assert_eq!(required, ["description", "prompt", "subagent_type"]);
    assert_eq!(task.name(), "Task");
}
