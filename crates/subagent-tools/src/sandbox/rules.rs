//! The Landlock rules: reads and execution anywhere, writes in the granted trees (and files),
//! optionally no TCP, signals and abstract sockets scoped to the sandbox.

#[cfg(target_os = "linux")]
pub(super) use linux::{probe, restrict_entries, restrict_trees};
#[cfg(not(target_os = "linux"))]
pub(super) use other::{probe, restrict_entries};

#[cfg(target_os = "linux")]
mod linux {
    use super::super::{Confinement, LandlockSupport, SandboxPolicy};
    use crate::ProtectedPaths;
    use crate::protected::{MAX_SANDBOX_ENTRIES, workspace_grants};
    use landlock::{
        ABI, Access, AccessFs, AccessNet, CompatLevel, Compatible, LandlockStatus, Ruleset,
        RulesetAttr, RulesetCreatedAttr, RulesetStatus, Scope, path_beneath_rules,
    };
    use std::path::PathBuf;

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

    /// Restricts the calling thread: every right beneath `trees`, write and truncate on
    /// `files`, reads anywhere. True when Landlock enforced it.
    fn restrict(trees: Vec<PathBuf>, files: Vec<PathBuf>, network: bool) -> Result<bool, String> {
        let abi = ABI_WANTED;
        let file_rights = AccessFs::WriteFile | AccessFs::Truncate;
        let e = |e: landlock::RulesetError| format!("cannot set up Landlock: {e}");
        let mut ruleset = Ruleset::default()
            .set_compatibility(CompatLevel::BestEffort)
            .handle_access(AccessFs::from_all(abi))
            .map_err(e)?;
        if !network {
            ruleset = ruleset.handle_access(AccessNet::from_all(abi)).map_err(e)?;
        }
        ruleset = ruleset.scope(Scope::from_all(abi)).map_err(e)?;
        let read_anywhere = AccessFs::from_read(abi) | AccessFs::IoctlDev;
        let status = ruleset
            .create()
            .map_err(e)?
            .add_rules(path_beneath_rules(["/"], read_anywhere))
            .map_err(e)?
            .add_rules(path_beneath_rules(existing(trees), AccessFs::from_all(abi)))
            .map_err(e)?
            .add_rules(path_beneath_rules(existing(files), file_rights))
            .map_err(e)?
            .add_rules(path_beneath_rules(DEVICES, AccessFs::from_all(abi)))
            .map_err(e)?
            .restrict_self()
            .map_err(e)?;
        Ok(status.ruleset != RulesetStatus::NotEnforced)
    }

    /// The fallback: the workspace granted entry by entry around its protected paths.
    pub(in crate::sandbox) fn restrict_entries(
        policy: &SandboxPolicy,
        protected: &ProtectedPaths,
    ) -> Result<Confinement, String> {
        let grants = workspace_grants(protected, MAX_SANDBOX_ENTRIES);
        let mut trees = policy.writable_dirs(protected.root());
        trees.extend(grants.trees);
        let enforced = restrict(trees, grants.files, policy.network)?;
        Ok(Confinement {
            enforced,
            capped: grants.capped,
        })
    }

    /// Inside the namespaces, after the mounts: `trees` (the workspace, the temp directory,
    /// the policy's writable directories) granted whole.
    pub(in crate::sandbox) fn restrict_trees(
        trees: Vec<PathBuf>,
        network: bool,
    ) -> Result<bool, String> {
        restrict(trees, Vec::new(), network)
    }

    pub(in crate::sandbox) fn probe() -> (LandlockSupport, Option<u32>) {
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
                    Ok(s) => {
                        let version = match s.landlock {
                            LandlockStatus::Available {
                                effective_abi,
                                kernel_abi,
                            } => kernel_abi
                                .and_then(|v| u32::try_from(v).ok())
                                .or(Some(effective_abi as u32)),
                            _ => None,
                        };
                        let support = match s.ruleset {
                            RulesetStatus::FullyEnforced => LandlockSupport::Full,
                            RulesetStatus::PartiallyEnforced => LandlockSupport::Partial(
                                "the kernel's Landlock is older than ABI 4: writes are \
                                 confined, the network cannot be"
                                    .into(),
                            ),
                            RulesetStatus::NotEnforced => LandlockSupport::Unavailable(
                                "the kernel does not enforce Landlock (not built in or not \
                                 enabled at boot)"
                                    .into(),
                            ),
                        };
                        (support, version)
                    }
                    Err(e) => (
                        LandlockSupport::Unavailable(format!("Landlock failed: {e}")),
                        None,
                    ),
                }
            });
        match probe.map(|h| h.join()) {
            Ok(Ok(s)) => s,
            _ => (
                LandlockSupport::Unavailable("the Landlock probe could not run".into()),
                None,
            ),
        }
    }
}

#[cfg(not(target_os = "linux"))]
mod other {
    use super::super::{Confinement, LandlockSupport, SandboxPolicy};
    use crate::ProtectedPaths;

    pub(in crate::sandbox) fn restrict_entries(
        _policy: &SandboxPolicy,
        _protected: &ProtectedPaths,
    ) -> Result<Confinement, String> {
        Ok(Confinement::default())
    }

    pub(in crate::sandbox) fn probe() -> (LandlockSupport, Option<u32>) {
        (
            LandlockSupport::Unavailable("Landlock exists only on Linux".into()),
            None,
        )
    }
}
