//! Fencing: every write of a task is a compare-and-set on the version the engine last read or
//! wrote ([`TaskStore::save_versioned`]). A refused write means that another writer changed
//! the task (another server process continued or cancelled it, or failed it when this one's
//! lease ran out): the run that tried it stops working on the task ([`Run::fence`]), and a
//! message that tried it is refused.

use super::*;

/// Where a task's writes stand: its version as this engine last wrote or read it.
#[derive(Debug, Default)]
pub(crate) struct Fence {
    version: u64,
    /// The status of a write whose outcome is unknown (the store failed, perhaps after
    /// committing): when the store holds it, the write did commit and its version is adopted.
    unsure: Option<v1::TaskStatus>,
}

impl Fence {
    /// At `version` (0: the task is new).
    pub(super) fn at(version: u64) -> Self {
        Self {
            version,
            unsure: None,
        }
    }
}

/// The task changed in the store since this engine last read or wrote it.
pub(super) struct Fenced;

impl Engine {
    /// Writes `task` if the store still holds the version `fence` names, and moves `fence` to
    /// the new version. `Err(Fenced)` when another writer changed the task meanwhile (nothing
    /// written). Any other store failure is logged, as ever, and the run goes on.
    pub(super) async fn save_at(&self, task: v1::Task, fence: &mut Fence) -> Result<(), Fenced> {
        let status = task.status.clone();
        // Only after a failed write: the task again, in case that write did commit.
        let again = fence.unsure.is_some().then(|| task.clone());
        match self.store.save_versioned(task, fence.version).await {
            Ok(v) => {
                fence.version = v;
                fence.unsure = None;
                Ok(())
            }
            Err(StoreError::Conflict { .. }) => {
                let (Some(unsure), Some(task)) = (fence.unsure.take(), again) else {
                    return Err(Fenced);
                };
                match self.store.get_versioned(&task.id).await {
                    Ok(Some(stored)) if stored.task.status == unsure => {
                        // The failed write committed: this engine wrote that version.
                        fence.version = stored.version;
                        Box::pin(self.save_at(task, fence)).await
                    }
                    _ => Err(Fenced),
                }
            }
            Err(e) => {
                tracing::warn!(agent = %self.agent_path, error = %e, "cannot store task");
                fence.unsure = Some(status);
                Ok(())
            }
        }
    }

    /// The stored task with its version.
    pub(super) async fn load_versioned(
        &self,
        task_id: &str,
    ) -> Result<Option<VersionedTask>, ApiError> {
        self.store
            .get_versioned(task_id)
            .await
            .map_err(|e| ApiError::internal(e.to_string()))
    }

    /// Shared stores: a status event of task `task_id` came from the store. When this process
    /// has a run of that task waiting in [`Run::await_input`] for the client's answer, and the
    /// event says the task goes on (another process took a message continuing it), the run is
    /// checked against the store and stops if the task changed (it would otherwise wait for an
    /// answer that went elsewhere).
    pub(super) fn check_waiting_run(self: &Arc<Self>, task_id: &str, event: &Event) {
        let goes_on = matches!(&**event, v1::StreamResponse::StatusUpdate(u)
            if !u.status.state.is_interrupted());
        let Some(run) = goes_on.then(|| self.live(task_id)).flatten() else {
            return;
        };
        if run
            .input
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_none()
        {
            return;
        }
        let engine = self.clone();
        tokio::spawn(async move {
            let mut st = run.state.lock().await;
            let waiting = !st.finished
                && st.fence.unsure.is_none()
                && st
                    .task
                    .as_ref()
                    .is_some_and(|t| t.status.state.is_interrupted());
            if !waiting {
                return;
            }
            if let Ok(Some(stored)) = engine.store.get_versioned(&run.task_id).await
                && stored.version != st.fence.version
            {
                run.fence(&mut st, &engine).await;
            }
        });
    }
}

impl Run {
    /// Another writer changed the task since this run's last write (see the module docs): the
    /// run stops working on it. Its handler's token is cancelled and its further events are
    /// refused; a question it waits on is withdrawn; its streams get the stored status, then
    /// follow the task from the store (shared stores) or end; a blocking request answers with
    /// the stored task; nothing more of the run is written, pushed or published.
    pub(super) async fn fence(self: &Arc<Self>, st: &mut RunState, engine: &Engine) {
        tracing::info!(agent = %engine.agent_path, task = %self.task_id,
            "the task changed in the store (another server process wrote it): its run here stops");
        st.finished = true;
        st.fenced = true;
        self.cancel.cancel();
        self.input.lock().unwrap_or_else(|e| e.into_inner()).take();
        self.inbox.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Ok(Some(stored)) = engine.load(&self.task_id).await {
            let ev = Arc::new(v1::StreamResponse::StatusUpdate(
                v1::TaskStatusUpdateEvent {
                    task_id: self.task_id.clone(),
                    context_id: self.context_id.clone(),
                    status: stored.status.clone(),
                    metadata: None,
                },
            ));
            let goes_on = !stored.status.state.is_terminal();
            broadcast(st, ev, &(engine.limits.slow_subscriber_timeout,)).await;
            st.task = Some(stored);
            if goes_on && engine.replicas.is_some() {
                let subscribers = std::mem::take(&mut st.subscribers);
                engine.follow_remote(&self.task_id, subscribers);
            }
        }
        st.subscribers.clear();
        if let Some(d) = &self.direct {
            d.settle();
        }
        engine.forget(self);
    }
}
