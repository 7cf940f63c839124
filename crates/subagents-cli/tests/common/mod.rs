//! Shared by the command's test targets.
#![allow(dead_code)]

use std::path::Path;

use assert_cmd::Command;

/// Variables a developer's shell may set that would change what the command does.
pub(crate) const CLEARED_VARS: [&str; 9] = [
    "SUBAGENTS_MODEL",
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "OPENAI_BASE_URL",
    "ANTHROPIC_BASE_URL",
    "RUST_LOG",
    "SUBAGENTS_API_KEYS",
    "SUBAGENTS_STORE",
    "XDG_DATA_HOME",
];

/// The command with a clean environment: no model configured, Ollama probe pointed at a
/// closed port, no home directory agents, the default store (SQLite) inside the temp home.
pub(crate) fn subagents() -> Command {
    let home = tempfile::tempdir().expect("temp home").keep();
    subagents_in(&home)
}

/// [`subagents`] with `home` as its home and working directory.
pub(crate) fn subagents_in(home: &Path) -> Command {
    let mut cmd = Command::cargo_bin("subagents").expect("binary built");
    for var in CLEARED_VARS {
        cmd.env_remove(var);
    }
    cmd.env("HOME", home)
        .env("SUBAGENTS_OLLAMA_URL", "http://127.0.0.1:9")
        .current_dir(home);
    cmd
}

/// A runtime for the in-process servers a test starts.
pub(crate) fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
}
