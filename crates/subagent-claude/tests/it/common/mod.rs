//! Rigs shared by the integration test modules.

pub(crate) mod landlock;

/// A temporary directory holding the agent files `files` (`(file name, text)`), in order.
pub(crate) fn agent_dir(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (name, text) in files {
        std::fs::write(dir.path().join(name), text).unwrap();
    }
    dir
}
