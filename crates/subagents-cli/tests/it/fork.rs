//! Forks through the `subagents run` binary, over real HTTP with the scripted model server
//! imitating a provider's prompt cache: main → fork → fork of the fork.

use crate::common;
use common::OutputOk;

use subagent_testkit::{RecordedRequest, Reply, prompt_tokens};

/// The prompt tokens of `req` a later request repeating it whole reads from cache.
fn tokens_of(req: &RecordedRequest) -> u64 {
    req.prompt_segments()
        .iter()
        .skip(1) // the model names the cache; it is no prompt text
        .map(|s| prompt_tokens(s))
        .sum()
}

#[test]
fn run_forks_twice_deep_with_byte_identical_prefixes_read_from_cache() {
    let (_rt, server) = common::scripted();
    server.set_prompt_cache(true);
    server.push(Reply::task_call("fork", "TASK-A: sum the numbers"));
    server.push(Reply::task_call("fork", "TASK-B: check the sum"));
    server.push(Reply::text("B-DONE"));
    server.push(Reply::text("A-DONE after B-DONE"));
    server.push(Reply::text("Final: A-DONE"));
    let v = common::team_run(&server, "What is the sum?", &["--json"]).json_ok();
    assert_eq!(v["status"], "completed", "{v}");
    assert_eq!(v["text"], "Final: A-DONE", "{v}");

    let reqs = server.requests();
    assert_eq!(reqs.len(), 5);
    for (caller, fork) in [(0, 1), (1, 2)] {
        let before = reqs[caller].prompt_segments();
        let after = reqs[fork].prompt_segments();
        assert_eq!(
            &after[..before.len()],
            &before[..],
            "request {fork} (a fork's first) starts with request {caller} byte for byte"
        );
        assert_eq!(after.len(), before.len() + 3, "reply, placeholder, task");
    }
    // Only the fork's answer reaches its caller.
    let results = reqs[3].tool_results().join("\n");
    assert!(results.contains("B-DONE"), "{results}");
    assert!(!reqs[4].body.to_string().contains("TASK-B"));

    // The usage tree: main → fork → fork, each fork's first request read from cache.
    let fork = &v["usage"]["children"][0];
    assert_eq!(fork["agent"], "fork", "{v}");
    assert_eq!(fork["kind"], "FORK", "{v}");
    assert!(
        fork["usage"]["cache_read_tokens"].as_u64() >= Some(tokens_of(&reqs[0])),
        "{v}"
    );
    let inner = &fork["children"][0];
    assert_eq!(inner["agent"], "fork", "{v}");
    assert_eq!(inner["usage"]["turns"], 1, "{v}");
    assert_eq!(
        inner["usage"]["cache_read_tokens"].as_u64(),
        Some(tokens_of(&reqs[1])),
        "{v}"
    );
    assert!(tokens_of(&reqs[1]) > 0);
}
