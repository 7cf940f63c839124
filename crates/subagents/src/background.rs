//! The background tasks of an assembly as a whole, for hosts: ending a run's background work
//! (wait or cancel, never lose it), and the view of the tasks a store keeps (list, show,
//! stop, resume).

use std::collections::HashSet;
use std::time::Duration;

use subagent_spi::{
    ApprovalDecision, CancellationToken, SubagentError, TaskCall, TaskContext, TaskStatus,
    UsageNode,
};
use task_tool::{BackgroundSnapshot, BackgroundState, Dispatch};

use crate::Subagents;

/// How often [`Subagents::finish_background`] looks for approval questions of the tasks it is
/// not watching.
const APPROVAL_POLL: Duration = Duration::from_secs(1);

impl Subagents {
    /// The background tasks of this process that have not ended (queued, running, waiting for
    /// approval), oldest first.
    pub fn running_background(&self) -> Vec<BackgroundSnapshot> {
        self.task
            .background_tasks()
            .into_iter()
            .filter(|s| s.status() == TaskStatus::Running)
            .collect()
    }

    /// Ends the background work of this process: waits until no background task runs (tasks
    /// they start meanwhile included), answering their approval questions with the builder's
    /// [`approver`](crate::SubagentsBuilder::approver) (denied without one). When `cancel`
    /// fires (at once if it already has), every task still running is cancelled and waited for
    /// while it winds down (at most the stop grace each); a cancelled task keeps its partial
    /// output, recorded like any result (in the store too).
    ///
    /// Returns the final state of every task that was running, in the order they started.
    /// Their usage is left for [`take_unreported_usage`](Self::take_unreported_usage).
    pub async fn finish_background(&self, cancel: &CancellationToken) -> Vec<BackgroundSnapshot> {
        let mut waited: Vec<String> = Vec::new();
        let mut seen: HashSet<String> = HashSet::new();
        loop {
            let running = self.running_background();
            for s in &running {
                if seen.insert(s.task_id.clone()) {
                    waited.push(s.task_id.clone());
                }
            }
            let Some(first) = running.first() else { break };
            if cancel.is_cancelled() {
                self.task.cancel_background();
            }
            for s in &running {
                if let BackgroundState::WaitingForApproval(q) = &s.state {
                    let decision = match &self.approver {
                        Some(a) => a.request(q.clone()).await,
                        None => ApprovalDecision::deny(
                            "no approver is configured, so nobody can approve it.",
                        ),
                    };
                    if let Err(e) = self.task.answer_approval(&s.task_id, decision) {
                        tracing::debug!("approval answer not delivered: {e}");
                    }
                }
            }
            let watch = self.task.watch_background(&first.task_id, APPROVAL_POLL);
            tokio::select! {
                r = watch => {
                    if let Err(e) = r {
                        // Gone from memory (it cannot be: running tasks are never evicted).
                        tracing::debug!("background task not watched: {e}");
                        break;
                    }
                }
                () = cancel.cancelled(), if !cancel.is_cancelled() => {}
            }
        }
        let all = self.task.background_tasks();
        waited
            .iter()
            .filter_map(|id| all.iter().find(|s| &s.task_id == id).cloned())
            .collect()
    }

    /// The usage trees of this process's background tasks that ended and whose usage no
    /// caller has read (with `TaskOutput`), each reported once: add them to a run's tree when
    /// it ends, so the work of a child the model never read still counts.
    pub fn take_unreported_usage(&self) -> Vec<UsageNode> {
        self.task.take_unreported_usage()
    }

    /// The background tasks of this process and those the store keeps from other and earlier
    /// processes (a task whose process ended reads as `interrupted`, with its last output),
    /// newest first, at most `limit` (at most [`task_tool::MAX_LISTED`]).
    pub async fn list_background(
        &self,
        limit: usize,
    ) -> Result<Vec<BackgroundSnapshot>, SubagentError> {
        self.task.list_background(limit).await
    }

    /// One background task, from this process or the store: its state and output so far.
    pub async fn background_task(
        &self,
        task_id: &str,
    ) -> Result<BackgroundSnapshot, SubagentError> {
        self.task.output(task_id, None).await
    }

    /// Stops a background task of this process (or reports the end of one that already
    /// ended); a task running in another live process is refused, naming it. A task of an
    /// MCP agent whose process ended while the server ran it as a task (`interrupted`, session
    /// `mcp-task:ID`) is cancelled on that server with `tasks/cancel` when the agent is one of
    /// this assembly's; the snapshot's note says whether it was.
    pub async fn stop_background(
        &self,
        task_id: &str,
    ) -> Result<BackgroundSnapshot, SubagentError> {
        let snap = self.task.stop(task_id).await?;
        // Issue 32: the server's task outlives our process.
        #[cfg(feature = "mcp")]
        let snap = self.cancel_remote_mcp_task(snap).await;
        Ok(snap)
    }

    /// Continues an ended background task's session with `message`: a new run of the same
    /// agent resuming the session the task announced (from this process or the store), run
    /// like [`dispatch`](Self::dispatch) in the foreground unless the agent runs in the
    /// background by default. A task still running, or one without a session, is refused.
    pub async fn resume_background(
        &self,
        task_id: &str,
        message: impl Into<String>,
        ctx: &TaskContext,
    ) -> Result<Dispatch, SubagentError> {
        let call = self.resume_call(task_id, message).await?;
        self.dispatch(call, ctx).await
    }

    /// The call [`resume_background`](Self::resume_background) dispatches.
    pub async fn resume_call(
        &self,
        task_id: &str,
        message: impl Into<String>,
    ) -> Result<TaskCall, SubagentError> {
        let snap = self.background_task(task_id).await?;
        if snap.status() == TaskStatus::Running {
            return Err(SubagentError::InvalidInput(format!(
                "background task `{task_id}` is still running; stop it first, or wait for it"
            )));
        }
        let Some(session) = snap.session_id.clone() else {
            return Err(SubagentError::InvalidInput(format!(
                "background task `{task_id}` ({}) has no session to resume: its agent keeps none",
                snap.agent
            )));
        };
        let mut call = TaskCall::new(
            snap.agent.clone(),
            format!("resume {task_id}"),
            message.into(),
        );
        call.resume = Some(session);
        Ok(call)
    }
}
