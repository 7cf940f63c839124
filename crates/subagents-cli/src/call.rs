//! `subagents call`: the A2A client from the command line.

use std::sync::Arc;
use std::time::Duration;

use subagents::a2a::client::{A2aExecutor, A2aResolver, KIND};
use subagents::spi::{
    ModelPrices, ProgressEvent, ProgressKind, SubagentExecutor, SubagentReference,
    SubagentResolver, TaskCall, TaskContext,
};

use crate::cli::CallArgs;
use crate::config::Config;
use crate::error::CliError;
use crate::output::{OutcomeJson, finish};

/// Resolves the agent's card, sends one message, prints the answer; all within `--timeout`.
/// With `[prices]` in subagents.toml, `--json` puts the cost next to the tokens the agent
/// reported (the A2A usage extension).
pub(crate) async fn call(args: &CallArgs, config: &Config) -> Result<(), CliError> {
    let prices = crate::setup::prices_of(config)?;
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
    let mut ctx = TaskContext::new().with_agent(def.name()).with_depth(1);
    if stream {
        ctx = ctx.with_progress(Arc::new(|e: ProgressEvent| match e.kind {
            ProgressKind::Status { message } => eprintln!("[{}] status: {message}", e.agent),
            ProgressKind::TextDelta { text } => eprintln!("[{}] artifact: {text}", e.agent),
            _ => {}
        }));
    }
    let cancel = ctx.cancel().clone();
    let interrupt = tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            cancel.cancel();
        }
    });
    let call = TaskCall::new(def.name(), "command-line call", prompt);
    let result = A2aExecutor::new().execute(call, def.clone(), ctx).await;
    interrupt.abort();
    let outcome = result.map_err(|e| CliError::Failed(e.to_string()))?;
    let kind = KIND;
    let json_out = OutcomeJson::new(def.name(), kind.as_str(), &outcome, None).with_prices(prices);
    finish(&outcome, &json_out, json)
}
