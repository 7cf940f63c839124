//! [`ProgressRecorder`]: a progress sink that keeps every event, for assertions.

use std::sync::Mutex;

use subagent_spi::{ProgressEvent, ProgressKind, ProgressSink};

/// Records every progress event it receives.
#[derive(Debug, Default)]
pub struct ProgressRecorder(Mutex<Vec<ProgressEvent>>);

impl ProgressRecorder {
    /// An empty recorder.
    pub fn new() -> Self {
        Self::default()
    }

    /// Every event so far.
    pub fn events(&self) -> Vec<ProgressEvent> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// The kinds of every event so far.
    pub fn kinds(&self) -> Vec<ProgressKind> {
        self.events().into_iter().map(|e| e.kind).collect()
    }
}

impl ProgressSink for ProgressRecorder {
    fn emit(&self, event: ProgressEvent) {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).push(event);
    }
}
