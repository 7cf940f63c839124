//! The namespace sandbox's helper: a program whose `main` calls [`sandbox_helper_main`] first
//! (the `subagents` command does, and so does `subagent-sandbox`, this crate's binary),
//! started with a marker argument and the command's plan.
//!
//! A process may create a user namespace only while it has a single thread, which the process
//! that runs the agents never has; so the helper does it, as a fresh process, in two stages:
//!
//! 1. outside: opens a pidfd of the process that started it, creates the user, mount and PID
//!    namespaces (mapping its uid and gid to root inside), and starts stage 2, which is the new
//!    PID namespace's init; it kills stage 2 when the starting process exits, and exits as
//!    stage 2 does;
//! 2. inside (pid 1): dies with stage 1 (parent-death signal), makes every mount private,
//!    bind-mounts the plan (the control files read-only, the rest as they are), mounts a
//!    `/proc` of the new PID namespace, enters one more user namespace that maps the caller's
//!    own uid and gid back (so the command runs as the user, without any capability over the
//!    mounts), applies Landlock (which forbids mount changes and confines writes), starts the
//!    command, reaps orphans, and exits with the command's status: every process left in the
//!    namespace dies then.
//!
//! The plan travels in the arguments (JSON, paths in hex so any byte survives); the command's
//! environment, working directory and standard streams are the helper's.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::{OsStrExt as _, OsStringExt as _};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::{SANDBOX_HELPER_ENV, SandboxPolicy};

/// The first argument that makes a program the helper.
const MARKER: &str = "--subagents-sandbox-helper";

/// The exit status of a helper that could not set the sandbox up (the command did not run).
pub(crate) const SETUP_FAILED: i32 = 125;

/// The exit status when the command itself could not be started.
const NOT_STARTED: i32 = 127;

/// Arguments are at most this long (Linux refuses a single argument over 128 KiB).
const CHUNK: usize = 64 * 1024;

/// The largest plan passed (all its arguments together).
const MAX_SPEC_BYTES: usize = 1024 * 1024;

/// Set when this program's `main` called [`sandbox_helper_main`]: it can be the helper.
static HELPER_READY: AtomicBool = AtomicBool::new(false);

/// Makes this program the namespace sandbox's helper. Call it first in `main`, before any
/// thread starts (so not inside `#[tokio::main]`: build the runtime after it):
///
/// ```no_run
/// // The first line of `main`:
/// subagent_tools::sandbox_helper_main();
/// // ... then the program: its runtime, its agents.
/// ```
///
/// When the program was started as the helper (a marker argument), this runs the helper and
/// exits; otherwise it records that the program can serve as the helper and returns at once.
/// A program that does not call it gets the Landlock-only fallback, unless its
/// [`SandboxPolicy::helper`] or `$SUBAGENTS_SANDBOX_HELPER` names a helper program (such as
/// this crate's `subagent-sandbox` binary). The `subagents` command calls it.
pub fn sandbox_helper_main() {
    let mut args = std::env::args_os().skip(1);
    if args.next().as_deref() != Some(OsStr::new(MARKER)) {
        HELPER_READY.store(true, Ordering::Relaxed);
        return;
    }
    let rest: Vec<OsString> = args.collect();
    std::process::exit(run(&rest));
}

/// The helper program for `policy`: the one it names, else this program when it can serve,
/// else `$SUBAGENTS_SANDBOX_HELPER`.
pub(crate) fn helper_program(policy: &SandboxPolicy) -> Option<PathBuf> {
    if let Some(h) = &policy.helper {
        return Some(h.clone());
    }
    if HELPER_READY.load(Ordering::Relaxed)
        && let Ok(exe) = std::env::current_exe()
    {
        return Some(exe);
    }
    std::env::var_os(SANDBOX_HELPER_ENV)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
}

/// Bytes (a path, an argument) as a hex string, so any byte survives JSON.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Hex(pub Vec<u8>);

impl Hex {
    pub(crate) fn of(s: impl AsRef<OsStr>) -> Self {
        Self(s.as_ref().as_bytes().to_vec())
    }

    fn os(&self) -> OsString {
        OsString::from_vec(self.0.clone())
    }

    fn path(&self) -> PathBuf {
        PathBuf::from(self.os())
    }
}

impl Serialize for Hex {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut out = String::with_capacity(self.0.len() * 2);
        for b in &self.0 {
            out.push_str(&format!("{b:02x}"));
        }
        s.serialize_str(&out)
    }
}

impl<'de> Deserialize<'de> for Hex {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        if s.len() % 2 != 0 {
            return Err(serde::de::Error::custom("odd hex length"));
        }
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16))
            .collect::<Result<Vec<u8>, _>>()
            .map(Hex)
            .map_err(serde::de::Error::custom)
    }
}

