//! [`ConfinedCommand`]: a command started under a [`SandboxPolicy`], the one way `Bash`, hooks
//! and stdio MCP servers start processes that the sandbox covers.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};

use super::plan::{self, Plan, Reservation, Scan};
use super::{NamespaceSupport, SandboxMode, SandboxPolicy, namespace_support};
use crate::ProcessGroupGuard;
use crate::protected::ProtectedPaths;

/// Why a confined command did not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SandboxError {
    /// The sandbox could not be set up (the command was not started unconfined instead).
    #[error("cannot confine the command: {0}")]
    Confine(String),
    /// The process could not be started.
    #[error("cannot start `{program}`: {source}")]
    Spawn {
        /// The program.
        program: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

/// A command to start confined by a [`SandboxPolicy`] in a workspace: the builder of
/// [`std::process::Command`] for what the sandbox needs to know (program, arguments,
/// environment, working directory, standard streams).
///
/// [`spawn`](Self::spawn) starts it in the sandbox the machine allows ([`SandboxMode`]): in its
/// own user, mount and PID namespaces through the helper (see
/// [`sandbox_helper_main`](crate::sandbox_helper_main)), else with Landlock alone, else (the
/// policy is [`unconfined`](SandboxPolicy::unconfined), or no Landlock) as is. In every mode
/// it runs in a process group of its own, and everything it starts is killed when it ends,
/// times out or is dropped (with namespaces, also when this process exits; with Landlock
/// alone, a process that left the group with `setsid` escapes that).
///
/// ```no_run
/// # async fn f() -> Result<(), subagent_tools::SandboxError> {
/// use subagent_tools::{ConfinedCommand, SandboxPolicy};
/// let mut server = ConfinedCommand::new("npx")
///     .args(["-y", "some-mcp-server"])
///     .env_clear()
///     .env("PATH", "/usr/bin:/bin")
///     .stdin(std::process::Stdio::piped())
///     .stdout(std::process::Stdio::piped())
///     .spawn(&SandboxPolicy::default(), "/path/to/workspace".as_ref())
///     .await?;
/// let (stdin, stdout) = (server.child().stdin.take(), server.child().stdout.take());
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct ConfinedCommand {
    program: OsString,
    args: Vec<OsString>,
    env_clear: bool,
    env_set: Vec<(OsString, OsString)>,
    env_remove: Vec<OsString>,
    current_dir: Option<PathBuf>,
    stdin: Option<Stdio>,
    stdout: Option<Stdio>,
    stderr: Option<Stdio>,
}

impl ConfinedCommand {
    /// `program` (found on the command's `PATH` when it has no slash).
    pub fn new(program: impl AsRef<OsStr>) -> Self {
        Self {
            program: program.as_ref().to_os_string(),
            args: Vec::new(),
            env_clear: false,
            env_set: Vec::new(),
            env_remove: Vec::new(),
            current_dir: None,
            stdin: None,
            stdout: None,
            stderr: None,
        }
    }

    /// Adds an argument.
    #[must_use]
    pub fn arg(mut self, arg: impl AsRef<OsStr>) -> Self {
        self.args.push(arg.as_ref().to_os_string());
        self
    }

    /// Adds arguments.
    #[must_use]
    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.args
            .extend(args.into_iter().map(|a| a.as_ref().to_os_string()));
        self
    }

    /// Sets an environment variable.
    #[must_use]
    pub fn env(mut self, name: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> Self {
        self.env_set
            .push((name.as_ref().to_os_string(), value.as_ref().to_os_string()));
        self
    }

    /// Sets environment variables.
    #[must_use]
    pub fn envs<I, K, V>(mut self, vars: I) -> Self
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<OsStr>,
        V: AsRef<OsStr>,
    {
        for (k, v) in vars {
            self = self.env(k, v);
        }
        self
    }

    /// Removes an inherited environment variable.
    #[must_use]
    pub fn env_remove(mut self, name: impl AsRef<OsStr>) -> Self {
        self.env_remove.push(name.as_ref().to_os_string());
        self
    }

    /// Starts from an empty environment (only what [`env`](Self::env) sets).
    #[must_use]
    pub fn env_clear(mut self) -> Self {
        self.env_clear = true;
        self
    }

    crate::util::option_setters! {
        /// The working directory (default: this process's).
        current_dir: PathBuf;
        /// Standard input (default: inherited).
        stdin: Stdio;
        /// Standard output (default: inherited).
        stdout: Stdio;
        /// Standard error (default: inherited).
        stderr: Stdio;
    }

    fn shown(&self) -> String {
        self.program.to_string_lossy().into_owned()
    }

    /// A tokio command running `program` with `args`, and everything else of this one.
    fn build(&mut self, program: &OsStr, args: &[OsString]) -> tokio::process::Command {
        let mut c = tokio::process::Command::new(program);
        c.args(args);
        if self.env_clear {
            c.env_clear();
        }
        for name in &self.env_remove {
            c.env_remove(name);
        }
        c.envs(self.env_set.iter().map(|(k, v)| (k, v)));
        if let Some(dir) = &self.current_dir {
            c.current_dir(dir);
        }
        if let Some(io) = self.stdin.take() {
            c.stdin(io);
        }
        if let Some(io) = self.stdout.take() {
            c.stdout(io);
        }
        if let Some(io) = self.stderr.take() {
            c.stderr(io);
        }
        c.process_group(0).kill_on_drop(true);
        c
    }

    /// Starts the command confined by `policy` for the workspace at `root` (see the type's
    /// documentation). Blocking work (probing the sandbox once, scanning the workspace for
    /// its control files) runs on the blocking pool.
    pub async fn spawn(
        mut self,
        policy: &SandboxPolicy,
        root: &Path,
    ) -> Result<ConfinedChild, SandboxError> {
        if !policy.confine_writes {
            let (program, args) = (self.program.clone(), self.args.clone());
            let child =
                self.build(&program, &args)
                    .spawn()
                    .map_err(|source| SandboxError::Spawn {
                        program: self.shown(),
                        source,
                    })?;
            return Ok(ConfinedChild::new(
                child,
                SandboxMode::Unconfined,
                Vec::new(),
                Vec::new(),
            ));
        }
        let prepared = {
            let policy = policy.clone();
            let root = root.to_path_buf();
            tokio::task::spawn_blocking(move || prepare(&policy, &root))
                .await
                .map_err(|e| SandboxError::Confine(format!("the preparation failed: {e}")))??
        };
        match prepared {
            #[cfg(target_os = "linux")]
            Prepared::Namespaces { helper, root, plan } => {
                self.spawn_in_namespaces(policy, &helper, &root, plan)
            }
            Prepared::Landlock { root, scan, notes } => {
                self.spawn_with_landlock(policy, root, scan, notes).await
            }
        }
    }

    #[cfg(target_os = "linux")]
    fn spawn_in_namespaces(
        mut self,
        policy: &SandboxPolicy,
        helper: &Path,
        root: &Path,
        plan: Plan,
    ) -> Result<ConfinedChild, SandboxError> {
        use super::helper::{Hex, Spec};
        let mut writable = vec![Hex::of(root)];
        writable.extend(policy.writable_dirs(root).iter().map(Hex::of));
        let spec = Spec {
            parent: i32::try_from(std::process::id()).unwrap_or(0),
            uid: rustix::process::getuid().as_raw(),
            gid: rustix::process::getgid().as_raw(),
            binds: plan
                .binds
                .iter()
                .map(|b| (Hex::of(&b.path), b.read_only))
                .collect(),
            placeholders: plan
                .reservations
                .iter()
                .filter(|r| r.is_placeholder())
                .map(|r| Hex::of(r.path()))
                .collect(),
            sealed: plan
                .reservations
                .iter()
                .filter(|r| !r.is_placeholder())
                .map(|r| Hex::of(r.path()))
                .collect(),
            writable,
            network: policy.network,
            program: Hex::of(&self.program),
            args: self.args.iter().map(Hex::of).collect(),
        };
        let args = spec.to_args().map_err(SandboxError::Confine)?;
        let child = self
            .build(helper.as_os_str(), &args)
            .spawn()
            .map_err(|source| SandboxError::Spawn {
                program: helper.display().to_string(),
                source,
            })?;
        Ok(ConfinedChild::new(
            child,
            SandboxMode::Namespaces,
            plan.reservations,
            plan.notes,
        ))
    }

    /// The fallback: started from a short-lived thread that first restricts itself with
    /// Landlock, so the restriction passes to the command and ends with the thread, and the
    /// rest of the process keeps its rights.
    async fn spawn_with_landlock(
        mut self,
        policy: &SandboxPolicy,
        root: PathBuf,
        scan: Scan,
        mut notes: Vec<String>,
    ) -> Result<ConfinedChild, SandboxError> {
        let (program, args) = (self.program.clone(), self.args.clone());
        let shown = self.shown();
        let mut command = self.build(&program, &args);
        let policy = policy.clone();
        let handle = tokio::runtime::Handle::current();
        let (tx, rx) = tokio::sync::oneshot::channel();
        std::thread::Builder::new()
            .name("confined-spawn".into())
            .spawn(move || {
                let _runtime = handle.enter();
                let protected = ProtectedPaths::of(&root).with_nested(scan.nested);
                let result = super::restrict_current_thread(&policy, &protected)
                    .map_err(SandboxError::Confine)
                    .and_then(|confinement| {
                        command.spawn().map(|c| (c, confinement)).map_err(|source| {
                            SandboxError::Spawn {
                                program: shown,
                                source,
                            }
                        })
                    });
                let _ = tx.send(result);
            })
            .map_err(|e| {
                SandboxError::Confine(format!("cannot start the confining thread: {e}"))
            })?;
        let (child, confinement) = rx.await.map_err(|_| {
            SandboxError::Confine("the confining thread ended without starting the command".into())
        })??;
        if confinement.capped {
            notes.push(format!(
                "[the workspace has more than {} entries in the directories holding its \
                 control files, so commands could not be given write access around them and \
                 the workspace was read-only to this command; use the Write and Edit tools]",
                crate::MAX_SANDBOX_ENTRIES
            ));
        }
        let mode = if confinement.enforced {
            SandboxMode::Landlock
        } else {
            SandboxMode::Unconfined
        };
        Ok(ConfinedChild::new(child, mode, Vec::new(), notes))
    }
}

/// What [`prepare`] decided.
enum Prepared {
    #[cfg(target_os = "linux")]
    Namespaces {
        helper: PathBuf,
        root: PathBuf,
        plan: Plan,
    },
    Landlock {
        root: PathBuf,
        scan: Scan,
        notes: Vec<String>,
    },
}

/// Blocking: the workspace's real path, the sandbox the machine allows, the scan for nested
/// repositories and, with namespaces, the plan (its placeholders held).
fn prepare(policy: &SandboxPolicy, root: &Path) -> Result<Prepared, SandboxError> {
    // Rules and mounts need the real path; one that cannot be resolved fails the command
    // rather than running it unconfined.
    let root = std::fs::canonicalize(root)
        .map_err(|e| SandboxError::Confine(format!("workspace `{}`: {e}", root.display())))?;
    let scan = plan::scan(&root, plan::MAX_SCAN_ENTRIES);
    let mut notes = Vec::new();
    if let NamespaceSupport::Available { helper } = namespace_support(policy) {
        #[cfg(target_os = "linux")]
        match plan::plan(&root, &scan) {
            Ok(plan) => {
                return Ok(Prepared::Namespaces { helper, root, plan });
            }
            Err(plan::Unprotectable(why)) => notes.push(format!(
                "[sandbox: {why}, so this command ran with Landlock alone: it could not \
                 create new entries directly in the workspace root]"
            )),
        }
        #[cfg(not(target_os = "linux"))]
        let _ = helper;
    }
    Ok(Prepared::Landlock { root, scan, notes })
}

/// A process started by [`ConfinedCommand::spawn`]. Everything it started is killed when it
/// ends ([`wait`](Self::wait)), on [`kill`](Self::kill) and when this is dropped; the
/// placeholders reserving missing control files are removed then.
#[derive(Debug)]
pub struct ConfinedChild {
    child: tokio::process::Child,
    group: ProcessGroupGuard,
    reservations: Vec<Reservation>,
    mode: SandboxMode,
    notes: Vec<String>,
}

impl ConfinedChild {
    fn new(
        child: tokio::process::Child,
        mode: SandboxMode,
        reservations: Vec<Reservation>,
        notes: Vec<String>,
    ) -> Self {
        let group = ProcessGroupGuard::of(&child);
        Self {
            child,
            group,
            reservations,
            mode,
            notes,
        }
    }

    /// The process (with namespaces, the helper: the command runs beneath it). Take its
    /// standard streams from here; wait with [`wait`](Self::wait).
    pub fn child(&mut self) -> &mut tokio::process::Child {
        &mut self.child
    }

    /// How it is confined.
    pub fn mode(&self) -> SandboxMode {
        self.mode
    }

    /// What the confinement of this command does not cover, or why it fell back, in the words
    /// the model reads (empty when nothing is amiss).
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// Waits for it to exit, then kills what it left behind and removes its placeholders
    /// (on the blocking pool). After [`kill`](Self::kill), reaps it.
    pub async fn wait(&mut self) -> std::io::Result<ExitStatus> {
        let status = self.child.wait().await;
        self.group.kill();
        let reservations = std::mem::take(&mut self.reservations);
        if !reservations.is_empty() {
            let removed = tokio::task::spawn_blocking(move || {
                reservations
                    .into_iter()
                    .filter_map(Reservation::release)
                    .collect::<Vec<_>>()
            })
            .await
            .unwrap_or_default();
            for path in removed {
                self.notes.push(format!(
                    "[sandbox: `{}` was created by the command and has been removed: it would \
                     point git at another configuration, which only a person may set up]",
                    path.display()
                ));
            }
        }
        status
    }

    /// Kills it and everything it started (SIGKILL) now; [`wait`](Self::wait) reaps it and
    /// removes the placeholders (as dropping it does).
    pub fn kill(&mut self) {
        let _ = self.child.start_kill();
        self.group.kill();
    }
}

impl Drop for ConfinedChild {
    fn drop(&mut self) {
        self.kill();
        let reservations = std::mem::take(&mut self.reservations);
        if reservations.is_empty() {
            return;
        }
        // A few file-system calls each: off the async threads when a runtime is there.
        match tokio::runtime::Handle::try_current() {
            Ok(h) => {
                h.spawn_blocking(move || drop(reservations));
            }
            Err(_) => drop(reservations),
        }
    }
}
