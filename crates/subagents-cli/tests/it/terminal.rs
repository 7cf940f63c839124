//! What reaches a person's terminal, through the real binary: text a peer, a model or a file
//! controls is escaped on the way (in the live tree, the prompts, `call --stream`, errors and
//! the answer on a terminal), `--json` stays exact; `call` can answer a remote question (a
//! prompt on a terminal, `--yes`, or `--task-id` from a script); Ctrl-C exits 130 and the
//! servers stop with 0; parallel approvals name who asks and "always" answers the waiting
//! ones. Terminals are pseudo-terminals.
#![cfg(unix)]

use crate::common;

use std::process::Stdio;
use std::time::{Duration, Instant};

use common::peer::{self, Answer};
use common::pty::{OnPty, signal};
use serde_json::{Value, json};
use subagent_testkit::Reply;

/// The most any one step of these tests waits (a bound, not a speed goal).
const LIMIT: Duration = Duration::from_secs(60);

/// What a hostile peer or model writes: clear the screen, set the window title (OSC 0), a
/// hidden link (OSC 8), a right-to-left override, a carriage return and backspace that
/// overwrite what came before, and an 8-bit CSI.
const HOSTILE: &str = "Q\u{1b}[2J\u{1b}]0;pwned\u{7}\u{1b}]8;;http://evil.example/\u{7}link\u{1b}]8;;\u{7} \u{202e}txt.exe \rFAKE\u{8}\u{9b}31m \u{200b}end";

/// Fails when `text` holds any of the hostile sequences raw.
fn assert_none_raw(text: &str, what: &str) {
    for raw in [
        "\u{1b}[2J",
        "\u{1b}]0;",
        "\u{1b}]8;",
        "\u{202e}",
        "\u{9b}",
        "\rFAKE",
        "\u{8}",
        "\u{200b}",
    ] {
        assert!(!text.contains(raw), "{what}: raw {raw:?} in {text:?}");
    }
}

/// Fails when `text` (not a terminal's own output) holds any character that acts on a
/// terminal, newlines aside.
fn assert_terminal_safe(text: &str, what: &str) {
    for c in text.chars() {
        assert!(
            c == '\n' || !subagents::claude::is_terminal_hazard(c),
            "{what}: raw {c:?} in {text:?}"
        );
    }
}

/// Waits (bounded) for `child` to exit; its exit status and output.
fn finish(child: std::process::Child) -> std::process::Output {
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(LIMIT) {
        Ok(out) => out.expect("output"),
        Err(_) => {
            signal(pid, rustix::process::Signal::KILL);
            panic!("the command did not exit within {LIMIT:?}");
        }
    }
}

