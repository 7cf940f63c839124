//! Two real server processes on one SQLite task store: the second is refused at start with an
//! error naming the file and the first's pid, and the first's running task stays running (it
//! is not marked interrupted). Once the first is gone (SIGKILL), the file opens again.

#![cfg(feature = "a2a")]

use crate::common;

use std::process::Stdio;
use std::time::Duration;

use common::{Sut, state};

#[tokio::test(flavor = "multi_thread")]
async fn a_second_server_on_the_same_sqlite_file_is_refused_and_interrupts_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("tasks.db");
    let store = format!("sqlite:{}", file.display());

    let a = Sut::start(&store, &[]).await;
    let pid = a.child.id().expect("a runs");
    let long_id = a.start_long_task().await;

    // The second process: refused at start, naming the file and the holder.
    let second = tokio::process::Command::new(common::sut_binary())
        .args(["--port", "0", "--store", &store])
        .env("RUST_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(Duration::from_secs(60), second)
        .await
        .expect("the second server gave up within 60 s")
        .expect("it ran");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success(),
        "the second server must not start: {stderr}"
    );
    assert!(
        stderr.contains(&file.display().to_string()),
        "names the file: {stderr}"
    );
    assert!(
        stderr.contains(&pid.to_string()),
        "names the holder: {stderr}"
    );

    // The first server's task runs on.
    let got = a.get(&long_id).await;
    assert_eq!(state(&got), "TASK_STATE_WORKING", "{got}");

    // Gone (SIGKILL releases the lock): the file opens again, and only now is the task
    // interrupted.
    a.kill9().await;
    let b = Sut::start(&store, &[]).await;
    let got = b.get(&long_id).await;
    assert_eq!(state(&got), "TASK_STATE_FAILED", "{got}");
}
