//! Approvals asked of 2026-07-28 clients by multi-round-trip requests (SEP-2322): a served
//! call that stops at a question answers its `tools/call` with `resultType: "input_required"`
//! (the approval form under `inputRequests`, an opaque `requestState`), and goes on when the
//! client retries the call with `inputResponses` and that `requestState`.
//!
//! The call keeps running in this process between the rounds (an agent's run cannot be
//! rebuilt from a token), so `requestState` is only a handle: a random 128-bit id naming the
//! waiting call here, never data the server trusts, and bound to the caller
//! ([`McpCaller`](crate::McpCaller)) whose call it is. A wrong or altered one, or one another
//! caller sends, names nothing and is refused with `-32602`; the question's key is random too.
//! Bounded: at most `max` calls wait at once, at most a quarter of them (at least one) for one
//! caller (a further question is denied at once), and a call whose client does not come back
//! within the answer timeout is denied and cancelled.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::ErrorData;
use rmcp::model::{InputRequests, InputRequiredResult, InputResponses};
use subagent_spi::{
    ApprovalDecision, ApprovalRequest, Approver, CancellationToken, ToolError, ToolOutput,
    async_trait,
};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

/// How many calls may wait for an answer at once by default.
pub const DEFAULT_MAX_WAITING_CALLS: usize = 64;
/// The longest `requestState` looked up (ours are 32 characters).
const MAX_REQUEST_STATE: usize = 128;

/// A question from a running call, and where its answer goes.
pub(crate) struct Question {
    request: ApprovalRequest,
    answer: oneshot::Sender<ApprovalDecision>,
}

/// The approver of a call served to a 2026-07-28 client: the host's approver answers when it
/// can (e.g. `--yes`); otherwise the question goes to the `tools/call` handler, which asks
/// the client by `input_required`.
pub(crate) struct RoundTripApprover {
    pub questions: mpsc::Sender<Question>,
    pub upstream: Option<Arc<dyn Approver>>,
}

#[async_trait]
impl Approver for RoundTripApprover {
    async fn request(&self, request: ApprovalRequest) -> ApprovalDecision {
        if let Some(up) = crate::approval_form::upstream_answering(&self.upstream, &request) {
            return up.request(request).await;
        }
        let (tx, rx) = oneshot::channel();
        if self
            .questions
            .send(Question {
                request,
                answer: tx,
            })
            .await
            .is_err()
        {
            return ApprovalDecision::deny("the MCP request that could ask the client is gone.");
        }
        rx.await.unwrap_or_else(|_| {
            ApprovalDecision::deny(
                "the MCP client did not answer the question (it did not retry the call in time).",
            )
        })
    }
}

/// A served call running across rounds.
pub(crate) struct Call {
    pub tool: String,
    pub join: JoinHandle<Result<ToolOutput, ToolError>>,
    pub questions: mpsc::Receiver<Question>,
    pub cancel: CancellationToken,
}

/// What a round ended with.
pub(crate) enum Round {
    /// The call ended.
    Done(Result<ToolOutput, ToolError>),
    /// The call waits for the client: answer with this.
    Asked(InputRequiredResult),
}

struct Parked {
    /// The caller whose call it is.
    owner: String,
    call: Call,
    key: String,
    question: Question,
    round: u32,
}

/// The calls waiting for their client's next round.
pub(crate) struct WaitingCalls {
    parked: Mutex<HashMap<String, Parked>>,
    max: usize,
    timeout: Duration,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The error of a call whose task panicked or was aborted.
fn stopped(tool: &str, e: &tokio::task::JoinError) -> ToolError {
    ToolError::Failed {
        tool: tool.to_string(),
        message: format!("the call stopped unexpectedly: {e}"),
    }
}

impl WaitingCalls {
    pub(crate) fn new(max: usize, timeout: Duration) -> Arc<Self> {
        Arc::new(Self {
            parked: Mutex::new(HashMap::new()),
            max,
            timeout,
        })
    }

    /// Runs `call` until it ends or asks a question; `ct` is the request's token (a cancelled
    /// request cancels the call).
    pub(crate) async fn drive(
        self: &Arc<Self>,
        owner: &str,
        mut call: Call,
        mut round: u32,
        ct: &tokio_util::sync::CancellationToken,
    ) -> Round {
        loop {
            let question = tokio::select! {
                biased;
                () = ct.cancelled() => {
                    call.cancel.cancel();
                    return Round::Done(Err(ToolError::Cancelled { tool: call.tool.clone() }));
                }
                q = call.questions.recv() => q,
                r = &mut call.join => {
                    return Round::Done(r.unwrap_or_else(|e| Err(stopped(&call.tool, &e))));
                }
            };
            let Some(question) = question else {
                // The approver is gone, so the call is ending: wait for its result.
                let r = (&mut call.join).await;
                return Round::Done(r.unwrap_or_else(|e| Err(stopped(&call.tool, &e))));
            };
            round += 1;
            match self.park(owner, call, question, round) {
                Ok(result) => return Round::Asked(result),
                Err(back) => call = back,
            }
        }
    }

