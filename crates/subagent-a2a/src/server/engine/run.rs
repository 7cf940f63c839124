//! Running a task: one handler run ([`Run`]) applies its handler's events to the task, stores
//! it, and hands each event to the fan-out; questions asked in the run wait here for their
//! answers.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, oneshot};

use super::*;

/// Where [`Run::answer`] hands a message: the handler waiting in `await_input`, or the inbox
/// of a handler that takes messages while it works.
pub(super) enum Deliver {
    Waiter(oneshot::Sender<Arc<v1::Message>>),
    Inbox(mpsc::OwnedPermit<Arc<v1::Message>>),
}

/// A task just created by [`Run::create_task`]: its `Task` event, when someone hears it.
pub(super) struct Created(Option<Event>);

/// Withdraws a question when its wait ends without an answer (timeout, cancellation).
pub(super) struct InputGuard<'a>(&'a Run);

impl Drop for InputGuard<'_> {
    fn drop(&mut self) {
        self.0
            .input
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
    }
}

impl Run {
    /// The conversation sessions of the run's agent's store (`None` when it keeps none, or
    /// once the server is gone).
    pub(crate) fn context_sessions(&self) -> Option<Arc<dyn ContextSessionStore>> {
        self.engine.upgrade().and_then(|e| e.sessions.clone())
    }

    /// Puts the task in `state` (input-required or auth-required) with `question`, then waits
    /// in this run for the client's next message on the task and returns it (the task is
    /// `working` again by then). Dropping the future withdraws the question.
    pub(crate) async fn await_input(
        self: &Arc<Self>,
        state: v1::TaskState,
        question: v1::Message,
    ) -> Result<Arc<v1::Message>, SinkError> {
        let _turn = self.asking.lock().await;
        let (tx, rx) = oneshot::channel();
        // Ready before the question is visible, so a quick answer finds it.
        *self.input.lock().unwrap_or_else(|e| e.into_inner()) = Some(tx);
        let _guard = InputGuard(self);
        self.emit(Emission::Status(state, Some(question), None))
            .await?;
        rx.await.map_err(|_| SinkError::Closed {
            task_id: self.task_id.clone(),
            reason: "the task ended before the client answered",
        })
    }

    /// Hands `message` to the handler when it waits for an answer on this interrupted task:
    /// the message joins the history, the task is `working` again, and the returned
    /// [`Started`] streams the run's next events. `Ok(Err(message))` when nobody waits.
    pub(super) async fn answer(
        self: &Arc<Self>,
        mut message: v1::Message,
        engine: &Engine,
    ) -> Result<Result<Started, v1::Message>, ApiError> {
        let mut st = self.state.lock().await;
        let interrupted = !st.finished
            && st
                .task
                .as_ref()
                .is_some_and(|t| t.status.state.is_interrupted());
        // A running task whose handler takes further messages (its inbox is open).
        let inbox = if interrupted || st.finished {
            None
        } else {
            self.inbox
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .as_ref()
                .filter(|tx| !tx.is_closed())
                .cloned()
        };
        if !interrupted && inbox.is_none() {
            return Ok(Err(message));
        }
        if let Some(c) = &message.context_id
            && !c.is_empty()
            && *c != self.context_id
        {
            return Err(ApiError::invalid_params(format!(
                "`message.contextId` `{c}` does not match the context `{}` of task `{}`",
                self.context_id, self.task_id
            )));
        }
        let waiter = match &inbox {
            Some(tx) => match tx.clone().try_reserve_owned() {
                Ok(permit) => Deliver::Inbox(permit),
                // A full inbox: the handler is behind; refused as for any running task.
                Err(_) => return Ok(Err(message)),
            },
            None => {
                let mut slot = self.input.lock().unwrap_or_else(|e| e.into_inner());
                match slot.take() {
                    Some(tx) if !tx.is_closed() => Deliver::Waiter(tx),
                    _ => return Ok(Err(message)),
                }
            }
        };
        message.task_id = Some(self.task_id.clone());
        message.context_id = Some(self.context_id.clone());
        let message = Arc::new(message);
        let Some(task) = st.task.as_mut() else {
            return Ok(Err(Arc::unwrap_or_clone(message)));
        };
        task.history.push(v1::Message::clone(&message));
        task.status = v1::TaskStatus {
            state: v1::TaskState::Working,
            message: None,
            timestamp: Some(now_rfc3339()),
        };
        let snapshot = task.clone();
        // Committed before any stream hears of it; refused when another process continued
        // the task (this run then stops: its handler's wait ends).
        if engine
            .save_at(snapshot.clone(), &mut st.fence)
            .await
            .is_err()
        {
            drop(waiter);
            self.fence(&mut st, engine).await;
            return Err(ApiError::new(
                codes::UNSUPPORTED_OPERATION,
                format!(
                    "task `{}` was continued by another message meanwhile (through another \
                     server process)",
                    self.task_id
                ),
            ));
        }
        let (tx, rx) = mpsc::channel(engine.limits.subscriber_buffer.max(1));
        let _ = tx.try_send(Arc::new(v1::StreamResponse::Task(snapshot.clone())));
        st.subscribers.push(tx);
        // Streams that subscribed while the task waited follow it again.
        let waiting = lock_waiting(&engine.waiting)
            .remove(&self.task_id)
            .unwrap_or_default();
        let update = Arc::new(v1::StreamResponse::StatusUpdate(
            v1::TaskStatusUpdateEvent {
                task_id: self.task_id.clone(),
                context_id: self.context_id.clone(),
                status: snapshot.status.clone(),
                metadata: None,
            },
        ));
        for w in waiting {
            if w.try_send(update.clone()).is_ok() {
                st.subscribers.push(w);
            }
        }
        // A handler that stopped waiting this instant goes on by itself.
        match waiter {
            Deliver::Waiter(tx) => {
                let _ = tx.send(message);
            }
            Deliver::Inbox(permit) => {
                permit.send(message);
            }
        }
        drop(st);
        Ok(Ok(Started {
            run: self.clone(),
            events: rx,
            driver: Driver(None),
        }))
    }

