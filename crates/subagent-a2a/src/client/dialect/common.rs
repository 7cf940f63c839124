//! What the dialects share: the HTTP+JSON routes (the same in 1.0 and 0.3, under each
//! version's base URL) and the errors of what a version lacks.

use crate::client::wire::{Wire, path_segment};
use crate::error::A2aError;
use crate::types::{v1, v03};

/// The error of an operation a version lacks.
pub(super) fn unsupported(message: String) -> A2aError {
    A2aError::Unsupported { message }
}

/// `ListTasks` against a 0.3 peer: the operation does not exist there.
pub(super) fn no_task_listing(wire: &Wire) -> A2aError {
    unsupported(format!(
        "ListTasks at {}: A2A 0.3 has no task listing",
        wire.endpoint.url
    ))
}

/// The answer of a 0.3 `message/send` (`op`, at `url`): a task or a message, never an update
/// event.
pub(super) fn send_reply(
    ev: v03::Event,
    url: &str,
    op: &str,
) -> Result<v1::SendMessageResponse, A2aError> {
    v1::SendMessageResponse::try_from(ev).map_err(|_| A2aError::Protocol {
        url: url.to_string(),
        message: format!("{op} returned an update event instead of a task or message"),
    })
}

/// The HTTP+JSON route of one task, with `?historyLength=` when one is asked for.
pub(super) fn task_route(id: &str, history_length: Option<i32>) -> String {
    let mut route = format!("tasks/{}", path_segment(id));
    if let Some(n) = history_length {
        route.push_str(&format!("?historyLength={n}"));
    }
    route
}

/// The HTTP+JSON route of a task's push configs (list and create use it).
pub(super) fn push_configs_route(task_id: &str) -> String {
    format!("tasks/{}/pushNotificationConfigs", path_segment(task_id))
}

/// The HTTP+JSON route of one push config (get and delete use it).
pub(super) fn push_config_route(task_id: &str, id: &str) -> String {
    format!("{}/{}", push_configs_route(task_id), path_segment(id))
}
