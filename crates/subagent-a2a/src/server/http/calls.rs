//! The operations every binding shares, on the agent's engine: send (blocking, immediate or
//! streaming), subscribe, and the answers for features this server does not offer.

use std::sync::Arc;

use tokio::sync::mpsc;

use axum::response::Response;

use super::reply::{Wire, event_reply};
use super::sse::{acquire_stream, sse};
use super::{Hosted, Shared};
use crate::server::engine::{
    ApiError, Event, SendParams, Sent, Started, settled_reply, trim_history,
};
use crate::server::store::PushConfigStore;
use crate::types::jsonrpc::codes;
use crate::types::v1;

/// Refuses parts whose media type the agent does not accept.
pub(super) fn check_parts(agent: &Hosted, message: &v1::Message) -> Result<(), ApiError> {
    for (i, p) in message.parts.iter().enumerate() {
        let mt = match (&p.media_type, &p.content) {
            (Some(mt), _) if !mt.is_empty() => mt.as_str(),
            (_, v1::PartContent::Text(_)) => "text/plain",
            (_, v1::PartContent::Data(_)) => "application/json",
            _ => continue,
        };
        if !agent.info.accepts(mt) {
            return Err(ApiError::new(
                codes::CONTENT_TYPE_NOT_SUPPORTED,
                format!(
                    "part {i} has media type `{mt}`, which agent `{}` does not accept (accepted: {})",
                    agent.info.name,
                    agent.info.default_input_modes.join(", ")
                ),
            ));
        }
    }
    Ok(())
}

pub(super) fn push_unsupported() -> ApiError {
    ApiError::new(
        codes::PUSH_NOTIFICATION_NOT_SUPPORTED,
        "push notifications are not supported by this agent (capabilities.pushNotifications is false)",
    )
}

pub(super) fn extended_card_unsupported() -> ApiError {
    ApiError::new(
        codes::EXTENDED_AGENT_CARD_NOT_CONFIGURED,
        "this agent has no extended agent card",
    )
}

pub(super) fn streaming_unsupported(agent: &Hosted) -> ApiError {
    ApiError::new(
        codes::UNSUPPORTED_OPERATION,
        format!("agent `{}` does not offer streaming", agent.info.name),
    )
}

/// The checks and options every binding's send shares: the parts must be ones the agent
/// accepts, and a stream one it offers; the history length asked for, and whether to answer
/// at once.
pub(super) fn send_options(
    agent: &Hosted,
    req: &v1::SendMessageRequest,
    streaming: bool,
) -> Result<(Option<i32>, bool), ApiError> {
    check_parts(agent, &req.message)?;
    if streaming && !agent.info.streaming {
        return Err(streaming_unsupported(agent));
    }
    let config = req.configuration.as_ref();
    Ok((
        config.and_then(|c| c.history_length),
        config.is_some_and(|c| c.return_immediately),
    ))
}

pub(super) async fn send(
    shared: &Arc<Shared>,
    agent: &Hosted,
    req: v1::SendMessageRequest,
    streaming: bool,
    wire: &Wire,
) -> Result<Response, ApiError> {
    let (history_length, immediate) = send_options(agent, &req, streaming)?;
    let permit = if streaming {
        Some(acquire_stream(shared)?)
    } else {
        None
    };
    let started = agent
        .engine
        .send(SendParams {
            message: req.message,
            configuration: req.configuration,
            metadata: req.metadata,
            streaming,
            version: wire.version(),
            direct: !streaming && !immediate,
        })
        .await?;
    match permit {
        Some(permit) => {
            let (first, events) = first_event(started).await?;
            Ok(sse(
                shared,
                Some(first),
                events,
                wire.clone(),
                permit,
                history_length,
            ))
        }
        None => {
            let reply = await_reply(started, immediate, history_length).await?;
            Ok(event_reply(wire, reply))
        }
    }
}

/// Only called on a value just matched as a Message: returns an empty agent message rather
/// than panicking.
pub(super) fn unreachable_message() -> v1::Message {
    v1::Message::new(v1::Role::Agent, String::new(), Vec::new())
}