    /// True when the run left its task interrupted (input or auth required) without waiting
    /// for the answer in the run, and its handler returned within `grace`: the stored task is
    /// then what a message continues. False while the run works or waits.
    pub(super) async fn interrupted_and_returning(&self, grace: Duration) -> bool {
        let interrupted = {
            let st = self.state.lock().await;
            st.task
                .as_ref()
                .is_some_and(|t| t.status.state.is_interrupted())
        };
        if !interrupted {
            return false;
        }
        let notified = self.done_notify.notified();
        if self.done.load(std::sync::atomic::Ordering::Acquire) {
            return true;
        }
        tokio::time::timeout(grace, notified).await.is_ok()
            || self.done.load(std::sync::atomic::Ordering::Acquire)
    }

    /// The task as it is now (`None` before the first task event); read from the store once
    /// another process took the task over ([`Run::fence`]).
    pub(crate) async fn task(&self) -> Option<v1::Task> {
        let st = self.state.lock().await;
        if st.fenced {
            drop(st);
            return self.stored_task().await;
        }
        st.task.clone()
    }

    /// Like [`Run::task`], but moved out (not copied) once the handler has ended: the run is
    /// then out of the engine's map and nobody reads its task again.
    pub(crate) async fn take_or_clone_task(&self) -> Option<v1::Task> {
        let mut st = self.state.lock().await;
        if st.fenced {
            drop(st);
            return self.stored_task().await;
        }
        if self.done.load(std::sync::atomic::Ordering::Acquire) {
            st.task.take()
        } else {
            st.task.clone()
        }
    }

    /// A fenced run's task: as the store holds it now, else as it was when the run stopped.
    async fn stored_task(&self) -> Option<v1::Task> {
        if let Some(engine) = self.engine.upgrade()
            && let Ok(Some(t)) = engine.load(&self.task_id).await
        {
            return Some(t);
        }
        self.state.lock().await.task.clone()
    }

    /// The error the handler answered with before any event, if any.
    pub(crate) async fn error(&self) -> Option<ApiError> {
        self.state.lock().await.error.clone()
    }

    pub(crate) async fn emit(self: &Arc<Self>, e: Emission) -> Result<(), SinkError> {
        let mut st = self.state.lock().await;
        if st.finished {
            return Err(SinkError::Closed {
                task_id: self.task_id.clone(),
                reason: if st.replied {
                    "a direct reply was sent"
                } else if st.fenced {
                    "another server process took the task over"
                } else {
                    "the task reached a terminal state"
                },
            });
        }
        if matches!(e, Emission::Reply(_)) && st.task.is_some() {
            return Err(SinkError::Closed {
                task_id: self.task_id.clone(),
                reason: "a direct reply is only possible before any task event",
            });
        }
        self.apply(&mut st, e, false).await;
        Ok(())
    }

