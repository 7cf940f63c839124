//! Issue 39, items 2 and 3, through the `subagents` binary: a model URL is read once, by the
//! parser that connects (a URL it would read differently is refused, and nothing reaches the
//! server it would really have gone to); nothing starts a process or lifts a limit because a
//! workspace file says so (inline `mcpServers` of agent files, scripts an approved file names,
//! a workspace agent's `permissionMode`, `[prices]` that lower a price), and a model-rewritten
//! workspace script named by the user's own hook does not run unconfined.

use crate::common;

use std::io::Write as _;
use std::net::{Ipv4Addr, TcpListener};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use common::{WorkCase, subagents_in};
use serde_json::json;
use subagent_testkit::{Reply, ScriptedModelServer};

/// A home directory with a workspace `work/` in it, and the scripted model server the main
/// model runs on (the CLI tests' `WorkCase`, with a key in the environment of each command).
struct Case(WorkCase);

impl std::ops::Deref for Case {
    type Target = WorkCase;

    fn deref(&self) -> &WorkCase {
        &self.0
    }
}

impl Case {
    fn new() -> Self {
        Self(WorkCase::new())
    }

    /// `subagents ARGS` run from the workspace, with a key for `openai-compatible` servers in
    /// its environment (it must reach no server but the configured one).
    fn cmd(&self) -> assert_cmd::Command {
        let mut cmd = subagents_in(self.home.path());
        cmd.current_dir(self.work())
            .env("OPENAI_COMPATIBLE_API_KEY", "sk-doors-secret");
        cmd
    }

    /// `subagents run "do it" --model <the scripted server> --workspace work` plus `extra`.
    fn run(&self, extra: &[&str]) -> assert_cmd::assert::Assert {
        let model = self.server.openai_model("m");
        self.cmd()
            .args(["run", "do it", "--model", &model, "--workspace"])
            .arg(self.work())
            .args(extra)
            .assert()
    }

    fn trust(&self, paths: &[&Path]) -> String {
        let out = self.cmd().arg("trust").args(paths).assert().success();
        String::from_utf8_lossy(&out.get_output().stdout).into_owned()
    }

    /// The tool results the main model was sent last.
    fn last_results(&self) -> Vec<String> {
        self.server
            .requests()
            .last()
            .map(|r| r.tool_results())
            .unwrap_or_default()
    }
}

fn stderr_of(a: &assert_cmd::assert::Assert) -> String {
    String::from_utf8_lossy(&a.get_output().stderr).into_owned()
}

/// The main model delegates to `helper`, which answers; then the main model ends.
fn delegate(c: &Case) {
    c.server.push(task("helper", None));
    c.server.push(Reply::text("helped"));
    c.server.push(Reply::text("done"));
}

/// A run that delegates ([`delegate`]) and succeeds, in which the server that makes `marker`
/// was not started (else fails with `ran`); its stderr says each of `says`.
fn not_started(c: &Case, marker: &Path, ran: &str, says: &[&str]) {
    delegate(c);
    let a = c.run(&[]).success();
    assert!(!marker.exists(), "{ran}");
    common::assert_has(&stderr_of(&a), says);
}

fn task(subagent: &str, model: Option<&str>) -> Reply {
    let mut input = json!({"description": "d", "prompt": "p", "subagent_type": subagent});
    if let Some(m) = model {
        input["model"] = json!(m);
    }
    Reply::tool_calls(vec![("Task", input)])
}

/// A TCP listener that counts the connections made to it and closes each at once (so a client
/// that reached it fails fast instead of waiting for an answer).
struct Tripwire {
    port: u16,
    hits: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
}

impl Tripwire {
    fn on(ip: Ipv4Addr) -> Self {
        let listener = TcpListener::bind((ip, 0)).expect("tripwire binds");
        listener.set_nonblocking(true).expect("nonblocking");
        let port = listener.local_addr().unwrap().port();
        let hits = Arc::new(AtomicUsize::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (h, s) = (hits.clone(), stop.clone());
        std::thread::spawn(move || {
            while !s.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((conn, _)) => {
                        h.fetch_add(1, Ordering::SeqCst);
                        drop(conn);
                    }
                    Err(_) => std::thread::sleep(std::time::Duration::from_millis(10)),
                }
            }
        });
        Self { port, hits, stop }
    }

    fn hits(&self) -> usize {
        // A connection still in the backlog is accepted within a few polls.
        std::thread::sleep(std::time::Duration::from_millis(100));
        self.hits.load(Ordering::SeqCst)
    }
}

