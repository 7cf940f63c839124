//! The Task description stays bounded however many agents are registered (issue 41 item 4):
//! full descriptions while they fit, then each agent's first sentence, then names, then a
//! count; a Task call with an empty prompt returns an agent's full description instead of
//! starting it; and `TaskOutput` given a result's session id (what a small model reads as a
//! task id) says what that id is.

use crate::common::{FnKind, assert_error, assert_has, build_tool, fn_ref};

use subagent_spi::{TaskContext, TaskOutcome, Tool};
use task_tool::TaskTool;

/// A kind whose agents `agent-000`.. `agent-{n-1}` answer "ran" and carry `description`.
async fn with_agents(n: usize, description: &str) -> TaskTool {
    let mut kind = FnKind::new();
    let mut refs = Vec::new();
    for i in 0..n {
        let name = format!("agent-{i:03}");
        kind = kind.agent(&name, |_c, _x| async { Ok(TaskOutcome::completed("ran")) });
        refs.push(fn_ref(&format!("{name}?{description}")));
    }
    build_tool(kind.into_type(), refs, |b| b).await
}

const LONG: &str = "Reviews one concern of a change with care. It reads the diff, the files around \
it and their tests, then writes findings grouped by severity with the lines they concern.";

#[tokio::test]
async fn a_few_agents_are_listed_in_full() {
    let task = with_agents(3, LONG).await;
    let d = Tool::description(&task);
    assert_eq!(d.matches(LONG).count(), 3, "{d}");
    assert!(!d.contains("shortened"), "{d}");
}

#[tokio::test]
async fn many_agents_are_listed_by_first_sentence_then_by_name_within_a_bound() {
    let small = Tool::description(&with_agents(40, LONG).await);
    assert!(
        small.contains("- agent-000: Reviews one concern of a change with care.\n"),
        "{small}"
    );
    assert!(!small.contains("It reads the diff"), "{small}");
    assert!(small.contains("empty `prompt`"), "{small}");

    let huge = Tool::description(&with_agents(600, LONG).await);
    // The bound: about 7,000 characters of agents, whatever their number.
    assert!(huge.len() < 9_000, "{} characters", huge.len());
    assert!(huge.contains("- also: agent-"), "{huge}");
    assert!(huge.contains("more (a Task call naming an unknown agent lists every name)"));
}

#[tokio::test]
async fn an_empty_prompt_returns_the_full_description_and_starts_nothing() {
    let task = with_agents(40, LONG).await;
    let out = task
        .call_tool(
            serde_json::json!({"subagent_type": "agent-031", "description": "d", "prompt": "  "}),
            &TaskContext::new(),
        )
        .await;
    assert!(!out.is_error, "{}", out.content);
    assert_has(&out, LONG);
    assert_has(&out, "was not started");
    assert!(out.children.is_empty(), "nothing ran");
    // With a prompt, it runs.
    let out = task
        .call_tool(
            serde_json::json!({"subagent_type": "agent-031", "description": "d", "prompt": "go"}),
            &TaskContext::new(),
        )
        .await;
    assert_has(&out, "ran");
}

#[tokio::test]
async fn task_output_given_a_session_id_says_it_is_one() {
    let task = with_agents(1, "works").await;
    let output = task.tools().output;
    for input in [
        serde_json::json!({"task_id": "sess_0193abc", "approve": "yes"}),
        serde_json::json!({"task_id": "sess_0193abc", "block": false}),
    ] {
        let out = Tool::call(&output, input, &TaskContext::new())
            .await
            .expect("answers");
        assert_error(
            &out,
            "That is a session id (for Task's `resume`), not a task id",
        );
    }
}

/// A call without `description` (small models leave it out) runs, labelled with its prompt's
/// first words; without `prompt` it is still an input error naming the required fields.
#[tokio::test]
async fn a_call_without_a_description_runs_under_its_prompts_first_words() {
    let task = with_agents(2, LONG).await;
    let recorder = std::sync::Arc::new(subagent_testkit::ProgressRecorder::new());
    let ctx = TaskContext::new().with_progress(recorder.clone());
    let out = task
        .call_tool(
            serde_json::json!({"subagent_type": "agent-001", "prompt": "compute 17 * 23 with python please"}),
            &ctx,
        )
        .await;
    assert!(!out.is_error, "{}", out.content);
    assert_has(&out, "ran");
    assert!(
        recorder.events().iter().any(|e| matches!(
            &e.kind,
            subagent_spi::ProgressKind::Started { description } if description == "compute 17 * 23 with"
        )),
        "{:?}",
        recorder.events()
    );
    // A huge first word is cut.
    let recorder = std::sync::Arc::new(subagent_testkit::ProgressRecorder::new());
    let ctx = TaskContext::new().with_progress(recorder.clone());
    let word = "é".repeat(100_000);
    let out = task
        .call_tool(
            serde_json::json!({"subagent_type": "agent-001", "prompt": word}),
            &ctx,
        )
        .await;
    assert!(!out.is_error, "{}", out.content);
    assert!(recorder.events().iter().any(|e| matches!(
        &e.kind,
        subagent_spi::ProgressKind::Started { description } if description.chars().count() == 80
    )));
    let out = task
        .call_tool(
            serde_json::json!({"subagent_type": "agent-001"}),
            &TaskContext::new(),
        )
        .await;
    assert_error(&out, "Required fields");
}
