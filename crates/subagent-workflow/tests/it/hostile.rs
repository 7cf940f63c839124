//! Hostile scripts end with a clear error within the limits.

use std::time::Duration;

use subagent_workflow::{WorkflowError, WorkflowLimits};

use crate::common::World;

async fn fails(limits: WorkflowLimits, script: &str) -> WorkflowError {
    let w = World::new(limits).await;
    let out = tokio::time::timeout(Duration::from_secs(60), w.run(script))
        .await
        .expect("ends within the limits");
    out.error
        .unwrap_or_else(|| panic!("{script} should fail: {:?}", out.result))
}

/// [`fails`], with exactly the error `expected`.
async fn fails_saying(limits: WorkflowLimits, script: &str, expected: &str) {
    assert_eq!(
        fails(limits, script).await.to_string(),
        expected,
        "{script}"
    );
}

#[tokio::test]
async fn an_endless_loop_stops_at_the_step_limit() {
    fails_saying(
        WorkflowLimits::default().with_max_steps(200),
        "let i = 0; while (true) { try { i++; } catch (e) {} }",
        "workflow limit reached: max_steps=200 (the script computed too long without waiting for an agent)",
    )
    .await;
}

#[tokio::test]
async fn an_endless_loop_stops_at_the_wall_time_limit() {
    let e = fails(
        WorkflowLimits::default().with_max_wall_time(Duration::from_millis(300)),
        "for (;;) {}",
    )
    .await;
    assert!(
        e.to_string()
            .starts_with("workflow limit reached: max_wall_time=0s"),
        "{e}"
    );
}

#[tokio::test]
async fn a_huge_allocation_stops_at_the_memory_limit() {
    fails_saying(
        WorkflowLimits::default().with_max_memory(8 * 1024 * 1024),
        "const a = []; for (;;) { a.push('x'.repeat(1 << 16) + a.length); }",
        "workflow limit reached: max_memory=8388608 (the script ran out of memory)",
    )
    .await;
    let e = fails(
        WorkflowLimits::default().with_max_memory(8 * 1024 * 1024),
        "return 'x'.repeat(1 << 28).length;",
    )
    .await;
    assert!(e.to_string().contains("max_memory"), "{e}");
}

#[tokio::test]
async fn deep_recursion_stops_at_the_stack_limit() {
    fails_saying(
        WorkflowLimits::default(),
        "function f(n) { return f(n + 1) + 1; } return f(0);",
        "workflow limit reached: max_stack=1048576 (the script recursed too deeply)",
    )
    .await;
}

#[tokio::test]
async fn a_million_agent_calls_stop_at_the_call_limit() {
    let w = World::new(WorkflowLimits::default().with_max_agent_calls(50)).await;
    let out = w.run("const all = []; for (let i = 0; i < 1e6; i++) { try { all.push(agent('echo', 'x' + i)); } catch (e) {} } await Promise.all(all);").await;
    let e = out.error.expect("fails");
    assert_eq!(
        e.to_string(),
        "workflow limit reached: max_agent_calls=50 (call #50 (`echo`) is one more than the run may make)"
    );
    assert!(w.calls.total() <= 50, "{}", w.calls.total());
}

#[tokio::test]
async fn syntax_errors_name_the_line() {
    let e = fails(
        WorkflowLimits::default(),
        "const a = 1;\nconst b = ;\nreturn a;",
    )
    .await;
    let text = e.to_string();
    assert!(text.starts_with("workflow.js:2: SyntaxError: "), "{text}");
    fails_saying(
        WorkflowLimits::default(),
        "\n\nnotDefined();",
        "workflow.js:3: ReferenceError: notDefined is not defined",
    )
    .await;
}

#[tokio::test]
async fn a_missing_agent_is_a_clear_error() {
    fails_saying(
        WorkflowLimits::default(),
        "return await agent('nobody', 'hi');",
        "workflow.js:1: Error: unknown subagent `nobody`; available agents: echo, json, fail, gate, slow",
    )
    .await;
}

#[tokio::test]
async fn waiting_on_nothing_ends() {
    let e = fails(WorkflowLimits::default(), "await new Promise(() => {});").await;
    assert!(
        e.to_string()
            .contains("waits for a promise that no agent()"),
        "{e}"
    );
}

#[tokio::test]
async fn bad_arguments_are_type_errors() {
    let e = fails(WorkflowLimits::default(), "await agent('echo', 42);").await;
    assert_eq!(
        e.to_string(),
        r#"workflow.js:1: TypeError: agent("echo", prompt): the prompt must be a string"#
    );
    let e = fails(
        WorkflowLimits::default(),
        "await agent('echo', 'x', {schema: {type: 'object', properties: {a: {$ref: '#/x'}}}});",
    )
    .await;
    assert!(e.to_string().contains("schema"), "{e}");
}
