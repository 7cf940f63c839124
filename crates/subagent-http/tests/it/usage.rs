//! The `usage_*` keys against real endpoints on 127.0.0.1: the tokens an OpenAI-style or
//! Anthropic-style reply reports are the run's usage, the Task tool charges them to the
//! caller's budget once (through the facade), and a hostile endpoint that leaves them out or
//! garbles them is counted as the estimate, never as free.

use std::sync::Arc;

use axum::Json;
use axum::http::header;
use axum::routing::{MethodRouter, post};
use serde_json::{Value, json};
use subagent_spi::{
    BudgetLimits, SubagentError, SubagentReference, TaskCall, TaskContext, TaskOutcome, TaskStatus,
};
use subagents::policy::{Budget, BudgetExt, ModelPrice, ModelPrices};

use crate::http_kind::serve;

/// Three endpoints: `/openai` and `/anthropic` answer in those APIs' shapes with fixed usage
/// (1200 in, 300 out); `/echo` replies with its prompt as the raw body, so a test writes the
/// reply (a hostile one) as the prompt.
async fn endpoints() -> String {
    let app = axum::Router::new()
        .route(
            "/openai",
            chat(|q| {
                json!({
                    "model": "gpt-test",
                    "choices": [{"message": {"role": "assistant", "content": format!("openai: {q}")}}],
                    "usage": {"prompt_tokens": 1200, "completion_tokens": 300, "total_tokens": 1500}
                })
            }),
        )
        .route(
            "/anthropic",
            chat(|q| {
                json!({
                    "model": "claude-test",
                    "content": [{"type": "text", "text": format!("anthropic: {q}")}],
                    "usage": {"input_tokens": 1200, "output_tokens": 300}
                })
            }),
        )
        .route(
            "/echo",
            post(|Json(body): Json<Value>| async move {
                let reply = body["prompt"].as_str().unwrap_or("").to_string();
                ([(header::CONTENT_TYPE, "application/json")], reply)
            }),
        );
    serve(app).await
}

/// A chat API endpoint: `reply` gets the first message's text and writes the JSON answer.
fn chat(reply: fn(&str) -> Value) -> MethodRouter {
    post(move |Json(body): Json<Value>| async move {
        Json(reply(body["messages"][0]["content"].as_str().unwrap_or("")))
    })
}

/// The usage pointers of an OpenAI-style reply.
const OPENAI_USAGE: [(&str, &str); 2] = [
    ("usage_input", "/usage/prompt_tokens"),
    ("usage_output", "/usage/completion_tokens"),
];

/// An `HTTP` reference to `{base}{path}` with the metadata `meta`.
fn http_ref<'a>(
    base: &str,
    path: &str,
    meta: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> SubagentReference {
    let r = SubagentReference::new(format!("{base}{path}"), "HTTP");
    meta.into_iter().fold(r, |r, (k, v)| r.with_metadata(k, v))
}

fn openai(base: &str) -> SubagentReference {
    let body = r#"{"model": "gpt-test", "messages": [{"role": "user", "content": "{{prompt}}"}]}"#;
    let meta = [
        ("name", "gpt"),
        ("description", "An OpenAI-style endpoint."),
        ("body", body),
        ("answer", "/choices/0/message/content"),
        ("usage_model", "/model"),
    ];
    http_ref(base, "/openai", meta.into_iter().chain(OPENAI_USAGE))
}

fn anthropic(base: &str) -> SubagentReference {
    let body = r#"{"model": "claude-test", "max_tokens": 100, "messages": [{"role": "user", "content": "{{prompt}}"}]}"#;
    let usage = [
        ("usage_input", "/usage/input_tokens"),
        ("usage_output", "/usage/output_tokens"),
    ];
    let meta = [
        ("name", "claude"),
        ("body", body),
        ("answer", "/content/0/text"),
    ];
    http_ref(base, "/anthropic", meta.into_iter().chain(usage))
}

/// The `/echo` agent with OpenAI-style usage pointers: the prompt is the reply.
fn echo(base: &str) -> SubagentReference {
    let meta = [("name", "echo"), ("answer", "/answer")];
    http_ref(base, "/echo", meta.into_iter().chain(OPENAI_USAGE))
}

/// Runs one task on the kind directly (no Task tool, no budget).
async fn run(r: SubagentReference, prompt: &str) -> Result<TaskOutcome, SubagentError> {
    let kind = subagent_http::kind();
    let def = kind.resolver().resolve(&r).await?;
    kind.executor()
        .execute(TaskCall::new("a", "t", prompt), def, TaskContext::new())
        .await
}

