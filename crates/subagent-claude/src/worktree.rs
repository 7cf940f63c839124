//! `isolation: worktree`: a run in a temporary `git worktree` of the workspace's repository.
//!
//! The worktree is created from the repository's `HEAD` on a new branch
//! (`subagents/<slug>-<id>`, the agent's [`agent_slug`](crate::agent_slug)) in the system's temporary directory, outside the main working
//! tree, so the main tree is never touched. When the run ends, a worktree in which nothing
//! changed (no uncommitted changes, no new commits) is removed with its branch; otherwise it is
//! kept and its path and branch are reported in the run's answer. Everything goes through the
//! `git` command (tokio::process), each call bounded by [`GIT_TIMEOUT`].

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// How long one `git` command may take.
pub(crate) const GIT_TIMEOUT: Duration = Duration::from_secs(120);

/// Bytes of a `git` command's output kept.
const MAX_GIT_OUTPUT: usize = 64 * 1024;

/// A worktree created for one run.
#[derive(Debug)]
pub(crate) struct Worktree {
    /// The main working tree's top directory.
    repo: PathBuf,
    /// The worktree's top directory.
    pub path: PathBuf,
    /// Its branch.
    pub branch: String,
    /// The commit it started from.
    base: String,
    /// Where the run's workspace is inside the worktree (the workspace's place in the repo).
    pub run_root: PathBuf,
}

/// What happened to a worktree at the end of a run.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Finished {
    /// Nothing changed; it was removed.
    Removed,
    /// It holds changes and was kept.
    Kept {
        /// The worktree's path.
        path: PathBuf,
        /// Its branch.
        branch: String,
    },
}

async fn git(dir: &Path, args: &[&str]) -> Result<String, String> {
    let mut cmd = tokio::process::Command::new("git");
    cmd.arg("-C")
        .arg(dir)
        .args(args)
        .env("GIT_TERMINAL_PROMPT", "0")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let run = cmd.output();
    let out = match tokio::time::timeout(GIT_TIMEOUT, run).await {
        Ok(Ok(o)) => o,
        Ok(Err(e)) => return Err(format!("cannot run `git`: {e}")),
        Err(_) => {
            return Err(format!(
                "`git {}` took longer than {} s",
                args.join(" "),
                GIT_TIMEOUT.as_secs()
            ));
        }
    };
    let cap = |b: &[u8]| String::from_utf8_lossy(&b[..b.len().min(MAX_GIT_OUTPUT)]).into_owned();
    if out.status.success() {
        Ok(cap(&out.stdout).trim_end().to_string())
    } else {
        Err(format!(
            "`git {}` failed: {}",
            args.join(" "),
            cap(&out.stderr).trim()
        ))
    }
}

fn unique_id() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    format!("{:x}{:x}{n:x}", std::process::id(), nanos)
}

impl Worktree {
    /// Creates a worktree of the repository holding `workspace` for a run of `agent`.
    pub(crate) async fn create(workspace: &Path, agent: &str) -> Result<Self, String> {
        let top = git(workspace, &["rev-parse", "--show-toplevel"])
            .await
            .map_err(|e| {
                format!(
                    "`isolation: worktree` needs the workspace `{}` to be inside a git \
                     repository ({e})",
                    workspace.display()
                )
            })?;
        let repo = tokio::fs::canonicalize(&top)
            .await
            .unwrap_or_else(|_| PathBuf::from(&top));
        let base = git(&repo, &["rev-parse", "--verify", "HEAD"])
            .await
            .map_err(|e| {
                format!(
                    "`isolation: worktree` needs a commit to start from, and the repository \
                     `{}` has none ({e})",
                    repo.display()
                )
            })?;
        let id = unique_id();
        let name = format!("{}-{id}", crate::slug::agent_slug(agent));
        let branch = format!("subagents/{name}");
        let parent = std::env::temp_dir().join("subagents-worktrees");
        tokio::fs::create_dir_all(&parent)
            .await
            .map_err(|e| format!("cannot create `{}`: {e}", parent.display()))?;
        let path = parent.join(&name);
        let path_text = path.to_string_lossy().into_owned();
        git(
            &repo,
            &[
                "worktree", "add", "--quiet", "-b", &branch, &path_text, &base,
            ],
        )
        .await?;
        let path = tokio::fs::canonicalize(&path).await.unwrap_or(path);
        let inside = tokio::fs::canonicalize(workspace)
            .await
            .ok()
            .and_then(|w| w.strip_prefix(&repo).ok().map(Path::to_path_buf))
            .unwrap_or_default();
        let run_root = path.join(inside);
        let is_dir = tokio::fs::metadata(&run_root)
            .await
            .is_ok_and(|m| m.is_dir());
        if !is_dir {
            // The workspace is a directory git does not track (empty, or ignored): run at the
            // worktree's top instead.
            tracing::warn!(
                run_root = %run_root.display(),
                "the workspace's directory is not in the worktree; the run uses its top"
            );
        }
        let run_root = if is_dir { run_root } else { path.clone() };
        Ok(Self {
            repo,
            path,
            branch,
            base,
            run_root,
        })
    }

