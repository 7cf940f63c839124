//! What the namespace sandbox mounts for one command: the workspace's control files
//! read-only, the missing ones reserved by placeholders, found by a bounded scan of the
//! workspace for nested repositories.
//!
//! A placeholder is an empty directory of mode 0500 created where a protected path is missing
//! (an empty directory, not a file, so `git add -A` does not pick it up), bind-mounted
//! read-only in the command's namespace so nothing can be created there, and removed when the
//! command ends. Commands running at the same time share placeholders: each holds a shared
//! `flock` on it while it runs, and the last one (the one that gets the exclusive lock) removes
//! it. One left behind by a process that was killed is taken over and removed by the next
//! command.

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

/// The most entries the scan for nested repositories reads (not following symlinks, not
/// entering `.git` directories); beyond it the nested repositories not yet found are not
/// protected, and the command's output says so.
pub(crate) const MAX_SCAN_ENTRIES: usize = 50_000;

/// Most entries of `.claude/` re-granted one by one inside its read-only mount; beyond it
/// `.claude/` is read-only as a whole.
const MAX_CLAUDE_ENTRIES: usize = 1024;

/// How often the last holder of a placeholder tries to lock it for removal (5 ms apart).
const RELEASE_TRIES: u32 = 40;

/// The mode of a placeholder directory, by which one is recognized.
#[cfg(unix)]
const PLACEHOLDER_MODE: u32 = 0o500;

/// The nested repositories of a workspace.
#[derive(Debug, Clone, Default)]
pub(crate) struct Scan {
    /// Directories beneath the root that hold a `.git` (directory, file or symlink).
    pub nested: Vec<PathBuf>,
    /// The scan stopped at [`MAX_SCAN_ENTRIES`].
    pub capped: bool,
}

/// Finds the nested repositories beneath `root`, reading at most `cap` entries. Blocking.
pub(crate) fn scan(root: &Path, cap: usize) -> Scan {
    let mut out = Scan::default();
    let mut seen = 0usize;
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            seen += 1;
            if seen > cap {
                out.capped = true;
                out.nested.sort();
                return out;
            }
            let name = entry.file_name();
            if name == ".git" {
                if dir != root {
                    out.nested.push(dir.clone());
                }
                continue;
            }
            // The type from the directory entry: a symlink is not followed.
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(entry.path());
            }
        }
    }
    out.nested.sort();
    out
}

/// A missing control file held for a running command: a placeholder this process holds (a
/// shared lock on it), removed when dropped unless another command still holds it; or a
/// sealed name (where git would fail on a placeholder), whatever the command created there
/// removed when dropped.
#[derive(Debug)]
pub(crate) struct Reservation {
    path: PathBuf,
    lock: Option<File>,
    sealed: bool,
    /// Already released (so not again when dropped).
    released: bool,
}

/// What reserving a missing path found.
#[derive(Debug)]
enum Reserved {
    /// A placeholder, held.
    Held(Reservation),
    /// A real entry is there now (created in the meantime): protect it as existing.
    Exists,
    /// The directory cannot be written here (read-only file system, no permission): the
    /// command cannot create the path either.
    Unwritable,
}

#[cfg(unix)]
fn is_placeholder(meta: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt as _;
    meta.file_type().is_dir()
        && meta.mode() & 0o7777 == PLACEHOLDER_MODE
        && meta.uid() == rustix::process::getuid().as_raw()
}

#[cfg(not(unix))]
fn is_placeholder(_meta: &std::fs::Metadata) -> bool {
    false
}

#[cfg(unix)]
fn same_file(a: &std::fs::Metadata, b: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt as _;
    a.dev() == b.dev() && a.ino() == b.ino()
}

#[cfg(not(unix))]
fn same_file(_a: &std::fs::Metadata, _b: &std::fs::Metadata) -> bool {
    false
}

fn is_empty_dir(path: &Path) -> bool {
    std::fs::read_dir(path).is_ok_and(|mut d| d.next().is_none())
}