    /// Parks `call` waiting on `question`: the `input_required` result asking it. When the
    /// question cannot be asked (too many calls wait, or the form cannot be built), it is
    /// denied and the call handed back to go on.
    fn park(
        self: &Arc<Self>,
        owner: &str,
        call: Call,
        question: Question,
        round: u32,
    ) -> Result<InputRequiredResult, Call> {
        let Some(request) = crate::approval_form::input_request(&question.request) else {
            let _ = question.answer.send(ApprovalDecision::deny(
                "the approval form could not be built.",
            ));
            return Err(call);
        };
        let key = format!("approval_{}", uuid::Uuid::new_v4().simple());
        let state = uuid::Uuid::new_v4().simple().to_string();
        {
            let mut parked = lock(&self.parked);
            let per_caller = (self.max / 4).max(1);
            let mine = parked.values().filter(|p| p.owner == owner).count();
            if parked.len() >= self.max || mine >= per_caller {
                let _ = question.answer.send(ApprovalDecision::deny(format!(
                    "{} calls of this MCP server already wait for their clients' answers ({} \
                     of them yours; its limit is {}, {per_caller} per client), so this question \
                     could not be asked.",
                    parked.len(),
                    mine,
                    self.max
                )));
                return Err(call);
            }
            parked.insert(
                state.clone(),
                Parked {
                    owner: owner.to_string(),
                    call,
                    key: key.clone(),
                    question,
                    round,
                },
            );
        }
        // A client that does not come back: the question is denied and the call cancelled.
        let this = Arc::downgrade(self);
        let expired = state.clone();
        let timeout = self.timeout;
        tokio::spawn(async move {
            tokio::time::sleep(timeout).await;
            let Some(this) = this.upgrade() else { return };
            let gone = lock(&this.parked).remove(&expired);
            if let Some(p) = gone {
                p.call.cancel.cancel();
                // Dropping the question's sender denies it.
                drop(p.question);
            }
        });
        let mut requests = InputRequests::new();
        requests.insert(key, request);
        Ok(InputRequiredResult::new(Some(requests), Some(state)))
    }

    /// A retry of `tool`'s call with `state` and `responses` by caller `owner`: delivers the
    /// answer and runs the call to its next round. A missing answer asks the same question
    /// again. Another caller's `state` names nothing.
    pub(crate) async fn resume(
        self: &Arc<Self>,
        owner: &str,
        tool: &str,
        state: &str,
        mut responses: InputResponses,
        ct: &tokio_util::sync::CancellationToken,
    ) -> Result<Round, ErrorData> {
        let unknown = || {
            ErrorData::invalid_params(
                "unknown or expired requestState: it names no call waiting here (it was altered, \
                 the call ended, or its answer came too late); call the tool again",
                None,
            )
        };
        if state.len() > MAX_REQUEST_STATE {
            return Err(unknown());
        }
        let parked = {
            let mut parked = lock(&self.parked);
            match parked.get(state) {
                Some(p) if p.owner != owner => None,
                Some(p) if p.call.tool != tool => {
                    return Err(ErrorData::invalid_params(
                        format!(
                            "this requestState belongs to a call of `{}`, not `{}`",
                            p.call.tool,
                            tool.chars().take(80).collect::<String>()
                        ),
                        None,
                    ));
                }
                Some(_) => parked.remove(state),
                None => None,
            }
        };
        let Some(p) = parked else {
            return Err(unknown());
        };
        let Parked {
            owner: _,
            call,
            key,
            question,
            round,
        } = p;
        match responses.remove(&key) {
            Some(answer) => {
                let _ = question
                    .answer
                    .send(crate::approval_form::decision_of_value(answer));
                Ok(self.drive(owner, call, round, ct).await)
            }
            // Not answered: the same question again, under a fresh state.
            None => Ok(match self.park(owner, call, question, round) {
                Ok(result) => Round::Asked(result),
                Err(call) => self.drive(owner, call, round, ct).await,
            }),
        }
    }
}