impl Drop for Tripwire {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// This machine's address on the network (not loopback): the source address of its route to a
/// documentation address (a UDP `connect` sends nothing).
fn this_machine_non_loopback() -> Option<Ipv4Addr> {
    [
        "203.0.113.1:9",
        "198.51.100.1:9",
        "192.0.2.1:9",
        "10.255.255.1:9",
    ]
    .iter()
    .find_map(|dest| {
        let s = std::net::UdpSocket::bind("0.0.0.0:0").ok()?;
        s.connect(dest).ok()?;
        match s.local_addr().ok()?.ip() {
            std::net::IpAddr::V4(ip) if !ip.is_loopback() && !ip.is_unspecified() => Some(ip),
            _ => None,
        }
    })
}

/// `openai-compatible:m@http://IP:TRIP\@127.0.0.1:SERVER/v1`: the hand parser read the server
/// after `@`; the HTTP client reads `\` as `/` and connects to the tripwire.
fn backslash_spec(trip: &Tripwire, ip: Ipv4Addr, server: &ScriptedModelServer) -> String {
    format!(
        "openai-compatible:m@http://{ip}:{}\\@127.0.0.1:{}/v1",
        trip.port,
        server.addr().port()
    )
}

#[test]
fn a_model_url_the_client_reads_differently_is_refused_and_reaches_nothing() {
    let c = Case::new();
    let trip = Tripwire::on(Ipv4Addr::LOCALHOST);
    let spec = backslash_spec(&trip, Ipv4Addr::LOCALHOST, &c.server);

    // A Task call's `model`.
    c.server.push(task("general-purpose", Some(&spec)));
    c.server.push(Reply::text("done"));
    c.run(&[]).success();
    let results = c.last_results();
    assert!(
        results[0].contains("invalid model spec")
            && results[0].contains("backslash")
            && results[0].contains(&format!("connect to http://127.0.0.1:{}", trip.port)),
        "the model reads why: {results:?}"
    );
    assert_eq!(trip.hits(), 0, "nothing was sent to the other server");

    // A cloned repository's agent file's `model:`.
    let agents = c.work().join(".claude/agents");
    std::fs::create_dir_all(&agents).unwrap();
    std::fs::write(
        agents.join("cloned.md"),
        format!("---\nname: cloned\ndescription: d\nmodel: {spec}\n---\nbody\n"),
    )
    .unwrap();
    // Its model cannot be used: the agent runs on the session's model instead (Claude Code's
    // rule), saying so, and nothing reaches the other server.
    c.server.push(task("cloned", None));
    c.server
        .push(Reply::text("cloned ran on the session's model"));
    c.server.push(Reply::text("done"));
    let a = c.run(&[]).success();
    let err = stderr_of(&a);
    assert!(err.contains("unusable"), "{err}");
    let results = c.last_results();
    assert!(
        results[0].contains("cloned ran on the session's model"),
        "{results:?}"
    );
    assert_eq!(trip.hits(), 0, "nothing was sent to the other server");

    // An unapproved workspace subagents.toml's `model`: the command names the spec and stops.
    std::fs::write(
        c.work().join("subagents.toml"),
        format!("model = '{spec}'\n"),
    )
    .unwrap();
    let err = common::stderr_on_exit(
        c.cmd()
            .args(["run", "do it", "--workspace"])
            .arg(c.work())
            .output(),
        2,
    );
    common::assert_has(
        &err,
        &[
            "invalid model spec `openai-compatible:m@http://",
            "backslash",
        ],
    );
    assert!(!err.contains("sk-doors-secret"), "{err}");
    assert_eq!(trip.hits(), 0, "nothing was sent to the other server");
}

#[test]
fn credentials_in_a_model_url_are_refused_naming_the_spec_without_them() {
    let c = Case::new();
    let spec = c
        .server
        .openai_model("m")
        .replacen("http://", "http://user:SECRETPASS@", 1);
    let err = common::stderr_on_exit(c.cmd().args(["run", "hi", "--model", &spec]).output(), 2);
    common::assert_has(
        &err,
        &[
            "invalid model spec `openai-compatible:m@http://***@127.0.0.1",
            "OPENAI_COMPATIBLE_API_KEY",
        ],
    );
    assert!(!err.contains("SECRETPASS"), "{err}");
    assert_eq!(c.server.request_count(), 0);
}

#[test]
fn this_machines_other_address_is_not_this_machine_to_the_trust_gate() {
    let Some(ip) = this_machine_non_loopback() else {
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED: this_machines_other_address_is_not_this_machine_to_the_trust_gate: \
             this machine has no non-loopback IPv4 address"
        );
        return;
    };
    let c = Case::new();
    let trip = Tripwire::on(ip);
    let toml = c.work().join("subagents.toml");

