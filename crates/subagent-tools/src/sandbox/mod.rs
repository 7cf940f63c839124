//! How commands (`Bash`, hooks, stdio MCP servers) are confined: writes limited to the
//! workspace, less its protected control files (see [`crate::protected`]), and the temp
//! directory; an environment allow-list; optionally no TCP. Two ways, on Linux:
//!
//! - **namespaces** (where the kernel lets an unprivileged process create user namespaces):
//!   the command runs in a user, mount and PID namespace of its own, set up by a helper
//!   process ([`sandbox_helper_main`]). The workspace is writable as a whole, its control files
//!   are bind-mounted read-only (content and metadata: chmod, rename, unlink and utimes are
//!   refused too), the missing ones are reserved by an empty read-only directory for the
//!   command's lifetime, git directories, nested repositories and the directories above them
//!   are pinned (bound onto themselves, so none can be renamed away and replaced), names in a
//!   git directory where a placeholder would break git (`commondir`, `config.worktree`) are
//!   sealed (what a command creates there is removed when it ends), and Landlock is applied
//!   after the mounts (it forbids changing them and confines writes to the workspace and the
//!   temp directory). The helper is the PID namespace's init: when the command ends, is
//!   killed or the process that started it exits, everything it started dies with it,
//!   `setsid` and double-forked children included.
//! - **Landlock alone** (the fallback): the command is started from a short-lived thread that
//!   first restricts itself, granting the workspace entry by entry around the control files, so
//!   a command cannot create new entries directly in the workspace root, `.claude/`, `.git/`
//!   or a nested repository's directory; writes, renames and deletes of the control files are
//!   refused, but not `chmod`, `chown` or `touch` (Landlock has no right for metadata); its
//!   process group is killed when it ends (a `setsid` child escapes that).
//!
//! No `unsafe` is needed: the namespace helper is this program re-executed (or a helper binary
//! named in the policy), and a fresh single-threaded process may create user namespaces.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::{OnceLock, RwLock};

mod command;
mod helper;
mod plan;
mod rules;

pub use command::{ConfinedChild, ConfinedCommand, SandboxError};
pub use helper::sandbox_helper_main;

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

/// The environment variable that forces the Landlock-only fallback when set to `landlock`
/// (for tests, and for machines where the namespace sandbox misbehaves).
pub const SANDBOX_MODE_ENV: &str = "SUBAGENTS_SANDBOX";

/// The environment variable naming a sandbox helper program (a binary whose `main` calls
/// [`sandbox_helper_main`] first, such as `subagent-sandbox` or `subagents`), for programs that
/// do not call it themselves.
pub const SANDBOX_HELPER_ENV: &str = "SUBAGENTS_SANDBOX_HELPER";

/// How commands are confined. The default confines: on Linux, writes only in the workspace,
/// the temp directory and a few devices (`/dev/null`...), reads and execution anywhere; an
/// environment allow-list ([`DEFAULT_ENV_ALLOW`] plus `TMPDIR`); the network allowed.
/// Permission modes do not change it (`bypassPermissions` stops asking, it does not lift
/// confinement); only [`SandboxPolicy::unconfined`] does.
///
/// In the workspace, the [protected paths](crate::PROTECTED_PATHS) (`subagents.toml`,
/// `.claude/settings*.json`, `.git/hooks/`...) stay read-only. With namespaces (see
/// [`SandboxMode`]) the rest of the workspace is writable as usual (new files in the root,
/// `git init`, `git commit`); with Landlock alone, every entry of the root except the
/// protected ones gets every right (and likewise inside `.claude/`, `.git/` and nested
/// repositories), and the existing files directly in those directories may be written but not
/// removed or renamed, so a command cannot create a file directly in the workspace root (the
/// `Write` tool can). At most [`MAX_SANDBOX_ENTRIES`](crate::MAX_SANDBOX_ENTRIES) entries are
/// enumerated for that; beyond it the workspace is read-only to commands (they are told).
/// When the temp directory contains the workspace (a workspace under `/tmp`), commands get a
/// private temp directory beneath it instead (`subagents-bash-UID`), since granting the whole
/// temp directory would grant the workspace. A [`writable`](Self::writable) directory is
/// granted whole: with Landlock alone, one that contains the workspace makes its protected
/// paths writable.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SandboxPolicy {
    /// Confine writes (Linux; elsewhere, or on a kernel without Landlock, the command runs
    /// unconfined: see [`landlock_support`] and [`sandbox_report`]).
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
    /// Use the namespace sandbox where the machine allows it (default true; false forces the
    /// Landlock-only fallback, as `SUBAGENTS_SANDBOX=landlock` does for every policy).
    pub namespaces: bool,
    /// The sandbox helper program (default: this program when its `main` called
    /// [`sandbox_helper_main`], else `$SUBAGENTS_SANDBOX_HELPER`; with none, the fallback).
    pub helper: Option<PathBuf>,
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
            namespaces: true,
            helper: None,
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

    crate::util::option_setters! {
        /// Sets the temp directory (builder style).
        temp_dir: PathBuf;
        /// Names the sandbox helper program (builder style; see [`helper`](Self::helper)).
        helper: PathBuf;
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

    /// Uses the namespace sandbox where available, or never (builder style).
    #[must_use]
    pub fn namespaces(mut self, use_them: bool) -> Self {
        self.namespaces = use_them;
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
    /// whole with namespaces, entry by entry around its protected paths without (see the
    /// type's documentation).
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

/// What a Landlock-only restriction did.
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
    landlock_probe().0.clone()
}

/// The Landlock ABI version the kernel offers (as far as this build knows them), or `None`
/// without Landlock. Probed once, with [`landlock_support`].
pub fn landlock_abi() -> Option<u32> {
    landlock_probe().1
}

fn landlock_probe() -> &'static (LandlockSupport, Option<u32>) {
    static SUPPORT: OnceLock<(LandlockSupport, Option<u32>)> = OnceLock::new();
    SUPPORT.get_or_init(rules::probe)
}

