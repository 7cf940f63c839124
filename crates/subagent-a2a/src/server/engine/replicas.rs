//! Replica coordination (shared stores, through the store's [`ReplicaBus`]): cancel requests
//! and events of tasks running on other processes, and the streams of this process's
//! subscribers to them.

use std::sync::Arc;

use tokio::sync::mpsc;

use super::*;

/// A subscriber of a task another process runs (shared stores).
pub(super) struct RemoteWatcher {
    tx: mpsc::Sender<Event>,
    /// Ends at an interrupted state (it has seen the task running); a subscriber that joined
    /// an interrupted task waits for the message that continues it.
    end_on_interrupt: bool,
}

pub(super) fn lock_remote(
    m: &Mutex<HashMap<String, Vec<RemoteWatcher>>>,
) -> std::sync::MutexGuard<'_, HashMap<String, Vec<RemoteWatcher>>> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Engine {
    /// Shared stores: starts reading the store's signals once (cancel requests for the tasks
    /// this process runs, events for the subscribers of tasks it does not run).
    pub(super) fn ensure_listening(self: &Arc<Self>) {
        let Some(bus) = &self.replicas else {
            return;
        };
        self.listening.call_once(|| {
            let mut signals = bus.signals();
            let Ok(rt) = tokio::runtime::Handle::try_current() else {
                return;
            };
            let weak = Arc::downgrade(self);
            let shutdown = self.shutdown.clone();
            rt.spawn(async move {
                loop {
                    let signal = tokio::select! {
                        _ = shutdown.cancelled() => return,
                        s = signals.recv() => s,
                    };
                    let Some(engine) = weak.upgrade() else { return };
                    match signal {
                        Ok(RemoteSignal::Cancel { task_id }) => {
                            if let Some(run) = engine.live(&task_id) {
                                tokio::spawn(async move {
                                    engine.cancel_live(&run).await;
                                });
                            }
                        }
                        Ok(RemoteSignal::Event { task_id, event }) => {
                            engine.check_waiting_run(&task_id, &event);
                            engine.forward_remote(&task_id, event);
                        }
                        #[allow(unreachable_patterns)]
                        Ok(_) => {}
                        Err(tokio::sync::broadcast::error::RecvError::Lagged(n)) => {
                            tracing::warn!(agent = %engine.agent_path, missed = n,
                                "A2A store signals lagged; remote subscribers missed events");
                        }
                        Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
                    }
                }
            });
        });
    }

    /// Hands an event from the shared store to this process's subscribers of that task.
    pub(super) fn forward_remote(&self, task_id: &str, event: Event) {
        let mut remote = lock_remote(&self.remote);
        let Some(watchers) = remote.get_mut(task_id) else {
            return;
        };
        let state = match &*event {
            v1::StreamResponse::StatusUpdate(u) => Some(u.status.state),
            _ => None,
        };
        watchers.retain_mut(|w| {
            // A full buffer drops the subscriber (its stream ends; it may subscribe again).
            if w.tx.try_send(event.clone()).is_err() {
                return false;
            }
            match state {
                Some(s) if s.is_terminal() => false,
                Some(s) if s.is_interrupted() => !w.end_on_interrupt,
                Some(_) => {
                    w.end_on_interrupt = true;
                    true
                }
                None => true,
            }
        });
        if watchers.is_empty() {
            remote.remove(task_id);
        }
    }

    /// Shared stores: the subscribers of a run this process gave up (another process took
    /// its task over) follow the task's events from the store from now on.
    pub(super) fn follow_remote(&self, task_id: &str, subscribers: Vec<mpsc::Sender<Event>>) {
        if subscribers.is_empty() {
            return;
        }
        lock_remote(&self.remote)
            .entry(task_id.to_string())
            .or_default()
            .extend(subscribers.into_iter().map(|tx| RemoteWatcher {
                tx,
                end_on_interrupt: true,
            }));
    }

    /// Shared stores: hands an event of a task running here to the other processes.
    pub(super) async fn publish(&self, task_id: &str, event: &v1::StreamResponse) {
        let Some(bus) = &self.replicas else {
            return;
        };
        if let Err(e) = bus.publish_event(task_id, event).await {
            tracing::warn!(agent = %self.agent_path, error = %e, "cannot publish task event");
        }
    }
}

impl Engine {
    /// Shared stores: a stream of a task this process does not run, fed by the events the
    /// running process publishes (a task that is interrupted now waits for the message that
    /// continues it, on any process). The task snapshot comes first; an update that happened
    /// between reading it and listening is never lost, and not repeated when the snapshot
    /// already shows it.
    pub(super) async fn subscribe_remote(
        self: &Arc<Self>,
        task: v1::Task,
    ) -> mpsc::Receiver<Event> {
        let n = self.limits.subscriber_buffer.max(1);
        let (tx, mut from_store) = mpsc::channel(n);
        {
            let mut remote = lock_remote(&self.remote);
            remote.retain(|_, v| {
                v.retain(|w| !w.tx.is_closed());
                !v.is_empty()
            });
            remote
                .entry(task.id.clone())
                .or_default()
                .push(RemoteWatcher {
                    tx,
                    end_on_interrupt: !task.status.state.is_interrupted(),
                });
        }
        // Re-read after listening: the first snapshot may predate an update just published.
        let task = match self.load(&task.id).await {
            Ok(Some(t)) => t,
            _ => task,
        };
        let (out, rx) = mpsc::channel(n);
        let terminal = task.status.state.is_terminal();
        let shown = task.status.clone();
        let _ = out.try_send(Arc::new(v1::StreamResponse::Task(task)));
        if !terminal {
            tokio::spawn(async move {
                while let Some(ev) = from_store.recv().await {
                    // The update the snapshot already shows (published before it was read,
                    // delivered after) is not repeated.
                    if let v1::StreamResponse::StatusUpdate(u) = &*ev
                        && u.status == shown
                    {
                        continue;
                    }
                    if out.send(ev).await.is_err() {
                        break;
                    }
                }
            });
        }
        rx
    }
}
