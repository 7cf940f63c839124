//! The OpenTelemetry GenAI span of a delegated run (`invoke_agent`) and the usage fields every
//! host records the same way, so the `Task` tool, a served agent and the agent loop's `chat`
//! spans export one shape.
//!
//! Spans are `tracing` spans: exported when the host installs an OTLP layer (the facade's
//! `otel` feature), nearly free otherwise. Fields are recorded only on a live span: on a
//! disabled one (no subscriber) recording would still format a `log` record per field.

use subagent_spi::{SubagentError, TaskOutcome};
use tracing::Span;

/// An `invoke_agent` span for a run of `agent` (task id `task_id`, empty when none), with the
/// fields hosts fill in as they learn them declared empty: `gen_ai.request.model`,
/// `subagents.kind`, `subagents.depth`, `subagents.background`, `subagents.served`, and the end
/// of the run ([`record_run_end`]).
pub fn invoke_agent_span(agent: &str, task_id: &str) -> Span {
    tracing::info_span!(
        "invoke_agent",
        otel.name = %format_args!("invoke_agent {agent}"),
        otel.kind = "internal",
        gen_ai.operation.name = "invoke_agent",
        gen_ai.agent.name = agent,
        gen_ai.agent.id = task_id,
        gen_ai.request.model = tracing::field::Empty,
        subagents.kind = tracing::field::Empty,
        subagents.depth = tracing::field::Empty,
        subagents.background = tracing::field::Empty,
        subagents.served = tracing::field::Empty,
        subagents.status = tracing::field::Empty,
        gen_ai.usage.input_tokens = tracing::field::Empty,
        gen_ai.usage.output_tokens = tracing::field::Empty,
        error.type = tracing::field::Empty,
    )
}

/// Records `gen_ai.usage.input_tokens` and `gen_ai.usage.output_tokens` on `span` (declared
/// by it), as `i64`: `tracing-opentelemetry` exports a `u64` as a string.
pub fn record_tokens(span: &Span, input: u64, output: u64) {
    let tokens = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
    span.record("gen_ai.usage.input_tokens", tokens(input));
    span.record("gen_ai.usage.output_tokens", tokens(output));
}

/// Records how a run ended on its [`invoke_agent_span`]: `subagents.status` and the token
/// usage of an outcome, or `error.type = subagent_error`.
pub fn record_run_end(span: &Span, result: &Result<TaskOutcome, SubagentError>) {
    match result {
        Ok(o) => {
            span.record("subagents.status", o.status.as_str());
            record_tokens(span, o.usage.input_tokens, o.usage.output_tokens);
        }
        Err(_) => {
            span.record("error.type", "subagent_error");
        }
    }
}
