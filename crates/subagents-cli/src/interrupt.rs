//! Ctrl-C and termination signals, one rule for the whole command (documented in
//! [`EXIT_CODES`](crate::cli::EXIT_CODES)):
//!
//! - a command that runs agents (`run`, `task`, `call`) cancels its work on the first Ctrl-C
//!   (SIGINT), still prints what it has (the outcome, with its usage under `--json`) and exits
//!   [`INTERRUPTED_EXIT`](crate::error::INTERRUPTED_EXIT) (130); a second Ctrl-C exits 130 at once;
//! - the servers (`serve`, `mcp`) stop gracefully on SIGINT or SIGTERM and exit 0 (stopping is
//!   how a server ends, and service managers read 0 as a clean stop); a second signal while
//!   they drain exits 130 at once.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use subagents::spi::CancellationToken;

use crate::error::{CliError, INTERRUPTED_EXIT as EXIT};

/// Cancels a command's work on Ctrl-C and remembers that it did; dropping it stops listening.
pub(crate) struct Interrupt {
    fired: Arc<AtomicBool>,
    task: tokio::task::JoinHandle<()>,
}

impl Interrupt {
    /// Cancels `token` on the first Ctrl-C; exits 130 on the second. The handler is in place
    /// when this returns.
    pub(crate) fn cancel_on_ctrl_c(token: CancellationToken) -> Self {
        let fired = Arc::new(AtomicBool::new(false));
        let flag = fired.clone();
        let mut sigint = CtrlC::listen();
        let task = tokio::spawn(async move {
            if !sigint.next().await {
                return;
            }
            flag.store(true, Ordering::SeqCst);
            eprintln!("interrupted: cancelling (Ctrl-C again to quit at once)");
            token.cancel();
            if sigint.next().await {
                eprintln!("interrupted again: quitting");
                std::process::exit(EXIT);
            }
        });
        Self { fired, task }
    }

    /// True once Ctrl-C was pressed.
    pub(crate) fn fired(&self) -> bool {
        self.fired.load(Ordering::SeqCst)
    }

    /// The command's result, as an interruption (exit 130) when Ctrl-C was pressed and the
    /// work did not complete; the outcome was printed already.
    pub(crate) fn result<T>(&self, result: Result<T, CliError>) -> Result<T, CliError> {
        match result {
            Err(e) if self.fired() => Err(CliError::Interrupted(format!("interrupted ({e})"))),
            other => other,
        }
    }
}

/// SIGINT, listened to from the moment it is made (on Unix; elsewhere from the first wait).
struct CtrlC {
    #[cfg(unix)]
    signal: Option<tokio::signal::unix::Signal>,
}

impl CtrlC {
    fn listen() -> Self {
        Self {
            #[cfg(unix)]
            signal: tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt()).ok(),
        }
    }

    /// True when Ctrl-C was pressed; false when it cannot be listened to.
    async fn next(&mut self) -> bool {
        #[cfg(unix)]
        {
            match &mut self.signal {
                Some(s) => s.recv().await.is_some(),
                None => false,
            }
        }
        #[cfg(not(unix))]
        {
            tokio::signal::ctrl_c().await.is_ok()
        }
    }
}

impl Drop for Interrupt {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Waits for SIGINT or SIGTERM (a server's stop signal), then keeps listening: a second one
/// exits 130 at once, for a server whose graceful stop waits on a slow connection.
///
/// The handlers are installed when this is called, not when the future is first polled: a
/// signal that arrives while the server is starting (before a `select!` polls this) is kept,
/// instead of killing the process with the default action.
pub(crate) fn stop_signal() -> impl std::future::Future<Output = ()> {
    let mut listener = StopListener::install();
    async move {
        let name = listener.next().await;
        eprintln!("subagents: {name}: stopping (again to quit at once)");
        tokio::spawn(async move {
            listener.next().await;
            std::process::exit(EXIT);
        });
    }
}

/// SIGINT and SIGTERM handlers, installed at once.
struct StopListener {
    #[cfg(unix)]
    int: Option<tokio::signal::unix::Signal>,
    #[cfg(unix)]
    term: Option<tokio::signal::unix::Signal>,
}

impl StopListener {
    fn install() -> Self {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            Self {
                int: signal(SignalKind::interrupt()).ok(),
                term: signal(SignalKind::terminate()).ok(),
            }
        }
        #[cfg(not(unix))]
        {
            Self {}
        }
    }

    /// The next SIGINT or SIGTERM, by name; never returns when no handler could be installed.
    async fn next(&mut self) -> &'static str {
        #[cfg(unix)]
        {
            match (&mut self.int, &mut self.term) {
                (Some(int), Some(term)) => tokio::select! {
                    _ = int.recv() => "SIGINT",
                    _ = term.recv() => "SIGTERM",
                },
                (Some(int), None) => {
                    int.recv().await;
                    "SIGINT"
                }
                (None, Some(term)) => {
                    term.recv().await;
                    "SIGTERM"
                }
                (None, None) => std::future::pending().await,
            }
        }
        #[cfg(not(unix))]
        {
            if tokio::signal::ctrl_c().await.is_err() {
                std::future::pending::<()>().await;
            }
            "SIGINT"
        }
    }
}
