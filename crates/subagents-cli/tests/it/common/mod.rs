//! Shared by the command's test targets.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::Duration;

use assert_cmd::Command;
use serde_json::Value;

pub(crate) mod mcp_http;
pub(crate) mod peer;
#[cfg(unix)]
pub(crate) mod pty;

/// Variables a developer's shell may set that would change what the command does.
pub(crate) const CLEARED_VARS: [&str; 14] = [
    "SUBAGENTS_MODEL",
    "SUBAGENTS_MAIN_TOOLS",
    "SUBAGENTS_PROMPT_CACHE",
    "SUBAGENTS_RATE_LIMIT_WAIT",
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "OPENAI_BASE_URL",
    "ANTHROPIC_BASE_URL",
    "RUST_LOG",
    "SUBAGENTS_API_KEYS",
    "SUBAGENTS_STORE",
    "XDG_DATA_HOME",
    "SUBAGENTS_SANDBOX",
    "SUBAGENTS_SANDBOX_HELPER",
];

/// The command with a clean environment: no model configured, Ollama probe pointed at a
/// closed port, no home directory agents, the default store (SQLite) inside the temp home, and
/// every tool for the main agent (`SUBAGENTS_MAIN_TOOLS=all`): the scripted model server is a
/// local server, whose main agent would otherwise get `Task` alone (a test of that default
/// removes the variable, see `local_first.rs`).
pub(crate) fn subagents() -> Command {
    let home = tempfile::tempdir().expect("temp home").keep();
    subagents_in(&home)
}

/// [`subagents`] with `home` as its home and working directory.
pub(crate) fn subagents_in(home: &Path) -> Command {
    Command::from_std(process_in(home))
}

/// [`subagents_in`] as a plain process, for a command the test keeps running (a server) or
/// kills.
pub(crate) fn process_in(home: &Path) -> std::process::Command {
    let mut cmd = std::process::Command::new(assert_cmd::cargo::cargo_bin("subagents"));
    for var in CLEARED_VARS {
        cmd.env_remove(var);
    }
    cmd.env("HOME", home)
        .env("SUBAGENTS_OLLAMA_URL", "http://127.0.0.1:9")
        .env(MAIN_TOOLS_VAR, "all")
        .current_dir(home);
    cmd
}

/// A `run` command's main agent and agents: `--model M --agents DIR`, M being the scripted
/// model server's `main-model`.
pub(crate) trait MainModel {
    /// Adds `args` to the command.
    fn add_args(&mut self, args: &[&std::ffi::OsStr]) -> &mut Self;

    /// Adds `--model M --agents agents`.
    fn main_model(
        &mut self,
        server: &subagent_testkit::ScriptedModelServer,
        agents: impl AsRef<std::ffi::OsStr>,
    ) -> &mut Self {
        let model = server.openai_model("main-model");
        self.add_args(&[
            "--model".as_ref(),
            model.as_ref(),
            "--agents".as_ref(),
            agents.as_ref(),
        ])
    }
}

impl MainModel for std::process::Command {
    fn add_args(&mut self, args: &[&std::ffi::OsStr]) -> &mut Self {
        self.args(args)
    }
}

impl MainModel for Command {
    fn add_args(&mut self, args: &[&std::ffi::OsStr]) -> &mut Self {
        self.args(args)
    }
}

/// The variable for `run --main-tools`.
pub(crate) const MAIN_TOOLS_VAR: &str = "SUBAGENTS_MAIN_TOOLS";

/// A runtime for the in-process servers a test starts.
pub(crate) fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
}

/// This crate's `tests/fixtures`.
pub(crate) fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// The facade's `tests/fixtures/team`: main → coordinator → leaf.
pub(crate) fn team() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../subagents/tests/fixtures/team")
}

/// `subagents run PROMPT ARGS... --model M --agents TEAM` ([`team`]), M being `server`'s `team`
/// model.
pub(crate) fn team_run(
    server: &subagent_testkit::ScriptedModelServer,
    prompt: &str,
    args: &[&str],
) -> Command {
    let mut cmd = subagents();
    cmd.args(["run", prompt])
        .args(args)
        .args(["--model", &server.openai_model("team"), "--agents"])
        .arg(team());
    cmd
}

