//! The host's naming rule for forks: which `subagent_type` of a `Task` call asks for a copy of
//! the calling agent (the run's side is `subagent_spi::ForkSource`). Moved here from the SPI in
//! issue 43: the word is the `Task` tool's, not part of the plugin contract.

/// The `subagent_type` that starts a fork (matched ignoring ASCII case; see [`is_fork`]).
pub const FORK_SUBAGENT_TYPE: &str = "fork";

/// True when a `Task` call's `subagent_type` asks for a fork: `fork`, ASCII case aside.
pub fn is_fork(subagent_type: &str) -> bool {
    subagent_type
        .trim()
        .eq_ignore_ascii_case(FORK_SUBAGENT_TYPE)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fork_is_matched_ignoring_case() {
        assert!(is_fork("fork") && is_fork("Fork") && is_fork(" FORK "));
        assert!(!is_fork("forks") && !is_fork("") && !is_fork("general-purpose"));
    }
}
