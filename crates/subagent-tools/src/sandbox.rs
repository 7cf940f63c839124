//! How `Bash` commands are confined: writes limited to the workspace (less its protected
//! control files, see [`crate::protected`]) and the temp directory (Landlock, on Linux), an
//! environment allow-list, optionally no TCP.
//!
//! Landlock restricts the calling *thread* and the processes it starts. The command is started
//! from a short-lived thread of its own that first restricts itself, so the rest of the process
//! (the agent loop, other tools) keeps its rights, and no `unsafe` `pre_exec` hook is needed.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// Environment variables a confined command gets from ours (when set); everything else,
/// including credentials such as `OPENAI_API_KEY`, is left out.
pub const DEFAULT_ENV_ALLOW: &[&str] = &[
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "LANG",
    "LANGUAGE",
    "LC_ALL",
    "LC_CTYPE",
    "LC_MESSAGES",
    "LC_COLLATE",
    "LC_NUMERIC",
    "LC_TIME",
    "LC_MONETARY",
    "TERM",
    "COLORTERM",
    "NO_COLOR",
    "TZ",
];

/// How the `Bash` tool confines commands. The default confines: on Linux, writes only in the
/// workspace, the temp directory and a few devices (`/dev/null`...), reads and execution
/// anywhere; an environment allow-list ([`DEFAULT_ENV_ALLOW`] plus `TMPDIR`); the network
/// allowed. Permission modes do not change it (`bypassPermissions` stops asking, it does not
/// lift confinement); only [`SandboxPolicy::unconfined`] does.
///
/// In the workspace, the [protected paths](crate::PROTECTED_PATHS) (`subagents.toml`,
/// `.claude/settings*.json`, `.git/hooks/`...) stay read-only. Landlock grants whole
/// directory trees, so the workspace is not granted as one: every entry of the root except the
/// protected ones gets every right (and likewise inside `.claude/` and `.git/`), and the
/// existing files directly in the root, `.claude/` and `.git/` may be written but not removed
/// or renamed. So a command cannot **create** a file directly in the workspace root (nor in
/// `.git/`, so `git add`/`git commit` fail under confinement); the `Write` tool can, and
/// subdirectories work as usual. At most [`MAX_SANDBOX_ENTRIES`](crate::MAX_SANDBOX_ENTRIES)
/// entries are enumerated; beyond that the workspace is read-only to commands (they are told).
/// When the temp directory contains the workspace (a workspace under `/tmp`), commands get a
/// private temp directory beneath it instead (`subagents-bash-UID`), since granting the whole
/// temp directory would grant the workspace. A [`writable`](Self::writable) directory is
/// granted whole: one that contains the workspace makes its protected paths writable.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SandboxPolicy {
    /// Confine writes with Landlock (Linux; elsewhere, or on a kernel without Landlock, the
    /// command runs unconfined: see [`landlock_support`]).
    pub confine_writes: bool,
    /// Pass only allow-listed environment variables.
    pub clean_env: bool,
    /// Allow TCP connect and bind (false denies them, with Landlock ABI 4 or later; UDP and
    /// UNIX sockets are not covered by Landlock).
    pub network: bool,
    /// The temp directory commands may write to, also given to them as `TMPDIR` (default: the
    /// process's temp directory).
    pub temp_dir: Option<PathBuf>,
    /// More directories commands may write to.
    pub writable: Vec<PathBuf>,
    /// More environment variables passed to commands.
    pub env_allow: Vec<String>,
}

impl Default for SandboxPolicy {
    fn default() -> Self {
        Self {
            confine_writes: true,
            clean_env: true,
            network: true,
            temp_dir: None,
            writable: Vec::new(),
            env_allow: Vec::new(),
        }
    }
}

impl SandboxPolicy {
    /// The default: confined (see the type's documentation).
    pub fn new() -> Self {
        Self::default()
    }

