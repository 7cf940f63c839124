//! Nested delegation through the facade, over real HTTP with the scripted model server:
//! main → coordinator (its file lists `Task`) → leaf, and the rules that decide who is offered
//! `Task`.

use crate::common;
use crate::common::Built as _;

use subagent_testkit::{RecordedRequest, Reply, ScriptedModelServer};
use subagents::{Subagents, SubagentsBuilder, TaskStatus};

fn offers_task(req: &RecordedRequest) -> bool {
    req.tool_names().iter().any(|n| n == "Task")
}

/// The team's requests (its builder `tune`d) when the main agent delegates `(agent, prompt)`
/// once, the child answers `answer` and the main agent `done`.
async fn one_delegation(
    (agent, prompt): (&str, &str),
    answer: &str,
    tune: impl FnOnce(SubagentsBuilder) -> SubagentsBuilder,
) -> Vec<RecordedRequest> {
    common::team_requests(
        [
            Reply::task_call(agent, prompt),
            Reply::text(answer),
            Reply::text("done"),
        ],
        tune,
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn main_coordinator_leaf_and_the_answer_comes_back_up() {
    let server = ScriptedModelServer::start().await;
    common::push_chain(
        &server,
        ["find the answer", "look up the number"],
        [
            Reply::text("LEAF-ANSWER-42").with_usage(7, 3),
            Reply::text("the leaf says LEAF-ANSWER-42"),
            Reply::text("Final: LEAF-ANSWER-42"),
        ],
    );
    let agents = common::team_builder_on(&server, "team-model").built().await;
    let outcome = common::run_main(&agents, "What is the answer?").await;
    assert_eq!(outcome.status, TaskStatus::Completed);
    assert!(outcome.text.contains("LEAF-ANSWER-42"), "{}", outcome.text);

    let reqs = server.requests();
    assert_eq!(reqs.len(), 5);
    assert!(offers_task(&reqs[0]), "main: {:?}", reqs[0].tool_names());
    assert_eq!(
        reqs[1].tool_names(),
        ["Read", "SendMessage", "Task", "TaskOutput", "TaskStop"],
        "the coordinator lists Task and is at depth 1 < 3"
    );
    assert_eq!(
        reqs[2].tool_names(),
        ["Grep", "Read"],
        "the leaf's tools omit Task"
    );
    assert!(
        reqs[3].body.to_string().contains("LEAF-ANSWER-42"),
        "the leaf's answer reaches the coordinator"
    );

    // The usage tree has the shape of the delegation.
    assert_eq!(outcome.children.len(), 1);
    let coordinator = &outcome.children[0];
    assert_eq!(coordinator.agent, "coordinator");
    assert_eq!(coordinator.children.len(), 1);
    assert_eq!(coordinator.children[0].agent, "leaf");
    assert_eq!(coordinator.children[0].usage.input_tokens, 7);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_max_depth_1_the_coordinator_is_not_offered_task() {
    let reqs = one_delegation(
        ("coordinator", "find the answer"),
        "I cannot delegate",
        |b| b.max_depth(1),
    )
    .await;
    assert!(offers_task(&reqs[0]), "the main agent (depth 0) delegates");
    assert_eq!(reqs[1].tool_names(), ["Read"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agent_rules_limit_which_agents_may_be_started() {
    let reqs = common::team_requests(
        [
            Reply::task_call("gatekeeper", "go"),
            Reply::task_call("coordinator", "not allowed"),
            Reply::task_call("leaf", "allowed"),
            Reply::text("leaf here"),
            Reply::text("gatekeeper done"),
            Reply::text("main done"),
        ],
        |b| b,
    )
    .await;
    assert!(offers_task(&reqs[1]), "Agent(leaf) grants Task");
    let refused = reqs[2].body.to_string();
    assert!(
        refused.contains("may delegate only to: leaf"),
        "starting another agent is a tool error the model reads: {refused}"
    );
    assert!(reqs[3].tool_names().iter().all(|n| n != "Task"));
    assert!(reqs[4].body.to_string().contains("leaf here"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn explore_is_never_offered_task() {
    let reqs = one_delegation(("Explore", "look around"), "explored", |b| b).await;
    assert!(!offers_task(&reqs[1]), "{:?}", reqs[1].tool_names());
    assert!(reqs[1].tool_names().contains(&"Read".to_string()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_nests_children_under_their_parent_once_each() {
    use subagents::ProgressKind;
    let server = ScriptedModelServer::start().await;
    common::push_chain(
        &server,
        ["find", "look"],
        [Reply::text("42"), Reply::text("42"), Reply::text("42")],
    );
    let agents = common::team_builder_on(&server, "team-model").built().await;
    let (_, recorder) = common::run_recorded(&agents, "go").await;
    let events = recorder.events();
    let started = recorder.events_where(|k| matches!(k, ProgressKind::Started { .. }));
    let finished = recorder
        .events_where(|k| matches!(k, ProgressKind::Finished { .. }))
        .len();
    let who: Vec<(&str, u32)> = started
        .iter()
        .map(|e| (e.agent.as_str(), e.depth))
        .collect();
    assert_eq!(who, [("main", 0), ("coordinator", 1), ("leaf", 2)]);
    assert_eq!(finished, 3, "each run finishes once: {events:?}");
    assert_eq!(started[1].parent_task_id.as_deref(), Some("main"));
    assert_eq!(started[2].parent_task_id, started[1].task_id);
}

/// With a store, the main agent's session and its children's are written to the database the
/// built `Subagents` shares (`store_db`), so another process can resume them; `memory` opens
/// nothing.
#[cfg(feature = "store")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_keeps_sessions_in_the_shared_database() {
    use subagents::runtime::TranscriptStore;
    use subagents::store::{SqlTranscriptStore, StoreUrl};
    let server = ScriptedModelServer::start().await;
    server
        .script()
        .push_for_model("team-model", Reply::text("stored answer"));
    let dir = tempfile::tempdir().expect("tmp");
    let agents = Subagents::builder()
        .model(server.openai_model("team-model"))
        .workspace(dir.path())
        .store(StoreUrl::Sqlite(dir.path().join("ledger.db")))
        .built()
        .await;
    let out = common::run_main(&agents, "remember this").await;
    let session = out.session_id.expect("a session");
    let db = agents.store_db().expect("an open database").clone();
    let t = SqlTranscriptStore::new(db)
        .try_load(&session)
        .await
        .expect("readable")
        .expect("stored");
    assert_eq!(t.messages.len(), 2, "prompt and answer: {t:?}");
    agents.flush().await.expect("nothing pending fails");

    let memory = Subagents::builder()
        .workspace(dir.path())
        .store(StoreUrl::Memory)
        .built()
        .await;
    assert!(memory.store_db().is_none());
}
