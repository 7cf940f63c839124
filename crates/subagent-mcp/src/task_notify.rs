//! Server-sent `notifications/tasks` (the tasks extension, SEP-2663): while a client's task
//! runs, its status is pushed to the connection that started it each time it changes, so a
//! client holding that connection (stdio, or the standalone SSE stream of a streamable-HTTP
//! session) learns of the end without polling `tasks/get`. Each notification carries the whole
//! task as `tasks/get` would answer it at that moment (the result inlined once completed).
//!
//! Bounded: one notifier per task (and the server holds at most
//! [`DEFAULT_MAX_TASKS`](crate::DEFAULT_MAX_TASKS) tasks, or its own limit); it sends one
//! notification at a time, at most one per status change (an input request with new keys is
//! a change), and nothing is queued: a connection that cannot take a notification within
//! [`SEND_TIMEOUT`] or has closed ends that task's notifications (the client can still poll).

use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{
    ServerNotification, TaskPayload, TaskStatus, TaskStatusNotification,
    TaskStatusNotificationParams,
};
use rmcp::{Peer, RoleServer};

use crate::tasks::TaskTable;

/// How long one notification may take to be handed to the connection.
pub(crate) const SEND_TIMEOUT: Duration = Duration::from_secs(5);

/// What a notification is sent for: the status, and the keys of the input requests.
#[derive(PartialEq, Eq)]
struct Seen {
    status: TaskStatus,
    keys: Vec<String>,
}

/// Pushes task `task_id`'s (of caller `owner`) status changes to `peer` from a task of its
/// own until the task ends, is forgotten, or `peer` cannot take them.
pub(crate) fn spawn(table: Arc<TaskTable>, owner: String, task_id: String, peer: Peer<RoleServer>) {
    tokio::spawn(async move {
        let mut last: Option<Seen> = None;
        loop {
            let Ok(task) = table.get(&owner, &task_id).await else {
                return;
            };
            let status = task.task.status;
            let keys = match &task.payload {
                TaskPayload::InputRequired { input_requests } => {
                    let mut k: Vec<String> = input_requests.keys().cloned().collect();
                    k.sort();
                    k
                }
                _ => Vec::new(),
            };
            let seen = Seen { status, keys };
            if last.as_ref() != Some(&seen) {
                last = Some(seen);
                let notification = ServerNotification::TaskStatusNotification(
                    TaskStatusNotification::new(TaskStatusNotificationParams::new(task)),
                );
                match tokio::time::timeout(SEND_TIMEOUT, peer.send_notification(notification)).await
                {
                    Ok(Ok(())) => {}
                    Ok(Err(e)) => {
                        tracing::debug!(task = %task_id, "notifications/tasks not sent: {e}");
                        return;
                    }
                    Err(_) => {
                        tracing::debug!(task = %task_id, "notifications/tasks not taken in time");
                        return;
                    }
                }
            }
            if status.is_terminal() {
                return;
            }
            table.wait_change(&task_id, status).await;
        }
    });
}