/// Waits for the answer of a non-streaming send: a direct message, or the task once it is
/// terminal or interrupted (at once with `immediate`).
/// Starts a streaming run: spawns its driver and waits for its first event and the rest to
/// come; a run that ends without any answers with its error.
pub(super) async fn first_event(sent: Sent) -> Result<(Event, mpsc::Receiver<Event>), ApiError> {
    // Streaming runs always have their events (only blocking sends run direct).
    let Sent::Run(started) = sent else {
        return Err(ApiError::internal("a direct run has no event stream"));
    };
    let Started {
        run,
        mut events,
        mut driver,
    } = started;
    driver.spawn();
    match events.recv().await {
        Some(first) => Ok((first, events)),
        None => Err(run
            .error()
            .await
            .unwrap_or_else(|| ApiError::internal("the agent ended without answering"))),
    }
}

pub(super) async fn await_reply(
    sent: Sent,
    immediate: bool,
    history_length: Option<i32>,
) -> Result<v1::SendMessageResponse, ApiError> {
    // Only the request that started a direct run answers from it; a follow-up that continues
    // that run (an answer to its question) has an event stream of its own, like any other,
    // and waits on it for the next terminal or interrupted state.
    let Started {
        run,
        mut events,
        mut driver,
    } = match sent {
        Sent::Run(started) => started,
        Sent::Direct(direct) => {
            return crate::server::engine::direct::answer(direct, history_length).await;
        }
    };
    if immediate {
        driver.spawn();
    }
    loop {
        // Drive the handler here first (no task hop for quick handlers), then read events.
        let ev = match driver.pending() {
            Some(fut) => tokio::select! {
                biased;
                _ = fut => {
                    driver.done();
                    continue;
                }
                ev = events.recv() => ev,
            },
            None => events.recv().await,
        };
        let Some(ev) = ev else { break };
        match &*ev {
            v1::StreamResponse::Message(_) => {
                let m = match Arc::try_unwrap(ev) {
                    Ok(v1::StreamResponse::Message(m)) => m,
                    Ok(_) => unreachable_message(),
                    Err(ev) => match &*ev {
                        v1::StreamResponse::Message(m) => m.clone(),
                        _ => unreachable_message(),
                    },
                };
                return Ok(v1::SendMessageResponse::Message(m));
            }
            v1::StreamResponse::Task(t) => {
                let s = t.status.state;
                if immediate || s.is_terminal() || s.is_interrupted() {
                    let mut t = t.clone();
                    trim_history(&mut t, history_length);
                    return Ok(v1::SendMessageResponse::Task(t));
                }
            }
            v1::StreamResponse::StatusUpdate(u) => {
                let s = u.status.state;
                if immediate || s.is_terminal() || s.is_interrupted() {
                    break;
                }
            }
            v1::StreamResponse::ArtifactUpdate(_) => {
                if immediate {
                    break;
                }
            }
        }
    }
    drop(events);
    // The handler's rest (its end, `finish`) runs on by itself from here: it may be queued for
    // the run's state lock, which the fair lock hands it before `task()` below gets it, so
    // leaving it undriven here would wait forever (concurrent readers of the run, such as
    // refused continuations or `GetTask`, make that queue).
    driver.spawn();
    let task = run.task().await;
    settled_reply(&run, task, history_length).await
}

pub(super) async fn subscribe(
    shared: &Arc<Shared>,
    agent: &Hosted,
    task_id: &str,
    wire: &Wire,
) -> Result<Response, ApiError> {
    if !agent.info.streaming {
        return Err(streaming_unsupported(agent));
    }
    let permit = acquire_stream(shared)?;
    let rx = agent.engine.subscribe(task_id).await?;
    Ok(sse(shared, None, rx, wire.clone(), permit, None))
}

// ---------------------------------------------------------------------------------------------
// Push-notification configs (every binding and version; 1.0 shapes inside)
// ---------------------------------------------------------------------------------------------

fn push_store_error(e: crate::server::StoreError) -> ApiError {
    match e {
        crate::server::StoreError::Unsupported { .. } => push_unsupported(),
        e @ crate::server::StoreError::Full { .. } => {
            ApiError::new(codes::SERVER_BUSY, e.to_string())
        }
        other => ApiError::internal(other.to_string()),
    }
}

fn push_config_not_found(task_id: &str, config_id: &str) -> ApiError {
    ApiError::new(
        codes::TASK_NOT_FOUND,
        format!("task `{task_id}` has no push notification config `{config_id}`"),
    )
}

