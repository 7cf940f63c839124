//! `subagents call`: the A2A client from the command line.
//!
//! A remote agent that stops for input (`input-required` / `auth-required`) is answered the way
//! `run` answers it: a prompt on a terminal, `yes` with `--yes`. Without either, the command
//! ends with exit 3 and prints the task and context ids on stderr; `--task-id` and
//! `--context-id` send the next message (the reply) to that same task.

use std::sync::Arc;
use std::time::Duration;

use subagents::a2a::client::{A2aExecutor, A2aResolver, KIND, decode_session, encode_session};
use subagents::policy::{ModelPrices, SessionApprover};
use subagents::spi::{
    ProgressEvent, ProgressKind, SubagentExecutor, SubagentReference, SubagentResolver, TaskCall,
    TaskContext, TaskOutcome, TaskStatus,
};

use crate::cli::{CallArgs, PermissionArgs};
use crate::config::Config;
use crate::error::CliError;
use crate::interrupt::Interrupt;
use crate::output::{OutcomeJson, finish, terminal_safe};

/// Resolves the agent's card, sends one message, prints the answer; all within `--timeout`.
/// With `[prices]` in subagents.toml, `--json` puts the cost next to the tokens the agent
/// reported (the A2A usage extension).
pub(crate) async fn call(args: &CallArgs, config: &Config) -> Result<(), CliError> {
    let prices = config.prices()?;
    let limit = Duration::from_secs(args.timeout.max(1));
    match tokio::time::timeout(limit, call_once(args, &prices)).await {
        Ok(result) => result,
        Err(_) => Err(CliError::Failed(format!(
            "no answer from {} within {} s (--timeout)",
            subagents::models::redacted(&args.url),
            limit.as_secs()
        ))),
    }
}

async fn call_once(args: &CallArgs, prices: &ModelPrices) -> Result<(), CliError> {
    let (url, prompt, stream, json) = (&args.url, &args.prompt, args.stream, args.json);
    let mut reference = SubagentReference::new(url, KIND)
        .with_metadata("streaming", if stream { "true" } else { "false" });
    // Credentials by environment variable name, so no secret is on the command line.
    if let Some(var) = &args.bearer_env {
        reference = reference.with_metadata("auth.bearer_env", var.clone());
    }
    if let Some(var) = &args.api_key_env {
        reference = reference.with_metadata("auth.api_key_env", var.clone());
    }
    let resolver = A2aResolver::new();
    let def = resolver
        .resolve(&reference)
        .await
        .map_err(|e| CliError::Config(e.to_string()))?;
    // The remote agent's questions: a prompt on a terminal, `yes` with --yes, else nobody
    // (the call stops for input, resumable with --task-id).
    let permissions = PermissionArgs {
        yes: args.yes,
        ..PermissionArgs::default()
    };
    let multi = None;
    let approver = crate::approve::approver(&permissions, true, multi);
    let mut ctx = TaskContext::new()
        .with_agent(def.name())
        .with_depth(1)
        .with_approver(Arc::new(SessionApprover::new(approver)));
    // True while a line of streamed text is open on stderr (a peer streaming its run's text
    // sends it in pieces: they continue one line).
    let in_text = Arc::new(std::sync::atomic::AtomicBool::new(false));
    if stream {
        use std::sync::atomic::Ordering::Relaxed;
        let in_text = in_text.clone();
        // Everything the peer sends is escaped before it reaches the terminal.
        ctx = ctx.with_progress(Arc::new(move |e: ProgressEvent| {
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
        }));
    }
    let interrupt = Interrupt::cancel_on_ctrl_c(ctx.cancel().clone());
    let mut call = TaskCall::new(def.name(), "command-line call", prompt);
    if args.task_id.is_some() || args.context_id.is_some() {
        // The reply to a task that stopped for input (or a new task in that context).
        call.resume = Some(encode_session(
            args.context_id.as_deref(),
            args.task_id.as_deref(),
        ));
    }
    let result = A2aExecutor::new().execute(call, def.clone(), ctx).await;
    if in_text.load(std::sync::atomic::Ordering::Relaxed) {
        eprintln!();
    }
    let outcome = interrupt.result(result.map_err(|e| CliError::Failed(e.to_string())))?;
    let ids = remote_ids(&outcome);
    let kind = KIND;
    let json_out = OutcomeJson::new(def.name(), kind.as_str(), &outcome, ids.task.as_deref())
        .with_context_id(ids.context.as_deref())
        .with_prices(prices);
    let done = finish(&outcome, &json_out, json);
    interrupt.result(match (&done, outcome.status) {
        (Err(CliError::Incomplete(_)), TaskStatus::NeedsInput) => {
            Err(CliError::Incomplete(needs_input(url, &ids)))
        }
        _ => done,
    })
}

/// The remote task and context of an outcome (from its `a2a:` session id).
#[derive(Debug, Default)]
struct RemoteIds {
    task: Option<String>,
    context: Option<String>,
}

fn remote_ids(outcome: &TaskOutcome) -> RemoteIds {
    let Some((context, task)) = outcome.session_id.as_deref().and_then(decode_session) else {
        return RemoteIds::default();
    };
    RemoteIds { task, context }
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
