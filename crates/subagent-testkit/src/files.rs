//! Files for a test to work on: a tree of directories and files written in one call.

use std::path::Path;

/// Creates each of `dirs` and writes each `(file, text)` of `files` below `root`, with the
/// parent directories they need. Panics (it is for tests) when the file system refuses.
pub fn write_tree(root: &Path, dirs: &[&str], files: &[(&str, &str)]) {
    for dir in dirs {
        std::fs::create_dir_all(root.join(dir))
            .unwrap_or_else(|e| panic!("creating {dir} in {}: {e}", root.display()));
    }
    for (file, text) in files {
        let path = root.join(file);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .unwrap_or_else(|e| panic!("creating the directory of {file}: {e}"));
        }
        std::fs::write(&path, text)
            .unwrap_or_else(|e| panic!("writing {file} in {}: {e}", root.display()));
    }
}