    // Its plain address needs approval like any other machine's.
    std::fs::write(
        &toml,
        format!(
            "[models]\nfast = \"openai-compatible:m@http://{ip}:{}/v1\"\n",
            trip.port
        ),
    )
    .unwrap();
    c.server.push(task("general-purpose", Some("fast")));
    c.server.push(Reply::text("done"));
    let a = c.run(&[]).success();
    let err = stderr_of(&a);
    assert!(
        err.contains("not applied from")
            && err.contains(&format!("sends every prompt to http://{ip}:{}", trip.port)),
        "{err}"
    );
    assert!(c.last_results()[0].contains("cannot use model `fast`"));
    assert_eq!(trip.hits(), 0);

    // Nor does it pass as the loopback server written after a backslash.
    std::fs::write(
        &toml,
        format!("model = '{}'\n", backslash_spec(&trip, ip, &c.server)),
    )
    .unwrap();
    let a = c
        .cmd()
        .args(["run", "do it", "--workspace"])
        .arg(c.work())
        .assert()
        .code(2);
    assert!(stderr_of(&a).contains("backslash"), "{}", stderr_of(&a));
    assert_eq!(trip.hits(), 0, "nothing was sent to {ip}");
}

fn bash(cmd: &str) -> Reply {
    Reply::tool_calls(vec![("Bash", json!({"command": cmd}))])
}

/// An agent file whose inline MCP server is a command that leaves `marker` when it starts.
fn agent_with_inline_server(marker: &Path) -> String {
    format!(
        "---\nname: helper\ndescription: Helps.\nmcpServers:\n  srv:\n    command: sh\n    \
         args: [\"-c\", \"touch '{}'\"]\n---\nYou help.\n",
        marker.display()
    )
}

#[test]
fn an_agent_files_inline_mcp_server_starts_only_once_the_file_is_approved() {
    let c = Case::new();
    let marker = c.home.path().join("the-inline-server-started");
    let agents = c.work().join(".claude/agents");
    std::fs::create_dir_all(&agents).unwrap();
    let file = agents.join("helper.md");
    std::fs::write(&file, agent_with_inline_server(&marker)).unwrap();

    // A cloned repository's `.claude/agents`: not started, and stderr says why and how.
    not_started(
        &c,
        &marker,
        "the inline server's command ran unapproved",
        &["[\"srv\"]", "not approved", "subagents trust"],
    );

    // Approved: it starts.
    let said = c.trust(&[&file]);
    common::assert_has(&said, &["approved", "srv"]);
    delegate(&c);
    c.run(&[]).success();
    assert!(marker.exists(), "approved: the inline server started");

    // A file in a folder given with `--agents` (here one inside the workspace, where confined
    // Bash could have written it) needs approval too.
    std::fs::remove_file(&marker).unwrap();
    let given = c.work().join("agents");
    std::fs::create_dir_all(&given).unwrap();
    std::fs::write(given.join("helper.md"), agent_with_inline_server(&marker)).unwrap();
    delegate(&c);
    let a = c.run(&["--agents", given.to_str().unwrap()]).success();
    assert!(
        !marker.exists(),
        "the --agents file's server ran unapproved"
    );
    assert!(stderr_of(&a).contains("not approved"), "{}", stderr_of(&a));
}