    pub(super) async fn apply(self: &Arc<Self>, st: &mut RunState, e: Emission, forced: bool) {
        let engine = self.engine.upgrade();
        match e {
            Emission::Reply(m) => {
                st.finished = true;
                st.replied = true;
                // The user's message is no longer needed: a reply stores no task.
                st.user_message = None;
                match &self.direct {
                    Some(d) => d.reply(m),
                    None => {
                        broadcast(
                            st,
                            Arc::new(v1::StreamResponse::Message(m)),
                            &self.limits(&engine),
                        )
                        .await
                    }
                }
                st.subscribers.clear();
            }
            Emission::Status(state, message, metadata) => {
                // A task created by this event is announced after the save below: its first
                // committed state is this one (no separate `submitted` write), and nobody
                // hears of the task before a state of it is committed.
                let created = self.create_task(st, &engine);
                // Issue 30 item 3: the status event (a copy of the status message) is built
                // only when someone hears it.
                let heard = super::fanout::heard(st, &engine);
                let Some(task) = st.task.as_mut() else { return };
                if let Some(m) = &message {
                    task.history.push(m.clone());
                }
                if let Some(extra) = &metadata {
                    task.metadata
                        .get_or_insert_with(JsonObject::new)
                        .extend(extra.iter().map(|(k, v)| (k.clone(), v.clone())));
                }
                task.status = v1::TaskStatus {
                    state,
                    message,
                    timestamp: Some(now_rfc3339()),
                };
                let snapshot = task.clone();
                if let Some(engine) = &engine
                    && engine.save_at(snapshot, &mut st.fence).await.is_err()
                {
                    self.fence(st, engine).await;
                    return;
                }
                if let Some(created) = created {
                    self.announce(st, &engine, created).await;
                }
                if let (true, Some(task)) = (heard, &st.task) {
                    let ev = Arc::new(v1::StreamResponse::StatusUpdate(
                        v1::TaskStatusUpdateEvent {
                            task_id: self.task_id.clone(),
                            context_id: self.context_id.clone(),
                            status: task.status.clone(),
                            metadata,
                        },
                    ));
                    if let Some(engine) = &engine {
                        engine.push(&self.task_id, &ev, st.task.as_ref(), self.version);
                        engine.publish(&self.task_id, &ev).await;
                    }
                    broadcast(st, ev, &self.limits(&engine)).await;
                }
                if let Some(d) = &self.direct
                    && (state.is_terminal() || state.is_interrupted())
                {
                    d.settle();
                }
                if state.is_terminal() {
                    st.finished = true;
                    st.subscribers.clear();
                    // A question still waiting is void: its wait ends.
                    self.input.lock().unwrap_or_else(|e| e.into_inner()).take();
                    if forced && let Some(engine) = &engine {
                        engine.forget(self);
                    }
                } else if state.is_interrupted() {
                    st.subscribers.clear();
                }
            }
            Emission::Artifact {
                artifact,
                append,
                last_chunk,
            } => {
                if let Some(created) = self.create_task(st, &engine) {
                    // Artifacts are not saved on their own: the `submitted` task is, first.
                    if let (Some(engine), Some(task)) = (&engine, st.task.clone())
                        && engine.save_at(task, &mut st.fence).await.is_err()
                    {
                        self.fence(st, engine).await;
                        return;
                    }
                    self.announce(st, &engine, created).await;
                }
                let Some(task) = st.task.as_mut() else { return };
                match task
                    .artifacts
                    .iter_mut()
                    .find(|a| a.artifact_id == artifact.artifact_id)
                {
                    Some(existing) if append => {
                        existing.parts.extend(artifact.parts.iter().cloned())
                    }
                    Some(existing) => *existing = artifact.clone(),
                    None => task.artifacts.push(artifact.clone()),
                }
                // Artifacts reach the store with the next status change (live tasks are read
                // from the run), so a long stream of chunks costs no store writes.
                let ev = Arc::new(v1::StreamResponse::ArtifactUpdate(
                    v1::TaskArtifactUpdateEvent {
                        task_id: self.task_id.clone(),
                        context_id: self.context_id.clone(),
                        artifact,
                        append,
                        last_chunk,
                        metadata: None,
                    },
                ));
                if let Some(engine) = &engine {
                    engine.push(&self.task_id, &ev, st.task.as_ref(), self.version);
                    engine.publish(&self.task_id, &ev).await;
                }
                broadcast(st, ev, &self.limits(&engine)).await;
            }
            Emission::Progress(metadata) => {
                let Some(task) = st.task.as_ref() else { return };
                if st.subscribers.is_empty() {
                    return;
                }
                let ev = Arc::new(v1::StreamResponse::StatusUpdate(
                    v1::TaskStatusUpdateEvent {
                        task_id: self.task_id.clone(),
                        context_id: self.context_id.clone(),
                        status: v1::TaskStatus {
                            state: task.status.state,
                            message: None,
                            timestamp: Some(now_rfc3339()),
                        },
                        metadata: Some(metadata),
                    },
                ));
                broadcast(st, ev, &self.limits(&engine)).await;
            }
        }
    }

