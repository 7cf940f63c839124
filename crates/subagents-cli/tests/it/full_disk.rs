//! Issue 39: `subagents tasks list` and `tasks show` read a store whose disk is full. The
//! store is a real SQLite file on a tiny tmpfs (mounting one needs root: the test says SKIPPED
//! when it cannot), holding a finished task and a task whose process was killed while it ran;
//! the disk is then filled. Reading must not depend on writing: the killed task, which a
//! reader marks `interrupted` in the store, reads as interrupted all the same (on the old code
//! that write came first, and its failure failed the command).

use crate::common;

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use common::{Worker, fixtures, process_in, word};
use serde_json::Value;
use subagent_testkit::Reply;

/// A tmpfs of `size` mounted at a new directory; unmounted when dropped.
struct Tmpfs(PathBuf);

impl Tmpfs {
    /// Mounts it, or says why it cannot.
    fn mount(at: &Path, size: &str) -> Result<Self, String> {
        std::fs::create_dir_all(at).map_err(|e| e.to_string())?;
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(at)
            .output()
            .map_err(|e| format!("mount: {e}"))?;
        if out.status.success() {
            Ok(Self(at.to_path_buf()))
        } else {
            Err(String::from_utf8_lossy(&out.stderr).trim().to_string())
        }
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

/// Writes zeros into `dir/fill` until the disk says it is full.
fn fill(dir: &Path) {
    let mut f = std::fs::File::create(dir.join("fill")).expect("fill file");
    let block = vec![0u8; 64 * 1024];
    loop {
        match f.write_all(&block) {
            Ok(()) => {}
            Err(e) if e.raw_os_error() == Some(28) => break, // ENOSPC
            Err(e) => panic!("filling the disk: {e}"),
        }
    }
    // What is left below a block, byte by byte.
    while f.write_all(&[0]).is_ok() {}
    let _ = f.sync_all();
}

#[test]
fn tasks_list_and_show_read_a_store_whose_disk_is_full() {
    let home = tempfile::tempdir().expect("home");
    let disk = match Tmpfs::mount(&home.path().join("disk"), "4m") {
        Ok(d) => d,
        Err(why) => {
            eprintln!(
                "SKIPPED: cannot mount a tmpfs to fill ({why}); run as root to test a full disk"
            );
            return;
        }
    };
    let (rt, model) = common::scripted();
    model.push(Reply::text("the finished answer"));
    model.push(Reply::text("never sent").with_delay(Duration::from_secs(120)));
    let store = format!("sqlite:{}", disk.0.join("store.db").display());
    let spec = model.openai_model("m");
    let task = |prompt: &str| {
        let mut cmd = process_in(home.path());
        cmd.args([
            "--store",
            &store,
            "task",
            "echo-agent",
            prompt,
            "--background",
        ])
        .args(["--model", &spec, "--agents"])
        .arg(fixtures().join("local"))
        .arg("--workspace")
        .arg(home.path())
        .stdin(Stdio::null());
        cmd
    };
    // A task that finishes.
    let done = task("first").output().expect("task runs");
    let err = String::from_utf8_lossy(&done.stderr).into_owned();
    assert!(done.status.success(), "{err}");
    let finished = word(&err, "task_").expect("the first task's id");
    // A task whose process is killed while its model call is in flight (`--background`
    // returns at once; the task runs on in a process of its own, named on stderr).
    let second = task("second").output().expect("task runs");
    let err = String::from_utf8_lossy(&second.stderr).into_owned();
    assert!(second.status.success(), "{err}");
    let killed_id = word(&err, "task_").expect("the second task's id");
    let worker = Worker::named_in(&err);
    rt.block_on(async {
        tokio::time::timeout(Duration::from_secs(60), model.wait_for_requests(2))
            .await
            .expect("the second task's model call within 60 s");
    });
    // Its ledger record is written when it starts; give the batch a moment, then SIGKILL.
    std::thread::sleep(Duration::from_millis(500));
    worker.kill_and_wait();

    fill(&disk.0);
    let tasks = |args: &[&str]| {
        let out = process_in(home.path())
            .args(["--store", &store, "tasks"])
            .args(args)
            .stdin(Stdio::null())
            .output()
            .expect("tasks runs");
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(
            out.status.success(),
            "tasks {args:?} on a full disk: {stderr}"
        );
        out
    };
    let listed: Value = serde_json::from_slice(&tasks(&["list", "--json"]).stdout).expect("JSON");
    let status_of = |id: &str| {
        listed
            .as_array()
            .and_then(|l| l.iter().find(|t| t["task_id"] == id))
            .map(|t| t["status"].clone())
            .unwrap_or_else(|| panic!("{id} is not listed: {listed}"))
    };
    assert_eq!(status_of(&finished), "completed", "{listed}");
    assert_eq!(status_of(&killed_id), "interrupted", "{listed}");
    let text = String::from_utf8_lossy(&tasks(&["list"]).stdout).into_owned();
    assert!(
        text.contains(&finished) && text.contains(&killed_id),
        "{text}"
    );

    let shown: Value =
        serde_json::from_slice(&tasks(&["show", &killed_id, "--json"]).stdout).expect("JSON");
    assert_eq!(shown["status"], "interrupted", "{shown}");
    let shown = String::from_utf8_lossy(&tasks(&["show", &finished]).stdout).into_owned();
    assert!(shown.contains("the finished answer"), "{shown}");
}