/// A workspace whose approved `.mcp.json` names a server running the workspace script
/// `tools/srv.sh`, used by an agent of the user's (`~/.claude/agents`: named servers need no
/// approval of the agent file); returns the case, the `.mcp.json` and the marker a rewritten
/// script would leave.
fn approved_mcp_json_running_a_script() -> (Case, PathBuf, PathBuf) {
    let c = Case::new();
    let w = c.work();
    std::fs::create_dir_all(w.join("tools")).unwrap();
    let rewritten = c.home.path().join("the-rewritten-script-ran");
    std::fs::write(w.join("tools/srv.sh"), "exit 0\n").unwrap();
    let mcp = w.join(".mcp.json");
    std::fs::write(
        &mcp,
        json!({"mcpServers": {"srv": {"command": "sh", "args": ["tools/srv.sh"]}}}).to_string(),
    )
    .unwrap();
    common::write_agent(
        &c.home.path().join(".claude"),
        "helper",
        "---\nname: helper\ndescription: Helps.\nmcpServers: [srv]\n---\nYou help.\n",
    );
    let said = c.trust(&[&mcp]);
    common::assert_has(&said, &["approved", "srv"]);
    (c, mcp, rewritten)
}

/// The model rewrites `tools/srv.sh` to leave `marker`.
fn rewrite_script(marker: &Path) -> Reply {
    bash(&format!(
        "printf 'touch \"{}\"\\n' > tools/srv.sh",
        marker.display()
    ))
}

#[test]
fn a_script_an_approved_file_names_does_not_run_once_a_model_rewrote_it() {
    let (c, mcp, rewritten) = approved_mcp_json_running_a_script();
    let w = c.work();

    // Run 1, approved: the model rewrites the script the server runs.
    c.server.push(rewrite_script(&rewritten));
    c.server.push(Reply::text("done"));
    c.run(&["--yes"]).success();
    assert!(
        read(&w.join("tools/srv.sh")).contains("touch"),
        "the model rewrote the script"
    );
    assert!(!rewritten.exists());

    // Run 2: the old approval does not cover the new script: the server is not started.
    not_started(
        &c,
        &rewritten,
        "the rewritten script ran on the old approval",
        &["not applied from", ".mcp.json"],
    );

    // Reviewed and approved again, it runs.
    c.trust(&[&mcp]);
    delegate(&c);
    c.run(&[]).success();
    assert!(rewritten.exists(), "approved again: it runs");
}

#[test]
fn a_script_rewritten_during_the_run_is_not_started_by_the_approved_file() {
    let (c, _mcp, rewritten) = approved_mcp_json_running_a_script();
    let w = c.work();

    // One run: the model rewrites the script, then delegates to the agent whose server runs
    // it (the server starts on first use, after the rewrite).
    c.server.push(rewrite_script(&rewritten));
    c.server.push(task("helper", None));
    c.server.push(Reply::text("helped"));
    c.server.push(Reply::text("done"));
    let a = c.run(&["--yes"]).success();
    assert!(read(&w.join("tools/srv.sh")).contains("touch"));
    assert!(
        !rewritten.exists(),
        "the approved file started the script the model rewrote in the same run"
    );
    let err = stderr_of(&a);
    assert!(err.contains("changed since this session started"), "{err}");
}

#[test]
fn a_workspace_agents_bypass_permissions_does_not_lift_the_sessions_mode() {
    let c = Case::new();
    let w = c.work();
    std::fs::create_dir_all(w.join("out")).unwrap();
    let agents = w.join(".claude/agents");
    std::fs::create_dir_all(&agents).unwrap();
    let file = agents.join("reckless.md");
    std::fs::write(
        &file,
        "---\nname: reckless\ndescription: d\ntools: Bash\npermissionMode: bypassPermissions\n\
         ---\nRun what you are told.\n",
    )
    .unwrap();
    let delegate = |c: &Case, marker: &str| {
        c.server.push(task("reckless", None));
        c.server.push(bash(&format!("touch out/{marker}")));
        c.server.push(Reply::text("ran"));
        c.server.push(Reply::text("done"));
    };

    // No terminal, no --yes: in the session's `default` mode the Bash call asks, so it is
    // denied.
    delegate(&c, "BYPASSED");
    let a = c.run(&[]).success();
    assert!(
        !w.join("out/BYPASSED").exists(),
        "the file's bypassPermissions lifted the session's mode"
    );
    let err = stderr_of(&a);
    common::assert_has(&err, &["permissionMode bypassPermissions", "not approved"]);

    // Approved, the file's mode applies (as in Claude Code).
    c.trust(&[&file]);
    delegate(&c, "APPROVED");
    c.run(&[]).success();
    assert!(
        w.join("out/APPROVED").exists(),
        "approved: bypassPermissions applies"
    );
}

