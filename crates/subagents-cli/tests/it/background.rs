//! Background work through the binary: a main agent that answers while a background child
//! still runs waits for it (or cancels it with `--on-exit cancel`, or on Ctrl-C), says so, and
//! counts its usage; `subagents tasks` lists, shows, stops and resumes the background tasks
//! the store keeps, across processes.

use crate::common;

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use common::{Worker, fixtures, json_of, process_in, rt, subagents_in, word};
use serde_json::Value;
use subagent_testkit::{Reply, ScriptedModelServer};

/// Tokens the scripted child spends, to find its usage in the tree.
const CHILD_IN: u64 = 777;
const CHILD_OUT: u64 = 333;

/// One test's world: a scripted model server and a home (its data directory holds the default
/// SQLite store) with a config naming the child model `child`.
struct World {
    rt: tokio::runtime::Runtime,
    server: ScriptedModelServer,
    home: tempfile::TempDir,
    config: PathBuf,
}

/// A `run` followed until a line of its stderr: the process, its stderr lines (those not read
/// yet, and those seen), that line, and the task id it names.
struct Running {
    run: Child,
    lines: mpsc::Receiver<String>,
    seen: Vec<String>,
    line: String,
    task_id: String,
}

impl World {
    fn new() -> Self {
        let rt = rt();
        let (server, home, config) = common::child_model_home(&rt);
        Self {
            rt,
            server,
            home,
            config,
        }
    }

    /// `subagents --config CFG ARGS... --agents fixtures/local --workspace HOME` (for `run`
    /// and `task`) as a process.
    fn process(&self, args: &[&str]) -> std::process::Command {
        let mut cmd = process_in(self.home.path());
        cmd.arg("--config").arg(&self.config).args(args);
        cmd.arg("--agents")
            .arg(fixtures().join("local"))
            .arg("--workspace")
            .arg(self.home.path());
        cmd
    }

    /// `subagents --config CFG tasks ARGS...` to completion.
    fn tasks(&self, args: &[&str]) -> Output {
        subagents_in(self.home.path())
            .arg("--config")
            .arg(&self.config)
            .arg("tasks")
            .args(args)
            .output()
            .expect("tasks runs")
    }

