//! Paths as the file system resolves them, for the checks that compare a path against a
//! protected or trusted one (the tools' protected paths, the facade's workspace trust).

use std::path::{Path, PathBuf};

/// `path` with its longest existing prefix canonicalized (symlinks resolved) and the rest, which
/// does not exist yet, appended as written; `path` itself when no prefix resolves. Blocking.
pub fn real_prefix(path: &Path) -> PathBuf {
    let mut rest = Vec::new();
    let mut p = path;
    loop {
        if let Ok(c) = std::fs::canonicalize(p) {
            let mut out = c;
            out.extend(rest.iter().rev());
            return out;
        }
        match (p.parent(), p.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name);
                p = parent;
            }
            _ => return path.to_path_buf(),
        }
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::real_prefix;
    use std::path::Path;

    #[test]
    fn the_existing_prefix_is_resolved_and_the_rest_kept() {
        let dir = std::env::temp_dir().join(format!("subagent-core-paths-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let link = dir.join("link");
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(&dir, &link).unwrap();
        let real = std::fs::canonicalize(&dir).unwrap();
        assert_eq!(real_prefix(&link.join("not/yet")), real.join("not/yet"));
        assert_eq!(real_prefix(&link), real);
        // Nothing of it exists: the path as given.
        let missing = Path::new("no-such-dir-here/x");
        assert_eq!(real_prefix(missing), missing);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
