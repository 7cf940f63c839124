//! The engine's side of the handler contract: [`EngineSink`] implements
//! [`RunSink`](super::handler::RunSink) over a run of the engine.

use std::sync::Arc;

use subagent_spi::async_trait;

use super::Run;
use crate::server::handler::{Emission, RunSink, SinkError};
use crate::task_store::ContextSessionStore;
use crate::types::v1;

/// A handler run as the [`TaskEventSink`](super::TaskEventSink) sees it.
pub(crate) struct EngineSink(pub(crate) Arc<Run>);

#[async_trait]
impl RunSink for EngineSink {
    fn task_id(&self) -> &str {
        &self.0.task_id
    }

    fn context_id(&self) -> &str {
        &self.0.context_id
    }

    async fn emit(&self, event: Emission) -> Result<(), SinkError> {
        self.0.emit(event).await
    }

    async fn await_input(
        &self,
        state: v1::TaskState,
        question: v1::Message,
    ) -> Result<Arc<v1::Message>, SinkError> {
        self.0.await_input(state, question).await
    }

    fn open_inbox(&self, inbox: tokio::sync::mpsc::Sender<Arc<v1::Message>>) {
        *self.0.inbox.lock().unwrap_or_else(|e| e.into_inner()) = Some(inbox);
    }

    fn context_sessions(&self) -> Option<Arc<dyn ContextSessionStore>> {
        self.0.context_sessions()
    }
}
