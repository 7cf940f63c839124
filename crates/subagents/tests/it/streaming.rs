//! Nested streaming through the facade (issue 28 item 4), over real HTTP with the scripted
//! model server: every run's text deltas, tool calls and results reach the main agent's
//! progress sink keyed by task id and parent id, at every depth, locally and from a
//! coordinator served over A2A (its own children included, through the progress extension).

use crate::common;
use crate::common::Built as _;

use common::team_builder_on;
use subagent_testkit::{Reply, ScriptedModelServer};
use subagents::spi::ProgressEvent;
use subagents::{ProgressKind, TaskStatus};

/// The events of `agent`.
fn of<'a>(events: &'a [ProgressEvent], agent: &str) -> Vec<&'a ProgressEvent> {
    events.iter().filter(|e| e.agent == agent).collect()
}

/// The concatenated text deltas of `events`.
fn text(events: &[&ProgressEvent]) -> String {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            ProgressKind::TextDelta { text } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

/// main → coordinator → leaf, where the leaf reads `note.txt`, written in `dir` to hold
/// `answer` (from `model`'s `name` queue).
fn script(server: &ScriptedModelServer, name: &str, dir: &std::path::Path, answer: &str) {
    let note = dir.join("note.txt");
    std::fs::write(&note, format!("{answer}\n")).expect("note");
    let push = |r: Reply| server.push_for_model(name, r);
    push(Reply::task_call("leaf", "read the note"));
    push(Reply::text_and_tool_calls(
        "reading",
        vec![(
            "Read",
            serde_json::json!({"file_path": note.to_string_lossy()}),
        )],
    ));
    push(Reply::text(answer));
    push(Reply::text(format!("coordinator: {answer}")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn local_children_stream_deltas_tool_calls_and_results_at_every_depth() {
    let server = ScriptedModelServer::start().await;
    let dir = tempfile::tempdir().expect("tmp");
    server.push_for_model("team-model", Reply::task_call("coordinator", "go"));
    script(&server, "team-model", dir.path(), "NOTE-31");
    server.push_for_model("team-model", Reply::text("Final: NOTE-31"));
    let agents = team_builder_on(&server, "team-model")
        .workspace(dir.path())
        .stream(true)
        .built()
        .await;
    let (outcome, recorder) = common::run_recorded(&agents, "go").await;
    assert_eq!(outcome.status, TaskStatus::Completed);
    let events = recorder.events();

    let coordinator = of(&events, "coordinator");
    let leaf = of(&events, "leaf");
    let coord_id = coordinator[0].task_id.clone().expect("an id");
    assert!(coordinator.iter().all(|e| e.depth == 1
        && e.task_id.as_ref() == Some(&coord_id)
        && e.parent_task_id.as_deref() == Some("main")));
    assert!(
        leaf.iter()
            .all(|e| e.depth == 2 && e.parent_task_id.as_ref() == Some(&coord_id)),
        "{leaf:#?}"
    );
    assert_eq!(text(&leaf), "readingNOTE-31");
    assert_eq!(text(&coordinator), "coordinator: NOTE-31");
    // The main agent's own answer streams too.
    assert_eq!(text(&of(&events, "main")), "Final: NOTE-31");
    let call = leaf
        .iter()
        .find_map(|e| match &e.kind {
            ProgressKind::ToolCall { name, id, .. } => Some((name.clone(), id.clone())),
            _ => None,
        })
        .expect("the leaf's tool call");
    assert_eq!(call.0, "Read");
    assert!(leaf.iter().any(|e| matches!(&e.kind,
        ProgressKind::ToolResult { id, is_error: false, preview, .. }
            if *id == call.1 && preview.contains("NOTE-31"))));
}

#[cfg(feature = "server")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_served_coordinators_children_stream_to_the_caller_through_a2a() {
    use common::{remote_reference, serve_a2a};
    use subagents::{ServeOptions, Subagents};

    // The served side streams its models' replies.
    let remote_model = ScriptedModelServer::start().await;
    let dir = tempfile::tempdir().expect("tmp");
    script(&remote_model, "m", dir.path(), "REMOTE-NOTE-5");
    let remote = team_builder_on(&remote_model, "m")
        .workspace(dir.path())
        .stream(true)
        .built()
        .await;
    let url = serve_a2a(remote, &ServeOptions::new(), "coordinator")
        .await
        .0;

    let model = ScriptedModelServer::start().await;
    model.push(Reply::task_call("remote-coordinator", "go"));
    model.push(Reply::text("all done"));
    let agents = Subagents::builder()
        .model(model.openai_model("m"))
        .a2a_reference(remote_reference(&url, "remote-coordinator"))
        .workspace(tempfile::tempdir().expect("tmp").keep())
        .built()
        .await;
    let (outcome, recorder) = common::run_recorded(&agents, "go").await;
    assert_eq!(outcome.status, TaskStatus::Completed, "{outcome:?}");
    let events = recorder.events();

    let coordinator = of(&events, "remote-coordinator");
    let coord_id = coordinator[0].task_id.clone().expect("an id");
    // Its own model's text as it streamed (not repeated by the artifact), its Task call.
    assert_eq!(text(&coordinator), "coordinator: REMOTE-NOTE-5");
    assert!(
        coordinator
            .iter()
            .any(|e| matches!(&e.kind, ProgressKind::ToolCall { name, .. } if name == "Task"))
    );
    // Its leaf, in the served process, placed under it.
    let leaf = of(&events, "leaf");
    assert!(!leaf.is_empty(), "{events:#?}");
    for e in &leaf {
        assert_eq!(e.depth, 2, "{e:?}");
        assert_eq!(e.parent_task_id.as_ref(), Some(&coord_id), "{e:?}");
        assert!(
            e.task_id
                .as_deref()
                .is_some_and(|t| t.starts_with(&format!("{coord_id}/"))),
            "{e:?}"
        );
    }
    assert_eq!(text(&leaf), "readingREMOTE-NOTE-5");
    assert!(leaf.iter().any(|e| matches!(&e.kind,
        ProgressKind::ToolResult { name, preview, .. }
            if name == "Read" && preview.contains("REMOTE-NOTE-5"))));
    assert!(
        leaf.iter()
            .any(|e| matches!(e.kind, ProgressKind::Finished { .. }))
    );
}