    /// Removes the worktree and its branch when nothing changed in it; keeps it otherwise.
    pub(crate) async fn finish(self) -> Finished {
        let changed = match (
            git(
                &self.path,
                &["status", "--porcelain", "--untracked-files=all"],
            )
            .await,
            git(&self.path, &["rev-parse", "HEAD"]).await,
        ) {
            (Ok(status), Ok(head)) => !status.trim().is_empty() || head.trim() != self.base,
            (Err(e), _) | (_, Err(e)) => {
                tracing::warn!(path = %self.path.display(), "cannot inspect the worktree, keeping it: {e}");
                true
            }
        };
        if changed {
            return Finished::Kept {
                path: self.path,
                branch: self.branch,
            };
        }
        let path_text = self.path.to_string_lossy().into_owned();
        if let Err(e) = git(&self.repo, &["worktree", "remove", "--force", &path_text]).await {
            tracing::warn!(path = %self.path.display(), "cannot remove the unchanged worktree: {e}");
            return Finished::Kept {
                path: self.path,
                branch: self.branch,
            };
        }
        if let Err(e) = git(&self.repo, &["branch", "-D", &self.branch]).await {
            tracing::warn!(branch = %self.branch, "cannot delete the unchanged worktree's branch: {e}");
        }
        Finished::Removed
    }
}

impl Finished {
    /// The note appended to the run's answer, when the worktree was kept.
    pub(crate) fn note(&self) -> Option<String> {
        match self {
            Finished::Removed => None,
            Finished::Kept { path, branch } => Some(format!(
                "[worktree] This agent ran in an isolated git worktree and left changes there: \
                 path `{}`, branch `{branch}`. Review and merge them from that branch (for \
                 example `git merge {branch}`); remove the worktree with `git worktree remove \
                 {}` when done.",
                path.display(),
                path.display()
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(dir: &Path, script: &str) {
        let ok = std::process::Command::new("sh")
            .arg("-c")
            .arg(script)
            .current_dir(dir)
            .status()
            .unwrap()
            .success();
        assert!(ok, "{script}");
    }

    fn repo() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        sh(
            dir.path(),
            "git init -q && git config user.email t@example.com && git config user.name t && \
             mkdir sub && echo hi > sub/a.txt && git add . && git commit -qm init",
        );
        dir
    }

    #[tokio::test]
    async fn names_with_slashes_become_one_segment_and_a_valid_branch() {
        let dir = repo();
        let wt = Worktree::create(dir.path(), "LSP/Index ../Engineer")
            .await
            .unwrap();
        let slug = crate::slug::agent_slug("LSP/Index ../Engineer");
        assert_eq!(
            wt.path.parent(),
            Some(
                std::env::temp_dir()
                    .join("subagents-worktrees")
                    .canonicalize()
                    .unwrap()
                    .as_path()
            )
        );
        let leaf = wt.path.file_name().unwrap().to_string_lossy().into_owned();
        assert!(leaf.starts_with(&slug), "{leaf}");
        assert!(
            wt.branch.starts_with(&format!("subagents/{slug}-")),
            "{}",
            wt.branch
        );
        assert_eq!(wt.finish().await, Finished::Removed);
    }

    #[tokio::test]
    async fn unchanged_worktrees_go_changed_ones_stay() {
        let dir = repo();
        let wt = Worktree::create(&dir.path().join("sub"), "Agent One")
            .await
            .unwrap();
        assert!(wt.run_root.ends_with("sub"), "{}", wt.run_root.display());
        assert!(wt.run_root.join("a.txt").is_file());
        let path = wt.path.clone();
        assert_eq!(wt.finish().await, Finished::Removed);
        assert!(!path.exists());

        let wt = Worktree::create(dir.path(), "agent").await.unwrap();
        std::fs::write(wt.run_root.join("new.txt"), "x").unwrap();
        let branch = wt.branch.clone();
        let done = wt.finish().await;
        let note = done.note().unwrap();
        assert!(note.contains(&branch), "{note}");
        let Finished::Kept { path, .. } = done else {
            panic!("kept")
        };
        assert!(path.join("new.txt").is_file());
        assert!(
            !dir.path().join("new.txt").exists(),
            "the main tree is unchanged"
        );
        sh(
            dir.path(),
            &format!("git worktree remove --force {}", path.display()),
        );
    }

    #[tokio::test]
    async fn outside_a_repository_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let e = Worktree::create(dir.path(), "a").await.unwrap_err();
        assert!(e.contains("git repository"), "{e}");
    }
}
