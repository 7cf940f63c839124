//! A real local model end to end (ignored by default; CI runs it in a gating step of its own).
//!
//! `.ci/run` sets the model up with the shared `realmodel/setup.sh` (Qwen2.5-Coder-1.5B-Instruct,
//! Q4_K_M, served by llama.cpp's `llama-server` on 127.0.0.1) and passes its spec in
//! `SUBAGENTS_REAL_MODEL`; when the setup failed it passes the reason in
//! `SUBAGENTS_REAL_MODEL_SKIP` instead, and the test prints `SKIPPED: <reason>`. By hand:
//!
//! ```sh
//! SUBAGENTS_REAL_MODEL=openai-compatible:qwen2.5-coder-1.5b-instruct@http://127.0.0.1:8080/v1 \
//!   cargo test -p subagents-cli --test it -- real_model:: --ignored --nocapture
//! ```

use crate::common;

use std::time::Duration;

use common::{subagents, write_agent};
use serde_json::Value;

/// The spec of the real model, or why there is none (printed as SKIPPED). It samples at
/// temperature 0 (`?temperature=0`) unless the spec says otherwise: the server's default (0.8
/// for llama.cpp) made the 1.5B model answer in prose instead of delegating now and then.
fn real_model() -> Result<String, String> {
    match std::env::var("SUBAGENTS_REAL_MODEL") {
        Ok(spec) if spec.contains('?') => Ok(spec),
        Ok(spec) if !spec.trim().is_empty() => Ok(format!("{}?temperature=0", spec.trim())),
        _ => Err(std::env::var("SUBAGENTS_REAL_MODEL_SKIP").unwrap_or_else(|_| {
            "SUBAGENTS_REAL_MODEL is not set (.ci/run sets it after the shared realmodel/setup.sh \
             started the server)"
                .to_string()
        })),
    }
}

/// One attempt's bound: generous for two free cores (a turn of the lean main agent, about
/// 1,000 prompt tokens, takes some 20 s there), but bounded.
const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(300);

/// At temperature 0 the model's choices repeat, but not every token of a long prompt does on a
/// CPU under load (batching changes the sums a little): the run is tried at most this many
/// times and passes when one attempt delegates and answers.
const ATTEMPTS: usize = 2;

/// A workspace whose `notes.txt` says `notes`, and the agents directory (in it) of `reader`,
/// which reads a file with `Read` and replies with its text.
fn reader_workspace(notes: &str) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().expect("tmp");
    std::fs::write(dir.path().join("notes.txt"), notes).expect("notes");
    let agents = write_agent(
        dir.path(),
        "reader",
        "---\nname: reader\ndescription: Reads a file of the workspace and reports what it says.\n\
         tools: Read\n---\nYou read files. Call the Read tool once with the file's path, then reply \
         with the file's text.\n",
    );
    (dir, agents)
}

/// `subagents run` (with `format`: `--json` or `--output-format F`) on the real model `spec`,
/// lean (`--main-tools Task`), asking for the meeting room code in `dir`'s notes through the
/// `reader` in `agents`; bounded by [`ATTEMPT_TIMEOUT`].
fn ask_the_reader(
    spec: &str,
    dir: &std::path::Path,
    agents: &std::path::Path,
    format: &[&str],
) -> std::process::Output {
    subagents()
        .args(["--store", "memory", "run"])
        .arg("Use the reader agent to read notes.txt, then tell me the meeting room code.")
        .args(format)
        .args(["--main-tools", "Task", "--max-turns", "6"])
        .args(["--model", spec])
        .arg("--agents")
        .arg(agents)
        .arg("--workspace")
        .arg(dir)
        .current_dir(dir)
        .timeout(ATTEMPT_TIMEOUT)
        .output()
        .expect("the command runs")
}

