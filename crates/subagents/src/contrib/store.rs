//! The durable store: the Task tool's ledger, and the Markdown agents' transcripts (handed over
//! in [`Assembly::shared`]).

use std::sync::Arc;

use subagent_runtime::TranscriptStore;
use subagent_spi::async_trait;

use super::{Assembly, Contribution};
use crate::{Error, StoreHandle, Subagents, SubagentsBuilder};

/// The store the builder names, once opened.
#[derive(Default)]
pub(crate) struct Store {
    handle: Option<Arc<StoreHandle>>,
}

#[async_trait]
impl Contribution for Store {
    async fn kinds(&mut self, b: &SubagentsBuilder, a: &mut Assembly) -> Result<(), Error> {
        self.handle = open_store(b.store.as_ref(), &b.retention).await?;
        if let Some(s) = &self.handle {
            let task = std::mem::take(&mut a.task);
            a.task = task.ledger(Arc::new(subagent_store::SqlTaskLedger::new(s.db.clone())));
            let transcripts: Arc<dyn TranscriptStore> =
                Arc::new(subagent_store::SqlTranscriptStore::new(s.db.clone()));
            a.shared.insert(transcripts);
        }
        Ok(())
    }

    async fn wire(&mut self, agents: &mut Subagents) {
        #[cfg(feature = "workflow")]
        if let Some(s) = &self.handle {
            agents.workflow_journal =
                Arc::new(subagent_store::SqlWorkflowJournal::new(s.db.clone()));
        }
        agents.store = self.handle.take();
    }
}

/// Opens the store (`None` for none or `memory`) and starts its maintenance: interrupted tasks
/// marked and retention applied now, then every ten minutes.
async fn open_store(
    url: Option<&subagent_store::StoreUrl>,
    retention: &subagent_store::Retention,
) -> Result<Option<Arc<StoreHandle>>, Error> {
    let Some(url) = url else {
        return Ok(None);
    };
    let db = subagent_store::Db::open(url)
        .await
        .map_err(|e| Error::Store {
            url: url.redacted(),
            source: Box::new(e),
        })?;
    let Some(db) = db else {
        return Ok(None);
    };
    tracing::debug!(store = %url, "store opened");
    let maintenance = subagent_store::spawn_maintenance(
        db.clone(),
        retention.clone(),
        std::time::Duration::from_secs(600),
    );
    Ok(Some(Arc::new(StoreHandle { db, maintenance })))
}