    /// No confinement and the full environment less credentials (`--no-sandbox`).
    pub fn unconfined() -> Self {
        Self {
            confine_writes: false,
            clean_env: false,
            ..Self::default()
        }
    }

    /// Allows or denies TCP (builder style).
    #[must_use]
    pub fn network(mut self, allowed: bool) -> Self {
        self.network = allowed;
        self
    }

    /// Sets the temp directory (builder style).
    #[must_use]
    pub fn temp_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.temp_dir = Some(dir.into());
        self
    }

    /// Adds a writable directory (builder style).
    #[must_use]
    pub fn writable(mut self, dir: impl Into<PathBuf>) -> Self {
        self.writable.push(dir.into());
        self
    }

    /// Passes one more environment variable (builder style).
    #[must_use]
    pub fn allow_env(mut self, name: impl Into<String>) -> Self {
        self.env_allow.push(name.into());
        self
    }

    /// The temp directory in force.
    pub fn effective_temp_dir(&self) -> PathBuf {
        self.temp_dir.clone().unwrap_or_else(std::env::temp_dir)
    }

    /// The temp directory commands in a workspace at `root` get: the one in force, unless it
    /// contains the workspace; then a private directory beneath it, `subagents-bash-UID`
    /// (created, mode 0700), so granting it does not grant the workspace.
    pub fn temp_dir_for(&self, root: &Path) -> PathBuf {
        let temp = self.effective_temp_dir();
        if !root.starts_with(&temp) {
            return temp;
        }
        let uid = rustix::process::getuid().as_raw();
        let private = temp.join(format!("subagents-bash-{uid}"));
        let _ = make_private_dir(&private);
        private
    }

    /// The environment a command in a workspace at `root` gets, when
    /// [`clean_env`](Self::clean_env) is on.
    pub(crate) fn environment(&self, root: &Path) -> Vec<(String, OsString)> {
        let mut env: Vec<(String, OsString)> = DEFAULT_ENV_ALLOW
            .iter()
            .map(|n| n.to_string())
            .chain(self.env_allow.iter().cloned())
            .filter_map(|n| std::env::var_os(&n).map(|v| (n, v)))
            .collect();
        if !env.iter().any(|(n, _)| n == "PATH") {
            env.push(("PATH".into(), "/usr/local/bin:/usr/bin:/bin".into()));
        }
        env.push(("TMPDIR".into(), self.temp_dir_for(root).into_os_string()));
        env
    }

    /// The directories commands may write to as a whole under this policy, for a workspace at
    /// `root`: the temp directory ([`temp_dir_for`](Self::temp_dir_for)) and the
    /// [`writable`](Self::writable) ones. The workspace is not among them: it is granted
    /// entry by entry around its protected paths (see the type's documentation).
    pub fn writable_dirs(&self, root: &Path) -> Vec<PathBuf> {
        let mut dirs = vec![self.temp_dir_for(root)];
        dirs.extend(self.writable.iter().cloned());
        dirs
    }
}

/// Creates `dir` with mode 0700 unless it exists; an existing one must be a directory (not a
/// symlink) owned by us.
fn make_private_dir(dir: &Path) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::{DirBuilderExt as _, MetadataExt as _};
        match std::fs::DirBuilder::new().mode(0o700).create(dir) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                let meta = std::fs::symlink_metadata(dir)?;
                if meta.is_dir() && meta.uid() == rustix::process::getuid().as_raw() {
                    Ok(())
                } else {
                    Err(std::io::Error::other(format!(
                        "`{}` is not a directory of ours",
                        dir.display()
                    )))
                }
            }
            Err(e) => Err(e),
        }
    }
    #[cfg(not(unix))]
    {
        std::fs::create_dir_all(dir)
    }
}

/// What a restriction did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Confinement {
    /// Landlock enforced it (false: not available, nothing was restricted).
    pub enforced: bool,
    /// The workspace had more entries than could be granted: it is read-only to the command.
    pub capped: bool,
}