/// The shared corpus of real agent collections (`../shared/corpora/claude-agents` from the
/// project root, or from a directory above it: a git worktree lives deeper than the main
/// checkout); `None`, after printing SKIPPED with `test` and the reason, when it is absent.
pub(crate) fn corpus(test: &str) -> Option<PathBuf> {
    subagent_testkit::claude_agents_corpus(Path::new(env!("CARGO_MANIFEST_DIR")), test)
}

/// Copies the directory tree `from` into `to` (created), files and directories only.
pub(crate) fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("read dir") {
        let entry = entry.expect("entry");
        let target = to.join(entry.file_name());
        let ft = entry.file_type().expect("file type");
        if ft.is_dir() {
            copy_tree(&entry.path(), &target);
        } else if ft.is_file() {
            std::fs::copy(entry.path(), &target).expect("copy");
        }
    }
}

/// Writes `DIR/subagents.toml` naming `child` the model `child-model` of `server`; returns
/// its path.
pub(crate) fn child_model_config(
    dir: &Path,
    server: &subagent_testkit::ScriptedModelServer,
) -> PathBuf {
    let config = dir.join("subagents.toml");
    std::fs::write(
        &config,
        format!(
            "[models]\nchild = \"{}\"\n",
            server.openai_model("child-model")
        ),
    )
    .expect("config");
    config
}

/// Writes the agent file `ROOT/agents/NAME.md`; returns the agents directory.
pub(crate) fn write_agent(root: &Path, name: &str, text: &str) -> PathBuf {
    let dir = root.join("agents");
    std::fs::create_dir_all(&dir).expect("mkdir agents");
    std::fs::write(dir.join(format!("{name}.md")), text).expect("agent file");
    dir
}

/// [`write_agent`] for each `(name, text)` of `agents`; returns the agents directory.
pub(crate) fn write_agents(root: &Path, agents: &[(&str, &str)]) -> PathBuf {
    let dir = root.join("agents");
    for (name, text) in agents {
        write_agent(root, name, text);
    }
    dir
}

/// Runs `subagents --config CONFIG ARGS --model M --agents AGENTS` in `home` (M: the scripted
/// model server's `main-model`), which must succeed within two minutes; returns its stdout.
pub(crate) fn run_configured(
    home: &Path,
    config: &Path,
    args: &[&str],
    server: &subagent_testkit::ScriptedModelServer,
    agents: &Path,
) -> String {
    stdout_of(
        subagents_in(home)
            .arg("--config")
            .arg(config)
            .args(args)
            .main_model(server, agents)
            .timeout(std::time::Duration::from_secs(120))
            .assert()
            .success(),
    )
}

/// What the command printed on stdout, as JSON (`--json`).
pub(crate) fn json_stdout(assert: assert_cmd::assert::Assert) -> Value {
    serde_json::from_slice(&assert.get_output().stdout).expect("JSON on stdout")
}

/// What the command printed on stdout, as text.
pub(crate) fn stdout_of(assert: assert_cmd::assert::Assert) -> String {
    String::from_utf8_lossy(&assert.get_output().stdout).into_owned()
}

/// The text of the last `tool` message in an OpenAI request body.
pub(crate) fn last_tool_result(body: &Value) -> String {
    body["messages"]
        .as_array()
        .and_then(|m| m.iter().rev().find(|m| m["role"] == "tool"))
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default()
        .to_string()
}

/// The text of an MCP tool result (its text blocks, a line each).
pub(crate) use subagent_testkit::mcp::tool_text;

/// The first word of `text` starting with `prefix` (`task_...`, `sess_...`).
pub(crate) fn word(text: &str, prefix: &str) -> Option<String> {
    text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .find(|w| w.starts_with(prefix))
        .map(str::to_string)
}

