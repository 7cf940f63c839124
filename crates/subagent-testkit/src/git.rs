//! `git` in a test's directory: for tests of worktree isolation.

use std::path::Path;

/// Runs `git -C dir ARGS`, which must succeed; its stdout.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = std::process::Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .expect("git runs");
    assert!(out.status.success(), "git {args:?}: {out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Makes `dir` a git repository whose one commit holds the files `files` (`(path, text)`,
/// written first).
pub fn git_repo_with(dir: &Path, files: &[(&str, &str)]) {
    git(dir, &["init", "-q"]);
    git(dir, &["config", "user.email", "t@example.com"]);
    git(dir, &["config", "user.name", "t"]);
    for (path, text) in files {
        let path = dir.join(path);
        std::fs::create_dir_all(path.parent().expect("a file in dir")).expect("dirs");
        std::fs::write(path, text).expect("file");
    }
    git(dir, &["add", "."]);
    git(dir, &["commit", "-qm", "init"]);
}