/// The command in a home of its own, stdin closed (no terminal), its output captured.
fn piped() -> std::process::Command {
    let home = tempfile::tempdir().expect("tmp").keep();
    let mut cmd = common::process_in(&home);
    cmd.stdin(Stdio::null());
    cmd
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

// --- 26.6: escaping --------------------------------------------------------------------

#[test]
fn a_remote_question_reaches_the_run_terminal_escaped() {
    let (rt, model) = common::scripted();
    let remote = peer::start(
        &rt,
        "peer",
        Answer::Ask(HOSTILE.into(), format!("answered {HOSTILE}")),
    );
    model.push(Reply::task_call("peer", "go"));
    model.push(Reply::text(format!("final {HOSTILE}")));
    let home = tempfile::tempdir().expect("tmp");
    let mut cmd = common::process_in(home.path());
    cmd.args(["run", "--store", "memory", "--a2a", &remote.url])
        .args(["--model", &model.openai_model("main-model"), "go"]);
    let screen = answered_on_a_terminal(&mut cmd, "y\n");
    // The question (prompt, live tree) and the final answer (stdout on the terminal) were
    // shown, escaped.
    assert_none_raw(&screen, "the run's terminal");
    assert!(screen.contains("asks: Q\\u{1b}[2J"), "{screen:?}");
    assert!(screen.contains("final Q\\u{1b}[2J"), "{screen:?}");
    assert!(
        screen.contains("\\u{202e}txt.exe \\u{d}FAKE\\u{8}\\u{9b}31m"),
        "{screen:?}"
    );
    // The answer went to the peer's task.
    let messages = remote.messages();
    assert_eq!(messages.len(), 2, "{messages:?}");
    assert_eq!(messages[1]["taskId"], "t-1");
}

/// `cmd` on a terminal, answered `answer` when it asks; what the terminal showed once it
/// succeeded.
fn answered_on_a_terminal(cmd: &mut std::process::Command, answer: &str) -> String {
    let mut term = OnPty::spawn(cmd, true);
    term.expect("answer? [y]es", LIMIT);
    term.send(answer);
    let (status, screen) = term.finish(LIMIT);
    assert!(status.success(), "{status}: {screen:?}");
    screen
}

/// A peer whose card name is hostile too.
const EVIL_NAME: &str = "ev\u{1b}[2Jil\u{202e}";

#[test]
fn call_escapes_what_the_peer_sends_on_stderr_and_on_a_terminal() {
    let rt = common::rt();
    let remote = peer::start(
        &rt,
        EVIL_NAME,
        Answer::Ask(HOSTILE.into(), format!("answered {HOSTILE}")),
    );
    // Piped: stops for input; stderr (the stream lines, the error) is escaped.
    let out = piped()
        .args(["call", &remote.url, "hi", "--stream"])
        .output()
        .expect("runs");
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert_terminal_safe(&stderr, "call's stderr");
    assert!(
        stderr.contains("[ev\\u{1b}[2Jil\\u{202e}] status: Q\\u{1b}[2J"),
        "{stderr}"
    );
    // Piped stdout is the peer's text, exactly: the caller asked for it.
    assert_eq!(text(&out.stdout), format!("{HOSTILE}\n"));

    // On a terminal: the prompt, the stream lines and the answer on stdout are escaped.
    let mut cmd = common::process_in(tempfile::tempdir().expect("tmp").keep().as_path());
    cmd.args(["call", &remote.url, "hi", "--stream"]);
    let screen = answered_on_a_terminal(&mut cmd, "n\n");
    assert_none_raw(&screen, "call's terminal");
    assert!(
        screen.contains("ev\\u{1b}[2Jil\\u{202e} asks: Q\\u{1b}[2J"),
        "{screen:?}"
    );
    assert!(screen.contains("answered Q\\u{1b}[2J"), "{screen:?}");
}

#[test]
fn call_json_is_exact_and_holds_no_raw_control_characters() {
    let rt = common::rt();
    let remote = peer::start(&rt, EVIL_NAME, Answer::Ask(HOSTILE.into(), String::new()));
    let out = piped()
        .args(["call", &remote.url, "hi", "--json"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert_terminal_safe(&stdout, "--json stdout");
    let v: Value = serde_json::from_str(&stdout).expect("JSON");
    assert_eq!(v["text"], HOSTILE);
    assert_eq!(v["agent"], EVIL_NAME);
    assert_eq!(v["status"], "needs_input");
    assert_eq!(v["task_id"], "t-1");
    assert_eq!(v["context_id"], "c-1");
}

#[test]
fn a_peer_error_is_printed_escaped() {
    let rt = common::rt();
    let remote = peer::start(&rt, EVIL_NAME, Answer::Fail(HOSTILE.into()));
    let stderr = common::stderr_on_exit(piped().args(["call", &remote.url, "hi"]).output(), 1);
    assert_terminal_safe(&stderr, "the error");
    assert!(stderr.contains("Q\\u{1b}[2J"), "{stderr}");
}

// --- 27.7: `call` answers -------------------------------------------------------------

/// `subagents serve` with a `worker` whose first turn asks to run a Bash command (which
/// needs approval, so its task goes input-required), then says "touched it".
fn served() -> common::ServedWorker {
    let w = common::ServedWorker::start(
        "---\nname: worker\ndescription: Runs commands.\ntools: Bash\n---\nWork.\n",
    );
    // Confined Bash creates files in a subdirectory (not directly in the workspace root, whose
    // new entries could be the project's control files).
    std::fs::create_dir_all(w.dir.path().join("out")).expect("out");
    w.model.push_for_model(
        "worker-model",
        Reply::tool_calls(vec![("Bash", json!({"command": "touch out/made.txt"}))]),
    );
    w.model
        .push_for_model("worker-model", Reply::text("touched it"));
    w
}

/// Whether the served worker's command ran.
fn ran(remote: &common::ServedWorker) -> bool {
    remote.dir.path().join("out/made.txt").exists()
}

/// The value after `label` on a line of `text`.
fn field(text: &str, label: &str) -> String {
    text.lines()
        .find_map(|l| l.strip_prefix(label))
        .unwrap_or_else(|| panic!("no `{label}` in {text}"))
        .trim()
        .to_string()
}

#[test]
fn a_script_replies_to_the_task_call_stopped_at() {
    let remote = served();
    let stderr = common::stderr_on_exit(
        piped()
            .args(["call", &remote.url, "touch the file"])
            .output(),
        3,
    );
    assert!(!ran(&remote));
    let task = field(&stderr, "task id:");
    let context = field(&stderr, "context id:");
    assert!(stderr.contains("reply with: subagents call"), "{stderr}");

    let out = piped()
        .args([
            "call",
            &remote.url,
            "--task-id",
            &task,
            "--context-id",
            &context,
            "yes",
        ])
        .output()
        .expect("runs");
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(ran(&remote), "the reply approved the remote command");
    assert!(
        text(&out.stdout).contains("touched it"),
        "{}",
        text(&out.stdout)
    );
}

#[test]
fn call_yes_answers_the_remote_question() {
    let remote = served();
    let out = piped()
        .args(["call", &remote.url, "touch the file", "--yes"])
        .output()
        .expect("runs");
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(ran(&remote));
    assert!(text(&out.stdout).contains("touched it"));
}

#[test]
fn call_prompts_on_a_terminal_as_run_does() {
    let remote = served();
    let home = tempfile::tempdir().expect("tmp");
    let mut cmd = common::process_in(home.path());
    cmd.args(["call", &remote.url, "touch the file"]);
    let mut term = OnPty::spawn(&mut cmd, true);
    let screen = term.expect("allow? [y]es once", LIMIT);
    assert!(
        screen.contains("? worker › Bash: touch out/made.txt"),
        "{screen:?}"
    );
    term.send("y\n");
    let (status, screen) = term.finish(LIMIT);
    assert!(status.success(), "{status}: {screen:?}");
    assert!(ran(&remote), "answered on the terminal");
    assert!(screen.contains("touched it"), "{screen:?}");
}

// --- 27.6: interrupted commands exit 130, servers stop with 0 --------------------------

/// Sends `sig` to `child` once `ready` holds (polled, bounded), then waits for its exit.
fn interrupt(
    child: std::process::Child,
    ready: impl Fn() -> bool,
    sig: rustix::process::Signal,
) -> std::process::Output {
    let deadline = Instant::now() + LIMIT;
    while !ready() {
        assert!(Instant::now() < deadline, "never ready");
        std::thread::sleep(Duration::from_millis(20));
    }
    signal(child.id(), sig);
    finish(child)
}

/// Starts `cmd` (stdin empty, stdout and stderr kept) and sends it SIGINT once `ready` holds.
fn ctrl_c_when(cmd: &mut std::process::Command, ready: impl Fn() -> bool) -> std::process::Output {
    let child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starts");
    interrupt(child, ready, rustix::process::Signal::INT)
}

#[test]
fn ctrl_c_during_run_prints_the_outcome_and_exits_130() {
    let (_rt, model) = common::scripted();
    model.push(Reply::text("too late").with_delay(Duration::from_secs(300)));
    let home = tempfile::tempdir().expect("tmp");
    let out = ctrl_c_when(
        common::process_in(home.path())
            .args(["run", "--store", "memory", "--json", "go"])
            .args(["--model", &model.openai_model("main-model")]),
        || model.request_count() >= 1,
    );
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("interrupted"), "{stderr}");
    let v: Value = serde_json::from_slice(&out.stdout).expect("the outcome, as JSON");
    assert_eq!(v["status"], "cancelled", "{v}");
    assert!(v["usage"].is_object(), "{v}");
}

#[test]
fn ctrl_c_during_task_exits_130() {
    let (_rt, model) = common::scripted();
    model.push(Reply::text("too late").with_delay(Duration::from_secs(300)));
    let home = tempfile::tempdir().expect("tmp");
    let agents = common::write_agent(
        home.path(),
        "slow",
        "---\nname: slow\ndescription: Slow.\n---\nWork.\n",
    );
    let out = ctrl_c_when(
        common::process_in(home.path())
            .args(["task", "slow", "go", "--store", "memory", "--agents"])
            .arg(agents)
            .args(["--model", &model.openai_model("m")]),
        || model.request_count() >= 1,
    );
    assert_eq!(out.status.code(), Some(130), "{}", text(&out.stderr));
}

#[test]
fn ctrl_c_during_call_exits_130() {
    let rt = common::rt();
    let remote = peer::start(&rt, "slow", Answer::Hold(Duration::from_secs(300)));
    let out = ctrl_c_when(
        common::process_in(tempfile::tempdir().expect("tmp").path()).args([
            "call",
            &remote.url,
            "hi",
        ]),
        || !remote.messages().is_empty(),
    );
    assert_eq!(out.status.code(), Some(130), "{}", text(&out.stderr));
}

#[test]
fn serve_stops_gracefully_with_0_on_sigterm_and_sigint() {
    for sig in [rustix::process::Signal::TERM, rustix::process::Signal::INT] {
        let w = common::ServedWorker::start("---\nname: worker\ndescription: Works.\n---\nWork.\n");
        let mut child = w.served.process;
        signal(child.0.id(), sig);
        let deadline = Instant::now() + LIMIT;
        let status = loop {
            if let Some(s) = child.0.try_wait().expect("wait") {
                break s;
            }
            assert!(Instant::now() < deadline, "serve did not stop on {sig:?}");
            std::thread::sleep(Duration::from_millis(20));
        };
        assert_eq!(status.code(), Some(0), "{sig:?}: {status}");
    }
}

#[test]
fn mcp_over_stdio_stops_gracefully_with_0_on_sigint() {
    use std::io::{BufRead as _, Write as _};
    let home = tempfile::tempdir().expect("tmp");
    let mut child = common::process_in(home.path())
        .args(["mcp", "--store", "memory"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("starts");
    // Up once it answers `initialize`.
    let mut stdin = child.stdin.take().expect("stdin");
    stdin
        .write_all(
            br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}
"#,
        )
        .expect("write");
    let stdout = child.stdout.take().expect("stdout");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = std::io::BufReader::new(stdout).read_line(&mut line);
        let _ = tx.send(line);
    });
    let line = rx.recv_timeout(LIMIT).expect("initialize answered");
    assert!(line.contains("\"id\":1"), "{line}");
    let out = interrupt(child, || true, rustix::process::Signal::INT);
    drop(stdin);
    assert_eq!(out.status.code(), Some(0), "{:?}", out.status);
}

// --- 27.8: parallel approvals ----------------------------------------------------------

#[test]
fn parallel_approvals_name_who_asks_and_always_answers_the_waiting_one() {
    let (_rt, model, home) = common::scripted_in_temp();
    let work = home.path().join("work");
    std::fs::create_dir_all(work.join("out")).expect("work");
    for (name, m) in [("alpha", "alpha-model"), ("beta", "beta-model")] {
        common::write_agent(
            home.path(),
            name,
            &format!(
                "---\nname: {name}\ndescription: Touches.\ntools: Bash\nmodel: {}\n---\nWork.\n",
                model.openai_model(m)
            ),
        );
        model.push_for_model(
            m,
            Reply::tool_calls(vec![(
                "Bash",
                json!({"command": format!("touch out/{name}.txt")}),
            )]),
        );
        model.push_for_model(m, Reply::text("touched"));
    }
    model.push(common::task_calls(&[
        ("a", "go", "alpha"),
        ("b", "go", "beta"),
    ]));
    model.push(Reply::text("both done"));
    let mut cmd = common::process_in(home.path());
    cmd.args(["run", "--store", "memory", "go", "--workspace"])
        .arg(&work)
        .arg("--agents")
        .arg(home.path().join("agents"))
        .args(["--model", &model.openai_model("main-model")]);
    let mut term = OnPty::spawn(&mut cmd, true);
    let screen = term.expect("allow? [y]es once", LIMIT);
    assert!(
        screen.contains("main › alpha") || screen.contains("main › beta"),
        "the prompt names the asking agent's path: {screen:?}"
    );
    assert!(screen.contains("› Bash: touch"), "{screen:?}");
    // Both children asked before the answer (each made its model request; the second
    // question is queued behind the first prompt).
    let deadline = Instant::now() + LIMIT;
    while model.request_count() < 3 {
        assert!(Instant::now() < deadline, "both children asked");
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(300));
    term.send("a\n");
    // A second prompt would wait for an answer: fail as soon as it shows.
    let (status, screen) =
        term.finish_unless(LIMIT, |t| t.matches("allow? [y]es once").count() > 1);
    assert!(status.success(), "{status}: {screen:?}");
    assert_eq!(
        screen.matches("allow? [y]es once").count(),
        1,
        "\"always\" answered the waiting question too: {screen:?}"
    );
    assert!(work.join("out/alpha.txt").exists() && work.join("out/beta.txt").exists());
    assert!(screen.contains("both done"), "{screen:?}");
}

/// Issue 39: a background task's text (a model's, a peer's) reaches a terminal escaped from
/// `tasks show` and `tasks stop` as from `tasks list` (on the old code both printed it raw),
/// and from `tasks resume`; `--json` is exact and holds no raw control or bidi character.
#[test]
fn tasks_show_stop_and_resume_print_a_tasks_text_escaped_on_a_terminal() {
    let (_rt, model) = common::scripted();
    model.push(Reply::text(format!("done {HOSTILE}")));
    model.push(Reply::text(format!("resumed {HOSTILE}")));
    let home = tempfile::tempdir().expect("tmp");
    let spec = model.openai_model("m");
    let with_agents = |cmd: &mut std::process::Command| {
        cmd.arg("--agents")
            .arg(common::fixtures().join("local"))
            .arg("--workspace")
            .arg(home.path());
    };
    // The task runs to its end in the background of `task --background` (the default store,
    // in the home).
    let mut start = common::process_in(home.path());
    start.args(["task", "echo-agent", "go", "--background", "--model", &spec]);
    with_agents(&mut start);
    let started = finish(start.stdin(Stdio::null()).output_spawn());
    let err = text(&started.stderr);
    assert!(started.status.success(), "{err}");
    let id = common::word(&err, "task_").expect("the task id");

    let on_terminal = |args: &[&str]| {
        let mut cmd = common::process_in(home.path());
        cmd.arg("tasks").args(args);
        let (status, screen) = OnPty::spawn(&mut cmd, true).finish(LIMIT);
        assert!(status.success(), "{args:?}: {status}: {screen:?}");
        screen
    };
    for args in [vec!["show", id.as_str()], vec!["stop", id.as_str()]] {
        let screen = on_terminal(&args);
        assert_none_raw(&screen, &format!("tasks {}", args[0]));
        assert!(screen.contains("done Q\\u{1b}[2J"), "{args:?}: {screen:?}");
        assert!(screen.contains("\\u{202e}txt.exe"), "{args:?}: {screen:?}");
    }
    let listed = on_terminal(&["list"]);
    assert!(listed.contains(&id), "{listed:?}");
    assert_none_raw(&listed, "tasks list");

    // `--json` (on a pipe): exact, and no raw hazard in it.
    let mut json = common::process_in(home.path());
    json.args(["tasks", "show", &id, "--json"]);
    let out = finish(json.stdin(Stdio::null()).output_spawn());
    let stdout = text(&out.stdout);
    assert_terminal_safe(&stdout, "tasks show --json");
    let v: Value = serde_json::from_str(&stdout).expect("JSON");
    assert_eq!(v["output"], format!("done {HOSTILE}"));

    // `tasks resume` prints the resumed answer on the terminal escaped too.
    let mut resume = common::process_in(home.path());
    resume.args(["tasks", "resume", &id, "again", "--model", &spec]);
    with_agents(&mut resume);
    let (status, screen) = OnPty::spawn(&mut resume, true).finish(LIMIT);
    assert!(status.success(), "{status}: {screen:?}");
    assert_none_raw(&screen, "tasks resume");
    assert!(screen.contains("resumed Q\\u{1b}[2J"), "{screen:?}");
}

/// Spawning with piped output, for [`finish`].
trait OutputSpawn {
    fn output_spawn(&mut self) -> std::process::Child;
}

impl OutputSpawn for std::process::Command {
    fn output_spawn(&mut self) -> std::process::Child {
        self.stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the command starts")
    }
}
