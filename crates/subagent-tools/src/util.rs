//! Small helpers shared by the tools.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use subagent_spi::ToolError;

/// Cuts `s` to `max` characters, appending a marker with the number cut.
pub(crate) fn cut_chars(s: &str, max: usize) -> (String, usize) {
    match s.char_indices().nth(max) {
        Some((i, _)) => (s[..i].to_string(), s[i..].chars().count()),
        None => (s.to_string(), 0),
    }
}

/// Set when the async side stops waiting, so a blocking walk can stop early.
#[derive(Clone, Default)]
pub(crate) struct StopFlag(Arc<AtomicBool>);

impl StopFlag {
    pub(crate) fn is_set(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}

/// Sets the flag when dropped (the tool's future was dropped or finished).
pub(crate) struct StopOnDrop(pub(crate) StopFlag);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.0.store(true, Ordering::Relaxed);
    }
}

/// Runs a blocking closure on the blocking pool; a panic or cancellation becomes a tool error.
pub(crate) async fn blocking<T, F>(tool: &str, f: F) -> Result<T, ToolError>
where
    F: FnOnce(StopFlag) -> Result<T, ToolError> + Send + 'static,
    T: Send + 'static,
{
    let flag = StopFlag::default();
    let _guard = StopOnDrop(flag.clone());
    tokio::task::spawn_blocking(move || f(flag))
        .await
        .map_err(|e| ToolError::failed(tool, format!("internal error: {e}")))?
}

/// Builder methods that set the `Option` field of their name to `Some(value.into())`.
macro_rules! option_setters {
    ($($(#[$doc:meta])* $field:ident: $ty:ty;)*) => {$(
        $(#[$doc])*
        #[must_use]
        pub fn $field(mut self, value: impl Into<$ty>) -> Self {
            self.$field = Some(value.into());
            self
        }
    )*};
}
pub(crate) use option_setters;
