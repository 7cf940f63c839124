//! The direct-reply path of a blocking send: the handler of a new task runs inside the request,
//! and what answers the request (a direct Message, or the task once it is terminal or
//! interrupted) is handed over in place, not through the run's event fan-out.
//!
//! A blocking `SendMessage` (not streaming, not `returnImmediately`) of a new task has exactly
//! one listener, the request itself, until the handler's first task event registers the run
//! (then `SubscribeToTask` may join, through the usual subscribers). So such a run is started
//! without a subscriber channel: [`Direct`] holds the reply, or notes that the task settled,
//! and wakes the request if the handler reported from another tokio task. Everything else a
//! run does (the task, its store writes, push notifications, other subscribers, the trace span
//! and cancellation) is unchanged: the engine applies events as for any run.

use std::future::poll_fn;
use std::sync::Mutex;
use std::task::{Poll, Waker};

use super::engine::{ApiError, Started, trim_history};
use crate::types::v1;

/// What the request of a direct run waits for: set by the engine as it applies the handler's
/// events ([`Direct::reply`], [`Direct::settle`]).
#[derive(Default)]
pub(crate) struct Direct {
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    /// The handler's direct reply.
    reply: Option<v1::Message>,
    /// The task reached a state that answers a blocking send (terminal or interrupted).
    settled: bool,
    /// The request, when it waits for a handler reporting from another tokio task.
    waker: Option<Waker>,
}

impl Direct {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The handler answered with a direct message.
    pub(crate) fn reply(&self, message: v1::Message) {
        let mut inner = self.lock();
        inner.reply = Some(message);
        if let Some(w) = inner.waker.take() {
            w.wake();
        }
    }

    /// The task is terminal or interrupted: the request answers with it.
    pub(crate) fn settle(&self) {
        let mut inner = self.lock();
        inner.settled = true;
        if let Some(w) = inner.waker.take() {
            w.wake();
        }
    }
}

