//! The command against hostile surroundings: a closed stdout, a log file instead of a
//! terminal, agent files whose text would drive the terminal.

use crate::common;

use std::process::{Command, Stdio};

/// The command with the shared clean environment ([`common::process_in`]), `NO_COLOR` unset
/// too (these tests check what it colours).
fn subagents() -> Command {
    let mut cmd = common::process_in(&tempfile::tempdir().expect("temp home").keep());
    cmd.env_remove("NO_COLOR");
    cmd
}

/// `subagents --log debug task nobody hi --agents DIR` with stderr a pipe: its stderr, which
/// must log that a file of `dir` (one without frontmatter) was skipped (a debug note).
fn skip_logged(file: &str, text: &str) -> String {
    let dir = tempfile::tempdir().expect("tmp");
    std::fs::write(dir.path().join(file), text).expect("file");
    let out = subagents()
        .args(["--log", "debug", "task", "nobody", "hi", "--agents"])
        .arg(dir.path())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .expect("runs");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(stderr.contains("skipped"), "the skip was logged: {stderr}");
    stderr
}

#[test]
fn a_closed_stdout_ends_the_command_quietly() {
    // The reading end is closed before the command writes anything.
    let (reader, writer) = std::io::pipe().expect("pipe");
    drop(reader);
    let out = subagents()
        .args(["agents", "list", "--json"])
        .stdout(writer)
        .stderr(Stdio::piped())
        .output()
        .expect("runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(out.status.code(), Some(0), "{stderr}");
}

#[test]
fn no_colour_codes_when_stderr_is_not_a_terminal() {
    // An agent directory with a file that is skipped: logged at debug level.
    let stderr = skip_logged("notes.md", "no frontmatter here\n");
    assert!(
        !stderr.contains('\u{1b}'),
        "ANSI codes in a pipe: {stderr:?}"
    );
}

#[test]
fn logged_file_names_cannot_drive_the_terminal() {
    // A skipped file (no frontmatter) is logged at info level with its path: a name with a
    // carriage return and a right-to-left override.
    let stderr = skip_logged("a\rFAKE\u{202e}dm.md", "no frontmatter\n");
    assert!(
        !stderr.contains('\r') && !stderr.contains('\u{202e}'),
        "{stderr:?}"
    );
    assert!(stderr.contains("a\\u{d}FAKE\\u{202e}dm.md"), "{stderr}");
}

#[test]
fn agent_text_cannot_drive_the_terminal() {
    let dir = tempfile::tempdir().expect("tmp");
    std::fs::write(
        dir.path().join("evil.md"),
        "---\nname: evil\ndescription: \"red \\e[31malert\\a and \\u202Ereversed\"\n---\nbody\n",
    )
    .expect("agent file");
    let out = subagents()
        .args(["agents", "list", "--agents"])
        .arg(dir.path())
        .output()
        .expect("runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("evil"), "{stdout}");
    for raw in ['\u{1b}', '\u{7}', '\u{202e}'] {
        assert!(!stdout.contains(raw), "raw {raw:?} printed: {stdout:?}");
    }
    assert!(stdout.contains("\\u{1b}"), "shown escaped: {stdout}");
}

#[test]
fn credentials_in_a_model_url_never_reach_the_output() {
    let model = "openai-compatible:m@http://user:SECRETPASS@127.0.0.1:9/v1";
    // A run: retries are logged, then the final error is printed.
    let out = subagents()
        .args(["run", "hi", "--model", model])
        .output()
        .expect("runs");
    let all = common::all_output(&out);
    assert_eq!(out.status.code(), Some(2), "{all}");
    assert!(all.contains("127.0.0.1:9"), "the endpoint is named: {all}");
    assert!(!all.contains("SECRETPASS"), "{all}");

    // The spec is refused where it is read (credentials belong in OPENAI_COMPATIBLE_API_KEY),
    // naming it without them: `serve` does not start.
    let dir = tempfile::tempdir().expect("tmp");
    std::fs::write(
        dir.path().join("a.md"),
        "---\nname: a\ndescription: d\n---\nbody\n",
    )
    .expect("agent");
    let out = assert_cmd::Command::from_std(subagents())
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--model",
            model,
            "--agents",
        ])
        .arg(dir.path())
        .timeout(std::time::Duration::from_secs(60))
        .output()
        .expect("serve runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("http://***@127.0.0.1:9/v1"), "{err}");
    assert!(!err.contains("SECRETPASS"), "{err}");
}

#[test]
fn call_gives_up_on_a_frozen_server_after_its_timeout() {
    // Accepts connections and never answers.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr");
    let held = std::thread::spawn(move || {
        let mut open = Vec::new();
        for conn in listener.incoming().take(4) {
            open.push(conn);
        }
        std::thread::sleep(std::time::Duration::from_secs(30));
    });
    let out = subagents()
        .args([
            "call",
            &format!("http://{addr}/agent"),
            "hi",
            "--timeout",
            "1",
        ])
        .output()
        .expect("runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("within 1 s (--timeout)"), "{stderr}");
    drop(held);
}
