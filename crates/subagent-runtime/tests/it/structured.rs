//! Typed results in the agent loop: the final `StructuredOutput` tool, JSON text answers,
//! validation errors fed back a bounded number of times.

use crate::common;

use common::*;
use serde_json::json;
use subagent_runtime::{AgentRuntime, INVALID_OUTPUT_PREFIX, Limits, RunSpec};
use subagent_schema::{OutputSchema, Profile};
use subagent_spi::chat::ChatMessage;
use subagent_spi::{TaskContext, TaskOutcome, TaskStatus};

fn schema() -> OutputSchema {
    OutputSchema::compile(
        &json!({
            "type": "object",
            "properties": {"count": {"type": "integer"}, "files": {"type": "array", "items": {"type": "string"}}},
            "required": ["count", "files"],
            "additionalProperties": false
        }),
        Profile::untrusted(),
    )
    .unwrap()
}

async fn run(spec: RunSpec) -> TaskOutcome {
    AgentRuntime::default()
        .run(spec, &TaskContext::new())
        .await
        .unwrap()
}

#[tokio::test]
async fn a_valid_structured_output_call_ends_the_run_with_the_value() {
    let model = ScriptedModel::new(vec![calls(
        "",
        &[(
            "c1",
            "StructuredOutput",
            json!({"count": 2, "files": ["a", "b"]}),
        )],
    )]);
    let spec = RunSpec::new(model.clone(), "count files")
        .with_system("be brief")
        .with_output_schema(schema());
    let out = run(spec).await;
    assert_eq!(out.status, TaskStatus::Completed);
    assert_eq!(
        out.structured,
        Some(json!({"count": 2, "files": ["a", "b"]}))
    );
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&out.text).unwrap(),
        json!({"count": 2, "files": ["a", "b"]})
    );
    let reqs = model.requests();
    assert_eq!(reqs.len(), 1, "the valid call ends the run");
    assert_eq!(reqs[0].tools[0].name, "StructuredOutput");
    assert_eq!(reqs[0].tools[0].input_schema, schema().schema().clone());
    assert!(
        reqs[0]
            .system
            .as_deref()
            .unwrap()
            .contains("StructuredOutput")
    );
}

#[tokio::test]
async fn invalid_values_are_sent_back_with_the_errors_then_fixed() {
    let model = ScriptedModel::new(vec![
        calls("", &[("c1", "StructuredOutput", json!({"count": "two"}))]),
        text("{\"count\": 2}"),
        text("```json\n{\"count\": 2, \"files\": []}\n```"),
    ]);
    let spec = RunSpec::new(model.clone(), "count").with_output_schema(schema());
    let out = run(spec).await;
    assert_eq!(out.status, TaskStatus::Completed, "{}", out.text);
    assert_eq!(out.structured, Some(json!({"count": 2, "files": []})));
    let reqs = model.requests();
    assert_eq!(reqs.len(), 3);
    // the tool call's errors came back as an error result naming the field
    let ChatMessage::Tool {
        content, is_error, ..
    } = &reqs[1].messages[2]
    else {
        panic!("{:?}", reqs[1].messages)
    };
    assert!(*is_error);
    assert!(content.contains("/count"), "{content}");
    // the text answer's errors came back as a user message
    let Some(ChatMessage::User { content, .. }) = reqs[2].messages.last() else {
        panic!("{:?}", reqs[2].messages)
    };
    assert!(content.contains("files"), "{content}");
}

#[tokio::test]
async fn retries_are_bounded_then_the_run_fails_saying_why() {
    let model = ScriptedModel::new(vec![
        text("not json"),
        calls("", &[("c1", "StructuredOutput", json!({"count": 1}))]),
        text("still not json"),
        calls(
            "",
            &[("c2", "StructuredOutput", json!({"count": 1, "files": []}))],
        ),
    ]);
    let spec = RunSpec::new(model.clone(), "count").with_output_schema(schema().with_retries(2));
    let out = run(spec).await;
    assert_eq!(out.status, TaskStatus::Failed);
    assert!(out.text.starts_with(INVALID_OUTPUT_PREFIX), "{}", out.text);
    assert!(out.text.contains("3 attempts"), "{}", out.text);
    assert_eq!(out.structured, None);
    assert_eq!(
        model.requests().len(),
        3,
        "no fourth model call after the retries"
    );
}

#[tokio::test]
async fn feedback_to_the_model_is_bounded() {
    // A value with a thousand huge wrong items: what goes back stays short.
    let items: Vec<_> = (0..1000).map(|_| json!({"x": "y".repeat(2000)})).collect();
    let model = ScriptedModel::new(vec![
        calls(
            "",
            &[(
                "c1",
                "StructuredOutput",
                json!({"count": 1, "files": items}),
            )],
        ),
        calls(
            "",
            &[("c2", "StructuredOutput", json!({"count": 1, "files": []}))],
        ),
    ]);
    // The 2 MB call stays in the conversation: a window it fits in (the default one would
    // rightly stop the run, `context_window=…`).
    let limits = Limits {
        context_window: Some(10_000_000),
        ..Limits::default()
    };
    let spec = RunSpec::new(model.clone(), "count")
        .with_output_schema(schema())
        .with_limits(limits);
    let out = run(spec).await;
    assert_eq!(out.status, TaskStatus::Completed);
    let results = tool_results(&model.requests()[1]);
    let (_, content, is_error) = &results[0];
    assert!(*is_error);
    assert!(content.chars().count() < 2_500, "{}", content.len());
    assert!(content.contains("and 995 more"), "{content}");
}

#[tokio::test]
async fn non_object_schemas_are_wrapped_in_value() {
    let s = OutputSchema::compile(
        &json!({"type": "array", "items": {"type": "integer"}}),
        Profile::untrusted(),
    )
    .unwrap();
    let model = ScriptedModel::new(vec![calls(
        "",
        &[("c1", "StructuredOutput", json!({"value": [1, 2, 3]}))],
    )]);
    let out = run(RunSpec::new(model.clone(), "numbers").with_output_schema(s)).await;
    assert_eq!(out.structured, Some(json!([1, 2, 3])));
    assert_eq!(out.text, "[1,2,3]");
    assert_eq!(
        model.requests()[0].tools[0].input_schema["required"],
        json!(["value"])
    );
}

#[tokio::test]
async fn a_run_without_a_schema_is_unchanged() {
    let model = ScriptedModel::new(vec![text("{\"count\": 1}")]);
    let out = run(RunSpec::new(model.clone(), "x")).await;
    assert_eq!(out.structured, None);
    assert_eq!(out.text, "{\"count\": 1}");
    assert!(model.requests()[0].tools.is_empty());
}
