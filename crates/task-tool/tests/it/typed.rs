//! Typed results at the `Task` tool: any kind's outcome is checked against the call's
//! `output_schema`, retried by resuming the child's session, and returned as a JSON value.

use crate::common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use common::{FnKind, assert_error, fn_ref};
use serde_json::json;
use subagent_spi::*;
use task_tool::TaskTool;

fn schema() -> serde_json::Value {
    json!({
        "type": "object",
        "properties": {"answer": {"type": "integer"}},
        "required": ["answer"]
    })
}

async fn tool(calls: Arc<AtomicUsize>) -> TaskTool {
    let kind = FnKind::new()
        // Answers with JSON text (as a remote peer without structured output would).
        .agent("texter", |c, _| async move {
            Ok(TaskOutcome::completed(format!(
                "{{\"answer\": {}}}",
                c.prompt.len()
            )))
        })
        // Wrong first; fixes it when resumed with the errors (which it checks it was given).
        .agent("learner", move |c, _| {
            let calls = calls.clone();
            async move {
                calls.fetch_add(1, Ordering::SeqCst);
                let mut o = match &c.resume {
                    None => TaskOutcome::completed("{\"answer\": \"forty-two\"}"),
                    Some(_) if c.prompt.contains("/answer") => {
                        TaskOutcome::completed("").with_structured(json!({"answer": 42}))
                    }
                    Some(_) => TaskOutcome::completed("no idea"),
                };
                o.session_id = Some("s-1".into());
                o.usage.input_tokens = 10;
                Ok(o)
            }
        })
        // Always wrong, resumable.
        .agent("stubborn", |_, _| async move {
            Ok(TaskOutcome::completed("[]").with_session("s-2"))
        })
        // Wrong, not resumable.
        .agent("oneshot", |_, _| async move {
            Ok(TaskOutcome::completed("").with_structured(json!({"answer": true})))
        });
    TaskTool::builder()
        .subagent_type(kind.into_type())
        .subagent_references(["texter", "learner", "stubborn", "oneshot"].map(fn_ref))
        .build()
        .await
        .unwrap()
}

fn call(agent: &str) -> TaskCall {
    TaskCall::new(agent, "typed", "abcd").with_output_schema(schema())
}

async fn foreground(task: &TaskTool, call: TaskCall) -> TaskOutcome {
    common::foreground(task, call, &TaskContext::new()).await.1
}

#[tokio::test]
async fn json_text_from_a_child_becomes_the_structured_value() {
    let task = tool(Arc::default()).await;
    let out = foreground(&task, call("texter")).await;
    assert_eq!(out.status, TaskStatus::Completed);
    assert_eq!(out.structured, Some(json!({"answer": 4})));
    assert_eq!(out.text, "{\"answer\":4}");
    // a call without a schema is untouched
    let out = foreground(&task, TaskCall::new("texter", "t", "abc")).await;
    assert_eq!(out.structured, None);
    assert_eq!(out.text, "{\"answer\": 3}");
}

#[tokio::test]
async fn an_invalid_result_is_sent_back_through_resume_with_the_errors() {
    let calls = Arc::new(AtomicUsize::new(0));
    let task = tool(calls.clone()).await;
    let out = foreground(&task, call("learner")).await;
    assert_eq!(out.status, TaskStatus::Completed, "{}", out.text);
    assert_eq!(out.structured, Some(json!({"answer": 42})));
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    assert_eq!(out.usage.input_tokens, 20, "both attempts count");
}

#[tokio::test]
async fn retries_are_bounded_and_the_failure_says_why() {
    let task = tool(Arc::default()).await;
    let out = foreground(&task, call("stubborn")).await;
    assert_eq!(out.status, TaskStatus::Failed);
    assert!(out.text.starts_with("invalid output:"), "{}", out.text);
    assert!(out.text.contains("after 3 attempts"), "{}", out.text);
    assert!(out.text.contains("stubborn"), "{}", out.text);

    let out = foreground(&task, call("oneshot")).await;
    assert_eq!(out.status, TaskStatus::Failed);
    assert!(out.text.contains("after 1 attempt:"), "{}", out.text);
    assert!(out.text.contains("/answer"), "{}", out.text);
    assert_eq!(out.structured, None);
}

#[tokio::test]
async fn the_model_sees_the_json_value_and_its_schemas_are_bounded() {
    let task = tool(Arc::default()).await;
    let out = task
        .call_tool(
            json!({"description": "d", "prompt": "xy", "subagent_type": "texter",
                   "output_schema": schema()}),
            &TaskContext::new(),
        )
        .await;
    assert!(!out.is_error, "{}", out.content);
    assert!(out.content.starts_with("{\"answer\":2}"), "{}", out.content);

    // A model may not send references (they can expand exponentially) nor huge schemas.
    for bad in [
        json!({"$defs": {"a": {"type": "integer"}}, "$ref": "#/$defs/a"}),
        json!({"$ref": "https://example.com/s.json"}),
        json!({"description": "x".repeat(40_000)}),
        json!("not a schema"),
    ] {
        let out = task
            .call_tool(
                json!({"description": "d", "prompt": "xy", "subagent_type": "texter",
                       "output_schema": bad}),
                &TaskContext::new(),
            )
            .await;
        assert_error(&out, "output_schema");
    }
    // The host may use local references (a Rust type's derived schema has them).
    let host = json!({"$defs": {"a": {"type": "integer"}}, "type": "object",
                      "properties": {"answer": {"$ref": "#/$defs/a"}}});
    let out = foreground(
        &task,
        TaskCall::new("texter", "t", "abc").with_output_schema(host),
    )
    .await;
    assert_eq!(out.structured, Some(json!({"answer": 3})));
}

#[test]
fn the_task_tool_schema_offers_output_schema() {
    let schema = serde_json::to_value(schemars::schema_for!(TaskCall)).unwrap();
    let prop = schema["properties"]["output_schema"].to_string();
    assert!(prop.contains("object"), "{prop}");
    let required = schema["required"].to_string();
    assert!(!required.contains("output_schema"), "{required}");
}
