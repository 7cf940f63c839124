//! Long runs compact and stalls end, through `subagents run`, nested two deep (main →
//! coordinator → worker), over real HTTP with the scripted model server.

use crate::common;

use std::path::Path;

use common::subagents_in;
use serde_json::json;
use subagent_testkit::{ReadingTeam, Reply};

const COORDINATOR: &str = "---\nname: coordinator\ndescription: Delegates the work.\ntools: Task\n---\nYou are the coordinator. Delegate to the worker with the Task tool.\n";

fn worker(tools: &str, max_turns: u32) -> String {
    format!(
        "---\nname: worker\ndescription: Does the work.\ntools: {tools}\nmaxTurns: {max_turns}\n---\nYou are the worker. Read what you are told to.\n"
    )
}

fn write_agents(home: &Path, worker_text: &str) -> std::path::PathBuf {
    let dir = home.join("agents");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("coordinator.md"), COORDINATOR).unwrap();
    std::fs::write(dir.join("worker.md"), worker_text).unwrap();
    dir
}

#[test]
fn a_hundred_turn_worker_with_large_outputs_stays_within_a_small_window() {
    const WINDOW: u64 = 12_000;
    const READS: u32 = 100;
    let (_rt, server) = common::scripted();
    server.set_context_window(Some(WINDOW));
    let team = ReadingTeam::new("worker", READS);
    team.script(&server, 400);
    let home = tempfile::tempdir().unwrap();
    let line = format!("{}\n", "x".repeat(59));
    std::fs::write(home.path().join("big.txt"), line.repeat(100)).unwrap();
    let agents = write_agents(home.path(), &worker("Read", 110));
    let model = server.openai_model("windowed");
    let out = subagents_in(home.path())
        .args([
            "run",
            "Have big.txt read a hundred times.",
            "--model",
            &model,
        ])
        .args(["--context-window", &WINDOW.to_string(), "--agents"])
        .arg(&agents)
        .timeout(std::time::Duration::from_secs(300))
        .assert();
    let (stdout, stderr) = succeeded(&out);
    assert!(stdout.contains("LEAF-DONE"), "{stdout}");
    assert_eq!(team.leaf_turns(), READS + 1);
    // No request exceeded the window (the server refuses one that does, and counts).
    assert!(
        server.max_prompt_tokens() <= WINDOW,
        "largest request: {} tokens",
        server.max_prompt_tokens()
    );
    assert!(team.summaries() > 0, "older turns were summarised");
    assert!(
        stderr.contains("worker: compacted: ~"),
        "the progress lines say so:\n{stderr}"
    );
}

#[test]
fn a_stalled_worker_ends_limit_reached_and_its_coordinator_goes_on() {
    let (_rt, server) = common::scripted();
    server.push(Reply::task_call("coordinator", "get it done"));
    server.push(Reply::task_call("worker", "read small.txt"));
    server.push(Reply::text_and_tool_calls(
        "WORKER-PARTIAL: reading small.txt",
        vec![("Read", json!({"file_path": "small.txt"}))],
    ));
    // The worker's second model call never answers.
    server.push(Reply::text("never sent").with_hang_after(0));
    server.push(Reply::text(
        "the worker stalled; its partial answer will do",
    ));
    server.push(Reply::text("FINAL: partial"));
    let home = tempfile::tempdir().unwrap();
    std::fs::write(home.path().join("small.txt"), "a small file\n").unwrap();
    let agents = write_agents(home.path(), &worker("Read", 10));
    let model = server.openai_model("stalling");
    let out = subagents_in(home.path())
        .args(["run", "Get it done.", "--model", &model])
        .args(["--stall-timeout", "1", "--agents"])
        .arg(&agents)
        .timeout(std::time::Duration::from_secs(120))
        .assert();
    let (stdout, stderr) = succeeded(&out);
    assert!(stdout.contains("FINAL: partial"), "{stdout}");
    let reqs = server.requests();
    assert_eq!(reqs.len(), 6);
    let told = reqs[4].tool_results().join("\n");
    assert!(
        told.contains(
            "stopped at a limit (stalled: no progress for 1 s in the model call (turn 2))"
        ),
        "{told}"
    );
    assert!(
        told.contains("WORKER-PARTIAL"),
        "the partial answer is kept: {told}"
    );
    assert!(
        stderr.contains("worker: finished limit_reached"),
        "{stderr}"
    );
}

/// The stdout and stderr of a run that succeeded (both shown when it did not).
fn succeeded(out: &assert_cmd::assert::Assert) -> (String, String) {
    let o = out.get_output();
    let stdout = String::from_utf8_lossy(&o.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "stdout:\n{stdout}\nstderr:\n{stderr}");
    (stdout, stderr)
}
