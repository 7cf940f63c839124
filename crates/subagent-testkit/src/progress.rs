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
        crate::locked(&self.0).clone()
    }

    /// The kinds of every event so far.
    pub fn kinds(&self) -> Vec<ProgressKind> {
        self.events().into_iter().map(|e| e.kind).collect()
    }

    /// The messages of the [`ProgressKind::Status`] events so far, in order.
    pub fn statuses(&self) -> Vec<String> {
        self.kinds()
            .into_iter()
            .filter_map(|k| match k {
                ProgressKind::Status { message } => Some(message),
                _ => None,
            })
            .collect()
    }
}

impl ProgressSink for ProgressRecorder {
    fn emit(&self, event: ProgressEvent) {
        crate::locked(&self.0).push(event);
    }
}