#[cfg(unix)]
fn make_placeholder(path: &Path) -> io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt as _, PermissionsExt as _};
    std::fs::DirBuilder::new()
        .mode(PLACEHOLDER_MODE)
        .create(path)?;
    // The umask may have taken bits away.
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(PLACEHOLDER_MODE))
}

#[cfg(not(unix))]
fn make_placeholder(path: &Path) -> io::Result<()> {
    std::fs::create_dir(path)
}

/// Reserves the missing `path` with a placeholder (or joins the one there). Blocking.
fn reserve(path: &Path) -> io::Result<Reserved> {
    for _ in 0..16 {
        match std::fs::symlink_metadata(path) {
            Ok(m) if !is_placeholder(&m) || !is_empty_dir(path) => return Ok(Reserved::Exists),
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => match make_placeholder(path) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::PermissionDenied | io::ErrorKind::ReadOnlyFilesystem
                    ) =>
                {
                    return Ok(Reserved::Unwritable);
                }
                Err(e) => return Err(e),
            },
            Err(e) => return Err(e),
        }
        let file = File::open(path)?;
        file.lock_shared()?;
        // The one we locked must still be the placeholder at `path` (not one removed by its
        // last holder while we waited for the lock).
        let held = file.metadata()?;
        if let Ok(now) = std::fs::symlink_metadata(path)
            && same_file(&held, &now)
            && is_placeholder(&held)
            && is_empty_dir(path)
        {
            return Ok(Reserved::Held(Reservation {
                path: path.to_path_buf(),
                lock: Some(file),
                sealed: false,
                released: false,
            }));
        }
    }
    Err(io::Error::other("it keeps changing"))
}

impl Reservation {
    /// Seals the missing `path` for a command.
    fn sealed(path: PathBuf) -> Self {
        Self {
            path,
            lock: None,
            sealed: true,
            released: false,
        }
    }

    /// The placeholder (or sealed name).
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// True for a placeholder (mounted read-only in the command's namespace), false for a
    /// sealed name.
    pub(crate) fn is_placeholder(&self) -> bool {
        !self.sealed
    }

    /// Ends the reservation once the command has ended: removes the placeholder (unless
    /// another command holds it) or what the command created at a sealed name. Returns the
    /// sealed path when something was removed there. Blocking.
    pub(crate) fn release(mut self) -> Option<PathBuf> {
        self.end().then(|| self.path.clone())
    }

    fn end(&mut self) -> bool {
        if std::mem::replace(&mut self.released, true) {
            return false;
        }
        if self.sealed {
            return remove_sealed(&self.path);
        }
        drop(self.lock.take());
        remove_placeholder(&self.path);
        false
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        self.end();
    }
}

/// Removes what was created at the sealed `path` (not following a symlink there); true when
/// something was. Blocking.
pub(crate) fn remove_sealed(path: &Path) -> bool {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.is_dir() => std::fs::remove_dir_all(path).is_ok(),
        Ok(_) => std::fs::remove_file(path).is_ok(),
        Err(_) => false,
    }
}

/// Removes the placeholder at `path` unless another command holds it (or it is no placeholder
/// of ours any more). Blocking.
pub(crate) fn remove_placeholder(path: &Path) {
    // Removed by whoever holds it last: the exclusive lock fails while another command holds
    // its shared one.
    let Ok(file) = File::open(path) else {
        return;
    };
    // A process this one is starting at the moment holds a copy of every descriptor until it
    // executes its program, ours included: a short wait tells that apart from another command
    // holding the placeholder.
    let mut tries = 0;
    while file.try_lock().is_err() {
        tries += 1;
        if tries >= RELEASE_TRIES {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let (Ok(held), Ok(now)) = (file.metadata(), std::fs::symlink_metadata(path)) else {
        return;
    };
    if same_file(&held, &now) && is_placeholder(&held) {
        // Only an empty directory can be removed: nothing of the user's is lost.
        let _ = std::fs::remove_dir(path);
    }
}

/// One bind mount of the plan: `path` onto itself, read-only or not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Bind {
    pub path: PathBuf,
    pub read_only: bool,
}

/// What one command's namespace gets.
#[derive(Debug, Default)]
pub(crate) struct Plan {
    /// In order: a directory before what lies beneath it.
    pub binds: Vec<Bind>,
    /// The placeholders held for the command.
    pub reservations: Vec<Reservation>,
    /// What the command should be told (what is not covered).
    pub notes: Vec<String>,
}

/// Why the namespace sandbox cannot protect this workspace as it is (the call falls back to
/// Landlock alone).
#[derive(Debug)]
pub(crate) struct Unprotectable(pub String);

struct Builder<'a> {
    root: &'a Path,
    plan: Plan,
}