/// Whether Landlock confines commands on this machine.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum LandlockSupport {
    /// Every restriction asked for is enforced.
    Full,
    /// Some are (an older kernel): what is missing.
    Partial(String),
    /// None: why (not Linux, a kernel without Landlock, Landlock disabled at boot).
    Unavailable(String),
}

impl LandlockSupport {
    /// True unless [`Unavailable`](Self::Unavailable).
    pub fn confines(&self) -> bool {
        !matches!(self, LandlockSupport::Unavailable(_))
    }
}

/// Probes Landlock once (in a throwaway thread, which it restricts) and remembers the answer.
pub fn landlock_support() -> LandlockSupport {
    static SUPPORT: OnceLock<LandlockSupport> = OnceLock::new();
    SUPPORT.get_or_init(imp::probe).clone()
}

/// Restricts the calling thread (and what it starts) to `policy` for a workspace at `root`
/// (canonical). Blocking (it enumerates the workspace root).
#[cfg_attr(not(target_os = "linux"), allow(unused_variables))]
pub(crate) fn restrict_current_thread(
    policy: &SandboxPolicy,
    root: &Path,
) -> Result<Confinement, String> {
    imp::restrict(policy, root)
}

/// Starts `command` confined by `policy` for a workspace at `root` (canonical): from a
/// short-lived thread that first restricts itself with Landlock, so the restriction passes to
/// the command and ends with the thread, and the rest of the process keeps its rights. With
/// [`confine_writes`](SandboxPolicy::confine_writes) off it is simply started. The `Bash` tool
/// starts its commands this way, and so do the hooks of `subagent-claude` that come from
/// workspace files. The caller sets the command's environment.
pub async fn spawn_confined(
    command: tokio::process::Command,
    policy: &SandboxPolicy,
    root: &Path,
) -> Result<tokio::process::Child, String> {
    spawn_with(command, policy, root)
        .await
        .map(|(child, _)| child)
}

pub(crate) async fn spawn_with(
    mut command: tokio::process::Command,
    policy: &SandboxPolicy,
    root: &Path,
) -> Result<(tokio::process::Child, Confinement), String> {
    if !policy.confine_writes {
        return command
            .spawn()
            .map(|c| (c, Confinement::default()))
            .map_err(|e| format!("cannot start the command: {e}"));
    }
    let policy = policy.clone();
    let root = root.to_path_buf();
    let handle = tokio::runtime::Handle::current();
    let (tx, rx) = tokio::sync::oneshot::channel();
    std::thread::Builder::new()
        .name("confined-spawn".into())
        .spawn(move || {
            let _runtime = handle.enter();
            let result = restrict_current_thread(&policy, &root)
                .map_err(|e| format!("cannot confine the command: {e}"))
                .and_then(|confinement| {
                    command
                        .spawn()
                        .map(|c| (c, confinement))
                        .map_err(|e| format!("cannot start the command: {e}"))
                });
            let _ = tx.send(result);
        })
        .map_err(|e| format!("cannot start the confining thread: {e}"))?;
    rx.await
        .map_err(|_| "the confining thread ended without starting the command".to_string())?
}

#[cfg(target_os = "linux")]
mod imp {
    use super::{Confinement, LandlockSupport, SandboxPolicy};
    use crate::protected::{MAX_SANDBOX_ENTRIES, ProtectedPaths, workspace_grants};
    use landlock::{
        ABI, Access, AccessFs, AccessNet, CompatLevel, Compatible, Ruleset, RulesetAttr,
        RulesetCreatedAttr, RulesetStatus, Scope, path_beneath_rules,
    };
    use std::path::{Path, PathBuf};

    /// The newest ABI whose rights we ask for; older kernels get what they support.
    const ABI_WANTED: ABI = ABI::V6;

    /// Devices commands commonly write to.
    const DEVICES: &[&str] = &[
        "/dev/null",
        "/dev/zero",
        "/dev/full",
        "/dev/tty",
        "/dev/random",
        "/dev/urandom",
    ];

