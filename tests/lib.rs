//! Cross-crate integration tests of the `subagents` workspace live in this package's test
//! targets; the library is empty.
