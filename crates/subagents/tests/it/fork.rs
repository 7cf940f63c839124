//! Forks through the facade, over real HTTP with the scripted model server imitating a
//! provider's prompt cache: main → coordinator → fork → fork of the fork, whose own fork is
//! refused at the nesting limit.

use crate::common;
use crate::common::Built as _;

use subagent_testkit::{ProgressRecorder, RecordedRequest, Reply, ScriptedModelServer};
use subagents::{ProgressKind, TaskStatus};

fn fork_call(prompt: &str) -> Reply {
    Reply::task_call("fork", prompt)
}

/// The prompt tokens the cache serves to a request that repeats `earlier` whole: every segment
/// but the model's.
/// Asserts that the tool results `req` carries say `needle` (`why` names the case).
fn assert_results_have(req: &RecordedRequest, needle: &str, why: &str) {
    let results = req.tool_results().join("\n");
    assert!(results.contains(needle), "{why}: {results}");
}

fn tokens_of(earlier: &RecordedRequest) -> u64 {
    earlier
        .prompt_segments()
        .iter()
        .skip(1)
        .map(|s| subagent_testkit::prompt_tokens(s))
        .sum()
}

/// The cache-read tokens of the first turn of the run at `depth` named `agent`.
fn first_turn_cache_read(recorder: &ProgressRecorder, agent: &str, depth: u32) -> u64 {
    recorder
        .events()
        .into_iter()
        .find_map(|e| match e.kind {
            ProgressKind::Usage { usage } if e.agent == agent && e.depth == depth => {
                Some(usage.cache_read_tokens)
            }
            _ => None,
        })
        .unwrap_or_else(|| panic!("no usage event of {agent} at depth {depth}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fork_repeats_its_callers_request_byte_for_byte_and_reads_it_from_cache() {
    let server = ScriptedModelServer::start().await;
    server.set_prompt_cache(true);
    server.push(Reply::task_call("coordinator", "find the answer"));
    server.push(fork_call("TASK-A: look at the numbers"));
    server.push(fork_call("TASK-B: check the sum"));
    server.push(fork_call("TASK-C: one level too deep"));
    server.push(Reply::text("B-DONE"));
    server.push(Reply::text("A-DONE after B-DONE"));
    server.push(Reply::text("coordinator: A-DONE"));
    server.push(Reply::text("Final: A-DONE"));
    let agents = common::team_builder_on(&server, "team-model").built().await;
    let (outcome, recorder) = common::run_recorded(&agents, "What is the answer?").await;
    assert_eq!(outcome.status, TaskStatus::Completed, "{}", outcome.text);
    assert!(outcome.text.contains("A-DONE"), "{}", outcome.text);

    let reqs = server.requests();
    assert_eq!(reqs.len(), 8, "{reqs:#?}");
    // The coordinator (depth 1) forks; its fork (depth 2) forks again (depth 3).
    for (caller, fork, task) in [(1, 2, "TASK-A"), (2, 3, "TASK-B")] {
        let before = reqs[caller].prompt_segments();
        let after = reqs[fork].prompt_segments();
        assert!(before.len() > 3, "{before:?}");
        assert_eq!(
            &after[..before.len()],
            &before[..],
            "the fork's first request starts with its caller's last one, byte for byte \
             (model, tools, system, messages)"
        );
        // Then: the caller's reply with the call, a placeholder result, the fork's task.
        let rest = &after[before.len()..];
        assert_eq!(rest.len(), 3, "{rest:?}");
        assert!(rest[0].contains("\"tool_calls\"") && rest[0].contains("fork"));
        assert!(rest[1].contains("\"role\":\"tool\"") && rest[1].contains("forked here"));
        assert!(rest[2].contains("You are a fork") && rest[2].contains(task));
    }
    // The coordinator's tools (not the main agent's) are the forks' tools, `Task` included.
    assert_eq!(reqs[2].tool_names(), reqs[1].tool_names());
    assert_ne!(reqs[1].tool_names(), reqs[0].tool_names());
    // The fork at depth 3 may not fork again: the nesting limit refuses it.
    assert_results_have(&reqs[4], "max_depth=3", "the nesting limit");

    // The provider served each fork's first request from its cache: all of the caller's.
    assert!(tokens_of(&reqs[1]) > 0);
    assert_eq!(
        first_turn_cache_read(&recorder, "fork", 2),
        tokens_of(&reqs[1])
    );
    assert_eq!(
        first_turn_cache_read(&recorder, "fork", 3),
        tokens_of(&reqs[2])
    );

    // Only final answers come back, and the usage tree has the shape of the delegation.
    assert!(reqs[5].tool_results().join("").contains("B-DONE"));
    assert!(
        !reqs[6].body.to_string().contains("TASK-B"),
        "the fork's own work stays out of the coordinator's conversation"
    );
    let coordinator = &outcome.children[0];
    assert_eq!(coordinator.agent, "coordinator");
    let fork = &coordinator.children[0];
    assert_eq!((fork.agent.as_str(), fork.kind.as_str()), ("fork", "FORK"));
    assert_eq!(fork.usage.turns, 2);
    assert!(fork.usage.cache_read_tokens >= tokens_of(&reqs[1]));
    assert_eq!(fork.children[0].agent, "fork");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fork_cannot_be_resumed_nor_moved_to_another_model() {
    let reqs = common::team_requests(
        [
            Reply::tool_calls(vec![(
                "Task",
                serde_json::json!({"description": "d", "prompt": "p", "subagent_type": "fork",
                                   "resume": "sess_0123"}),
            )]),
            Reply::tool_calls(vec![(
                "Task",
                serde_json::json!({"description": "d", "prompt": "p", "subagent_type": "fork",
                                   "model": "other"}),
            )]),
            Reply::text("done"),
        ],
        |b| b,
    )
    .await;
    assert_eq!(reqs.len(), 3);
    assert_results_have(&reqs[1], "a fork cannot be resumed", "resumed");
    assert_results_have(&reqs[2], "a fork runs on its caller's model", "moved");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_limited_to_named_agents_cannot_fork() {
    let reqs = common::team_requests(
        [
            Reply::task_call("gatekeeper", "go"),
            fork_call("copy me"),
            Reply::text("gatekeeper done"),
            Reply::text("main done"),
        ],
        |b| b,
    )
    .await;
    assert_eq!(reqs.len(), 4);
    assert_results_have(
        &reqs[2],
        "may delegate only to: leaf",
        "`Agent(leaf)` names no fork",
    );
}

/// A coordinator whose requests were compacted forks: the fork's first request repeats the
/// caller's last request as it was sent (compacted), so the provider's cache serves all of it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fork_after_a_compaction_repeats_the_compacted_request_and_reads_it_from_cache() {
    const WINDOW: u64 = 12_000;
    const TRIMMED: &str = "[tool output trimmed to save context:";
    let server = ScriptedModelServer::start().await;
    server.set_prompt_cache(true);
    server.set_context_window(Some(WINDOW));
    let responder = |body: &serde_json::Value| {
        let text = body.to_string();
        let system = body["messages"][0]["content"].as_str().unwrap_or_default();
        let last = body["messages"]
            .as_array()
            .and_then(|m| m.last())
            .map(|m| m["content"].to_string())
            .unwrap_or_default();
        if system.starts_with("You compact") {
            Reply::text("SUMMARY: big.txt was read several times.")
        } else if last.contains("You are a fork") {
            Reply::text("FORK-DONE")
        } else if system.contains("You are the coordinator") {
            if text.contains("FORK-DONE") {
                Reply::text("coordinator: FORK-DONE")
            } else if text.contains(TRIMMED) {
                fork_call("TASK-F: count the lines of big.txt")
            } else {
                // A different part of the file each time (a repeated call would withhold the
                // tools for a turn).
                let reads = text.matches("\"role\":\"tool\"").count();
                Reply::tool_calls(vec![(
                    "Read",
                    serde_json::json!({"file_path": "big.txt", "offset": reads + 1}),
                )])
            }
        } else if text.contains("coordinator: FORK-DONE") {
            Reply::text("FINAL: FORK-DONE")
        } else {
            Reply::task_call("coordinator", "have big.txt read, then fork")
        }
    };
    for _ in 0..40 {
        server.script().push_dynamic(None, responder);
    }
    let (outcome, recorder) =
        common::run_windowed_team(&server, "team-model", WINDOW, "What is the answer?").await;
    assert_eq!(outcome.text, "FINAL: FORK-DONE");
    assert!(
        recorder
            .events()
            .iter()
            .any(|e| e.agent == "coordinator" && matches!(e.kind, ProgressKind::Compacted { .. })),
        "the coordinator compacted"
    );

    let reqs = server.requests();
    let fork = reqs
        .iter()
        .position(|r| common::last_message(&r.body).contains("You are a fork"))
        .expect("a fork ran");
    let caller = &reqs[fork - 1];
    assert!(
        caller.raw_body.contains(TRIMMED),
        "the request that forked was compacted"
    );
    let before = caller.prompt_segments();
    let after = reqs[fork].prompt_segments();
    let differs = before
        .iter()
        .zip(&after)
        .position(|(b, a)| b != a)
        .map(|i| (i, before[i].len(), after[i].len()));
    assert_eq!(
        differs, None,
        "the fork's first request starts with its caller's last (compacted) one, byte for byte \
         (first differing segment, its length in the caller's and in the fork's request)"
    );
    assert_eq!(after.len(), before.len() + 3);
    assert_eq!(
        first_turn_cache_read(&recorder, "fork", 2),
        tokens_of(caller),
        "the cache serves the caller's whole prompt to the fork"
    );
}
