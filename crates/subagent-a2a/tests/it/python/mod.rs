//! The official Python A2A SDKs as test peers: their interpreters (the venvs of
//! `.ci/setup-python.sh`), a script run to its end, and an SDK server on a free port of
//! 127.0.0.1.
//!
//! The workspace's top-level `tests` crate uses this module too (by `#[path]`), so its paths
//! start at the workspace root, not at the crate that compiles it.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

/// An SDK's venv: the variable naming its interpreter, and its directory under `target/py`.
pub(crate) type Venv = (&'static str, &'static str);

/// a2a-sdk 1.x.
pub(crate) const SDK_1X: Venv = ("SUBAGENTS_A2A_PY_1X", "a2a-1x");
/// a2a-sdk 0.3.26.
pub(crate) const SDK_03: Venv = ("SUBAGENTS_A2A_PY_03", "a2a-03");

/// The workspace root: the nearest ancestor of the compiling crate holding `crates/subagent-a2a`.
fn workspace() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .find(|dir| dir.join("crates/subagent-a2a").is_dir())
        .expect("the crate is inside the subagents workspace")
}

/// The interpreter of `venv` (the variable's, else `target/py/<dir>/bin/python`); it must exist.
pub(crate) fn interpreter((env, dir): Venv) -> PathBuf {
    let path = std::env::var_os(env)
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace().join("target/py").join(dir).join("bin/python"));
    assert!(
        path.exists(),
        "no Python at {} (set {env} or run .ci/setup-python.sh): these tests run only when \
         asked for (`-- --ignored`), and need it",
        path.display()
    );
    path
}

/// The path of `name` in `crates/subagent-a2a/tests/`.
pub(crate) fn test_file(name: &str) -> PathBuf {
    workspace().join("crates/subagent-a2a/tests").join(name)
}

/// Runs `script` (under `tests/`) with `python` and `args`; it must succeed within 120 s. Its
/// stdout.
pub(crate) async fn run_script(python: &Path, script: &str, args: &[&str]) -> String {
    let out = tokio::time::timeout(
        Duration::from_secs(120),
        tokio::process::Command::new(python)
            .arg(test_file(script))
            .args(args)
            .kill_on_drop(true)
            .output(),
    )
    .await
    .expect("python finished within 120 s")
    .expect("python ran");
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "{script} {args:?} failed ({}):\nstdout:\n{stdout}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// A free port of 127.0.0.1.
pub(crate) fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind a free port");
    l.local_addr().expect("local addr").port()
}

/// A Python SDK server (killed when dropped), its stderr kept in a file.
pub(crate) struct PyServer {
    child: tokio::process::Child,
    /// `http://127.0.0.1:PORT`.
    pub(crate) base: String,
    stderr: PathBuf,
    _dir: tempfile::TempDir,
}

impl PyServer {
    /// Starts `script` (under `tests/`) with `python`, `port` and `args`, and waits until it
    /// serves its card at `/.well-known/agent-card.json` (60 s at the most).
    pub(crate) async fn start(python: &Path, script: &str, port: u16, args: &[&str]) -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let stderr = dir.path().join("stderr.log");
        let err_file = std::fs::File::create(&stderr).expect("stderr log");
        let child = tokio::process::Command::new(python)
            .arg(test_file(script))
            .arg(port.to_string())
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::from(err_file))
            .kill_on_drop(true)
            .spawn()
            .expect("start the Python server");
        let mut s = PyServer {
            child,
            base: format!("http://127.0.0.1:{port}"),
            stderr,
            _dir: dir,
        };
        s.wait_ready().await;
        s
    }

    async fn wait_ready(&mut self) {
        let http = reqwest::Client::new();
        let url = format!("{}/.well-known/agent-card.json", self.base);
        for _ in 0..600 {
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!("Python A2A server exited with {status}: {}", self.stderr());
            }
            if let Ok(r) = http.get(&url).send().await
                && r.status().is_success()
            {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!(
            "the Python server at {} did not answer within 60 s: {}",
            self.base,
            self.stderr()
        );
    }

    /// What the server has written to stderr so far.
    pub(crate) fn stderr(&self) -> String {
        std::fs::read_to_string(&self.stderr).unwrap_or_default()
    }
}

/// A 1.0 `SendMessage` of one user text part, with a fresh message id.
pub(crate) fn user(text: &str) -> subagent_a2a::types::v1::SendMessageRequest {
    use subagent_a2a::types::v1;
    v1::SendMessageRequest::new(v1::Message::new(
        v1::Role::User,
        uuid::Uuid::new_v4().to_string(),
        vec![v1::Part::text(text)],
    ))
}
