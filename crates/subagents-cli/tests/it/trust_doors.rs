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

use common::{rt, subagents_in};
use serde_json::json;
use subagent_testkit::{Reply, ScriptedModelServer};

/// A home directory with a workspace `work/` in it, and the scripted model server the main
/// model runs on.
struct Case {
    _rt: tokio::runtime::Runtime,
    server: ScriptedModelServer,
    home: tempfile::TempDir,
}

impl Case {
    fn new() -> Self {
        let rt = rt();
        let server = rt.block_on(ScriptedModelServer::start());
        let home = tempfile::tempdir().expect("temp home");
        std::fs::create_dir_all(home.path().join("work")).unwrap();
        Self {
            _rt: rt,
            server,
            home,
        }
    }

    fn work(&self) -> PathBuf {
        self.home.path().join("work")
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
    ["203.0.113.1:9", "198.51.100.1:9", "192.0.2.1:9", "10.255.255.1:9"]
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
    c.server.push(task("cloned", None));
    c.server.push(Reply::text("done"));
    c.run(&[]).success();
    let results = c.last_results();
    assert!(
        results[0].contains("invalid model spec") && results[0].contains("backslash"),
        "{results:?}"
    );
    assert_eq!(trip.hits(), 0, "nothing was sent to the other server");

    // An unapproved workspace subagents.toml's `model`: the command names the spec and stops.
    std::fs::write(
        c.work().join("subagents.toml"),
        format!("model = '{spec}'\n"),
    )
    .unwrap();
    let a = c
        .cmd()
        .args(["run", "do it", "--workspace"])
        .arg(c.work())
        .assert()
        .code(2);
    let err = stderr_of(&a);
    assert!(
        err.contains("invalid model spec `openai-compatible:m@http://")
            && err.contains("backslash"),
        "{err}"
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
    let a = c
        .cmd()
        .args(["run", "hi", "--model", &spec])
        .assert()
        .code(2);
    let err = stderr_of(&a);
    assert!(
        err.contains("invalid model spec `openai-compatible:m@http://***@127.0.0.1")
            && err.contains("OPENAI_COMPATIBLE_API_KEY"),
        "{err}"
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