/// What the helper sets up and runs.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Spec {
    /// The process that started the helper: everything dies when it exits.
    pub parent: i32,
    /// Its uid and gid, mapped into the namespaces.
    pub uid: u32,
    pub gid: u32,
    /// Bind mounts (each path onto itself), in order, and whether read-only.
    pub binds: Vec<(Hex, bool)>,
    /// The placeholders among the binds: removed by stage one should the process that started
    /// the helper (and holds them) die first.
    pub placeholders: Vec<Hex>,
    /// Sealed names (see `plan`): what the command created there is removed by stage one
    /// should the process that started the helper die first.
    #[serde(default)]
    pub sealed: Vec<Hex>,
    /// Writable trees for Landlock: the workspace, the temp directory, the policy's.
    pub writable: Vec<Hex>,
    /// TCP allowed.
    pub network: bool,
    /// The command.
    pub program: Hex,
    pub args: Vec<Hex>,
}

impl Spec {
    /// The helper's arguments (after the program): the marker, the stage, the plan in chunks.
    pub(crate) fn to_args(&self) -> Result<Vec<OsString>, String> {
        let json = serde_json::to_string(self).map_err(|e| e.to_string())?;
        if json.len() > MAX_SPEC_BYTES {
            return Err(format!(
                "the sandbox plan is {} bytes, more than {MAX_SPEC_BYTES} (too many protected \
                 paths)",
                json.len()
            ));
        }
        let mut args = vec![OsString::from(MARKER), OsString::from("1")];
        // JSON of ASCII only (hex strings, numbers), so any byte boundary is a char boundary.
        args.extend(
            json.as_bytes()
                .chunks(CHUNK)
                .map(|c| OsString::from_vec(c.to_vec())),
        );
        Ok(args)
    }

    fn from_args(chunks: &[OsString]) -> Result<Self, String> {
        let mut json = Vec::new();
        for c in chunks {
            json.extend_from_slice(c.as_bytes());
            if json.len() > MAX_SPEC_BYTES {
                return Err("the sandbox plan is too long".into());
            }
        }
        serde_json::from_slice(&json).map_err(|e| format!("a malformed sandbox plan: {e}"))
    }
}

/// Runs the helper with the arguments after the marker; returns the exit status.
fn run(args: &[OsString]) -> i32 {
    let Some((stage, rest)) = args.split_first() else {
        return fail("no stage given (this argument is for the sandbox helper only)");
    };
    match stage.to_str() {
        Some("1") => stage_one(rest),
        Some("2") => stage_two(rest),
        Some("check") => check(rest),
        _ => fail("an unknown stage (this argument is for the sandbox helper only)"),
    }
}

fn fail(message: &str) -> i32 {
    eprintln!("subagents sandbox: {message}");
    SETUP_FAILED
}

/// The exit status a shell would give for `status`.
fn status_code(status: std::process::ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt as _;
    status
        .code()
        .or_else(|| status.signal().map(|s| 128 + s))
        .unwrap_or(SETUP_FAILED)
}

#[cfg(target_os = "linux")]
fn write_maps(
    inside_uid: u32,
    outside_uid: u32,
    inside_gid: u32,
    outside_gid: u32,
) -> Result<(), String> {
    // Required before gid_map without privilege; already "deny" in a nested namespace.
    let _ = std::fs::write("/proc/self/setgroups", "deny");
    std::fs::write(
        "/proc/self/uid_map",
        format!("{inside_uid} {outside_uid} 1\n"),
    )
    .map_err(|e| format!("cannot map the uid: {e}"))?;
    std::fs::write(
        "/proc/self/gid_map",
        format!("{inside_gid} {outside_gid} 1\n"),
    )
    .map_err(|e| format!("cannot map the gid: {e}"))
}