impl Builder<'_> {
    fn bind(&mut self, path: PathBuf, read_only: bool) {
        self.plan.binds.push(Bind { path, read_only });
    }

    fn shown(&self, path: &Path) -> String {
        path.strip_prefix(self.root)
            .unwrap_or(path)
            .display()
            .to_string()
    }

    /// Protects `path`: bound read-only when it exists, reserved when it does not. A symlink
    /// cannot be protected (a mount follows it, and the link itself could be replaced): the
    /// command falls back to Landlock alone.
    fn protect(&mut self, path: PathBuf) -> Result<(), Unprotectable> {
        match std::fs::symlink_metadata(&path) {
            Ok(m) if m.file_type().is_symlink() => Err(Unprotectable(format!(
                "`{}` is a symbolic link",
                self.shown(&path)
            ))),
            Ok(m) if !is_placeholder(&m) || !is_empty_dir(&path) => {
                self.bind(path, true);
                Ok(())
            }
            _ => match reserve(&path) {
                Ok(Reserved::Held(r)) => {
                    self.plan.reservations.push(r);
                    self.bind(path, true);
                    Ok(())
                }
                // Created in the meantime: protected as it is (should it go away before the
                // mount, the mount fails and so does the command).
                Ok(Reserved::Exists) => {
                    self.bind(path, true);
                    Ok(())
                }
                Ok(Reserved::Unwritable) => Ok(()),
                Err(e) => Err(Unprotectable(format!(
                    "cannot reserve `{}`: {e}",
                    self.shown(&path)
                ))),
            },
        }
    }

    /// Protects `path` when it exists; when it does not, it is sealed: git would fail on a
    /// placeholder there, so whatever the command creates at `path` is removed when it ends.
    fn protect_or_seal(&mut self, path: PathBuf) -> Result<(), Unprotectable> {
        match std::fs::symlink_metadata(&path) {
            Ok(_) => self.protect(path),
            Err(_) => {
                self.plan.reservations.push(Reservation::sealed(path));
                Ok(())
            }
        }
    }

    /// A git directory: pinned (bound onto itself, so it cannot be renamed away and replaced),
    /// its hooks, config and modules read-only or reserved, its linked worktrees' metadata
    /// read-only, and `commondir` and `config.worktree` (which point git at another config)
    /// read-only or sealed.
    fn git_dir(&mut self, git: PathBuf) -> Result<(), Unprotectable> {
        self.bind(git.clone(), false);
        for name in ["hooks", "config", "modules"] {
            self.protect(git.join(name))?;
        }
        let worktrees = git.join("worktrees");
        if std::fs::symlink_metadata(&worktrees).is_ok() {
            self.protect(worktrees)?;
        }
        for name in ["commondir", "config.worktree"] {
            self.protect_or_seal(git.join(name))?;
        }
        Ok(())
    }

    /// `.git` in `dir`: a directory (see [`git_dir`](Self::git_dir)) or a `gitdir:` file
    /// (read-only); a symlink cannot be protected.
    fn repository(&mut self, dir: &Path) -> Result<(), Unprotectable> {
        let git = dir.join(".git");
        match std::fs::symlink_metadata(&git) {
            Err(_) => Ok(()),
            Ok(m) if m.file_type().is_symlink() => Err(Unprotectable(format!(
                "`{}` is a symbolic link",
                self.shown(&git)
            ))),
            Ok(m) if m.is_dir() => self.git_dir(git),
            Ok(_) => self.protect(git),
        }
    }

    /// Pins `dir` and its ancestors up to the root (each bound onto itself), so none can be
    /// renamed away and replaced by a directory holding another `.git`.
    fn pin_ancestors(&mut self, dir: &Path) {
        let root = self.root;
        for a in dir.ancestors().take_while(|a| *a != root) {
            if !self.plan.binds.iter().any(|b| b.path == a) {
                self.bind(a.to_path_buf(), false);
            }
        }
    }

    /// `.claude/`: read-only as a whole, its entries that are not protected re-granted one by
    /// one (so nothing new can be created directly in it); reserved when missing.
    fn claude(&mut self) -> Result<(), Unprotectable> {
        let claude = self.root.join(".claude");
        let meta = std::fs::symlink_metadata(&claude);
        if !meta.as_ref().is_ok_and(|m| m.is_dir()) || meta.as_ref().is_ok_and(is_placeholder) {
            return self.protect(claude);
        }
        self.bind(claude.clone(), true);
        let protected = crate::ProtectedPaths::of(self.root);
        let Ok(entries) = std::fs::read_dir(&claude) else {
            return Ok(());
        };
        let entries: Vec<_> = entries.flatten().take(MAX_CLAUDE_ENTRIES + 1).collect();
        if entries.len() > MAX_CLAUDE_ENTRIES {
            self.plan.notes.push(format!(
                "[.claude has more than {MAX_CLAUDE_ENTRIES} entries: it is read-only to this \
                 command as a whole]"
            ));
            return Ok(());
        }
        for entry in entries {
            let path = entry.path();
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if protected.matches(&path).is_some() {
                if kind.is_symlink() {
                    return Err(Unprotectable(format!(
                        "`{}` is a symbolic link",
                        self.shown(&path)
                    )));
                }
                continue;
            }
            // A symlink stays as it is in the read-only directory; its target is not granted
            // through it.
            if !kind.is_symlink() {
                self.bind(path, false);
            }
        }
        Ok(())
    }
}