/// Drives the handler of a direct run inside the request until it answers (a reply, a settled
/// task, or its end), then answers as a blocking send does: the message, or the task with
/// `history_length` messages of history, or the handler's error. A handler that goes on after
/// answering runs on in its own tokio task.
pub(crate) async fn answer(
    started: Started,
    history_length: Option<i32>,
) -> Result<v1::SendMessageResponse, ApiError> {
    let Started {
        run, mut driver, ..
    } = started;
    let Some(direct) = run.direct.as_ref() else {
        return Err(ApiError::internal("not a direct run"));
    };
    let reply = poll_fn(|cx| {
        // The handler first (it usually answers within this poll), then what it reported.
        let done = match driver.pending() {
            Some(fut) => {
                if fut.as_mut().poll(cx).is_ready() {
                    driver.done();
                    true
                } else {
                    false
                }
            }
            None => true,
        };
        let mut inner = direct.lock();
        if let Some(m) = inner.reply.take() {
            return Poll::Ready(Some(m));
        }
        if inner.settled || done {
            return Poll::Ready(None);
        }
        if !inner
            .waker
            .as_ref()
            .is_some_and(|w| w.will_wake(cx.waker()))
        {
            inner.waker = Some(cx.waker().clone());
        }
        Poll::Pending
    })
    .await;
    // Whatever the handler does after answering runs on by itself (and must: `task()` below
    // may queue behind its `finish` for the run's state).
    driver.spawn();
    if let Some(m) = reply {
        return Ok(v1::SendMessageResponse::Message(m));
    }
    match run.take_or_clone_task().await {
        Some(mut t) => {
            trim_history(&mut t, history_length);
            Ok(v1::SendMessageResponse::Task(t))
        }
        None => Err(run
            .error()
            .await
            .unwrap_or_else(|| ApiError::internal("the agent ended without answering"))),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    use axum::body::Body;
    use bytes::Bytes;
    use subagent_spi::{CancellationToken, async_trait};
    use tower::ServiceExt as _;

    use crate::server::{
        A2aHandler, A2aServer, AgentInfo, AgentMount, HandlerError, HandlerRequest, TaskEventSink,
    };

    const SEND: &str = r#"{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"hi"}]}}}"#;

    async fn call(router: &axum::Router, body: Body) -> serde_json::Value {
        let req = http::Request::post("/")
            .header("content-type", "application/json")
            .header("A2A-Version", "1.0")
            .body(body)
            .expect("request");
        let resp = router.clone().oneshot(req).await.expect("infallible");
        let bytes = axum::body::to_bytes(resp.into_body(), 1 << 20)
            .await
            .expect("body");
        serde_json::from_slice(&bytes).expect("json")
    }

    fn router(handler: impl A2aHandler) -> axum::Router {
        A2aServer::builder()
            .mount(AgentMount::new("/", AgentInfo::new("t", "T"), handler))
            .build()
            .expect("server")
            .router()
    }

    /// Sets its flag when the request body's bytes are freed.
    struct Owner(&'static [u8], Arc<AtomicBool>);
    impl AsRef<[u8]> for Owner {
        fn as_ref(&self) -> &[u8] {
            self.0
        }
    }
    impl Drop for Owner {
        fn drop(&mut self) {
            self.1.store(true, Ordering::SeqCst);
        }
    }

    /// Answers whether the request body was already freed when it ran.
    struct BodyProbe(Arc<AtomicBool>);
    #[async_trait]
    impl A2aHandler for BodyProbe {
        async fn handle(
            &self,
            _req: HandlerRequest,
            ev: TaskEventSink,
            _cancel: CancellationToken,
        ) -> Result<(), HandlerError> {
            let freed = self.0.load(Ordering::SeqCst);
            ev.reply_text(if freed { "freed" } else { "held" }).await?;
            Ok(())
        }
    }

    /// A large message must not be held twice (raw body and parsed form) while its handler
    /// runs: the JSON-RPC body is freed once the params are read.
    #[tokio::test]
    async fn a_send_frees_its_body_before_the_handler_runs() {
        let freed = Arc::new(AtomicBool::new(false));
        let app = router(BodyProbe(freed.clone()));
        let body = Bytes::from_owner(Owner(SEND.as_bytes(), freed.clone()));
        let v = call(&app, Body::from(body)).await;
        assert_eq!(v["result"]["message"]["parts"][0]["text"], "freed", "{v}");
    }

    /// Replies from a task the handler spawned (the handler itself waits on it).
    struct Spawned;
    #[async_trait]
    impl A2aHandler for Spawned {
        async fn handle(
            &self,
            req: HandlerRequest,
            ev: TaskEventSink,
            _cancel: CancellationToken,
        ) -> Result<(), HandlerError> {
            let text = req.text();
            let emitter = ev.clone();
            let job = tokio::spawn(async move {
                tokio::task::yield_now().await;
                emitter.reply_text(format!("from a task: {text}")).await
            });
            // Keeps the handler pending until the other task has replied.
            let _ = job.await;
            Ok(())
        }
    }

    #[tokio::test]
    async fn a_reply_from_another_task_answers_the_blocking_send() {
        let v = call(&router(Spawned), Body::from(SEND)).await;
        assert_eq!(
            v["result"]["message"]["parts"][0]["text"], "from a task: hi",
            "{v}"
        );
    }

    /// Completes its task, then waits (its rest runs on after the answer).
    struct CompleteThenWait(Arc<tokio::sync::Notify>, Arc<AtomicBool>);
    #[async_trait]
    impl A2aHandler for CompleteThenWait {
        async fn handle(
            &self,
            _req: HandlerRequest,
            ev: TaskEventSink,
            _cancel: CancellationToken,
        ) -> Result<(), HandlerError> {
            ev.complete(Some(ev.agent_text("done"))).await?;
            self.0.notified().await;
            self.1.store(true, Ordering::SeqCst);
            Ok(())
        }
    }

    #[tokio::test]
    async fn a_settled_task_answers_while_its_handler_runs_on() {
        let go = Arc::new(tokio::sync::Notify::new());
        let ended = Arc::new(AtomicBool::new(false));
        let app = router(CompleteThenWait(go.clone(), ended.clone()));
        let v = call(&app, Body::from(SEND)).await;
        let task = &v["result"]["task"];
        assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{v}");
        assert_eq!(task["history"].as_array().map(Vec::len), Some(2), "{v}");
        assert!(!ended.load(Ordering::SeqCst));
        // The handler's rest was handed to its own tokio task: it ends once released.
        go.notify_one();
        for _ in 0..100 {
            if ended.load(Ordering::SeqCst) {
                break;
            }
            tokio::task::yield_now().await;
        }
        assert!(ended.load(Ordering::SeqCst));
    }

    /// Fails before any event: the request gets the error.
    struct Refuses;
    #[async_trait]
    impl A2aHandler for Refuses {
        async fn handle(
            &self,
            _req: HandlerRequest,
            _ev: TaskEventSink,
            _cancel: CancellationToken,
        ) -> Result<(), HandlerError> {
            Err(HandlerError::Protocol {
                code: crate::types::jsonrpc::codes::INVALID_PARAMS,
                message: "no thanks".into(),
            })
        }
    }

    #[tokio::test]
    async fn a_handler_error_before_any_event_answers_the_blocking_send() {
        let v = call(&router(Refuses), Body::from(SEND)).await;
        assert_eq!(v["error"]["code"], -32602, "{v}");
        assert_eq!(v["error"]["message"], "no thanks", "{v}");
    }
}