/// A reply of the `/echo` agent answering "ok" with `usage` as its usage object.
fn reply_with_usage(usage: &str) -> String {
    format!(r#"{{"answer": "ok", "usage": {usage}}}"#)
}

#[tokio::test]
async fn openai_and_anthropic_style_usage_is_the_runs_usage() {
    let base = endpoints().await;
    let out = run(openai(&base), "hi").await.unwrap();
    assert_eq!(out.text, "openai: hi");
    assert_eq!(
        (out.usage.input_tokens, out.usage.output_tokens),
        (1200, 300)
    );
    assert_eq!(out.usage.model.as_deref(), Some("gpt-test"));
    assert!(!out.usage.estimated);

    let out = run(anthropic(&base), "hi").await.unwrap();
    assert_eq!(out.text, "anthropic: hi");
    assert_eq!(
        (out.usage.input_tokens, out.usage.output_tokens),
        (1200, 300)
    );
    assert_eq!(out.usage.model, None, "no usage_model pointer");
    assert!(!out.usage.estimated);
}

#[tokio::test]
async fn without_usage_pointers_no_tokens_are_reported() {
    let base = endpoints().await;
    let plain = SubagentReference::new(format!("{base}/openai"), "HTTP")
        .with_metadata("name", "gpt")
        .with_metadata(
            "body",
            r#"{"messages": [{"role": "user", "content": "{{prompt}}"}]}"#,
        )
        .with_metadata("answer", "/choices/0/message/content");
    let out = run(plain, "hi").await.unwrap();
    assert_eq!(out.status, TaskStatus::Completed);
    assert_eq!(out.usage.total_tokens(), 0);
    assert_eq!((out.usage.turns, out.usage.model.as_deref()), (0, None));
    assert!(!out.usage.estimated);
}

#[tokio::test]
async fn a_hostile_usage_report_counts_as_the_estimate_not_as_free() {
    let base = endpoints().await;
    for (reply, why) in [
        (r#"{"answer": "ok"}"#.to_string(), "no usage at all"),
        (reply_with_usage("{}"), "empty usage"),
        (
            reply_with_usage(r#"{"prompt_tokens": "1200", "completion_tokens": "300"}"#),
            "strings",
        ),
        (
            reply_with_usage(r#"{"prompt_tokens": -5000, "completion_tokens": 0}"#),
            "negative",
        ),
        (
            reply_with_usage(r#"{"prompt_tokens": 12.5, "completion_tokens": 3}"#),
            "float",
        ),
        (
            reply_with_usage(r#"{"prompt_tokens": 18446744073709551616, "completion_tokens": 3}"#),
            "past u64",
        ),
    ] {
        let out = run(echo(&base), &reply).await.unwrap();
        assert_eq!(
            out.status,
            TaskStatus::Completed,
            "{why}: the answer is kept"
        );
        assert_eq!(out.text, "ok", "{why}");
        assert!(out.usage.estimated, "{why}");
        assert_eq!(
            out.usage.total_tokens(),
            subagent_http::DEFAULT_UNREPORTED_TOKENS,
            "{why}"
        );
    }
    // The reference's own estimate.
    let r = echo(&base).with_metadata("usage_unreported_tokens", "777");
    let out = run(r, r#"{"answer": "ok"}"#).await.unwrap();
    assert_eq!((out.usage.total_tokens(), out.usage.estimated), (777, true));
    // The largest counts saturate.
    let huge = reply_with_usage(&format!(
        r#"{{"prompt_tokens": {m}, "completion_tokens": {m}}}"#,
        m = u64::MAX
    ));
    let out = run(echo(&base), &huge).await.unwrap();
    assert_eq!(out.usage.total_tokens(), u64::MAX);
    assert!(!out.usage.estimated);
}

/// A caller's context with a token budget of `tokens` (and prices, for the cost limit).
fn budgeted(limits: BudgetLimits, prices: ModelPrices) -> (TaskContext, Budget) {
    let ctx = TaskContext::new();
    let budget = Budget::new(limits, ctx.cancel().clone()).with_prices(Arc::new(prices));
    (ctx.with_budget(budget.clone()), budget)
}

async fn facade(references: Vec<SubagentReference>) -> subagents::Subagents {
    let mut builder = subagents::Subagents::builder()
        .builtin_agents(false)
        .kind(subagent_http::kind());
    for r in references {
        builder = builder.reference(r);
    }
    builder.build().await.unwrap()
}

async fn foreground(
    agents: &subagents::Subagents,
    call: TaskCall,
    ctx: &TaskContext,
) -> TaskOutcome {
    match agents.dispatch(call, ctx).await.unwrap() {
        subagents::Dispatch::Foreground { outcome, .. } => outcome,
        other => panic!("not a foreground run: {other:?}"),
    }
}

#[tokio::test]
async fn the_reported_tokens_spend_a_token_budget_once_and_the_next_delegation_is_refused() {
    let base = endpoints().await;
    let agents = facade(vec![openai(&base), anthropic(&base)]).await;
    let (ctx, budget) = budgeted(BudgetLimits::new().with_tokens(2000), ModelPrices::new());

    // Within the budget: charged exactly what was reported, once.
    let o = foreground(&agents, TaskCall::new("gpt", "d", "one"), &ctx).await;
    assert_eq!(o.status, TaskStatus::Completed);
    assert_eq!(budget.tokens_used(), 1500);
    assert!(budget.spent().is_none());

    // Past it: the result says so, naming the budget, the answer kept.
    let o = foreground(&agents, TaskCall::new("claude", "d", "two"), &ctx).await;
    assert_eq!(o.status, TaskStatus::LimitReached);
    assert_eq!(
        o.limit.as_ref().map(ToString::to_string).as_deref(),
        Some("budget_tokens=2000")
    );
    assert_eq!(o.text, "anthropic: two");
    assert_eq!(budget.tokens_used(), 3000, "charged once");

    // The next delegation is refused before any request, naming the budget.
    match agents
        .dispatch(TaskCall::new("gpt", "d", "three"), &ctx)
        .await
    {
        Err(SubagentError::LimitReached { agent, limit }) => {
            assert_eq!(agent, "gpt");
            assert_eq!(limit.to_string(), "budget_tokens=2000");
        }
        other => panic!("not refused: {other:?}"),
    }
    assert_eq!(budget.tokens_used(), 3000, "nothing more was run");
    // As the model reads it.
    let tools = agents.tools();
    let task: &dyn subagent_spi::Tool = &tools.task;
    let out = task
        .call(
            json!({"description": "d", "prompt": "four", "subagent_type": "gpt"}),
            &ctx,
        )
        .await
        .unwrap();
    assert!(out.is_error, "{}", out.content);
    assert!(
        out.content.contains("budget_tokens=2000"),
        "{}",
        out.content
    );
}

#[tokio::test]
async fn a_missing_usage_report_spends_a_budget_smaller_than_the_estimate() {
    let base = endpoints().await;
    let agents = facade(vec![echo(&base)]).await;
    let (ctx, budget) = budgeted(BudgetLimits::new().with_tokens(50_000), ModelPrices::new());
    let o = foreground(
        &agents,
        TaskCall::new("echo", "d", r#"{"answer": "free?"}"#),
        &ctx,
    )
    .await;
    assert_eq!(o.status, TaskStatus::LimitReached);
    assert_eq!(
        o.limit.as_ref().map(ToString::to_string).as_deref(),
        Some("budget_tokens=50000")
    );
    assert!(o.usage.estimated);
    assert_eq!(
        budget.tokens_used(),
        subagent_http::DEFAULT_UNREPORTED_TOKENS
    );
}

#[tokio::test]
async fn the_reported_model_prices_the_tokens_for_a_cost_budget() {
    let base = endpoints().await;
    let agents = facade(vec![openai(&base)]).await;
    // $1 per million tokens each way: 1500 tokens cost $0.0015, past a $0.001 budget.
    let prices = ModelPrices::new().with("gpt-test", ModelPrice::new(1.0, 1.0));
    let (ctx, budget) = budgeted(BudgetLimits::new().with_usd(0.001), prices);
    let o = foreground(&agents, TaskCall::new("gpt", "d", "x"), &ctx).await;
    assert_eq!(o.status, TaskStatus::LimitReached);
    let limit = o
        .limit
        .as_ref()
        .map(ToString::to_string)
        .unwrap_or_default();
    assert!(limit.starts_with("budget_usd="), "{limit}");
    assert!(
        (budget.usd_used() - 0.0015).abs() < 1e-9,
        "{}",
        budget.usd_used()
    );
}

#[tokio::test]
async fn bad_usage_settings_fail_at_resolve_time_naming_the_key() {
    let base = endpoints().await;
    for (r, key) in [
        (
            echo(&base).with_metadata("usage_input", "usage.prompt_tokens"),
            "usage_input",
        ),
        (
            echo(&base).with_metadata("usage_unreported_tokens", "-1"),
            "usage_unreported_tokens",
        ),
        (
            SubagentReference::new(format!("{base}/echo"), "HTTP")
                .with_metadata("name", "m")
                .with_metadata("usage_model", "/model"),
            "usage_model",
        ),
    ] {
        let err = run(r, "{}").await.unwrap_err();
        assert!(matches!(err, SubagentError::Resolution { .. }), "{err:?}");
        assert!(err.to_string().contains(&format!("`{key}`")), "{err}");
    }
    // The JSON form takes the same keys, the estimate as a number.
    let r = subagent_http::reference_from_json(
        &json!({
            "url": format!("{base}/echo"),
            "name": "echo",
            "answer": "/answer",
            "usage_input": "/usage/input_tokens",
            "usage_unreported_tokens": 42
        })
        .to_string(),
    )
    .unwrap();
    let out = run(r, r#"{"answer": "ok"}"#).await.unwrap();
    assert_eq!((out.usage.total_tokens(), out.usage.estimated), (42, true));
}
