//! `subagents call`: the A2A client from the command line.
//!
//! A remote agent that stops for input (`input-required` / `auth-required`) is answered the way
//! `run` answers it: a prompt on a terminal, `yes` with `--yes`. Without either, the command
//! ends with exit 3 and prints the task and context ids on stderr; `--task-id` and
//! `--context-id` send the next message (the reply) to that same task.

use std::sync::Arc;
use std::time::Duration;

use subagents::policy::SessionApprover;
use subagents::spi::{ProgressEvent, ProgressKind, TaskContext, TaskStatus};
use subagents::{A2aCall, CallError};

use crate::args::PermissionArgs;
use crate::cli::CallArgs;
use crate::config::Config;
use crate::error::CliError;
use crate::interrupt::Interrupt;
use crate::output::{OutcomeJson, finish, terminal_safe};

/// Sends one message with [`A2aCall`] and prints the answer; all within `--timeout`. With
/// `[prices]` in subagents.toml, `--json` puts the cost next to the tokens the agent reported
/// (the A2A usage extension).
pub(crate) async fn call(args: &CallArgs, config: &Config) -> Result<(), CliError> {
    let prices = config.prices()?;
    let mut call = A2aCall::new(&args.url, &args.prompt)
        .stream(args.stream)
        .timeout(Duration::from_secs(args.timeout));
    // Credentials by environment variable name, so no secret is on the command line.
    if let Some(var) = &args.bearer_env {
        call = call.bearer_env(var);
    }
    if let Some(var) = &args.api_key_env {
        call = call.api_key_env(var);
    }
    if let Some(id) = &args.task_id {
        call = call.task_id(id);
    }
    if let Some(id) = &args.context_id {
        call = call.context_id(id);
    }
    // The remote agent's questions: a prompt on a terminal, `yes` with --yes, else nobody
    // (the call stops for input, resumable with --task-id).
    let permissions = PermissionArgs {
        yes: args.yes,
        ..PermissionArgs::default()
    };
    let approver = crate::approve::approver(&permissions, true, None);
    let mut ctx = TaskContext::new().with_approver(Arc::new(SessionApprover::new(approver)));
    // True while a line of streamed text is open on stderr (a peer streaming its run's text
    // sends it in pieces: they continue one line).
    let in_text = Arc::new(std::sync::atomic::AtomicBool::new(false));
    if args.stream {
        ctx = ctx.with_progress(stream_to_stderr(in_text.clone()));
    }
    let interrupt = Interrupt::cancel_on_ctrl_c(ctx.cancel().clone());
    let result = call.send(ctx).await;
    if in_text.load(std::sync::atomic::Ordering::Relaxed) {
        eprintln!();
    }
    let answer = interrupt.result(result.map_err(|e| match e {
        CallError::Resolve(e) => CliError::Config(e.to_string()),
        CallError::Timeout { .. } => CliError::Failed(format!("{e} (--timeout)")),
        other => CliError::Failed(other.to_string()),
    }))?;
    let (outcome, ids) = (&answer.outcome, RemoteIds::of(&answer));
    let json_out = OutcomeJson::new(
        &answer.agent,
        answer.kind.as_str(),
        outcome,
        ids.task.as_deref(),
    )
    .with_context_id(ids.context.as_deref())
    .with_prices(&prices);
    let done = finish(outcome, &json_out, args.json);
    interrupt.result(match (&done, outcome.status) {
        (Err(CliError::Incomplete(_)), TaskStatus::NeedsInput) => {
            Err(CliError::Incomplete(needs_input(&args.url, &ids)))
        }
        _ => done,
    })
}

/// The peer's progress on stderr, escaped: status lines, and its streamed text on one line.
fn stream_to_stderr(
    in_text: Arc<std::sync::atomic::AtomicBool>,
) -> Arc<dyn subagents::ProgressSink> {
    use std::sync::atomic::Ordering::Relaxed;
    Arc::new(move |e: ProgressEvent| {
        let agent = terminal_safe(&e.agent);
        match e.kind {
            ProgressKind::Status { message } => {
                if in_text.swap(false, Relaxed) {
                    eprintln!();
                }
                eprintln!("[{agent}] status: {}", terminal_safe(&message));
            }
            ProgressKind::TextDelta { text } => {
                if !in_text.swap(true, Relaxed) {
                    eprint!("[{agent}] artifact: ");
                }
                eprint!("{}", terminal_safe(&text));
            }
            _ => {}
        }
    })
}

/// The remote task and context of an answer.
#[derive(Debug, Default)]
struct RemoteIds {
    task: Option<String>,
    context: Option<String>,
}

impl RemoteIds {
    fn of(answer: &subagents::A2aCallOutcome) -> Self {
        Self {
            task: answer.task_id.clone(),
            context: answer.context_id.clone(),
        }
    }
}

/// What stopping for input says on stderr: the ids, and the command that sends the reply
/// (the ids come from the peer: escaped, then quoted for the shell).
fn needs_input(url: &str, ids: &RemoteIds) -> String {
    let mut text = "the agent needs input".to_string();
    let mut command = format!("subagents call {}", shell_quote(url));
    if let Some(task) = &ids.task {
        text.push_str(&format!("\ntask id: {}", terminal_safe(task)));
        command.push_str(&format!(" --task-id {}", shell_quote(&terminal_safe(task))));
    }
    if let Some(context) = &ids.context {
        text.push_str(&format!("\ncontext id: {}", terminal_safe(context)));
        command.push_str(&format!(
            " --context-id {}",
            shell_quote(&terminal_safe(context))
        ));
    }
    if ids.task.is_some() {
        text.push_str(&format!("\nreply with: {command} 'YOUR ANSWER'"));
    }
    text
}

/// `s` as one POSIX shell word: bare when it is plainly safe, else in single quotes.
fn shell_quote(s: &str) -> String {
    let plain = !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.:/@%+=,".contains(c));
    if plain {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reply_command_is_quoted_and_escaped() {
        let ids = RemoteIds {
            task: Some("t-1".into()),
            context: Some("c'1;\u{1b}[2J".into()),
        };
        let text = needs_input("http://127.0.0.1:1/a", &ids);
        assert!(text.contains("\ntask id: t-1\n"), "{text}");
        assert!(text.contains("context id: c'1;\\u{1b}[2J"), "{text}");
        assert!(
            text.contains(
                "reply with: subagents call http://127.0.0.1:1/a --task-id t-1 \
                 --context-id 'c'\\''1;\\u{1b}[2J' 'YOUR ANSWER'"
            ),
            "{text}"
        );
        assert!(!text.contains('\u{1b}'));
        assert_eq!(shell_quote(""), "''");
    }
}
