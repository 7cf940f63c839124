//! The command against hostile surroundings: a closed stdout, a log file instead of a
//! terminal, agent files whose text would drive the terminal.

use std::process::{Command, Stdio};

fn subagents() -> Command {
    let mut cmd = Command::new(assert_cmd::cargo::cargo_bin("subagents"));
    let home = tempfile::tempdir().expect("temp home").keep();
    cmd.env("HOME", &home)
        .env_remove("NO_COLOR")
        .env("SUBAGENTS_OLLAMA_URL", "http://127.0.0.1:9")
        .current_dir(&home);
    cmd
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
    // An agent directory with a file that is skipped: logged at info level.
    let dir = tempfile::tempdir().expect("tmp");
    std::fs::write(dir.path().join("notes.md"), "no frontmatter here\n").expect("file");
    let out = subagents()
        .args(["--log", "info", "task", "nobody", "hi", "--agents"])
        .arg(dir.path())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .expect("runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("skipped"), "the skip was logged: {stderr}");
    assert!(
        !stderr.contains('\u{1b}'),
        "ANSI codes in a pipe: {stderr:?}"
    );
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
