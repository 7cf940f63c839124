//! Prompt caching on Anthropic through the `subagents run` binary, over real HTTP, billed by
//! the scripted model server's imitation of Anthropic's published cache rules (breakpoints,
//! 1,024-token minimum, 20-block lookback; reads 0.1x, writes 1.25x): a 9-turn tool loop, a
//! fork, two sibling forks and a typed fork.

use std::path::Path;

use crate::common;
use common::OutputOk;

use common::{rt, subagents_in};
use serde_json::{Value, json};
use subagent_testkit::{CacheBill, RecordedRequest, Reply, ScriptedModelServer};

/// The model every run here uses (priced in the built-in table, cache rates included).
const MODEL: &str = "anthropic:claude-sonnet-4-5";

/// Writes `n` files `f1.txt`.. of 4 KiB of text each into `dir`.
fn write_files(dir: &Path, n: usize) {
    for i in 1..=n {
        let line = format!("file {i}: the quick brown fox jumps over the lazy dog, again.\n");
        let text: String = line.repeat(4096 / line.len() + 1)[..4096].to_string();
        std::fs::write(dir.join(format!("f{i}.txt")), text).expect("write file");
    }
}

/// A scripted model server that caches prompts, and a home holding `n` files.
fn caching_server_and_files(
    n: usize,
) -> (
    tokio::runtime::Runtime,
    ScriptedModelServer,
    tempfile::TempDir,
) {
    let (rt, server, home) = common::scripted_in_temp();
    server.set_prompt_cache(true);
    write_files(home.path(), n);
    (rt, server, home)
}

/// The model reads `f1.txt` and answers "A fox."; `run "What is in f1.txt?"` on the
/// Anthropic model `MODEL` at `server`, not started yet.
fn ask_about_f1(server: &ScriptedModelServer, home: &Path) -> assert_cmd::Command {
    server.push(read(1));
    server.push(Reply::text("A fox."));
    let mut cmd = subagents_in(home);
    cmd.env("ANTHROPIC_BASE_URL", server.base_url())
        .env("ANTHROPIC_API_KEY", "test-key")
        .args(["run", "What is in f1.txt?", "--model", MODEL]);
    cmd
}

/// A Read call of `f{i}.txt`.
fn read(i: usize) -> Reply {
    Reply::tool_calls(vec![("Read", json!({"file_path": format!("f{i}.txt")}))])
}

/// `subagents run PROMPT --json --model MODEL ARGS` in `home`, on the scripted server's
/// Anthropic endpoint.
fn run_json(home: &Path, server: &ScriptedModelServer, prompt: &str, args: &[&str]) -> Value {
    let v = subagents_in(home)
        .env("ANTHROPIC_BASE_URL", server.base_url())
        .env("ANTHROPIC_API_KEY", "test-key")
        .args(["run", prompt, "--json", "--model"])
        .args(args)
        .json_ok();
    assert_eq!(v["status"], "completed", "{v}");
    v
}

/// Billed / plain input over `bills`: what the prompts cost with the cache, in uncached input
/// tokens, over what they would cost without.
fn billed_ratio(bills: &[CacheBill]) -> f64 {
    let billed: f64 = bills.iter().map(CacheBill::billed_tokens).sum();
    let plain: u64 = bills.iter().map(|b| b.prompt_tokens).sum();
    billed / plain as f64
}

/// Every request's bill (the server saw them all).
fn bills(server: &ScriptedModelServer) -> Vec<CacheBill> {
    server
        .cache_bills()
        .into_iter()
        .map(|b| b.expect("every request was billed"))
        .collect()
}

/// The share of request `i`'s prompt read from cache.
fn read_share(bills: &[CacheBill], i: usize) -> f64 {
    bills[i].cache_read_tokens as f64 / bills[i].prompt_tokens as f64
}

/// The index of the first request whose last message holds `text`.
fn first_with_last_message(reqs: &[RecordedRequest], text: &str) -> usize {
    reqs.iter()
        .position(|r| {
            r.messages()
                .last()
                .is_some_and(|m| m["content"].to_string().contains(text))
        })
        .unwrap_or_else(|| panic!("no request ends with {text:?}"))
}

