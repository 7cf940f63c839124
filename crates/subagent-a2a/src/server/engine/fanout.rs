//! Fanning out a task's events: to the run's subscribers (bounded, a slow one dropped) and to
//! the task's webhooks (push notifications).

use std::time::Duration;

use super::*;

impl Engine {
    /// Queues an event of a task for its webhooks (push notifications on; else nothing).
    pub(super) fn push(
        &self,
        task_id: &str,
        event: &Event,
        snapshot: Option<&v1::Task>,
        version: ProtocolVersion,
    ) {
        #[cfg(feature = "push")]
        if let Some(p) = &self.pusher {
            let last = match &**event {
                v1::StreamResponse::StatusUpdate(u) => {
                    u.status.state.is_terminal() || u.status.state.is_interrupted()
                }
                _ => false,
            };
            p.enqueue(
                task_id,
                crate::server::push::Delivery {
                    event: event.clone(),
                    snapshot: (version == ProtocolVersion::V03)
                        .then(|| snapshot.cloned())
                        .flatten(),
                    version,
                    last,
                },
            );
        }
        #[cfg(not(feature = "push"))]
        let _ = (task_id, event, snapshot, version);
    }
}

/// Whether a task event of this run reaches anyone: a subscriber of the run, a webhook (push
/// notifications on) or the processes sharing the store. When nobody hears it, the run does
/// not build the event (a large status message is then not copied for it: issue 30, item 3).
pub(super) fn heard(st: &RunState, engine: &Option<Arc<Engine>>) -> bool {
    !st.subscribers.is_empty()
        || engine
            .as_ref()
            .is_some_and(|e| e.push_enabled() || e.replicas.is_some())
}

pub(super) async fn broadcast(st: &mut RunState, ev: Event, limits: &(Duration,)) {
    if st.subscribers.is_empty() {
        return;
    }
    // In place, in order: a subscriber whose buffer is full is waited for (up to the slow
    // subscriber timeout); one that is gone or too slow is dropped.
    let mut i = 0;
    while i < st.subscribers.len() {
        let s = &st.subscribers[i];
        let ok = match s.try_send(ev.clone()) {
            Ok(()) => true,
            Err(mpsc::error::TrySendError::Closed(_)) => false,
            Err(mpsc::error::TrySendError::Full(e)) => {
                matches!(tokio::time::timeout(limits.0, s.send(e)).await, Ok(Ok(())))
            }
        };
        if ok {
            i += 1;
        } else {
            st.subscribers.remove(i);
        }
    }
}
