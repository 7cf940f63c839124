//! Long runs compact and stalls end, through the facade's builder (`context_window`,
//! `stall_timeout`), nested two deep (main → coordinator → leaf of `tests/fixtures/team`), over
//! real HTTP with the scripted model server.

use crate::common;
use crate::common::Built as _;

use std::time::Duration;

use subagent_testkit::{ReadingTeam, Reply, ScriptedModelServer};
use subagents::TaskStatus;
use subagents::spi::ProgressKind;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leaf_reading_large_files_stays_within_the_builders_window() {
    const WINDOW: u64 = 12_000;
    const READS: u32 = 25;
    let server = ScriptedModelServer::start().await;
    server.set_context_window(Some(WINDOW));
    let team = ReadingTeam::new("leaf", READS);
    team.script(&server, 100);
    let (outcome, recorder) =
        common::run_windowed_team(&server, "windowed", WINDOW, "Have big.txt read.").await;
    assert!(outcome.text.contains("LEAF-DONE"), "{}", outcome.text);
    assert_eq!(team.leaf_turns(), READS + 1);
    assert!(
        server.max_prompt_tokens() <= WINDOW,
        "largest request: {} tokens",
        server.max_prompt_tokens()
    );
    let compacted: Vec<_> = recorder
        .events()
        .into_iter()
        .filter(|e| matches!(e.kind, ProgressKind::Compacted { .. }))
        .collect();
    assert!(!compacted.is_empty());
    assert!(compacted.iter().all(|e| e.agent == "leaf" && e.depth == 2));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_leaf_ends_limit_reached_and_the_coordinator_goes_on() {
    let server = ScriptedModelServer::start().await;
    common::push_chain(
        &server,
        ["find the answer", "look it up"],
        [
            Reply::text("never sent").with_hang_after(0),
            Reply::text("the leaf stalled; going on without it"),
            Reply::text("FINAL: without the leaf"),
        ],
    );
    let agents = common::team_builder_on(&server, "stalling")
        .stall_timeout(Some(Duration::from_millis(500)))
        .built()
        .await;
    let outcome = agents.main_agent().run("go").await.expect("runs");
    assert_eq!(outcome.status, TaskStatus::Completed, "{}", outcome.text);
    assert_eq!(outcome.text, "FINAL: without the leaf");
    let reqs = server.requests();
    assert_eq!(reqs.len(), 5);
    let told = reqs[3].tool_results().join("\n");
    assert!(
        told.contains(
            "stopped at a limit (stalled: no progress for 0.5 s in the model call (turn 1))"
        ),
        "{told}"
    );
    let leaf = &outcome.children[0].children[0];
    assert_eq!(leaf.agent, "leaf");
    assert_eq!(leaf.status, TaskStatus::LimitReached);
}
