//! The Landlock check of the confinement tests, shared by the integration tests and the unit
//! tests of `hooks` (which include this file by `#[path]`).

/// Whether Landlock confines commands here; when it does not, prints SKIPPED for `test` with
/// the reason, and the test returns early.
pub(crate) fn confines(test: &str) -> bool {
    let support = subagent_tools::landlock_support();
    if !support.confines() {
        eprintln!("SKIPPED {test}: Landlock does not confine here ({support:?})");
    }
    support.confines()
}
