//! The command on a pseudo-terminal: its stdin and stderr (and stdout, when asked) are a
//! terminal, so it prompts and draws its live tree as it does for a person; the test reads
//! every byte the terminal got and types answers.

use std::io::{Read as _, Write as _};
use std::os::fd::OwnedFd;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// Bytes the terminal received, and whether the last writer closed it.
#[derive(Default)]
struct Screen {
    bytes: Vec<u8>,
    closed: bool,
}

/// A child process on a pseudo-terminal; killed when dropped.
pub(crate) struct OnPty {
    child: Child,
    master: std::fs::File,
    screen: Arc<(Mutex<Screen>, Condvar)>,
}

impl OnPty {
    /// Spawns `cmd` with stdin and stderr on a new pseudo-terminal (200 columns), and stdout
    /// too with `stdout_too` (else stdout is whatever `cmd` says).
    pub(crate) fn spawn(cmd: &mut Command, stdout_too: bool) -> Self {
        use rustix::pty::{OpenptFlags, grantpt, openpt, ptsname, unlockpt};
        let master: OwnedFd =
            openpt(OpenptFlags::RDWR | OpenptFlags::NOCTTY | OpenptFlags::CLOEXEC).expect("openpt");
        grantpt(&master).expect("grantpt");
        unlockpt(&master).expect("unlockpt");
        let name = ptsname(&master, Vec::new()).expect("ptsname");
        let slave = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(name.to_str().expect("pts path"))
            .expect("open the terminal");
        rustix::termios::tcsetwinsize(
            &slave,
            rustix::termios::Winsize {
                ws_row: 50,
                ws_col: 200,
                ws_xpixel: 0,
                ws_ypixel: 0,
            },
        )
        .expect("window size");
        let stdio = || Stdio::from(slave.try_clone().expect("dup the terminal"));
        cmd.stdin(stdio()).stderr(stdio());
        if stdout_too {
            cmd.stdout(stdio());
        }
        let child = cmd.spawn().expect("the command starts");
        // Only the child holds the terminal now (`cmd` drops its copies): when it exits,
        // reads end.
        cmd.stdin(Stdio::null()).stderr(Stdio::null());
        if stdout_too {
            cmd.stdout(Stdio::null());
        }
        drop(slave);
        let master = std::fs::File::from(master);
        let screen: Arc<(Mutex<Screen>, Condvar)> = Arc::default();
        let mut reader = master.try_clone().expect("dup the master");
        let shared = screen.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 8192];
            loop {
                let n = reader.read(&mut buf).unwrap_or(0);
                let (lock, ready) = &*shared;
                let mut s = lock.lock().expect("screen");
                if n == 0 {
                    s.closed = true;
                    ready.notify_all();
                    return;
                }
                s.bytes.extend_from_slice(&buf[..n]);
                ready.notify_all();
            }
        });
        Self {
            child,
            master,
            screen,
        }
    }

    /// The child's process id.
    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Everything the terminal got so far, as text (lossy).
    pub(crate) fn text(&self) -> String {
        String::from_utf8_lossy(&self.screen.0.lock().expect("screen").bytes).into_owned()
    }

    /// Waits (at most `limit`) until the terminal got `needle` `times` times; panics with what
    /// it got otherwise.
    pub(crate) fn expect_count(&self, needle: &str, times: usize, limit: Duration) -> String {
        let deadline = Instant::now() + limit;
        let (lock, ready) = &*self.screen;
        let mut s = lock.lock().expect("screen");
        loop {
            let text = String::from_utf8_lossy(&s.bytes).into_owned();
            if text.matches(needle).count() >= times {
                return text;
            }
            let now = Instant::now();
            if now >= deadline || s.closed {
                panic!("the terminal never showed {needle:?} ({times}x); it got: {text:?}");
            }
            s = ready.wait_timeout(s, deadline - now).expect("screen").0;
        }
    }

    /// [`expect_count`](Self::expect_count) once.
    pub(crate) fn expect(&self, needle: &str, limit: Duration) -> String {
        self.expect_count(needle, 1, limit)
    }

    /// Types `text` on the terminal.
    pub(crate) fn send(&mut self, text: &str) {
        self.master.write_all(text.as_bytes()).expect("type");
        self.master.flush().expect("flush");
    }

    /// Waits (at most `limit`) for the child to exit and for the terminal to be drained;
    /// kills it and panics with what the terminal got when it does not exit in time.
    pub(crate) fn finish(self, limit: Duration) -> (ExitStatus, String) {
        self.finish_unless(limit, |_| false)
    }

    /// [`finish`](Self::finish), failing at once (the child killed) when what the terminal
    /// got so far makes `wrong` true.
    pub(crate) fn finish_unless(
        mut self,
        limit: Duration,
        wrong: impl Fn(&str) -> bool,
    ) -> (ExitStatus, String) {
        let deadline = Instant::now() + limit;
        let status = loop {
            if let Some(status) = self.child.try_wait().expect("wait") {
                break status;
            }
            if wrong(&self.text()) {
                let _ = self.child.kill();
                let _ = self.child.wait();
                panic!("the terminal got: {:?}", self.text());
            }
            if Instant::now() >= deadline {
                let _ = self.child.kill();
                let _ = self.child.wait();
                panic!(
                    "the command did not exit; the terminal got: {:?}",
                    self.text()
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        // The rest of its output (grandchildren may still hold the terminal: bounded).
        let (lock, ready) = &*self.screen;
        let mut s = lock.lock().expect("screen");
        let drained = Instant::now() + Duration::from_secs(5);
        while !s.closed && Instant::now() < drained {
            s = ready
                .wait_timeout(s, Duration::from_millis(100))
                .expect("screen")
                .0;
        }
        let text = String::from_utf8_lossy(&s.bytes).into_owned();
        drop(s);
        (status, text)
    }
}

impl Drop for OnPty {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Sends `signal` to the process `pid`.
pub(crate) fn signal(pid: u32, signal: rustix::process::Signal) {
    let pid = rustix::process::Pid::from_raw(i32::try_from(pid).expect("pid")).expect("pid");
    rustix::process::kill_process(pid, signal).expect("kill");
}