    /// Only the paths that exist (a rule on a missing path would fail the whole ruleset).
    fn existing(paths: Vec<PathBuf>) -> impl Iterator<Item = PathBuf> {
        paths.into_iter().filter(|p| p.exists())
    }

    pub(super) fn restrict(policy: &SandboxPolicy, root: &Path) -> Result<Confinement, String> {
        let abi = ABI_WANTED;
        let grants = workspace_grants(&ProtectedPaths::of(root), MAX_SANDBOX_ENTRIES);
        let file_rights = AccessFs::WriteFile | AccessFs::Truncate;
        let e = |e: landlock::RulesetError| format!("cannot set up Landlock: {e}");
        let mut ruleset = Ruleset::default()
            .set_compatibility(CompatLevel::BestEffort)
            .handle_access(AccessFs::from_all(abi))
            .map_err(e)?;
        if !policy.network {
            ruleset = ruleset.handle_access(AccessNet::from_all(abi)).map_err(e)?;
        }
        ruleset = ruleset.scope(Scope::from_all(abi)).map_err(e)?;
        let read_anywhere = AccessFs::from_read(abi) | AccessFs::IoctlDev;
        let status = ruleset
            .create()
            .map_err(e)?
            .add_rules(path_beneath_rules(["/"], read_anywhere))
            .map_err(e)?
            .add_rules(path_beneath_rules(
                existing(policy.writable_dirs(root)),
                AccessFs::from_all(abi),
            ))
            .map_err(e)?
            .add_rules(path_beneath_rules(
                existing(grants.trees),
                AccessFs::from_all(abi),
            ))
            .map_err(e)?
            .add_rules(path_beneath_rules(existing(grants.files), file_rights))
            .map_err(e)?
            .add_rules(path_beneath_rules(DEVICES, AccessFs::from_all(abi)))
            .map_err(e)?
            .restrict_self()
            .map_err(e)?;
        Ok(Confinement {
            enforced: status.ruleset != RulesetStatus::NotEnforced,
            capped: grants.capped,
        })
    }

    pub(super) fn probe() -> LandlockSupport {
        let probe = std::thread::Builder::new()
            .name("landlock-probe".into())
            .spawn(|| {
                let abi = ABI_WANTED;
                let status = Ruleset::default()
                    .handle_access(AccessFs::from_all(abi))
                    .and_then(|r| r.handle_access(AccessNet::from_all(abi)))
                    .and_then(|r| r.create())
                    .and_then(|r| r.restrict_self());
                match status {
                    Ok(s) => match s.ruleset {
                        RulesetStatus::FullyEnforced => LandlockSupport::Full,
                        RulesetStatus::PartiallyEnforced => LandlockSupport::Partial(
                            "the kernel's Landlock is older than ABI 4: writes are confined, \
                             the network cannot be"
                                .into(),
                        ),
                        RulesetStatus::NotEnforced => LandlockSupport::Unavailable(
                            "the kernel does not enforce Landlock (not built in or not enabled \
                             at boot)"
                                .into(),
                        ),
                    },
                    Err(e) => LandlockSupport::Unavailable(format!("Landlock failed: {e}")),
                }
            });
        match probe.map(|h| h.join()) {
            Ok(Ok(s)) => s,
            _ => LandlockSupport::Unavailable("the Landlock probe could not run".into()),
        }
    }
}

#[cfg(not(target_os = "linux"))]
mod imp {
    use super::{Confinement, LandlockSupport, SandboxPolicy};
    use std::path::Path;

    pub(super) fn restrict(_policy: &SandboxPolicy, _root: &Path) -> Result<Confinement, String> {
        Ok(Confinement::default())
    }

    pub(super) fn probe() -> LandlockSupport {
        LandlockSupport::Unavailable("Landlock exists only on Linux".into())
    }
}