/// A child process killed (and reaped) when dropped.
pub(crate) struct Killed(pub(crate) Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The process a `task --background` started to run its task, killed (SIGKILL) when dropped.
pub(crate) struct Worker(pub(crate) u32);

impl Worker {
    /// The process named by `task --background`'s stderr (`... (process PID): ...`).
    pub(crate) fn named_in(stderr: &str) -> Self {
        let pid = stderr
            .split("(process ")
            .nth(1)
            .and_then(|r| r.split(')').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("the background process is named: {stderr}"));
        Self(pid)
    }

    /// Sends it SIGKILL.
    pub(crate) fn kill(&self) {
        let _ = std::process::Command::new("kill")
            .args(["-KILL", &self.0.to_string()])
            .status();
    }

    /// Kills it and waits (bounded) until it has ended.
    pub(crate) fn kill_and_wait(&self) {
        self.kill();
        for _ in 0..600 {
            if !self.running() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("process {} did not end", self.0);
    }

    /// True while the process runs (a zombie has ended).
    pub(crate) fn running(&self) -> bool {
        std::fs::read_to_string(format!("/proc/{}/stat", self.0))
            .ok()
            .and_then(|s| {
                s.rsplit_once(") ")
                    .map(|(_, r)| r.starts_with(['R', 'S', 'D']))
            })
            .unwrap_or(false)
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A port nobody listens on right now.
pub(crate) fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// A running `subagents serve`, stopped when dropped.
pub(crate) struct Served {
    /// The process.
    pub(crate) process: Killed,
    /// `http://127.0.0.1:PORT`: agents are served at `{base}/{name}`.
    pub(crate) base: String,
}

/// Starts `subagents serve --listen 127.0.0.1:PORT` on a free port, with the clean
/// environment of [`process_in`] in `home` and its stderr discarded; `configure` adds the
/// arguments (and may redirect the output); waits until `GET /` answers.
pub(crate) fn spawn_serve(
    rt: &tokio::runtime::Runtime,
    home: &Path,
    configure: impl FnOnce(&mut std::process::Command),
) -> Served {
    let listen = format!("127.0.0.1:{}", free_port());
    let mut cmd = process_in(home);
    cmd.args(["serve", "--listen", &listen])
        .stderr(Stdio::null());
    configure(&mut cmd);
    let process = Killed(cmd.spawn().expect("serve starts"));
    let base = format!("http://{listen}");
    rt.block_on(async {
        for _ in 0..400 {
            if reqwest::get(format!("{base}/")).await.is_ok() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("serve did not come up on {base}");
    });
    Served { process, base }
}

/// Serves the agent `worker` (its file is `worker_md`) from `root` with `--store memory`, on
/// the model `worker-model` of `model`; `configure` adds to the command. Returns the server
/// and the worker's URL.
pub(crate) fn serve_worker(
    rt: &tokio::runtime::Runtime,
    model: &subagent_testkit::ScriptedModelServer,
    root: &Path,
    worker_md: &str,
    configure: impl FnOnce(&mut std::process::Command),
) -> (Served, String) {
    let agents = write_agent(root, "worker", worker_md);
    let served = spawn_serve(rt, root, |cmd| {
        cmd.args(["--store", "memory"])
            .args(["--model", &model.openai_model("worker-model")])
            .arg("--agents")
            .arg(agents);
        configure(cmd);
    });
    let url = format!("{}/worker", served.base);
    (served, url)
}

/// `subagents serve` of one `worker` agent (the text `worker_md`) in a temporary directory of
/// its own, on the scripted model server's `worker-model`: [`serve_worker`] with its parts.
pub(crate) struct ServedWorker {
    /// The runtime of the model server.
    pub(crate) rt: tokio::runtime::Runtime,
    /// The scripted model server.
    pub(crate) model: subagent_testkit::ScriptedModelServer,
    /// The served side's directory (agents under `agents/`, and its workspace).
    pub(crate) dir: tempfile::TempDir,
    /// The `serve` process.
    pub(crate) served: Served,
    /// The worker's A2A URL.
    pub(crate) url: String,
}

impl ServedWorker {
    /// Starts it.
    pub(crate) fn start(worker_md: &str) -> Self {
        let (rt, model, dir) = scripted_in_temp();
        let (served, url) = serve_worker(&rt, &model, dir.path(), worker_md, |_| {});
        Self {
            rt,
            model,
            dir,
            served,
            url,
        }
    }
}

/// The main agent's turn that starts `echo-agent` in the background on the `child` model (a
/// "long job").
pub(crate) fn background_echo_call() -> subagent_testkit::Reply {
    subagent_testkit::Reply::tool_calls(vec![(
        "Task",
        serde_json::json!({
            "description": "long job",
            "prompt": "do the long job",
            "subagent_type": "echo-agent",
            "model": "child",
            "run_in_background": true
        }),
    )])
}

/// One turn of `Task` calls started together: each `(description, prompt, subagent_type)`.
pub(crate) fn task_calls(calls: &[(&str, &str, &str)]) -> subagent_testkit::Reply {
    subagent_testkit::Reply::tool_calls(
        calls
            .iter()
            .map(|(description, prompt, agent)| {
                (
                    "Task",
                    serde_json::json!({"description": description, "prompt": prompt, "subagent_type": agent}),
                )
            })
            .collect(),
    )
}

/// A workspace (`HOME/work`) that `subagents run` works in against a scripted model server.
pub(crate) struct WorkCase {
    _rt: tokio::runtime::Runtime,
    pub(crate) server: subagent_testkit::ScriptedModelServer,
    pub(crate) home: tempfile::TempDir,
}

impl WorkCase {
    pub(crate) fn new() -> Self {
        let rt = rt();
        let server = rt.block_on(subagent_testkit::ScriptedModelServer::start());
        let home = tempfile::tempdir().expect("temp home");
        std::fs::create_dir_all(home.path().join("work")).unwrap();
        Self {
            _rt: rt,
            server,
            home,
        }
    }

    /// A new case where Landlock is available ([`landlock`]: else `None`, SKIPPED for `test`).
    pub(crate) fn landlocked(test: &str) -> Option<Self> {
        landlock(test).then(Self::new)
    }

    pub(crate) fn work(&self) -> PathBuf {
        self.home.path().join("work")
    }

    /// `subagents ARGS` run from the workspace (so its `subagents.toml` is found there).
    pub(crate) fn cmd(&self) -> Command {
        let mut cmd = subagents_in(self.home.path());
        cmd.current_dir(self.work());
        cmd
    }

    /// `subagents run "do it" --model ... --workspace work` plus `extra`, not started yet.
    pub(crate) fn run_cmd(&self, extra: &[&str]) -> Command {
        let model = self.server.openai_model("m");
        let mut cmd = self.cmd();
        cmd.args(["run", "do it", "--model", &model, "--workspace"])
            .arg(self.work())
            .args(extra);
        cmd
    }

    /// [`run_cmd`](Self::run_cmd), run.
    pub(crate) fn run(&self, extra: &[&str]) -> assert_cmd::assert::Assert {
        self.run_cmd(extra).assert()
    }

    /// `subagents trust` in the workspace; what it printed.
    pub(crate) fn trust(&self) -> String {
        let out = self.cmd().arg("trust").assert().success();
        String::from_utf8_lossy(&out.get_output().stdout).into_owned()
    }

    /// The tool results the model got in its last request, in order.
    pub(crate) fn last_results(&self) -> Vec<String> {
        self.server
            .requests()
            .last()
            .map(|r| r.tool_results())
            .unwrap_or_default()
    }
}

/// A runtime and a scripted model server started on it (keep the runtime while the server is
/// used).
pub(crate) fn scripted() -> (
    tokio::runtime::Runtime,
    subagent_testkit::ScriptedModelServer,
) {
    let rt = rt();
    let server = rt.block_on(subagent_testkit::ScriptedModelServer::start());
    (rt, server)
}

/// A command run to its end that must have succeeded (its stderr is shown when not).
pub(crate) trait OutputOk {
    /// Runs it, asserts it exited 0, and gives what it printed.
    fn output_ok(&mut self) -> std::process::Output;

    /// [`output_ok`](Self::output_ok), its stdout as JSON (`--json`).
    fn json_ok(&mut self) -> Value {
        json_of(&self.output_ok())
    }
}

fn succeeded(out: std::io::Result<std::process::Output>) -> std::process::Output {
    let out = out.expect("the command runs");
    assert!(
        out.status.success(),
        "{:?}: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

impl OutputOk for Command {
    fn output_ok(&mut self) -> std::process::Output {
        succeeded(self.output())
    }
}

impl OutputOk for std::process::Command {
    fn output_ok(&mut self) -> std::process::Output {
        succeeded(self.output())
    }
}

/// The schema of the typed calls: an integer `answer` and a string `source`.
pub(crate) fn report_schema() -> Value {
    serde_json::json!({
        "type": "object",
        "properties": {"answer": {"type": "integer"}, "source": {"type": "string"}},
        "required": ["answer", "source"],
        "additionalProperties": false
    })
}

/// [`scripted`] and a temporary directory (a home, a workspace or a served root).
pub(crate) fn scripted_in_temp() -> (
    tokio::runtime::Runtime,
    subagent_testkit::ScriptedModelServer,
    tempfile::TempDir,
) {
    let (rt, server) = scripted();
    (rt, server, tempfile::tempdir().expect("temp dir"))
}

/// A command's stdout then its stderr, as one text.
pub(crate) fn all_output(out: &std::process::Output) -> String {
    format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The one line of `text` that contains `needle` (fails when there are none or several).
pub(crate) fn the_line_with<'a>(text: &'a str, needle: &str) -> &'a str {
    let found: Vec<&str> = text.lines().filter(|l| l.contains(needle)).collect();
    assert_eq!(found.len(), 1, "one line with {needle:?}: {text}");
    found[0]
}

/// The JSON values of `text`, one a line (`stream-json`).
pub(crate) fn json_lines(text: &str) -> Vec<Value> {
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not a JSON line ({e}): {l}")))
        .collect()
}

/// `cmd` run, which succeeded; its stdout as JSON (`--json`).
pub(crate) fn ok_json(cmd: &mut Command) -> Value {
    json_stdout(cmd.assert().success())
}

/// The one request `server` got, and its body as text.
pub(crate) fn only_request(
    server: &subagent_testkit::ScriptedModelServer,
) -> (subagent_testkit::RecordedRequest, String) {
    let mut reqs = server.requests();
    assert_eq!(reqs.len(), 1, "one request: {reqs:#?}");
    let req = reqs.remove(0);
    let body = req.body.to_string();
    (req, body)
}

/// Posts the JSON-RPC `body` to the A2A endpoint `url` (A2A 1.0); the JSON answer.
pub(crate) async fn a2a_post(url: &str, body: &Value) -> Value {
    reqwest::Client::new()
        .post(url)
        .header("A2A-Version", "1.0")
        .json(body)
        .send()
        .await
        .expect("the A2A request is answered")
        .json()
        .await
        .expect("a JSON answer")
}

/// A command's stdout as JSON; a failure to parse shows its stdout and stderr.
pub(crate) fn json_of(out: &std::process::Output) -> Value {
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("JSON on stdout ({e}):\n{}", all_output(out)))
}

/// A scripted model server on `rt`, a temporary home, and the config in it that names the
/// server's `child-model` `child` ([`child_model_config`]).
pub(crate) fn child_model_home(
    rt: &tokio::runtime::Runtime,
) -> (
    subagent_testkit::ScriptedModelServer,
    tempfile::TempDir,
    PathBuf,
) {
    let server = rt.block_on(subagent_testkit::ScriptedModelServer::start());
    let home = tempfile::tempdir().expect("home");
    let config = child_model_config(home.path(), &server);
    (server, home, config)
}

/// Asserts that `text` contains each of `parts` (showing `text` when not).
#[track_caller]
pub(crate) fn assert_has(text: &str, parts: &[&str]) {
    for part in parts {
        assert!(text.contains(part), "{part:?} missing from: {text}");
    }
}

/// True where Landlock is available; otherwise prints SKIPPED for `test` with the reason.
pub(crate) fn landlock(test: &str) -> bool {
    match subagents::tools::landlock_support() {
        subagents::tools::LandlockSupport::Unavailable(why) => {
            eprintln!("SKIPPED: {test}: Landlock is unavailable ({why})");
            false
        }
        _ => true,
    }
}

/// The stderr of a command that ran and exited with `code` (its output is shown when not).
#[track_caller]
pub(crate) fn stderr_on_exit(out: std::io::Result<std::process::Output>, code: i32) -> String {
    let out = out.expect("the command runs");
    assert_eq!(out.status.code(), Some(code), "{}", all_output(&out));
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Scripts the README's first run up to the calculator's Bash call: the main model delegates
/// "17 * 23" to `calculator`, which runs `python3 -c 'print(17 * 23)'`.
pub(crate) fn script_calculator_call(script: &subagent_testkit::Script) {
    script.push(subagent_testkit::Reply::tool_calls(vec![(
        "Task",
        serde_json::json!({"subagent_type": "calculator", "description": "multiply", "prompt": "17 * 23"}),
    )]));
    script.push(subagent_testkit::Reply::tool_calls(vec![(
        "Bash",
        serde_json::json!({"command": "python3 -c 'print(17 * 23)'"}),
    )]));
}

/// The Python interpreter named by the variable `var`, or else the venv `target/py/VENV` that
/// `setup` makes; fails saying what to run when it is missing (`needs`: what it must have).
pub(crate) fn venv_python(var: &str, venv: &str, needs: &str, setup: &str) -> PathBuf {
    let path = std::env::var_os(var).map(PathBuf::from).unwrap_or_else(|| {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../target/py")
            .join(venv)
            .join("bin/python")
    });
    assert!(
        path.exists(),
        "no Python with {needs} at {} (run {setup} or set {var})",
        path.display()
    );
    path
}