/// How many `cache_control` breakpoints a request carries.
fn breakpoints(req: &RecordedRequest) -> usize {
    req.raw_body.matches("\"cache_control\"").count()
}

#[test]
fn a_nine_turn_tool_loop_is_billed_a_third_of_its_plain_input_and_nothing_without_the_cache() {
    let rt = rt();
    let mut ratios = Vec::new();
    for spec in [MODEL.to_string(), format!("{MODEL}?cache=off")] {
        let server = rt.block_on(ScriptedModelServer::start());
        server.set_prompt_cache(true);
        for i in 1..=8 {
            server.push(read(i));
        }
        server.push(Reply::text("The eight files are about a fox."));
        let home = tempfile::tempdir().expect("home");
        write_files(home.path(), 8);
        let v = run_json(
            home.path(),
            &server,
            "Read f1.txt to f8.txt one by one, then summarise them.",
            &[&spec],
        );
        let reqs = server.requests();
        assert_eq!(reqs.len(), 9, "nine turns");
        let bills = bills(&server);
        let ratio = billed_ratio(&bills);
        println!("{spec}: billed / plain input over 9 turns = {ratio:.3} ({bills:?})");
        ratios.push(ratio);
        if spec == MODEL {
            // Tools + system, then the rolling breakpoints: at most 4, nothing time-varying.
            assert!(reqs.iter().all(|r| (2..=4).contains(&breakpoints(r))));
            // Each turn after the first reads all of the turn before it.
            for i in 1..9 {
                assert_eq!(
                    bills[i].cache_read_tokens,
                    bills[i - 1].prompt_tokens,
                    "turn {} reads turn {}'s prompt",
                    i + 1,
                    i
                );
                assert_eq!(bills[i].uncached_tokens(), 0, "turn {}", i + 1);
            }
            // The usage, the cost and what the cache saved, per node and in all.
            let usage = &v["usage"]["usage"];
            let read: u64 = bills.iter().map(|b| b.cache_read_tokens).sum();
            let written: u64 = bills.iter().map(|b| b.cache_creation_tokens).sum();
            assert_eq!(usage["cache_read_tokens"].as_u64(), Some(read), "{v}");
            assert_eq!(
                usage["cache_creation_tokens"].as_u64(),
                Some(written),
                "{v}"
            );
            assert_eq!(usage["input_tokens"].as_u64(), Some(written), "{v}");
            let cost = v["cost_usd"].as_f64().expect("priced");
            let saved = v["cache_saved_usd"].as_f64().expect("cache saved");
            assert!(saved > 0.0 && saved > cost, "{v}");
            assert_eq!(usage["cache_saved_usd"].as_f64(), Some(saved), "{v}");
        } else {
            assert!(reqs.iter().all(|r| breakpoints(r) == 0));
            assert!(v.get("cache_saved_usd").is_none(), "{v}");
        }
    }
    assert!(ratios[0] <= 0.35, "with the cache: {:.3}", ratios[0]);
    assert!((ratios[1] - 1.0).abs() < 1e-9, "without: {:.3}", ratios[1]);
}

#[test]
fn forks_and_sibling_forks_read_their_callers_prompt_from_cache_byte_for_byte() {
    let (_rt, server, home) = caching_server_and_files(2);
    server.push(read(1));
    server.push(read(2));
    server.push(Reply::task_call(
        "fork",
        "TASK-A: count the words of f1.txt",
    ));
    server.push(Reply::text("A-DONE"));
    // Two sibling forks started by one reply.
    server.push(common::task_calls(&[
        ("b", "TASK-B: check f2.txt", "fork"),
        ("c", "TASK-C: check f1.txt", "fork"),
    ]));
    server.push(Reply::text("SIBLING-DONE"));
    server.push(Reply::text("SIBLING-DONE"));
    server.push(Reply::text("Final: A-DONE, SIBLING-DONE"));
    let v = run_json(
        home.path(),
        &server,
        "Read f1.txt and f2.txt, then fork the checks.",
        &[MODEL],
    );
    assert_eq!(v["text"], "Final: A-DONE, SIBLING-DONE", "{v}");
    let reqs = server.requests();
    assert_eq!(reqs.len(), 8, "{reqs:#?}");
    let bills = bills(&server);
    for (task, caller) in [("TASK-A", 2), ("TASK-B", 4), ("TASK-C", 4)] {
        let fork = first_with_last_message(&reqs, task);
        let share = read_share(&bills, fork);
        println!("{task}: the fork's first request reads {share:.3} of its prompt from cache");
        assert!(share >= 0.9, "{task}: {share:.3} ({:?})", bills[fork]);
        // Its first request is its caller's last one, byte for byte (breakpoints included),
        // then what the fork adds: at most four breakpoints in all.
        let (before, after) = (&reqs[caller].body, &reqs[fork].body);
        assert_eq!(before["system"], after["system"], "{task}");
        assert_eq!(before["tools"], after["tools"], "{task}");
        let n = before["messages"].as_array().expect("messages").len();
        assert_eq!(
            before["messages"].as_array().expect("messages")[..],
            after["messages"].as_array().expect("messages")[..n],
            "{task}"
        );
        assert!(breakpoints(&reqs[fork]) <= 4, "{task}");
    }
    // The caller's next turn reads its own prefix again.
    let after_fork = first_with_last_message(&reqs, "A-DONE");
    assert!(
        read_share(&bills, after_fork) >= 0.9,
        "{:?}",
        bills[after_fork]
    );
}

