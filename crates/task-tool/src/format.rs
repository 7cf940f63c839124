//! The text a model sees: the Task description and every result.

use std::fmt::Write as _;
use std::sync::Arc;

use subagent_spi::{SubagentDefinition, TaskOutcome, TaskStatus, ToolOutput};

use crate::background::{BackgroundSnapshot, BackgroundState};
use crate::offer::Companions;

/// The `Task` description; it names only the `offered` companions.
pub(crate) fn task_description(
    agents: &[Arc<dyn SubagentDefinition>],
    offered: Companions,
) -> String {
    let mut s = String::from(
        "Launch a subagent to handle a task on its own. The agents below are not tools: to use \
         one, call Task with `subagent_type` set to its name and `prompt` set to the task. It \
         starts with a fresh context and sees only your prompt, so include everything it needs; \
         only its final answer comes back to you.\n\nAvailable agents:\n",
    );
    if agents.is_empty() {
        s.push_str("(none registered)\n");
    }
    s.push_str(&agent_list(agents, offered));
    s.push_str(
        "\nUsage:\n\
         - Several Task calls in one reply run at once.\n",
    );
    if offered.output() {
        s.push_str(
            "- `run_in_background: true` returns a task id at once: read the result with \
             TaskOutput",
        );
        if offered.stop() {
            s.push_str(", cancel with TaskStop");
        }
        s.push_str(".\n");
    }
    s.push_str(crate::fork::FORK_USAGE);
    s
}

/// The agent entries of the `Task` description take at most about this many characters in
/// full; past it, each agent gets the first sentence of its description (see [`agent_list`]).
pub(crate) const FULL_LIST_CHARS: usize = 3_000;
/// Shortened entries take at most about this many characters; the agents past it are named
/// only.
pub(crate) const SHORT_LIST_CHARS: usize = 3_000;
/// Names alone take at most about this many characters; the rest are counted.
pub(crate) const NAMES_ONLY_CHARS: usize = 1_000;
/// The most characters of an agent's description a shortened entry keeps.
pub(crate) const SHORT_DESCRIPTION_CHARS: usize = 100;

/// The agents, one entry each, bounded however many there are: every description in full
/// while they fit in [`FULL_LIST_CHARS`]; else each description's first sentence (at most
/// [`SHORT_DESCRIPTION_CHARS`]) while those fit in [`SHORT_LIST_CHARS`], then the next agents
/// by name while the names fit in [`NAMES_ONLY_CHARS`], then how many more there are. A
/// shortened list says how to read an agent's full description: a `Task` call with an empty
/// `prompt` returns it ([`described`]).
fn agent_list(agents: &[Arc<dyn SubagentDefinition>], offered: Companions) -> String {
    let note = |a: &Arc<dyn SubagentDefinition>| {
        if a.runs_in_background_by_default() && offered.output() {
            " (runs in the background unless you set `run_in_background: false`)"
        } else {
            ""
        }
    };
    let full: Vec<String> = agents
        .iter()
        .map(|a| format!("- {}: {}{}\n", a.name(), a.description(), note(a)))
        .collect();
    if full.iter().map(String::len).sum::<usize>() <= FULL_LIST_CHARS {
        return full.concat();
    }
    let mut s = String::new();
    let mut used = 0;
    let mut rest = agents.iter().peekable();
    while let Some(a) = rest.peek() {
        let entry = format!(
            "- {}: {}{}\n",
            a.name(),
            first_sentence(a.description()),
            note(a)
        );
        if used + entry.len() > SHORT_LIST_CHARS {
            break;
        }
        used += entry.len();
        s.push_str(&entry);
        rest.next();
    }
    let mut names: Vec<&str> = Vec::new();
    let mut used = 0;
    while let Some(a) = rest.peek() {
        if used + a.name().len() + 2 > NAMES_ONLY_CHARS {
            break;
        }
        used += a.name().len() + 2;
        names.push(a.name());
        rest.next();
    }
    if !names.is_empty() {
        let _ = writeln!(s, "- also: {}", names.join(", "));
    }
    let more = rest.count();
    if more > 0 {
        let _ = writeln!(
            s,
            "- and {more} more (a Task call naming an unknown agent lists every name)"
        );
    }
    let _ = writeln!(
        s,
        "(Descriptions are shortened: {} agents. Call Task with an agent's name as \
         `subagent_type` and an empty `prompt` to read its full description.)",
        agents.len()
    );
    s
}

/// The first sentence of `text` (up to `. `, `! `, `? ` or a line break), at most
/// [`SHORT_DESCRIPTION_CHARS`] characters (`…` marks a cut).
fn first_sentence(text: &str) -> String {
    let text = text.trim();
    let end = text
        .char_indices()
        .find(|&(i, c)| {
            c == '\n' || (matches!(c, '.' | '!' | '?') && text[i + 1..].starts_with(' '))
        })
        .map_or(text.len(), |(i, c)| if c == '\n' { i } else { i + 1 });
    let sentence = text[..end].trim();
    if sentence.chars().count() <= SHORT_DESCRIPTION_CHARS {
        return sentence.to_string();
    }
    let cut: String = sentence.chars().take(SHORT_DESCRIPTION_CHARS - 1).collect();
    format!("{}…", cut.trim_end())
}

/// What a `Task` call with an empty `prompt` returns: the agent's full description, and how
/// to run it.
pub(crate) fn described(a: &dyn SubagentDefinition) -> String {
    format!(
        "Agent `{name}` was not started: the prompt was empty. Its description:\n{}\n\nTo run \
         it, call Task again with `subagent_type` \"{name}\" and the task as `prompt`.",
        a.description().trim(),
        name = a.name()
    )
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
