//! The text a model sees: the Task description and every result.

use std::fmt::Write as _;
use std::sync::Arc;

use subagent_spi::{SubagentDefinition, SubagentError, TaskOutcome, TaskStatus, ToolOutput};

use crate::background::{BackgroundSnapshot, BackgroundState};
use crate::offer::Companions;

/// The `Task` description; it names only the `offered` companions.
pub(crate) fn task_description(
    agents: &[Arc<dyn SubagentDefinition>],
    offered: Companions,
) -> String {
    let mut s = String::from(
        "Launch a subagent to handle a task on its own. The agents below are not tools: to use \
         one, call Task with `subagent_type` set to its name and `prompt` set to the task. The \
         subagent starts with a fresh context and sees only your prompt, so include everything \
         it needs. Only its final answer comes back to you.\n\nAvailable agents (pass the name \
         as `subagent_type`):\n",
    );
    if agents.is_empty() {
        s.push_str("(none registered)\n");
    }
    for a in agents {
        s.push_str(&a.registration());
        if a.runs_in_background_by_default() && offered.output() {
            s.push_str(" (runs in the background unless you set `run_in_background: false`)");
        }
        s.push('\n');
    }
    s.push_str(
        "\nUsage:\n\
         - To run several agents at once, call Task several times in one reply; they run concurrently.\n",
    );
    if offered.output() {
        s.push_str(
            "- Set `run_in_background: true` to get a task id at once and keep working. Read the \
             result with TaskOutput {\"task_id\": ...} (it waits up to `timeout_ms` by default)",
        );
        if offered.stop() {
            s.push_str(" and cancel it with TaskStop {\"task_id\": ...}");
        }
        s.push_str(".\n");
    }
    s.push_str(
        "- A result ends with a `session` id when the agent can be continued: call Task again with \
         `resume` set to that id and a follow-up `prompt` to continue the same agent with its \
         earlier context.\n\
         - `model` optionally overrides the agent's model.\n",
    );
    s.push_str(crate::fork::FORK_USAGE);
    s
}

fn footer(agent: &str, o: &TaskOutcome) -> String {
    let u = &o.usage;
    let mut s = format!("[agent: {agent} | status: {}", o.status);
    if let Some(limit) = &o.limit {
        let _ = write!(s, " ({limit})");
    }
    if let Some(session) = &o.session_id {
        let _ = write!(s, " | session: {session}");
    }
    let _ = write!(
        s,
        " | {} turn{} | {} in / {} out tokens | {} ms]",
        u.turns,
        if u.turns == 1 { "" } else { "s" },
        u.input_tokens,
        u.output_tokens,
        u.duration_ms
    );
    s
}

/// The text for a finished run.
pub(crate) fn outcome_text(agent: &str, o: &TaskOutcome) -> String {
    let head = match o.status {
        TaskStatus::NeedsInput => {
            format!("Agent `{agent}` needs input before it can continue. Its question:\n")
        }
        TaskStatus::LimitReached => format!(
            "Agent `{agent}` stopped at a limit ({}). Its last partial answer:\n",
            o.limit
                .as_ref()
                .map_or_else(|| "unspecified".to_string(), ToString::to_string)
        ),
        TaskStatus::Cancelled => format!("Agent `{agent}` was cancelled. Partial output:\n"),
        TaskStatus::Failed => format!("Agent `{agent}` failed:\n"),
        TaskStatus::Interrupted => format!(
            "Agent `{agent}` was interrupted: the process running it ended before it did. \
             Partial output:\n"
        ),
        _ => String::new(),
    };
    let mut s = head;
    s.push_str(if o.text.is_empty() && o.status != TaskStatus::Completed {
        "(none)"
    } else {
        o.text.trim_end()
    });
    s.push_str("\n\n");
    s.push_str(&footer(agent, o));
    if o.status == TaskStatus::NeedsInput
        && let Some(session) = &o.session_id
    {
        let _ = write!(
            s,
            "\nTo answer, call Task with subagent_type `{agent}`, resume `{session}` and your answer as the prompt."
        );
    }
    if o.status == TaskStatus::Interrupted
        && let Some(session) = &o.session_id
    {
        let _ = write!(
            s,
            "\nTo continue it from its last complete turn, call Task with subagent_type `{agent}`, resume `{session}` and a prompt saying to go on."
        );
    }
    s
}

pub(crate) fn foreground_result(agent: &str, o: &TaskOutcome) -> ToolOutput {
    let text = outcome_text(agent, o);
    if o.status == TaskStatus::Failed {
        ToolOutput::error(text)
    } else {
        ToolOutput::text(text)
    }
}