#[test]
fn a_typed_fork_keeps_its_callers_tools_and_reads_its_prompt_from_cache() {
    let (_rt, server, home) = caching_server_and_files(1);
    let schema = json!({
        "type": "object",
        "properties": {"lines": {"type": "integer"}},
        "required": ["lines"]
    });
    server.push(read(1));
    server.push(Reply::tool_calls(vec![(
        "Task",
        json!({"description": "count", "prompt": "TASK-T: count the lines of f1.txt",
               "subagent_type": "fork", "output_schema": schema}),
    )]));
    server.push(Reply::text("{\"lines\": 66}"));
    server.push(Reply::text("66 lines."));
    let v = run_json(home.path(), &server, "How many lines has f1.txt?", &[MODEL]);
    assert_eq!(v["text"], "66 lines.", "{v}");
    let reqs = server.requests();
    assert_eq!(reqs.len(), 4);
    let fork = first_with_last_message(&reqs, "TASK-T");
    let bills = bills(&server);
    let share = read_share(&bills, fork);
    println!("the typed fork's first request reads {share:.3} of its prompt from cache");
    assert!(share >= 0.85, "{share:.3} ({:?})", bills[fork]);
    // No tool of its own and the caller's system prompt: the schema is in its task.
    assert_eq!(reqs[fork].body["tools"], reqs[1].body["tools"]);
    assert_eq!(reqs[fork].body["system"], reqs[1].body["system"]);
    assert!(
        reqs[3].raw_body.contains(r#"{\"lines\":66}"#),
        "the caller got the fork's value: {}",
        reqs[3].raw_body
    );
    let task = reqs[fork].messages().last().expect("task").to_string();
    common::assert_has(&task, &["JSON Schema", "\\\"lines\\\""]);
}

#[test]
fn the_done_line_shows_what_the_cache_read_wrote_and_saved() {
    let (_rt, server, home) = caching_server_and_files(1);
    let out = ask_about_f1(&server, home.path()).assert().success();
    let stderr = String::from_utf8_lossy(&out.get_output().stderr).to_string();
    let done = stderr.lines().last().unwrap_or_default();
    assert!(
        done.starts_with("done · ")
            && done.contains(" read / ")
            && done.contains(" written")
            && done.contains("(cache saved $"),
        "{stderr}"
    );

    // stream-json: the usage events carry the cache counts, the result line the savings.
    let out = ask_about_f1(&server, home.path())
        .args(["--output-format", "stream-json"])
        .assert()
        .success();
    let lines = common::json_lines(&common::stdout_of(out));
    let usage = lines
        .iter()
        .rfind(|l| l["event"] == "usage")
        .expect("usage events");
    assert!(
        usage["usage"]["cache_read_tokens"].as_u64() > Some(0),
        "{usage}"
    );
    let result = lines.last().expect("result");
    assert_eq!(result["type"], "result");
    assert!(result["cache_saved_usd"].as_f64() > Some(0.0), "{result}");
    assert!(
        result["usage"]["usage"]["cache_saved_usd"].as_f64() > Some(0.0),
        "{result}"
    );
}
