//! A model that repeats its previous read-only call word for word gets a turn without tools.

use crate::common;

use std::sync::Arc;

use common::*;
use serde_json::json;
use subagent_runtime::{AgentRuntime, RunSpec};
use subagent_spi::{ProgressKind, TaskContext, TaskStatus, Tool, ToolEffect, ToolOutput};
use subagent_testkit::FnTool;

/// A read-only tool like `Read`.
fn fake_read() -> FnTool {
    FnTool::new("Read", "reads a file", json!({"type": "object"}), |_| {
        Ok(ToolOutput::text("The meeting room code is 4417."))
    })
    .with_effect(ToolEffect::ReadOnly)
}

/// What Qwen2.5-Coder-1.5B did at temperature 0: Read, then the same Read again (and again,
/// to the turn limit). The repeat still runs, its result says it is a repeat, and the next
/// turn is offered no tools, so the model answers.
#[tokio::test]
async fn a_repeated_read_only_call_makes_the_next_turn_answer() {
    let read = json!({"file_path": "notes.txt"});
    let model = ScriptedModel::new(vec![
        calls("", &[("c1", "Read", read.clone())]),
        calls("", &[("c2", "Read", read.clone())]),
        text("4417"),
    ]);
    let rec = Arc::new(Recorder::default());
    let ctx = TaskContext::new().with_progress(rec.clone());
    let tools: Vec<Arc<dyn Tool>> = vec![
        Arc::new(fake_read()),
        tool("echo", |_| async { Ok(ToolOutput::text("echo")) }),
    ];
    let spec = RunSpec::new(model.clone(), "read notes.txt").with_tools(tools);
    let out = AgentRuntime::default().run(spec, &ctx).await.unwrap();
    assert_eq!(out.status, TaskStatus::Completed);
    assert_eq!(out.text, "4417");
    let reqs = model.requests();
    assert_eq!(reqs.len(), 3);
    assert_eq!(reqs[0].tools.len(), 2);
    assert_eq!(reqs[1].tools.len(), 2, "one Read is no repeat");
    assert!(reqs[2].tools.is_empty(), "after the repeat: no tools");
    let results = tool_results(&reqs[2]);
    assert_eq!(results[0].1, "The meeting room code is 4417.");
    assert!(
        results[1]
            .1
            .starts_with("The meeting room code is 4417.\n\n[This call repeats"),
        "{results:?}"
    );
    assert!(rec.kinds().iter().any(|k| matches!(k,
        ProgressKind::Status { message } if message.contains("repeated its previous Read call"))));
}

/// Repeats of a tool that is not read-only (here an `Execute` tool, like Bash or a poll) are
/// left alone: every turn keeps its tools.
#[tokio::test]
async fn repeats_of_other_tools_keep_the_tools() {
    let model = ScriptedModel::new(vec![
        calls("", &[("c1", "echo", json!({"text": "x"}))]),
        calls("", &[("c2", "echo", json!({"text": "x"}))]),
        calls("", &[("c3", "echo", json!({"text": "x"}))]),
        text("done"),
    ]);
    let spec = RunSpec::new(model.clone(), "poll").with_tools(vec![tool("echo", |_| async {
        Ok(ToolOutput::text("echo"))
    })]);
    let out = AgentRuntime::default()
        .run(spec, &TaskContext::new())
        .await
        .unwrap();
    assert_eq!(out.text, "done");
    assert!(model.requests().iter().all(|r| r.tools.len() == 1));
    assert!(
        tool_results(&model.requests()[3])
            .iter()
            .all(|(_, content, _)| content == "echo")
    );
}