/// Restricts the calling thread (and what it starts) to `policy` for a workspace at `root`
/// (canonical) with Landlock alone, entry by entry around the protected paths (`protected`
/// knows the nested repositories). Blocking (it enumerates the workspace).
pub(crate) fn restrict_current_thread(
    policy: &SandboxPolicy,
    protected: &crate::ProtectedPaths,
) -> Result<Confinement, String> {
    rules::restrict_entries(policy, protected)
}

/// How confined commands run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum SandboxMode {
    /// In user, mount and PID namespaces: the workspace writable, its control files
    /// read-only (content and metadata), the missing ones reserved, Landlock after; everything
    /// a command starts dies with it.
    Namespaces,
    /// Landlock alone (the fallback): the workspace granted entry by entry around its control
    /// files, so no new entries directly in the root or `.git/`; the command's process group
    /// is killed when it ends.
    Landlock,
    /// Nothing confines writes (`--no-sandbox`, or no Landlock on this machine).
    Unconfined,
}

impl SandboxMode {
    /// `namespaces`, `landlock` or `unconfined`.
    pub fn as_str(self) -> &'static str {
        match self {
            SandboxMode::Namespaces => "namespaces",
            SandboxMode::Landlock => "landlock",
            SandboxMode::Unconfined => "unconfined",
        }
    }
}

impl std::fmt::Display for SandboxMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Whether confined commands can run in namespaces here.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum NamespaceSupport {
    /// They can, through this helper program.
    Available {
        /// The helper program (this program, or the one the policy or
        /// `$SUBAGENTS_SANDBOX_HELPER` names).
        helper: PathBuf,
    },
    /// They cannot: why (no helper, user namespaces refused by the kernel, a policy or
    /// `SUBAGENTS_SANDBOX=landlock` turned them off, not Linux).
    Unavailable(String),
}

/// The sandbox in force for a policy on this machine, for `subagents doctor` and logs.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SandboxReport {
    /// How confined commands run.
    pub mode: SandboxMode,
    /// Why this mode, in one line.
    pub reason: String,
    /// Landlock on this machine.
    pub landlock: LandlockSupport,
    /// Its ABI version.
    pub landlock_abi: Option<u32>,
    /// User namespaces (and the helper) on this machine.
    pub namespaces: NamespaceSupport,
}

/// What sandbox commands confined by `policy` get here. Blocking the first time (it may start
/// the helper once to see whether namespaces work; the answer is remembered).
pub fn sandbox_report(policy: &SandboxPolicy) -> SandboxReport {
    let landlock = landlock_support();
    let landlock_abi = landlock_abi();
    let namespaces = namespace_support(policy);
    let (mode, reason) = if !policy.confine_writes {
        (
            SandboxMode::Unconfined,
            "the sandbox is off (--no-sandbox, or [sandbox] enabled = false)".to_string(),
        )
    } else if let LandlockSupport::Unavailable(why) = &landlock {
        (SandboxMode::Unconfined, why.clone())
    } else if let NamespaceSupport::Unavailable(why) = &namespaces {
        (SandboxMode::Landlock, why.clone())
    } else {
        (
            SandboxMode::Namespaces,
            "user namespaces are available".to_string(),
        )
    };
    SandboxReport {
        mode,
        reason,
        landlock,
        landlock_abi,
        namespaces,
    }
}

/// Whether `policy`'s commands can run in namespaces: the policy and the environment allow
/// them, a helper exists, and it worked once (probed the first time for each helper).
pub(crate) fn namespace_support(policy: &SandboxPolicy) -> NamespaceSupport {
    if !cfg!(target_os = "linux") {
        return NamespaceSupport::Unavailable("namespaces exist only on Linux".into());
    }
    if !policy.namespaces {
        return NamespaceSupport::Unavailable("the policy turns namespaces off".into());
    }
    if std::env::var_os(SANDBOX_MODE_ENV).is_some_and(|v| v == "landlock") {
        return NamespaceSupport::Unavailable(format!("{SANDBOX_MODE_ENV}=landlock"));
    }
    let Some(helper) = helper::helper_program(policy) else {
        return NamespaceSupport::Unavailable(format!(
            "no sandbox helper: this program does not call \
             subagent_tools::sandbox_helper_main() first in main, and neither the policy nor \
             ${SANDBOX_HELPER_ENV} names one"
        ));
    };
    static PROBED: RwLock<Vec<(PathBuf, NamespaceSupport)>> = RwLock::new(Vec::new());
    let known = |list: &[(PathBuf, NamespaceSupport)]| {
        list.iter()
            .find(|(h, _)| *h == helper)
            .map(|(_, s)| s.clone())
    };
    // A poisoned lock only means a probe panicked: the list is still usable.
    if let Some(s) = known(&PROBED.read().unwrap_or_else(|e| e.into_inner())) {
        return s;
    }
    let mut probed = PROBED.write().unwrap_or_else(|e| e.into_inner());
    if let Some(s) = known(&probed) {
        return s;
    }
    let support = match helper::probe(&helper) {
        Ok(()) => NamespaceSupport::Available {
            helper: helper.clone(),
        },
        Err(why) => {
            NamespaceSupport::Unavailable(format!("user namespaces do not work here ({why})"))
        }
    };
    probed.push((helper, support.clone()));
    support
}