/// The plan for a workspace at `root` (canonical), holding its placeholders. Blocking (a scan
/// of the workspace and a few file-system calls per protected path).
pub(crate) fn plan(root: &Path, scan: &Scan) -> Result<Plan, Unprotectable> {
    let mut b = Builder {
        root,
        plan: Plan::default(),
    };
    for name in crate::protected::root_names() {
        b.protect(root.join(name))?;
    }
    b.claude()?;
    b.repository(root)?;
    // A nested repository inside a read-only tree (`.vscode/x/.git`) is covered by it; one
    // inside an entry of `.claude` re-granted writable is not. Its directory and the ones
    // above it are pinned: renaming `vendor` away and making a new `vendor/lib/.git` would
    // replace the repository a person runs git in.
    let planned = b.plan.binds.clone();
    for dir in &scan.nested {
        let innermost = planned
            .iter()
            .filter(|m| dir.starts_with(&m.path))
            .max_by_key(|m| m.path.components().count());
        if innermost.is_some_and(|m| m.read_only) {
            continue;
        }
        b.pin_ancestors(dir);
        b.protect(dir.join(".gitmodules"))?;
        b.repository(dir)?;
    }
    if scan.capped {
        b.plan.notes.push(format!(
            "[the workspace has more than {MAX_SCAN_ENTRIES} entries: nested git repositories \
             beyond them were not looked for, and their hooks and config are not protected]"
        ));
    }
    // Parents before what lies beneath them (stable: the order above within a depth).
    b.plan.binds.sort_by_key(|m| m.path.components().count());
    Ok(b.plan)
}
