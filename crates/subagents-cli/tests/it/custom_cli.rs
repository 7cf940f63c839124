//! A third-party `subagents` command (issue 29 item 5): `examples/custom_cli.rs`, ten lines over
//! `subagents_cli::Cli` adding the testkit's `FN` kind with one agent (`shout`, which answers
//! its prompt in capitals), runs every subcommand with that kind registered.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::OnceLock;
use std::time::{Duration, Instant, SystemTime};

use assert_cmd::Command;
use common::{CLEARED_VARS, json_stdout, rt, stdout_of, subagents_in};
use serde_json::{Value, json};
use subagent_testkit::{Reply, ScriptedModelServer};

/// The example's name (`examples/custom_cli.rs`).
const EXAMPLE: &str = "custom_cli";

/// The newest modification time of the files under `dir` (recursively; `target` and hidden
/// directories skipped).
fn newest(dir: &Path) -> SystemTime {
    let mut out = SystemTime::UNIX_EPOCH;
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in entries.flatten() {
        let name = e.file_name();
        let name = name.to_string_lossy();
        if name.starts_with('.') || name == "target" {
            continue;
        }
        let Ok(meta) = e.metadata() else { continue };
        let t = if meta.is_dir() {
            newest(&e.path())
        } else {
            meta.modified().unwrap_or(SystemTime::UNIX_EPOCH)
        };
        out = out.max(t);
    }
    out
}

/// The example's executable. `cargo test` builds the package's examples before running its
/// tests, so it is normally there and newer than every source it is built from; otherwise (a
/// filtered run such as `cargo test --test it -- custom_cli::`) it is built here, offline, into the same
/// target directory.
fn custom_cli() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
        let workspace = manifest.join("../..");
        // target/<profile>/deps/custom_cli-HASH -> target/<profile>/examples/custom_cli
        let exe = std::env::current_exe().expect("the test's path");
        let profile_dir = exe
            .parent()
            .and_then(Path::parent)
            .expect("target/<profile>");
        let built = profile_dir
            .join("examples")
            .join(format!("{EXAMPLE}{}", std::env::consts::EXE_SUFFIX));
        // The sources the example is built from: every crate's `src` and manifest, the
        // example, the lock file (not the tests' fixtures, which tests may write).
        let modified = |p: &Path| {
            std::fs::metadata(p)
                .and_then(|m| m.modified())
                .unwrap_or(SystemTime::UNIX_EPOCH)
        };
        let mut sources = modified(&workspace.join("Cargo.lock"))
            .max(modified(&workspace.join("Cargo.toml")))
            .max(newest(&manifest.join("examples")));
        for krate in std::fs::read_dir(workspace.join("crates"))
            .expect("the workspace's crates")
            .flatten()
        {
            sources = sources
                .max(newest(&krate.path().join("src")))
                .max(modified(&krate.path().join("Cargo.toml")));
        }
        let fresh = std::fs::metadata(&built)
            .and_then(|m| m.modified())
            .is_ok_and(|t| t >= sources);
        if fresh {
            return built;
        }
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let mut cmd = std::process::Command::new(cargo);
        cmd.current_dir(&manifest)
            .args(["build", "--offline", "--quiet", "-p", "subagents-cli"])
            .args(["--example", EXAMPLE, "--message-format", "json"])
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        if profile_dir.file_name().is_some_and(|n| n == "release") {
            cmd.arg("--release");
        }
        let mut child = cmd.spawn().expect("cargo starts");
        let stdout = child.stdout.take().expect("cargo's stdout");
        let reader =
            std::thread::spawn(move || std::io::read_to_string(stdout).unwrap_or_default());
        // Bounded: a build that takes longer than this fails the test instead of hanging it.
        let deadline = Instant::now() + Duration::from_secs(1200);
        let status = loop {
            if let Some(status) = child.try_wait().expect("cargo runs") {
                break status;
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                panic!("building the example {EXAMPLE} took over 20 minutes");
            }
            std::thread::sleep(Duration::from_millis(200));
        };
        let messages = reader.join().expect("reader");
        assert!(status.success(), "cargo build --example {EXAMPLE} failed");
        messages
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|m| m["reason"] == "compiler-artifact" && m["target"]["name"] == EXAMPLE)
            .find_map(|m| m["executable"].as_str().map(PathBuf::from))
            .expect("cargo names the example's executable")
    })
}