/// The main agent (lean: only `Task`) delegates to a Markdown agent that reads a file of the
/// workspace with `Read`, and the answer carries what the file says.
#[test]
#[ignore = "needs the real local model: .ci/run sets it up (SUBAGENTS_REAL_MODEL)"]
fn a_real_model_delegates_to_an_agent_that_reads_a_file() {
    let spec = match real_model() {
        Ok(spec) => spec,
        Err(why) => {
            println!("SKIPPED: a_real_model_delegates_to_an_agent_that_reads_a_file: {why}");
            return;
        }
    };
    let (dir, agents) = reader_workspace("Meeting notes.\nThe meeting room code is 4417.\n");
    let mut failures = Vec::new();
    for attempt in 1..=ATTEMPTS {
        let out = ask_the_reader(&spec, dir.path(), &agents, &["--json"]);
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        let v: Value = serde_json::from_str(&stdout).unwrap_or(Value::Null);
        let text = v["text"].as_str().unwrap_or_default();
        let reader = v["usage"]["children"]
            .as_array()
            .and_then(|c| c.iter().find(|c| c["agent"] == "reader"))
            .cloned()
            .unwrap_or(Value::Null);
        let ok = out.status.success()
            && v["status"] == "completed"
            && text.contains("4417")
            && reader["status"] == "completed"
            // The reader took a turn after its Read call.
            && reader["usage"]["turns"].as_u64().unwrap_or(0) >= 2;
        println!(
            "attempt {attempt}: exit {:?}, status {}, reader {}, answer {text:?}",
            out.status.code(),
            v["status"],
            reader["status"]
        );
        if ok {
            return;
        }
        let n = stderr.chars().count();
        let tail: String = stderr.chars().skip(n.saturating_sub(3000)).collect();
        failures.push(format!(
            "attempt {attempt}: exit {:?}\nstdout: {stdout}\nstderr (its end): {tail}",
            out.status.code(),
        ));
    }
    panic!(
        "the real model did not delegate and answer in {ATTEMPTS} attempts:\n{}",
        failures.join("\n---\n")
    );
}

/// The slots of the real model's server (llama.cpp's `GET /props`, `total_slots`), or why it
/// says none.
fn total_slots(spec: &str) -> Result<u64, String> {
    let url = spec
        .split_once('@')
        .map(|(_, url)| url.split('?').next().unwrap_or(url))
        .ok_or_else(|| format!("`{spec}` names no server"))?;
    let root = url.trim_end_matches('/').trim_end_matches("/v1");
    common::rt().block_on(async {
        let props: Value = reqwest::Client::new()
            .get(format!("{root}/props"))
            .timeout(Duration::from_secs(5))
            .send()
            .await
            .map_err(|e| format!("{root}/props: {e}"))?
            .json()
            .await
            .map_err(|e| format!("{root}/props: {e}"))?;
        props["total_slots"]
            .as_u64()
            .ok_or_else(|| format!("{root}/props gives no total_slots"))
    })
}

/// On a llama.cpp server with two slots (`-np 2`), the main agent keeps its slot while the
/// agent it delegated to works in the other one: its turn after the child's reads at least 90%
/// of its previous prompt from the slot's cache (llama.cpp's own timings, read back as
/// `cache_read_tokens`). With one slot the child evicts it: skipped, saying so.
#[test]
#[ignore = "needs the real local model served with -np 2 (SUBAGENTS_REAL_MODEL)"]
fn a_callers_prompt_survives_its_child_on_a_server_with_two_slots() {
    let name = "a_callers_prompt_survives_its_child_on_a_server_with_two_slots";
    let spec = match real_model() {
        Ok(spec) => spec,
        Err(why) => {
            println!("SKIPPED: {name}: {why}");
            return;
        }
    };
    match total_slots(&spec) {
        Ok(n) if n >= 2 => {}
        Ok(n) => {
            println!(
                "SKIPPED: {name}: the server has {n} slot (start llama-server with -np 2 -c 16384)"
            );
            return;
        }
        Err(why) => {
            println!("SKIPPED: {name}: {why}");
            return;
        }
    }
    let (dir, agents) = reader_workspace("The meeting room code is 4417.\n");
    let out = ask_the_reader(
        &spec,
        dir.path(),
        &agents,
        &["--output-format", "stream-json"],
    );
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    // The main agent's usage after each of its turns (cumulative).
    let main: Vec<Value> = stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|l| l["event"] == "usage" && l["depth"] == 0)
        .map(|l| l["usage"].clone())
        .collect();
    let delegated = stdout.contains("\"agent\":\"reader\"");
    assert!(
        delegated && main.len() >= 2,
        "the model did not delegate and answer: {stdout}"
    );
    // Its first turn's prompt (all evaluated: a fresh slot), and what its second turn, after
    // the child's, read from the slot's cache: that prefix, whole.
    let n = |u: &Value, k: &str| u[k].as_u64().unwrap_or(0);
    let (first, second) = (&main[0], &main[1]);
    let prefix = n(first, "input_tokens") + n(first, "cache_read_tokens");
    let read = n(second, "cache_read_tokens") - n(first, "cache_read_tokens");
    let prompt = read + n(second, "input_tokens") - n(first, "input_tokens");
    let share = read as f64 / prefix as f64;
    println!(
        "the main agent's turn after its child reused {read} tokens: {share:.3} of its previous \
         prompt ({prefix}), {:.3} of its own ({prompt})",
        read as f64 / prompt as f64
    );
    assert!(share >= 0.9, "{share:.3}: {stdout}");
}