/// Checks that push notifications are on and the task exists; the store of its configs.
async fn push_store<'a>(
    agent: &'a Hosted,
    task_id: &str,
) -> Result<&'a dyn PushConfigStore, ApiError> {
    let Some(store) = agent
        .engine
        .push_configs
        .as_deref()
        .filter(|_| agent.engine.push_enabled())
    else {
        return Err(push_unsupported());
    };
    if task_id.is_empty() {
        return Err(ApiError::invalid_params("`taskId` is required"));
    }
    agent.engine.get(task_id, Some(0)).await?;
    Ok(store)
}

/// Creates (or replaces, by id) a config of `task_id`; a missing id gets a fresh one.
pub(super) async fn create_push_config(
    agent: &Hosted,
    task_id: &str,
    config: v1::TaskPushNotificationConfig,
) -> Result<v1::TaskPushNotificationConfig, ApiError> {
    let store = push_store(agent, task_id).await?;
    let config = agent.engine.prepare_push_config(task_id, config)?;
    // The per-task cap, checked here for a clear answer whatever the store (the default store
    // enforces it too).
    #[cfg(feature = "push")]
    let max = (agent.engine.pusher.as_ref()).map_or(usize::MAX, |p| p.max_configs());
    #[cfg(not(feature = "push"))]
    let max = usize::MAX;
    let existing = store
        .list_push_configs(task_id)
        .await
        .map_err(push_store_error)?;
    if existing.len() >= max && !existing.iter().any(|c| c.id == config.id) {
        return Err(ApiError::invalid_params(format!(
            "task `{task_id}` already has {} push notification configs; at most {max} per task \
             (push_max_configs_per_task): delete one first",
            existing.len()
        )));
    }
    store
        .save_push_config(config.clone())
        .await
        .map_err(push_store_error)?;
    Ok(config)
}

/// One config of a task.
pub(super) async fn get_push_config(
    agent: &Hosted,
    task_id: &str,
    config_id: &str,
) -> Result<v1::TaskPushNotificationConfig, ApiError> {
    push_store(agent, task_id)
        .await?
        .get_push_config(task_id, config_id)
        .await
        .map_err(push_store_error)?
        .ok_or_else(|| push_config_not_found(task_id, config_id))
}

/// Every config of a task.
pub(super) async fn list_push_configs(
    agent: &Hosted,
    task_id: &str,
) -> Result<Vec<v1::TaskPushNotificationConfig>, ApiError> {
    push_store(agent, task_id)
        .await?
        .list_push_configs(task_id)
        .await
        .map_err(push_store_error)
}

/// Deletes a config (idempotent: deleting an absent config succeeds).
pub(super) async fn delete_push_config(
    agent: &Hosted,
    task_id: &str,
    config_id: &str,
) -> Result<(), ApiError> {
    push_store(agent, task_id)
        .await?
        .delete_push_config(task_id, config_id)
        .await
        .map(|_| ())
        .map_err(push_store_error)
}

/// The extended card (1.0), for a caller the credential check let through: the agent's
/// extended information on its card; ExtendedAgentCardNotConfigured when it has none.
pub(super) fn extended_card(
    shared: &Shared,
    agent: &Hosted,
    headers: &http::HeaderMap,
) -> Result<v1::AgentCard, ApiError> {
    let (Some(info), Some(auth)) = (&agent.extended, &agent.auth) else {
        return Err(extended_card_unsupported());
    };
    let url = super::agent_url(&shared.cfg, agent, headers);
    #[cfg_attr(not(feature = "grpc-server"), allow(unused_mut))]
    let mut card =
        crate::server::card::card_v1(info, Some(auth), &url, agent.engine.push_enabled(), true);
    // The same interfaces as the public card, gRPC included.
    #[cfg(feature = "grpc-server")]
    super::cards::add_interface(&mut card, &shared.cfg, agent);
    Ok(crate::server::card::signed(
        shared.cfg.card_signer.as_ref(),
        card,
    ))
}

/// The extended card in its 0.3 shape, signed as such (a converted 1.0 card's signatures
/// would not hold over the 0.3 form).
pub(super) fn extended_card_v03(
    shared: &Shared,
    agent: &Hosted,
    headers: &http::HeaderMap,
) -> Result<crate::types::v03::AgentCard, ApiError> {
    let mut c: crate::types::v03::AgentCard = extended_card(shared, agent, headers)?.into();
    c.supports_authenticated_extended_card = Some(true);
    Ok(crate::server::card::signed(
        shared.cfg.card_signer.as_ref(),
        c,
    ))
}
