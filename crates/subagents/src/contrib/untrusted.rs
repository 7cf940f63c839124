//! The workspace files the user did not approve ([`SubagentsBuilder::untrusted_file`](crate::SubagentsBuilder::untrusted_file)).

use std::path::{Path, PathBuf};

/// The files given to [`SubagentsBuilder::untrusted_file`](crate::SubagentsBuilder::untrusted_file),
/// compared by their canonical path.
pub(crate) struct Untrusted(Vec<PathBuf>);

impl Untrusted {
    pub(crate) fn new(files: &[PathBuf]) -> Self {
        Self(files.iter().map(|f| canonical(f)).collect())
    }

    pub(crate) fn contains(&self, path: &Path) -> bool {
        let path = canonical(path);
        self.0.contains(&path)
    }
}

/// `path` canonicalized, or as given when it does not resolve (a missing file).
pub(crate) fn canonical(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
}