#[cfg(target_os = "linux")]
fn stage_one(chunks: &[OsString]) -> i32 {
    use nix::sched::{CloneFlags, unshare};
    use rustix::process::{Pid, PidfdFlags, Signal, getppid, kill_process, pidfd_open};

    let spec = match Spec::from_args(chunks) {
        Ok(s) => s,
        Err(e) => return fail(&e),
    };
    let Some(parent) = Pid::from_raw(spec.parent) else {
        return fail("no parent process given");
    };
    // A pidfd of the starting process, checked to be our parent (so not a reused pid).
    let pidfd = match pidfd_open(parent, PidfdFlags::empty()) {
        Ok(fd) if getppid() == Some(parent) => fd,
        _ => return fail("the process that started the sandbox is gone"),
    };
    if let Err(e) =
        unshare(CloneFlags::CLONE_NEWUSER | CloneFlags::CLONE_NEWNS | CloneFlags::CLONE_NEWPID)
    {
        return fail(&format!(
            "cannot create the user, mount and PID namespaces: {e}"
        ));
    }
    if let Err(e) = write_maps(0, spec.uid, 0, spec.gid) {
        return fail(&e);
    }
    // The first child is the new PID namespace's init.
    let mut stage_two = match Command::new("/proc/self/exe")
        .arg(MARKER)
        .arg("2")
        .args(chunks)
        .spawn()
    {
        Ok(c) => c,
        Err(e) => return fail(&format!("cannot start the namespace's init: {e}")),
    };
    // When the starting process exits (however it ends), the namespace goes with it. No
    // thread can watch (a process that unshared its PID namespace cannot start threads), so
    // one poll waits for either to end.
    let mut orphaned = false;
    if let Some(init) = i32::try_from(stage_two.id()).ok().and_then(Pid::from_raw)
        && let Ok(init_fd) = pidfd_open(init, PidfdFlags::empty())
    {
        use rustix::event::{PollFd, PollFlags, poll};
        loop {
            let mut fds = [
                PollFd::new(&pidfd, PollFlags::IN),
                PollFd::new(&init_fd, PollFlags::IN),
            ];
            match poll(&mut fds, None) {
                Ok(_) if !fds[0].revents().is_empty() => {
                    let _ = kill_process(init, Signal::KILL);
                    orphaned = true;
                    break;
                }
                Ok(_) if !fds[1].revents().is_empty() => break,
                Ok(_) | Err(rustix::io::Errno::INTR) => continue,
                Err(e) => {
                    let _ = kill_process(init, Signal::KILL);
                    let _ = stage_two.wait();
                    return fail(&format!("cannot watch the sandbox: {e}"));
                }
            }
        }
    }
    let status = match stage_two.wait() {
        Ok(s) => s,
        Err(e) => return fail(&format!("waiting for the namespace's init failed: {e}")),
    };
    // The starting process held the placeholders and would have removed them: here they are
    // still mounted over, so unmounted first.
    if orphaned {
        for p in &spec.placeholders {
            let p = p.path();
            let _ = rustix::mount::unmount(&p, rustix::mount::UnmountFlags::DETACH);
            super::plan::remove_placeholder(&p);
        }
        for p in &spec.sealed {
            super::plan::remove_sealed(&p.path());
        }
    }
    // Die the way it died, so the caller sees the signal.
    if let Some(sig) = std::os::unix::process::ExitStatusExt::signal(&status)
        && let Some(sig) = Signal::from_named_raw(sig)
    {
        let _ = kill_process(rustix::process::getpid(), sig);
    }
    status_code(status)
}

/// Remounts the bind mount at `path` read-only, keeping the flags the kernel locks in a user
/// namespace (nosuid, nodev, noexec, the atime ones).
#[cfg(target_os = "linux")]
fn remount_read_only(path: &Path) -> rustix::io::Result<()> {
    use rustix::fs::{StatVfsMountFlags as S, statvfs};
    use rustix::mount::{MountFlags as M, mount_remount};
    let have = statvfs(path)?.f_flag;
    let mut flags = M::BIND | M::RDONLY;
    for (s, m) in [
        (S::NOSUID, M::NOSUID),
        (S::NODEV, M::NODEV),
        (S::NOEXEC, M::NOEXEC),
        (S::NOATIME, M::NOATIME),
        (S::NODIRATIME, M::NODIRATIME),
        (S::RELATIME, M::RELATIME),
    ] {
        if have.contains(s) {
            flags |= m;
        }
    }
    if !have.intersects(S::NOATIME | S::RELATIME) {
        flags |= M::STRICTATIME;
    }
    mount_remount(path, flags, "")
}

