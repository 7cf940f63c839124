//! Registration: resolution failures, duplicates, overrides of defaults, lookup.

use crate::common;

use std::time::Duration;

use common::{FnKind, build_tool, fn_ref, try_build_tool};
use subagent_spi::*;
use task_tool::{BuildError, ReferenceFailure, TaskTool, TaskToolBuilder};

fn kind() -> FnKind {
    FnKind::new()
        .agent("echo", |c, _| async move {
            Ok(TaskOutcome::completed(c.prompt))
        })
        .agent("other", |_, _| async move {
            Ok(TaskOutcome::completed("other"))
        })
}

/// Builds a tool over `kind` with `refs` (its builder passed to `with`), which must fail as
/// some references cannot resolve: the error's text and its failures.
async fn unresolvable(
    kind: SubagentType,
    refs: impl IntoIterator<Item = SubagentReference>,
    with: impl FnOnce(TaskToolBuilder) -> TaskToolBuilder,
) -> (String, Vec<ReferenceFailure>) {
    let err = try_build_tool(kind, refs, with)
        .await
        .expect_err("references cannot resolve");
    let text = err.to_string();
    match err {
        BuildError::Unresolvable { failures } => (text, failures),
        other => panic!("unexpected error {other}"),
    }
}

#[tokio::test]
async fn build_lists_every_failing_reference() {
    let refs = [
        fn_ref("echo"),
        fn_ref("missing-one"),
        SubagentReference::new("http://127.0.0.1:1/agent", "A2A"),
        fn_ref("missing-two"),
    ];
    let (text, failures) = unresolvable(kind().into_type(), refs, |b| b).await;
    assert_eq!(failures.len(), 3, "{text}");
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
    // The bad reference is skipped: the build succeeds.
    let refs = [fn_ref("echo"), fn_ref("missing")];
    let task = build_tool(kind().into_type(), refs, |b| b.skip_unresolvable(true)).await;
    assert_eq!(task.agent_names(), vec!["echo".to_string()]);
}

#[tokio::test]
async fn resolution_has_a_timeout() {
    let slow = kind().agent("slow-resolve", |_, _| async {
        Ok(TaskOutcome::completed(""))
    });
    let (text, failures) = unresolvable(slow.into_type(), [fn_ref("slow-resolve")], |b| {
        b.resolve_timeout(Duration::from_millis(50))
    })
    .await;
    assert!(text.contains("longer than 50 ms"), "{text}");
    assert!(
        failures[0].error().is_none(),
        "a timeout has no error behind it"
    );
}

#[tokio::test]
async fn duplicate_user_names_name_both_uris() {
    let refs = [fn_ref("echo#twin?first"), fn_ref("other#Twin?second")];
    let err = try_build_tool(kind().into_type(), refs, |b| b)
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
