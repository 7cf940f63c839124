//! Calls a remote A2A agent (1.0 or 0.3) through the subagent SPI: resolve its card, then run
//! one task, printing progress as it streams.
//!
//! ```text
//! cargo run -p subagent-a2a --example a2a_client -- http://127.0.0.1:10001 "message hello"
//! ```
//!
//! The first argument is the agent's base URL (its card is read from
//! `/.well-known/agent-card.json`, else `/.well-known/agent.json`); the second is the prompt.
//! Set `A2A_BEARER_TOKEN` to send a bearer token. A test agent to try it against:
//! `target/py/a2a-1x/bin/python crates/subagent-a2a/tests/py/server_v1.py 10001`
//! (after `.ci/setup-python.sh`).

use std::sync::Arc;

use subagent_a2a::client::{KIND, a2a_subagent_type};
use subagent_spi::{ProgressEvent, ProgressKind, SubagentReference, TaskCall, TaskContext};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let (Some(url), Some(prompt)) = (args.next(), args.next()) else {
        eprintln!("usage: a2a_client <agent base URL> <prompt> [resume session id]");
        std::process::exit(2);
    };
    let resume = args.next();

    let mut reference = SubagentReference::new(url, KIND).with_metadata("timeout_secs", "120");
    if std::env::var_os("A2A_BEARER_TOKEN").is_some() {
        reference = reference.with_metadata("bearer_env", "A2A_BEARER_TOKEN");
    }

    let kind = a2a_subagent_type();
    let definition = kind.resolver().resolve(&reference).await?;
    println!("- {}: {}\n", definition.name(), definition.description());

    let ctx = TaskContext::new().with_progress(Arc::new(|e: ProgressEvent| match e.kind {
        ProgressKind::Status { message } => eprintln!("[status] {message}"),
        ProgressKind::TextDelta { text } => eprintln!("[text] {text}"),
        _ => {}
    }));
    let mut call = TaskCall::new(definition.name(), "example call", prompt);
    call.resume = resume;
    let outcome = kind.executor().execute(call, definition, ctx).await?;
    println!("{}\n\nstatus: {}", outcome.text, outcome.status);
    if let Some(session) = outcome.session_id {
        println!("session (pass as third argument to continue): {session}");
    }
    Ok(())
}
