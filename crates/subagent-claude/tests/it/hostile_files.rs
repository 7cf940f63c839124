//! Hostile files around agent loading: FIFOs instead of files, directories with too many files.

use std::sync::mpsc;
use std::time::Duration;

use subagent_claude::{MAX_SCAN_FILES, load_agent_file_blocking, scan_dir_blocking};

#[cfg(unix)]
#[test]
fn a_fifo_is_refused_instead_of_blocking_the_loader() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("agent.md");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status();
    if !made.is_ok_and(|s| s.success()) {
        println!("NOTICE: mkfifo unavailable; skipped");
        return;
    }
    let (tx, rx) = mpsc::channel();
    let path = fifo.clone();
    std::thread::spawn(move || {
        let _ = tx.send(load_agent_file_blocking(&path).map(|_| ()));
    });
    let result = rx
        .recv_timeout(Duration::from_secs(5))
        .expect("the loader returns instead of waiting for a writer");
    let e = result.unwrap_err().to_string();
    assert!(e.contains("not a regular file"), "{e}");
    assert!(e.contains("agent.md"), "{e}");
}

#[test]
fn a_scan_stops_walking_past_max_scan_files() {
    let dir = tempfile::tempdir().unwrap();
    let extra = 40;
    for d in 0..=(MAX_SCAN_FILES + extra) / 1000 {
        std::fs::create_dir(dir.path().join(format!("d{d:02}"))).unwrap();
    }
    for i in 0..MAX_SCAN_FILES + extra {
        let p = dir.path().join(format!("d{:02}/f{i:05}.md", i / 1000));
        std::fs::write(p, "").unwrap();
    }
    let report = scan_dir_blocking(dir.path()).unwrap();
    assert!(report.loaded.is_empty());
    // One entry per file looked at (no frontmatter), then one for the directory: the files
    // past the limit are neither listed one by one nor collected.
    assert_eq!(report.skipped.len(), MAX_SCAN_FILES + 1);
    let last = report.skipped.last().unwrap();
    assert_eq!(last.path, dir.path());
    assert!(
        last.reason.contains(&MAX_SCAN_FILES.to_string()),
        "{}",
        last.reason
    );
}
