//! Issue 32: a background `Task` on an MCP agent whose server runs the call as a task
//! (SEP-2663) survives the restart of the `subagents` process that started it. The server is
//! an rmcp `TaskManager` server over streamable HTTP on 127.0.0.1 in this test process, so it
//! outlives the `subagents` processes; the first is killed with SIGKILL while the server's task
//! still works, and a new one (same home, so the same store) follows the task by its stored
//! handle (`tasks resume`, no second `tools/call`) or cancels it there (`tasks stop --mcp`).

use crate::common;

use std::process::{Child, Output, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use common::{Worker, process_in, rt};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CancelTaskParams, ContentBlock,
    CreateTaskResult, GetTaskParams, GetTaskResult, JsonObject, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::task_manager::{TaskExit, TaskManager, TaskOptions};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::Value;

/// What the server saw.
#[derive(Default)]
pub(crate) struct Seen {
    /// `tools/call` requests.
    pub(crate) calls: AtomicUsize,
    /// `tasks/get` requests.
    gets: AtomicUsize,
    /// `tasks/cancel` requests.
    cancels: AtomicUsize,
    /// Jobs that ended because they were cancelled.
    cancelled: AtomicUsize,
}

/// A server whose one tool, `job`, runs as a task that works until the test releases it (then
/// answers `job done: PROMPT`) or until it is cancelled. Its tasks live in the server, across
/// client sessions.
#[derive(Clone)]
pub(crate) struct JobServer {
    tasks: TaskManager,
    pub(crate) seen: Arc<Seen>,
    pub(crate) release: Arc<tokio::sync::watch::Sender<bool>>,
}

impl ServerHandler for JobServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tasks()
                .build(),
        )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(common::mcp_http::prompt_tool(
            "job",
            "A long job, run as a task.",
        ))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        self.seen.calls.fetch_add(1, Ordering::SeqCst);
        let args: JsonObject = request.arguments.unwrap_or_default();
        let prompt = args
            .get("prompt")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let seen = self.seen.clone();
        let mut release = self.release.subscribe();
        let task = self.tasks.spawn(
            TaskOptions::new()
                .with_poll_interval_ms(100)
                .with_status_message("working"),
            move |cx| {
                Box::pin(async move {
                    tokio::select! {
                        () = cx.cancelled() => {
                            seen.cancelled.fetch_add(1, Ordering::SeqCst);
                            Err(TaskExit::Cancelled)
                        }
                        _ = release.wait_for(|r| *r) => Ok(CallToolResult::success(vec![
                            ContentBlock::text(format!("job done: {prompt}")),
                        ])),
                    }
                })
            },
        );
        Ok(CreateTaskResult::new(task).into())
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        self.seen.gets.fetch_add(1, Ordering::SeqCst);
        Ok(GetTaskResult::new(self.tasks.get_task(&request.task_id)?))
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.seen.cancels.fetch_add(1, Ordering::SeqCst);
        self.tasks.cancel_task(&request.task_id)
    }
}

impl JobServer {
    /// Waits (bounded) until its one job has ended cancelled.
    fn ended_cancelled(&self) {
        eventually("the server's job to end cancelled", || {
            (self.seen.cancelled.load(Ordering::SeqCst) == 1).then_some(())
        });
    }
}

/// Serves a [`JobServer`] at `http://127.0.0.1:PORT/mcp` on `rt`; returns it and the URL.
pub(crate) fn start_server(rt: &tokio::runtime::Runtime) -> (JobServer, String) {
    let (release, _) = tokio::sync::watch::channel(false);
    let server = JobServer {
        tasks: TaskManager::default(),
        seen: Arc::new(Seen::default()),
        release: Arc::new(release),
    };
    let url = common::mcp_http::serve(rt, server.clone());
    (server, url)
}