/// The custom command with the clean environment of the stock one's tests, in `home`.
fn custom_in(home: &Path) -> Command {
    let mut cmd = Command::new(custom_cli());
    for var in CLEARED_VARS {
        cmd.env_remove(var);
    }
    cmd.env("HOME", home)
        .env("SUBAGENTS_OLLAMA_URL", "http://127.0.0.1:9")
        .current_dir(home);
    cmd
}

#[test]
fn agents_list_of_the_custom_command_lists_the_added_kind() {
    let home = tempfile::tempdir().unwrap();
    let report = json_stdout(
        custom_in(home.path())
            .args(["agents", "list", "--json"])
            .assert()
            .success(),
    );
    let loaded = report["loaded"].as_array().expect("loaded");
    let shout = loaded
        .iter()
        .find(|a| a["name"] == "shout")
        .unwrap_or_else(|| panic!("shout listed: {report:#}"));
    assert_eq!(shout["kind"], "FN");
    assert_eq!(shout["description"], "Shouts its prompt");
    assert_eq!(shout["path"], "fn:shout?Shouts its prompt");
    assert!(
        loaded.iter().any(|a| a["name"] == "general-purpose"),
        "the stock agents are still there: {report:#}"
    );
    // The text listing too.
    let text = stdout_of(
        custom_in(home.path())
            .args(["agents", "list"])
            .assert()
            .success(),
    );
    let line = text
        .lines()
        .find(|l| l.starts_with("shout "))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        line.contains("FN") && line.contains("Shouts its prompt"),
        "{line}"
    );
}

#[test]
fn task_of_the_custom_command_runs_the_added_kind() {
    let home = tempfile::tempdir().unwrap();
    // No model anywhere: the FN kind needs none.
    let out = stdout_of(
        custom_in(home.path())
            .args(["--store", "memory", "task", "shout", "hello from a test"])
            .assert()
            .success(),
    );
    assert!(out.contains("HELLO FROM A TEST"), "{out}");
    let outcome = json_stdout(
        custom_in(home.path())
            .args(["--store", "memory", "task", "shout", "json too", "--json"])
            .assert()
            .success(),
    );
    assert_eq!(outcome["status"], "completed", "{outcome:#}");
    assert_eq!(outcome["kind"], "FN", "{outcome:#}");
    assert!(
        outcome["text"]
            .as_str()
            .unwrap_or_default()
            .contains("JSON TOO"),
        "{outcome:#}"
    );
    // The stock command has no such agent: a usage error naming it.
    let stock = subagents_in(home.path())
        .args(["--store", "memory", "task", "shout", "hello"])
        .assert()
        .code(2);
    let err = String::from_utf8_lossy(&stock.get_output().stderr).into_owned();
    assert!(err.contains("unknown agent `shout`"), "{err}");
}

#[test]
fn run_of_the_custom_command_delegates_to_the_added_kind() {
    let rt = rt();
    let server = rt.block_on(ScriptedModelServer::start());
    server.push(Reply::task_call("shout", "delegated words"));
    server.push(Reply::text("the child answered"));
    let home = tempfile::tempdir().unwrap();
    let out = stdout_of(
        custom_in(home.path())
            .args(["--store", "memory", "run", "--model"])
            .arg(server.openai_model("main-model"))
            .arg("ask shout")
            .assert()
            .success(),
    );
    assert!(out.contains("the child answered"), "{out}");
    let requests = server.requests();
    let second = requests.get(1).expect("a second model turn");
    let results = second.tool_results();
    assert!(
        results.iter().any(|r| r.contains("DELEGATED WORDS")),
        "the Task call ran the FN agent: {results:?}"
    );
    let tools = requests[0].tools();
    let task = tools
        .iter()
        .find(|t| t["function"]["name"] == "Task")
        .expect("the Task tool offered");
    assert!(
        task.to_string().contains("shout"),
        "the Task tool names the added agent: {}",
        json!(task)
    );
}
