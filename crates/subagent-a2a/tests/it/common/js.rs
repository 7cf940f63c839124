//! The JavaScript peers of `tests/js` (the official `@a2a-js/sdk`, installed by
//! `.ci/setup-js.sh`): where they live, and `node` started there.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::io::AsyncBufReadExt;

/// `tests/js`, which must hold the SDK's `node_modules`.
pub(crate) fn js_dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/js");
    assert!(
        dir.join("node_modules/@a2a-js/sdk").exists(),
        "no @a2a-js/sdk in {}/node_modules: run .ci/setup-js.sh (these tests run only when \
         asked for, with `-- --ignored`)",
        dir.display()
    );
    dir
}

/// `node` (or `$NODE`) in [`js_dir`], killed when dropped.
pub(crate) fn node() -> tokio::process::Command {
    let mut c = tokio::process::Command::new(std::env::var("NODE").unwrap_or("node".into()));
    c.current_dir(js_dir()).kill_on_drop(true);
    c
}

/// Reads the child's stdout lines until each of `prefixes` has been seen (within 60 s): the
/// rest of each such line, in the order of `prefixes`; later lines are read and dropped.
pub(crate) async fn read_prefixed(
    stdout: tokio::process::ChildStdout,
    prefixes: &[&str],
) -> Vec<String> {
    let mut lines = tokio::io::BufReader::new(stdout).lines();
    let mut found: Vec<Option<String>> = vec![None; prefixes.len()];
    while found.iter().any(Option::is_none) {
        let line = tokio::time::timeout(Duration::from_secs(60), lines.next_line())
            .await
            .expect("the JS peer starts within 60 s")
            .expect("its stdout")
            .unwrap_or_else(|| panic!("the JS peer exited before printing {prefixes:?}"));
        for (i, p) in prefixes.iter().enumerate() {
            if let Some(rest) = line.strip_prefix(p) {
                found[i] = Some(rest.to_string());
            }
        }
    }
    // Keep reading, so the peer never writes to a closed pipe.
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    found.into_iter().map(Option::unwrap).collect()
}