    /// Polls `tasks list --json` (bounded) until task `id` is listed; returns its entry.
    fn wait_listed(&self, id: &str) -> Value {
        let mut listed = Value::Null;
        for _ in 0..300 {
            listed = json_of(&self.tasks(&["list", "--json"]));
            if let Some(t) = listed
                .as_array()
                .and_then(|l| l.iter().find(|t| t["task_id"] == id))
            {
                return t.clone();
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!("task {id} is never listed: {listed}");
    }

    /// `tasks show ID --json`.
    fn show(&self, id: &str) -> Value {
        let out = self.tasks(&["show", id, "--json"]);
        json_of(&out)
    }

    /// The main agent starts `echo-agent` in the background on the child model, then answers
    /// at once; the child's model answers after `child_delay`.
    fn script_background_child(&self, child_delay: Duration) {
        let script = self.server.script();
        script.push_for_model("main-model", common::background_echo_call());
        script.push_for_model("main-model", Reply::text("main answered"));
        script.push_for_model(
            "child-model",
            Reply::text("the long job is done")
                .with_usage(CHILD_IN, CHILD_OUT)
                .with_delay(child_delay),
        );
    }

    /// `run "start the long job" --json ARGS...` as a process with piped output.
    /// [`spawn_run`](Self::spawn_run) (plus `extra`) with a background child that answers
    /// after `delay`, followed until its stderr has a line with `needle` (naming the task).
    fn run_until(&self, delay: Duration, extra: &[&str], needle: &str) -> Running {
        self.script_background_child(delay);
        let mut run = self.spawn_run(extra);
        let lines = stderr_lines(&mut run);
        let mut seen = Vec::new();
        let line = wait_line(&lines, needle, &mut seen);
        let task_id =
            word(&line, "task_").unwrap_or_else(|| panic!("the line names the task id: {line}"));
        Running {
            run,
            lines,
            seen,
            line,
            task_id,
        }
    }

    fn spawn_run(&self, extra: &[&str]) -> Child {
        let main = self.server.openai_model("main-model");
        let mut args = vec!["run", "start the long job", "--json", "--model", &main];
        args.extend_from_slice(extra);
        self.process(&args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn subagents run")
    }
}

impl Running {
    /// Waits for the run to end ([`finish`]) and asserts that its stderr says the task ended
    /// `how`; its exit code, its outcome and its stderr lines.
    fn finish_ended(mut self, how: &str) -> (i32, Value, Vec<String>) {
        let (code, v) = finish(self.run, &self.lines, &mut self.seen);
        let ended = format!("ended {how}");
        assert!(
            self.seen
                .iter()
                .any(|l| l.contains(&self.task_id) && l.contains(&ended)),
            "{:#?}",
            self.seen
        );
        (code, v, self.seen)
    }
}

/// Reads `child`'s stderr on a thread: its lines arrive on the returned channel.
fn stderr_lines(child: &mut Child) -> mpsc::Receiver<String> {
    let stderr = child.stderr.take().expect("piped stderr");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

/// Waits (bounded) for a stderr line containing `needle`; returns it and the lines before.
fn wait_line(rx: &mpsc::Receiver<String>, needle: &str, seen: &mut Vec<String>) -> String {
    loop {
        match rx.recv_timeout(Duration::from_secs(60)) {
            Ok(line) => {
                seen.push(line.clone());
                if line.contains(needle) {
                    return line;
                }
            }
            Err(_) => panic!("no stderr line with `{needle}` within 60 s; saw: {seen:#?}"),
        }
    }
}

/// Waits (bounded) for the process to end; returns its output (stderr read by `rest`).
fn finish(mut child: Child, rest: &mpsc::Receiver<String>, seen: &mut Vec<String>) -> (i32, Value) {
    let mut stdout = child.stdout.take().expect("piped stdout");
    let reader = std::thread::spawn(move || {
        let mut s = Vec::new();
        std::io::Read::read_to_end(&mut stdout, &mut s).expect("stdout");
        s
    });
    let mut waited = Duration::ZERO;
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        assert!(
            waited < Duration::from_secs(60),
            "the process did not end within 60 s; stderr: {seen:#?}"
        );
        std::thread::sleep(Duration::from_millis(50));
        waited += Duration::from_millis(50);
    };
    let stdout = reader.join().expect("stdout reader");
    while let Ok(line) = rest.recv_timeout(Duration::from_millis(500)) {
        seen.push(line);
    }
    let v = serde_json::from_slice(&stdout).unwrap_or_else(|e| {
        panic!(
            "JSON on stdout ({e}): {}\nstderr: {seen:#?}",
            String::from_utf8_lossy(&stdout)
        )
    });
    (status.code().unwrap_or(-1), v)
}

/// The usage node of the background child in a `--json` outcome.
fn child_node(v: &Value) -> Value {
    v["usage"]["children"]
        .as_array()
        .and_then(|c| c.iter().find(|n| n["agent"] == "echo-agent"))
        .cloned()
        .unwrap_or_else(|| panic!("the background child is in the usage tree: {v}"))
}

#[test]
fn run_waits_for_a_background_child_names_it_and_counts_its_usage() {
    let w = World::new();
    // Long enough for the main agent to answer first; the run must outlast it.
    let running = w.run_until(Duration::from_secs(3), &[], "waiting for 1 background task");
    let (waiting, task_id) = (running.line.clone(), running.task_id.clone());
    assert!(waiting.contains("echo-agent"), "{waiting}");
    let (code, v, seen) = running.finish_ended("completed");
    assert_eq!(code, 0, "{seen:#?}");
    assert_eq!(v["text"], "main answered", "{v}");
    let child = child_node(&v);
    assert_eq!(child["task_id"], task_id.as_str(), "{v}");
    assert_eq!(child["status"], "completed", "{v}");
    assert_eq!(child["usage"]["input_tokens"], CHILD_IN, "{v}");
    assert_eq!(child["usage"]["output_tokens"], CHILD_OUT, "{v}");
    // The child's model was answered: its work was not lost.
    assert_eq!(w.server.requests_for("child-model").len(), 1);
    assert_eq!(w.show(&task_id)["status"], "completed");
}

#[test]
fn on_exit_cancel_cancels_the_child_and_records_it() {
    let w = World::new();
    let running = w.run_until(
        Duration::from_secs(120),
        &["--on-exit", "cancel"],
        "cancelling 1 background task",
    );
    let task_id = running.task_id.clone();
    let (code, v, seen) = running.finish_ended("cancelled");
    assert_eq!(code, 0, "the main agent's answer stands: {seen:#?}");
    let child = child_node(&v);
    assert_eq!(child["status"], "cancelled", "{v}");
    // Recorded in the store for later processes.
    let shown = w.show(&task_id);
    assert_eq!(shown["status"], "cancelled", "{shown}");
    assert_eq!(shown["agent"], "echo-agent", "{shown}");
}

#[test]
fn ctrl_c_while_waiting_cancels_the_children() {
    let w = World::new();
    let running = w.run_until(
        Duration::from_secs(120),
        &[],
        "waiting for 1 background task",
    );
    let task_id = running.task_id.clone();
    let sent = std::process::Command::new("kill")
        .args(["-INT", &running.run.id().to_string()])
        .status()
        .expect("kill -INT");
    assert!(sent.success());
    let (code, v, seen) = running.finish_ended("cancelled");
    // The answer and the outcome are printed; the command was interrupted (issue 41 item 5).
    assert_eq!(code, 130, "{seen:#?}");
    assert_eq!(v["text"], "main answered", "{v}");
    assert_eq!(child_node(&v)["status"], "cancelled", "{v}");
    assert_eq!(w.show(&task_id)["status"], "cancelled");
}

#[test]
fn run_prints_the_answers_of_the_background_children_it_waited_for() {
    let w = World::new();
    w.script_background_child(Duration::from_secs(2));
    let main = w.server.openai_model("main-model");
    let out = w
        .process(&["run", "start the long job", "--model", &main])
        .output()
        .expect("run");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    // The main agent's answer first, then the child's it waited for, under a line naming it.
    let main_at = stdout.find("main answered").expect("the main answer");
    let child_at = stdout
        .find("the long job is done")
        .unwrap_or_else(|| panic!("the child's answer is printed: {stdout}\n{stderr}"));
    assert!(main_at < child_at, "{stdout}");
    assert!(
        stdout.contains("(echo-agent) completed]"),
        "the child's answer is named: {stdout}"
    );
}

#[test]
fn task_background_returns_at_once_with_the_task_id_and_the_task_runs_on() {
    let w = World::new();
    // The child's model answers in two minutes: the command must not wait for it.
    w.server.script().push_for_model(
        "child-model",
        Reply::text("never waited for").with_delay(Duration::from_secs(120)),
    );
    let model = w.server.openai_model("child-model");
    let out = assert_cmd::Command::from_std(w.process(&[
        "task",
        "echo-agent",
        "long job",
        "--background",
        "--model",
        &model,
    ]))
    .timeout(Duration::from_secs(60))
    .output()
    .expect("task --background");
    let id = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    // The id alone on stdout, how to follow it on stderr.
    assert!(
        id.starts_with("task_") && !id.contains(' '),
        "{id}\n{stderr}"
    );
    assert!(
        stderr.contains(&format!("subagents tasks show {id}")),
        "{stderr}"
    );
    // The task runs on in its own process: another process sees it running, stops it.
    w.rt.block_on(async {
        tokio::time::timeout(Duration::from_secs(60), w.server.wait_for_requests(1))
            .await
            .expect("the child's request within 60 s");
    });
    assert_eq!(w.wait_listed(&id)["status"], "running");
    let stopped = json_of(&w.tasks(&["stop", &id, "--json"]));
    assert_eq!(stopped["status"], "cancelled", "{stopped}");
    assert_eq!(w.show(&id)["status"], "cancelled");
}

/// `task echo-agent PROMPT --background` on the child model: it returns at once; returns the
/// process running the task (named on stderr) and the task id (stdout).
fn spawn_background_task(w: &World, prompt: &str) -> (Worker, String) {
    let model = w.server.openai_model("child-model");
    let out = w
        .process(&[
            "task",
            "echo-agent",
            prompt,
            "--background",
            "--model",
            &model,
        ])
        .output()
        .expect("subagents task --background");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let id = String::from_utf8_lossy(&out.stdout).trim().to_string();
    (Worker::named_in(&stderr), id)
}

/// [`spawn_background_task`] with `prompt`, whose child's model answers `never` in two minutes;
/// returns once the server has had `requests` requests (the child's call is in flight).
fn in_flight(w: &World, prompt: &str, never: &str, requests: usize) -> (Worker, String) {
    w.server.script().push_for_model(
        "child-model",
        Reply::text(never).with_delay(Duration::from_secs(120)),
    );
    let started = spawn_background_task(w, prompt);
    w.rt.block_on(async {
        tokio::time::timeout(
            Duration::from_secs(60),
            w.server.wait_for_requests(requests),
        )
        .await
        .expect("the child's request within 60 s");
    });
    started
}

#[test]
fn tasks_list_show_stop_and_resume_a_task_started_by_task_background() {
    let w = World::new();
    // The child's model call is in flight.
    let (first, id) = in_flight(&w, "first long job", "never finished", 1);

    // Another process sees it running.
    let entry = w.wait_listed(&id);
    assert_eq!(entry["status"], "running", "{entry}");
    assert_eq!(entry["agent"], "echo-agent", "{entry}");
    let text = w.tasks(&["list"]);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains(&id) && text.contains("running"), "{text}");
    assert_eq!(w.show(&id)["status"], "running");

    // `tasks stop` from another process stops it in the process that runs it.
    let out = w.tasks(&["stop", &id, "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stopped = json_of(&out);
    assert_eq!(stopped["status"], "cancelled", "{stopped}");
    // The process that ran it ends.
    let mut waited = 0;
    while first.running() {
        assert!(waited < 600, "the stopped task's process did not end");
        std::thread::sleep(Duration::from_millis(100));
        waited += 1;
    }
    let shown = w.show(&id);
    assert_eq!(shown["status"], "cancelled", "{shown}");
    let session = shown["session_id"]
        .as_str()
        .unwrap_or_else(|| panic!("the task's session is kept: {shown}"))
        .to_string();

    // A task whose process was killed reads as interrupted, honestly.
    let (killed, second) = in_flight(&w, "second long job", "never finished either", 2);
    w.wait_listed(&second);
    killed.kill_and_wait();
    let shown = w.show(&second);
    assert_eq!(shown["status"], "interrupted", "{shown}");
    let out = w.tasks(&["show", &second]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    common::assert_has(&stderr, &["interrupted", "earlier process"]);

    // `tasks resume` continues the stopped task's session on its agent.
    w.server
        .script()
        .push_for_model("child-model", Reply::text("resumed and finished"));
    let model = w.server.openai_model("child-model");
    let out = w
        .process(&["tasks", "resume", &id, "go on", "--model", &model])
        .output()
        .expect("tasks resume");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("resumed and finished"),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let last = w.server.last_request().expect("the resumed request");
    let texts: Vec<String> = last
        .messages()
        .iter()
        .map(|m| m["content"].as_str().unwrap_or_default().to_string())
        .collect();
    assert!(
        texts.iter().any(|t| t.contains("first long job"))
            && texts.last().is_some_and(|t| t == "go on"),
        "the resumed run continues the task's session ({session}): {texts:?}"
    );
    // Unknown ids are a clear error.
    let out = w.tasks(&["show", "task_nope"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("task_nope"));
}