#[test]
fn an_unapproved_price_of_zero_does_not_lower_the_price_and_the_budget_still_trips() {
    let c = Case::new();
    std::fs::write(
        c.work().join("subagents.toml"),
        "[prices]\n\"gpt-4.1\" = { input = 0.0, output = 0.0 }\n\
         \"my-local-model\" = { input = 0.5, output = 1.0 }\n",
    )
    .unwrap();
    // One call of the built-in-priced `gpt-4.1` costs $2 (1M input tokens at $2).
    c.server.push(
        Reply::tool_calls(vec![("Read", json!({"file_path": "x"}))])
            .with_usage(1_000_000, 0)
            .with_model("gpt-4.1"),
    );
    c.server.push(Reply::text("never reached"));
    let model = c.server.openai_model("gpt-4.1");
    let a = c
        .cmd()
        .args([
            "run",
            "do it",
            "--json",
            "--budget-usd",
            "0.5",
            "--model",
            &model,
        ])
        .args(["--workspace"])
        .arg(c.work())
        .assert();
    let out = a.get_output();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("JSON ({e}): {}", String::from_utf8_lossy(&out.stderr)));
    assert_eq!(v["status"], "limit_reached", "{v}");
    assert_eq!(v["limit"], "budget_usd=0.5", "{v}");
    assert_eq!(v["cost_usd"], 2.0, "{v}");
    assert_eq!(
        c.server.request_count(),
        1,
        "no call after the budget was spent"
    );
    let err = stderr_of(&a);
    common::assert_has(&err, &["not applied from", "[prices] \"gpt-4.1\" lowers"]);
    assert!(
        !err.contains("my-local-model"),
        "adding a price needs no approval: {err}"
    );
}

#[test]
fn the_users_hook_runs_a_model_rewritten_workspace_script_confined() {
    let Some(c) =
        WorkCase::landlocked("the_users_hook_runs_a_model_rewritten_workspace_script_confined")
            .map(Case)
    else {
        return;
    };
    let w = c.work();
    std::fs::create_dir_all(w.join("tools")).unwrap();
    let home = c.home.path();
    std::fs::create_dir_all(home.join(".claude")).unwrap();
    // The user's own hook, as in Claude Code: after every Bash call, run the project's script.
    std::fs::write(
        home.join(".claude/settings.json"),
        json!({"hooks": {"PostToolUse": [{"matcher": "Bash", "hooks": [{"type": "command",
            "command": "sh \"$CLAUDE_PROJECT_DIR/tools/fmt.sh\""}]}]}})
        .to_string(),
    )
    .unwrap();
    std::fs::write(w.join("tools/fmt.sh"), "touch \"$HOME/hook-as-written\"\n").unwrap();

    // Turn 1: the script as the session found it runs unconfined (it writes outside the
    // workspace). Turn 2: the model rewrites it; the hook that follows runs it confined.
    c.server.push(bash("true"));
    c.server.push(bash(
        "printf 'touch \"$HOME/hook-as-rewritten\"\\n' > tools/fmt.sh",
    ));
    c.server.push(Reply::text("done"));
    let a = c.run(&["--yes"]).success();
    assert!(
        home.join("hook-as-written").exists(),
        "an unchanged script runs as the user's hook always did: {}",
        stderr_of(&a)
    );
    assert!(read(&w.join("tools/fmt.sh")).contains("hook-as-rewritten"));
    assert!(
        !home.join("hook-as-rewritten").exists(),
        "the rewritten script ran unconfined"
    );
    let err = stderr_of(&a);
    common::assert_has(&err, &["changed since the session started", "confined"]);
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}