/// Polls `f` every 100 ms until it gives a value (at most 30 s).
fn eventually<T>(what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(Instant::now() < deadline, "{what}: not within 30 s");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// `subagents ARGS` in `home` to its end (at most 60 s; killed after that).
fn run(home: &std::path::Path, args: &[&str]) -> Output {
    finish(spawn(home, args))
}

/// Spawns `subagents ARGS` in `home`, its output piped.
fn spawn(home: &std::path::Path, args: &[&str]) -> Child {
    process_in(home)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn subagents")
}

/// `tasks stop ARGS... --json`, which must succeed: its JSON and its `note`.
fn stop_note(home: &std::path::Path, args: &[&str]) -> (Value, String) {
    let mut all = vec!["tasks", "stop"];
    all.extend_from_slice(args);
    all.push("--json");
    let out = run(home, &all);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let shown: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let note = shown["note"].as_str().unwrap_or_default().to_string();
    (shown, note)
}

/// Waits for `child` (at most 60 s; killed after that) and returns its output.
fn finish(mut child: Child) -> Output {
    let deadline = Instant::now() + Duration::from_secs(60);
    while child.try_wait().expect("try_wait").is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            let out = child.wait_with_output().expect("output");
            panic!(
                "subagents did not end within 60 s: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.wait_with_output().expect("output")
}

/// The store's background tasks, as `tasks list --json` prints them.
fn listed(home: &std::path::Path) -> Vec<Value> {
    let out = run(home, &["tasks", "list", "--json"]);
    assert!(out.status.success(), "{}", common::all_output(&out));
    serde_json::from_slice::<Vec<Value>>(&out.stdout).unwrap_or_default()
}

/// Starts `task builder PROMPT --background` on the MCP agent `spec` in `home` (it returns at
/// once, the task running on in a process of its own), waits until the store holds its session
/// (the server's task handle), kills that process with SIGKILL and returns the task id and
/// session.
fn start_and_kill(home: &std::path::Path, spec: &str, server: &JobServer) -> (String, String) {
    let out = process_in(home)
        .args([
            "task",
            "builder",
            "build the thing",
            "--background",
            "--mcp",
            spec,
        ])
        .stdin(Stdio::null())
        .output()
        .expect("subagents task --background");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let first = Worker::named_in(&stderr);
    let (task_id, session) = eventually("the task's handle in the store", || {
        // A process that ended early (it should work until it is killed) fails the test.
        assert!(
            first.running(),
            "the background process ended early: {stderr}"
        );
        listed(home).into_iter().find_map(|t| {
            let session = t["session_id"].as_str()?.to_string();
            session.starts_with("mcp-task:").then(|| {
                (
                    t["task_id"].as_str().unwrap_or_default().to_string(),
                    session,
                )
            })
        })
    });
    assert_eq!(server.seen.calls.load(Ordering::SeqCst), 1);
    first.kill_and_wait();
    let record = record(home, &task_id);
    assert_eq!(record["status"], "interrupted", "{record}");
    assert_eq!(record["session_id"], session.as_str(), "{record}");
    (task_id, session)
}

/// The job server, a home, and the MCP agent `builder` on the server's `job` tool.
struct Rig {
    _rt: tokio::runtime::Runtime,
    server: JobServer,
    home: tempfile::TempDir,
    spec: String,
}

impl Rig {
    fn new() -> Self {
        let rt = rt();
        let (server, url) = start_server(&rt);
        Self {
            _rt: rt,
            server,
            home: tempfile::tempdir().expect("home"),
            spec: format!("{url}#tool=job&name=builder"),
        }
    }

    /// [`start_and_kill`] on this rig: the task id and its stored session.
    fn start_and_kill(&self) -> (String, String) {
        start_and_kill(self.home.path(), &self.spec, &self.server)
    }

    /// [`spawn_following`] `subagents ARGS` in this rig's home, from the gets seen so far.
    fn follow(&self, args: &[&str]) -> Child {
        let gets = self.server.seen.gets.load(Ordering::SeqCst);
        spawn_following(self.home.path(), args, &self.server, gets)
    }
}

/// Spawns `subagents ARGS` in `home` (output piped) and waits until it asks `server` about its
/// task once more than the `gets` seen before.
fn spawn_following(
    home: &std::path::Path,
    args: &[&str],
    server: &JobServer,
    gets: usize,
) -> Child {
    let child = spawn(home, args);
    eventually("the process to follow the server's task", || {
        (server.seen.gets.load(Ordering::SeqCst) > gets).then_some(())
    });
    child
}

/// Sends `child` SIGINT (Ctrl-C) and waits for it: it exited 130; its stderr.
fn interrupted(child: Child) -> String {
    let sent = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill -INT");
    assert!(sent.success());
    let out = finish(child);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    stderr
}

/// The store's record of `task_id`.
fn record(home: &std::path::Path, task_id: &str) -> Value {
    listed(home)
        .into_iter()
        .find(|t| t["task_id"] == task_id)
        .expect("the task is still listed")
}

#[test]
fn a_background_mcp_task_survives_a_restart_and_resumes_by_its_stored_handle() {
    let r = Rig::new();
    let (task_id, _session) = r.start_and_kill();
    assert_eq!(r.server.seen.cancels.load(Ordering::SeqCst), 0);

    // A new process follows the server's task by its handle; the job ends while it follows.
    let resumed = r.follow(&[
        "tasks", "resume", &task_id, "go on", "--mcp", &r.spec, "--json",
    ]);
    r.server.release.send_replace(true);
    let out = finish(resumed);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("job done: build the thing"),
        "the server's result: {stdout}"
    );
    assert_eq!(
        r.server.seen.calls.load(Ordering::SeqCst),
        1,
        "no second tools/call reached the server"
    );
    assert_eq!(r.server.seen.cancelled.load(Ordering::SeqCst), 0);
}

#[test]
fn stopping_an_mcp_task_after_a_restart_cancels_it_on_the_server() {
    let r = Rig::new();
    let (task_id, session) = r.start_and_kill();

    // Without the agent, the stop cannot reach the server: it says so.
    let (shown, note) = stop_note(r.home.path(), &[&task_id]);
    assert!(
        note.contains("may still run it") && note.contains("--mcp"),
        "{shown}"
    );
    assert_eq!(r.server.seen.cancels.load(Ordering::SeqCst), 0);

    // With it, `tasks/cancel` reaches the server and the job ends cancelled.
    let (shown, note) = stop_note(r.home.path(), &[&task_id, "--mcp", &r.spec]);
    let remote = session.trim_start_matches("mcp-task:");
    assert!(
        note.contains("cancelled on its MCP server") && note.contains(remote),
        "{shown}"
    );
    assert_eq!(r.server.seen.cancels.load(Ordering::SeqCst), 1);
    r.server.ended_cancelled();
    assert_eq!(r.server.seen.calls.load(Ordering::SeqCst), 1);
}

/// Ctrl-C during a foreground `tasks resume` of an MCP task: the resumed run is cancelled as
/// Ctrl-C cancels a foreground `task`, and so is the task on its server (acknowledged before
/// the process ends); stderr says so and how to look at it again; exit 130; the store still
/// holds the task, interrupted, with its session.
#[test]
fn ctrl_c_during_tasks_resume_of_an_mcp_task_cancels_it_on_the_server_and_exits_130() {
    let r = Rig::new();
    let (task_id, session) = r.start_and_kill();

    let resumed = r.follow(&["tasks", "resume", &task_id, "go on", "--mcp", &r.spec]);
    let stderr = interrupted(resumed);
    // The process ended after the server acknowledged the cancel.
    assert!(
        r.server.seen.cancels.load(Ordering::SeqCst) >= 1,
        "{stderr}"
    );
    r.server.ended_cancelled();
    assert!(
        stderr.contains("cancelled on its MCP server") && stderr.contains(&task_id),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!("subagents tasks show {task_id}")),
        "{stderr}"
    );
    assert_eq!(r.server.seen.calls.load(Ordering::SeqCst), 1);
    let record = record(r.home.path(), &task_id);
    assert_eq!(record["session_id"], session.as_str(), "{record}");
}

/// Ctrl-C during a foreground `task` on an MCP agent whose server runs the call as a task:
/// the server's task is cancelled with `tasks/cancel`, acknowledged before the process ends
/// (the executor waits for it, bounded), and the command exits 130.
#[test]
fn ctrl_c_during_a_foreground_mcp_task_cancels_it_on_the_server_before_the_process_ends() {
    let r = Rig::new();

    let child = r.follow(&["task", "builder", "build the thing", "--mcp", &r.spec]);
    let stderr = interrupted(child);
    // Counted when the server handled it: before the process ended, not after.
    assert_eq!(r.server.seen.cancels.load(Ordering::SeqCst), 1, "{stderr}");
    r.server.ended_cancelled();
    assert_eq!(r.server.seen.calls.load(Ordering::SeqCst), 1);
}