#[cfg(target_os = "linux")]
fn stage_two(chunks: &[OsString]) -> i32 {
    use nix::sched::{CloneFlags, unshare};
    use rustix::mount::{MountFlags, MountPropagationFlags, mount, mount_bind, mount_change};
    use rustix::process::{Signal, WaitOptions, set_parent_process_death_signal, wait};

    // Dies with stage one (killed, or gone with the process that started it).
    if let Err(e) = set_parent_process_death_signal(Some(Signal::KILL)) {
        return fail(&format!("cannot tie the sandbox to its parent: {e}"));
    }
    let spec = match Spec::from_args(chunks) {
        Ok(s) => s,
        Err(e) => return fail(&e),
    };
    // Nothing mounted here reaches the rest of the system.
    if let Err(e) = mount_change(
        "/",
        MountPropagationFlags::PRIVATE | MountPropagationFlags::REC,
    ) {
        return fail(&format!("cannot make the mounts private: {e}"));
    }
    for (path, _) in &spec.binds {
        let path = path.path();
        if let Err(e) = mount_bind(&path, &path) {
            return fail(&format!("cannot bind `{}`: {e}", path.display()));
        }
    }
    for (path, read_only) in &spec.binds {
        let path = path.path();
        if *read_only && let Err(e) = remount_read_only(&path) {
            return fail(&format!("cannot make `{}` read-only: {e}", path.display()));
        }
    }
    // `ps` and `kill` see this namespace's processes only (where the kernel lets a user
    // namespace mount a /proc; otherwise the old one stays).
    let _ = mount(
        "proc",
        "/proc",
        "proc",
        MountFlags::NOSUID | MountFlags::NODEV | MountFlags::NOEXEC,
        None,
    );
    // The command runs as the user again, with no capability over these mounts.
    if let Err(e) = unshare(CloneFlags::CLONE_NEWUSER) {
        return fail(&format!("cannot create the command's user namespace: {e}"));
    }
    if let Err(e) = write_maps(spec.uid, 0, spec.gid, 0) {
        return fail(&e);
    }
    let writable: Vec<PathBuf> = spec.writable.iter().map(Hex::path).collect();
    match super::rules::restrict_trees(writable, spec.network) {
        Ok(true) => {}
        Ok(false) => return fail("Landlock is not enforced here"),
        Err(e) => return fail(&e),
    }
    let child = Command::new(spec.program.os())
        .args(spec.args.iter().map(Hex::os))
        .spawn();
    let child = match child {
        Ok(c) => c,
        Err(e) => {
            eprintln!(
                "subagents sandbox: cannot start `{}`: {e}",
                spec.program.path().display()
            );
            return NOT_STARTED;
        }
    };
    let main = i32::try_from(child.id()).unwrap_or(-1);
    // The init: reap every orphan until the command ends, then exit (which ends the rest).
    loop {
        match wait(WaitOptions::empty()) {
            Ok(Some((pid, status))) if pid.as_raw_nonzero().get() == main => {
                return status
                    .exit_status()
                    .or_else(|| status.terminating_signal().map(|s| 128 + s))
                    .unwrap_or(SETUP_FAILED);
            }
            Ok(_) | Err(rustix::io::Errno::INTR) => continue,
            Err(e) => return fail(&format!("waiting for the command failed: {e}")),
        }
    }
}

#[cfg(not(target_os = "linux"))]
fn stage_one(_chunks: &[OsString]) -> i32 {
    fail("namespaces exist only on Linux")
}

#[cfg(not(target_os = "linux"))]
fn stage_two(_chunks: &[OsString]) -> i32 {
    fail("namespaces exist only on Linux")
}

/// The probe's command: succeeds when `dir` is read-only here.
fn check(args: &[OsString]) -> i32 {
    let Some(dir) = args.first() else {
        return fail("check: no directory given");
    };
    match std::fs::File::create(Path::new(dir).join("probe")) {
        Err(e) if e.kind() == std::io::ErrorKind::ReadOnlyFilesystem => 0,
        Err(e) => fail(&format!("check: a read-only mount failed differently: {e}")),
        Ok(_) => fail("check: a read-only mount was writable"),
    }
}

/// Starts `helper` once with a throwaway plan (one read-only bind of a temp directory) to see
/// whether namespaces work here. Blocking (a few milliseconds; gives up after 10 seconds).
pub(crate) fn probe(helper: &Path) -> Result<(), String> {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let dir = std::env::temp_dir().join(format!("subagents-probe-{}-{nanos}", std::process::id()));
    std::fs::create_dir(&dir).map_err(|e| format!("cannot make a probe directory: {e}"))?;
    let result = probe_in(helper, &dir);
    let _ = std::fs::remove_dir_all(&dir);
    result
}

fn probe_in(helper: &Path, dir: &Path) -> Result<(), String> {
    let spec = Spec {
        parent: i32::try_from(std::process::id()).unwrap_or(0),
        uid: rustix::process::getuid().as_raw(),
        gid: rustix::process::getgid().as_raw(),
        binds: vec![(Hex::of(dir), true)],
        placeholders: Vec::new(),
        sealed: Vec::new(),
        writable: vec![Hex::of(dir)],
        network: true,
        program: Hex::of(helper),
        args: vec![Hex::of(MARKER), Hex::of("check"), Hex::of(dir)],
    };
    let mut child = Command::new(helper)
        .args(spec.to_args()?)
        .env_clear()
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start the helper `{}`: {e}", helper.display()))?;
    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break s,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(5)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return Err("the helper did not answer within 10 seconds".into());
            }
        }
    };
    if status.success() {
        return Ok(());
    }
    let mut err = String::new();
    if let Some(mut pipe) = child.stderr.take() {
        use std::io::Read as _;
        let _ = pipe.by_ref().take(4096).read_to_string(&mut err);
    }
    let err = err.trim().trim_start_matches("subagents sandbox: ");
    Err(if err.is_empty() {
        format!("the helper exited with {status}")
    } else {
        err.to_string()
    })
}