/// The result of a `Task` call started in the background; it names only the `offered`
/// companions (a background start needs `TaskOutput`, see `offer::check_call`).
pub(crate) fn background_started(agent: &str, task_id: &str, offered: Companions) -> String {
    let mut s = format!(
        "Started agent `{agent}` in the background with task id {task_id}.\n\
         Read its result with TaskOutput {{\"task_id\": \"{task_id}\"}} (waits for it by default)"
    );
    if offered.stop() {
        let _ = write!(s, "; stop it with TaskStop {{\"task_id\": \"{task_id}\"}}");
    }
    s.push('.');
    s
}

pub(crate) fn error_text(e: &SubagentError) -> String {
    match e {
        SubagentError::UnknownSubagent { name, available } => format!(
            "Unknown agent `{name}`. Available agents: {}. Call Task again with one of these names as `subagent_type`.",
            if available.is_empty() {
                "(none)".to_string()
            } else {
                available.join(", ")
            }
        ),
        SubagentError::LimitReached { limit, .. } => format!("Cannot start the task: {limit}."),
        other => format!("Task failed: {other}"),
    }
}

/// What `TaskOutput` / `TaskStop` show of a background task; it names only the `offered`
/// companions.
pub(crate) fn snapshot_text(
    s: &BackgroundSnapshot,
    waited_ms: Option<u64>,
    offered: Companions,
) -> ToolOutput {
    let mut out = snapshot_body(s, waited_ms, offered);
    if let Some(note) = &s.note {
        out.content = format!("{}\nNote: {note}", out.content);
    }
    if let Some(unread) = crate::steer::unread_text(s) {
        out.content = format!("{}\n{unread}", out.content);
    }
    out
}

fn snapshot_body(
    s: &BackgroundSnapshot,
    waited_ms: Option<u64>,
    offered: Companions,
) -> ToolOutput {
    let status = match &s.state {
        BackgroundState::WaitingForApproval(_) => "waiting_for_approval".to_string(),
        BackgroundState::Queued => "queued".to_string(),
        _ => s.status().to_string(),
    };
    let head = format!(
        "task_id: {}\nagent: {}\nstatus: {status}\nelapsed_ms: {}\n",
        s.task_id,
        s.agent,
        s.elapsed.as_millis()
    );
    match &s.state {
        BackgroundState::WaitingForApproval(r) => {
            let mut t = head;
            let _ = write!(
                t,
                "\nThe task is waiting for approval: {} ({}) wants to run {}: {}\nWhy: {}\n\
                 Answer with TaskOutput {{\"task_id\": \"{}\", \"approve\": \"yes\"}} to run \
                 this call once, \"always\" to allow it for the rest of the session{}, or \
                 \"no\" to refuse it. A yes is confirmed with the user when one is asked.",
                s.agent,
                r.path_text(),
                r.tool,
                r.summary,
                r.reason,
                s.task_id,
                r.session_rule
                    .as_deref()
                    .map(|rule| format!(" (`{rule}`)"))
                    .unwrap_or_default(),
            );
            if !s.partial.is_empty() {
                let _ = write!(t, "\nOutput so far:\n{}", s.partial);
            }
            ToolOutput::text(t)
        }
        BackgroundState::Queued => {
            let mut t = head;
            t.push_str(
                "\nThe task is queued: the limit of agents running at once is reached; it \
                 starts when another one finishes.",
            );
            if let Some(ms) = waited_ms.filter(|_| s.wait_timed_out) {
                let _ = write!(t, " The wait timed out after {ms} ms.");
            }
            ToolOutput::text(t)
        }
        BackgroundState::Running => {
            let mut t = head;
            if let Some(ms) = waited_ms.filter(|_| s.wait_timed_out) {
                let _ = write!(
                    t,
                    "\nThe task is still running: the wait timed out after {ms} ms. Call TaskOutput again to keep waiting{}.",
                    if offered.stop() {
                        ", or TaskStop to cancel it"
                    } else {
                        ""
                    }
                );
            } else {
                t.push_str("\nThe task is still running.");
            }
            if !s.partial.is_empty() {
                let _ = write!(t, "\nOutput so far:\n{}", s.partial);
            }
            ToolOutput::text(t)
        }
        BackgroundState::Finished(o) => {
            let t = format!("{head}\n{}", outcome_text(&s.agent, o));
            if o.status == TaskStatus::Failed {
                ToolOutput::error(t)
            } else {
                ToolOutput::text(t)
            }
        }
        BackgroundState::Failed(msg) => {
            ToolOutput::error(format!("{head}\nThe task failed: {msg}"))
        }
    }
}