    pub(super) fn limits(&self, engine: &Option<Arc<Engine>>) -> (Duration,) {
        (engine
            .as_ref()
            .map(|e| e.limits.slow_subscriber_timeout)
            .unwrap_or(Duration::from_secs(10)),)
    }

    /// Creates the task on its first event (state submitted, history = the user's message) and
    /// registers the run. Returns the `Task` event announcing it, for [`Run::announce`] once a
    /// state of the task is committed (without the event when nobody hears it, see
    /// [`heard`](super::fanout::heard)); `None` when the task already exists.
    pub(super) fn create_task(
        self: &Arc<Self>,
        st: &mut RunState,
        engine: &Option<Arc<Engine>>,
    ) -> Option<Created> {
        if st.task.is_some() {
            return None;
        }
        let mut task = v1::Task::new(
            self.task_id.clone(),
            Some(self.context_id.clone()),
            v1::TaskStatus::at(v1::TaskState::Submitted, Some(now_rfc3339())),
        );
        task.history = st
            .user_message
            .take()
            .map(Arc::unwrap_or_clone)
            .into_iter()
            .collect();
        // Issue 30 item 3: the `Task` event (a copy of the user's message) only when someone
        // hears it.
        let event = super::fanout::heard(st, engine)
            .then(|| Arc::new(v1::StreamResponse::Task(task.clone())));
        st.task = Some(task);
        if let Some(engine) = engine {
            self.registered
                .store(true, std::sync::atomic::Ordering::Release);
            lock_runs(&engine.runs).insert(self.task_id.clone(), self.clone());
            if engine.shutdown.is_cancelled() {
                self.cancel.cancel();
            }
        }
        Some(Created(event))
    }

    /// Announces a task just created (its `Task` event from [`Run::create_task`]) once a state
    /// of it is saved: stores the push config sent with the message, then tells webhooks and
    /// subscribers.
    pub(super) async fn announce(
        self: &Arc<Self>,
        st: &mut RunState,
        engine: &Option<Arc<Engine>>,
        Created(created): Created,
    ) {
        if let Some(engine) = engine {
            if let Some(c) = st.pending_push.take()
                && let Err(e) = engine.save_push_config(c).await
            {
                tracing::warn!(agent = %engine.agent_path, error = %e, "cannot store a push config");
            }
            if let Some(created) = &created {
                let task = match &**created {
                    v1::StreamResponse::Task(t) => Some(t),
                    _ => None,
                };
                engine.push(&self.task_id, created, task, self.version);
            }
        }
        if let Some(created) = created {
            broadcast(st, created, &self.limits(engine)).await;
        }
    }

    /// Called once the handler returned.
    pub(crate) async fn finish(self: &Arc<Self>, result: Result<(), HandlerError>) {
        {
            let mut st = self.state.lock().await;
            if !st.finished {
                let has_task = st.task.is_some();
                match result {
                    Ok(()) => {
                        let state = st.task.as_ref().map(|t| t.status.state);
                        match state {
                            Some(s) if s.is_interrupted() => {}
                            _ => {
                                self.apply(
                                    &mut st,
                                    Emission::Status(v1::TaskState::Completed, None, None),
                                    false,
                                )
                                .await
                            }
                        }
                    }
                    Err(HandlerError::Protocol { code, message }) if !has_task => {
                        st.error = Some(ApiError::new(code, message));
                    }
                    Err(e) => {
                        let state = match e {
                            HandlerError::Rejected { .. } => v1::TaskState::Rejected,
                            _ => v1::TaskState::Failed,
                        };
                        let text = match e {
                            HandlerError::Failed { message }
                            | HandlerError::Rejected { message }
                            | HandlerError::Protocol { message, .. } => message,
                            other => other.to_string(),
                        };
                        let mut m =
                            v1::Message::new(v1::Role::Agent, new_id(), vec![v1::Part::text(text)]);
                        m.context_id = Some(self.context_id.clone());
                        m.task_id = Some(self.task_id.clone());
                        self.apply(&mut st, Emission::Status(state, Some(m), None), false)
                            .await;
                    }
                }
            }
            st.finished = true;
            st.subscribers.clear();
        }
        if let Some(engine) = self.engine.upgrade() {
            engine.forget(self);
        }
        self.done.store(true, std::sync::atomic::Ordering::Release);
        self.done_notify.notify_waiters();
    }
}
