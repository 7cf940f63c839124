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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_tree_creates_the_directories_and_the_parents_of_files() {
        let root = std::env::temp_dir().join(format!("testkit-tree-{}", std::process::id()));
        write_tree(&root, &["a/b"], &[("c/d/e.txt", "text"), ("f", "")]);
        assert!(root.join("a/b").is_dir());
        assert_eq!(
            std::fs::read_to_string(root.join("c/d/e.txt")).unwrap(),
            "text"
        );
        assert_eq!(std::fs::read_to_string(root.join("f")).unwrap(), "");
        std::fs::remove_dir_all(&root).unwrap();
    }
}
