//! The host's processes, for tests that check nothing a command started outlives it: find
//! them by a marker in their command line (Linux `/proc`), and kill what a failed test left
//! running.

/// The host's processes whose command line contains `marker` (empty where there is no
/// `/proc`).
pub fn processes_with(marker: &str) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).contains(marker))
        })
        .collect()
}

/// Kills (`kill -9`) each of `pids`: what a failed test left running.
pub fn kill_all(pids: &[u32]) {
    for pid in pids {
        let _ = std::process::Command::new("kill")
            .args(["-9", &pid.to_string()])
            .status();
    }
}

/// The processes whose command line contains any of `markers`, killed: empty when nothing
/// was left running (a test asserts that, and leaves nothing behind when it fails).
pub fn reap(markers: &[&str]) -> Vec<u32> {
    let left: Vec<u32> = markers.iter().flat_map(|m| processes_with(m)).collect();
    kill_all(&left);
    left
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn reap_finds_and_kills_a_process_by_its_marker() {
        let mut child = std::process::Command::new("sleep")
            .arg("424242.5")
            .spawn()
            .expect("sleep runs");
        // Bounded wait until it shows in /proc with its own command line.
        for _ in 0..200 {
            if !processes_with("424242.5").is_empty() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        let left = reap(&["424242.5"]);
        if left.is_empty() {
            let _ = child.kill();
        }
        let status = child.wait().unwrap();
        assert!(!left.is_empty(), "the sleep was found");
        assert!(!status.success(), "and killed: {status}");
        assert!(processes_with("424242.5").is_empty());
    }
}
