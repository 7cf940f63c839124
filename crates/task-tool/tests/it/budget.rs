//! A kind that does not charge the budget itself (the `FN` kind only reports usage in its
//! outcome, as a kind written against the SPI alone may) is charged what it reports when it
//! ends, exactly once: a report over the budget spends it, the result says `limit_reached`
//! naming it (its text kept), and the caller's next delegation is refused. A kind that charges
//! as it goes is not charged again; absurd reports saturate.

use crate::common;

use std::time::Duration;

use common::{FnKind, assert_error, build_tool, fn_ref, foreground};
use subagent_core::{Budget, BudgetExt};
use subagent_spi::*;
use task_tool::{Dispatch, TaskTool};

fn kind() -> FnKind {
    FnKind::new()
        // Reports the input tokens its prompt names (one turn of model `m`); charges nothing.
        .agent("spender", |c, _| async move {
            let n: u64 = c.prompt.parse().unwrap_or(0);
            Ok(TaskOutcome::completed(format!("spent {n}"))
                .with_usage(Usage::new().with_tokens(n, 0).with_turns(1).with_model("m")))
        })
        // Reports the largest numbers there are, in its own usage and a child's.
        .agent("absurd", |_, _| async move {
            let max = Usage::new()
                .with_tokens(u64::MAX, u64::MAX)
                .with_turns(u32::MAX);
            Ok(TaskOutcome::completed("a lot")
                .with_usage(max.clone())
                .with_children(vec![UsageNode::new("x", "FN", TaskStatus::Completed, max)]))
        })
        // Charges as it goes (two turns of 300 + 200 tokens) and reports the same.
        .agent("honest", |_, ctx| async move {
            let b = ctx.budget().expect("its budget");
            b.charge_turn("m", 300, 200);
            b.charge_turn("m", 300, 200);
            Ok(TaskOutcome::completed("charged")
                .with_usage(Usage::new().with_tokens(600, 400).with_turns(2)))
        })
}

async fn tool(
    build: impl FnOnce(task_tool::TaskToolBuilder) -> task_tool::TaskToolBuilder,
) -> TaskTool {
    let agents = ["spender", "absurd", "honest"].map(fn_ref);
    build_tool(kind().into_type(), agents, build).await
}

/// A context with a budget of `tokens`, and the budget.
fn with_budget(tokens: u64) -> (TaskContext, Budget) {
    let ctx = TaskContext::new();
    let budget = Budget::new(
        BudgetLimits::new().with_tokens(tokens),
        ctx.cancel().clone(),
    );
    (ctx.with_budget(budget.clone()), budget)
}

/// Runs `agent` with `prompt` in the foreground under a budget of `tokens`: the tool, the
/// caller's context, its budget and the outcome.
async fn run_under_budget(
    agent: &str,
    prompt: &str,
    tokens: u64,
) -> (TaskTool, TaskContext, Budget, TaskOutcome) {
    let task = tool(|b| b).await;
    let (ctx, budget) = with_budget(tokens);
    let (_, o) = foreground(&task, TaskCall::new(agent, "d", prompt), &ctx).await;
    (task, ctx, budget, o)
}

/// Asserts that the next delegation (to `spender`) is refused before it runs, naming `limit`.
async fn next_is_refused(task: &TaskTool, ctx: &TaskContext, limit: &str) {
    match task.dispatch(TaskCall::new("spender", "d", "1"), ctx).await {
        Err(SubagentError::LimitReached { agent, limit: l }) => {
            assert_eq!((agent.as_str(), l.to_string().as_str()), ("spender", limit));
        }
        other => panic!("not refused: {other:?}"),
    }
}

fn limit(o: &TaskOutcome) -> Option<String> {
    o.limit.as_ref().map(ToString::to_string)
}

/// The tokens and turns `budget` has counted.
fn used(budget: &Budget) -> (u64, u32) {
    (budget.tokens_used(), budget.turns_used())
}

/// The limit `budget` says is spent, as text (`budget_tokens=N`).
fn spent(budget: &Budget) -> Option<String> {
    budget.spent().map(|l| l.to_string())
}

/// A kind that does not charge (`spender`) is charged what it reports; a kind that charges as
/// it goes (`honest`) is not charged again.
#[tokio::test]
async fn a_run_is_charged_once_what_it_used() {
    for (agent, prompt, want) in [("spender", "100", (100, 1)), ("honest", "go", (1000, 2))] {
        let (_, _, budget, o) = run_under_budget(agent, prompt, 10_000).await;
        assert_eq!(o.status, TaskStatus::Completed, "{agent}");
        assert_eq!(used(&budget), want, "{agent}");
    }
}

#[tokio::test]
async fn a_report_over_the_budget_spends_it_and_the_next_delegation_is_refused() {
    let (task, ctx, budget, o) = run_under_budget("spender", "1000000", 10_000).await;
    assert_eq!(o.status, TaskStatus::LimitReached);
    assert_eq!(limit(&o).as_deref(), Some("budget_tokens=10000"));
    assert_eq!(o.text, "spent 1000000", "the text is kept");
    assert_eq!(budget.tokens_used(), 1_000_000);
    assert_eq!(spent(&budget).as_deref(), Some("budget_tokens=10000"));
    assert!(ctx.cancel().is_cancelled(), "the caller's tree is stopped");

    // The next child is refused before it runs, naming the budget.
    next_is_refused(&task, &ctx, "budget_tokens=10000").await;
    assert_eq!(budget.tokens_used(), 1_000_000, "nothing more was run");
    // As the model reads it.
    let out = task
        .call_tool(
            serde_json::json!({"description": "d", "prompt": "1", "subagent_type": "spender"}),
            &ctx,
        )
        .await;
    assert_error(&out, "budget_tokens=10000");
}

#[tokio::test]
async fn a_background_childs_report_is_charged_once_when_it_ends() {
    let task = tool(|b| b).await;
    let (ctx, budget) = with_budget(10_000);
    let mut call = TaskCall::new("spender", "d", "1000000");
    call.run_in_background = Some(true);
    let id = match task.dispatch(call, &ctx).await.expect("starts") {
        Dispatch::Background { task_id, .. } => task_id,
        other => panic!("not a background run: {other:?}"),
    };
    let snap = task
        .output(&id, Some(Duration::from_secs(60)))
        .await
        .expect("reads");
    let o = snap.outcome().expect("finished");
    assert_eq!(o.status, TaskStatus::LimitReached);
    assert_eq!(limit(o).as_deref(), Some("budget_tokens=10000"));
    assert_eq!(o.text, "spent 1000000");
    // Read again: charged once.
    task.output(&id, None).await.expect("reads");
    assert_eq!(used(&budget), (1_000_000, 1));
    next_is_refused(&task, &ctx, "budget_tokens=10000").await;
}

#[tokio::test]
async fn absurd_reported_numbers_saturate_without_a_panic() {
    let (_, _, budget, o) = run_under_budget("absurd", "go", 10_000).await;
    assert_eq!(o.status, TaskStatus::LimitReached);
    assert_eq!(limit(&o).as_deref(), Some("budget_tokens=10000"));
    assert_eq!(budget.tokens_used(), u64::MAX, "saturated, not wrapped");
    assert_eq!(budget.turns_used(), u32::MAX);
}

#[tokio::test]
async fn an_agents_own_budget_is_charged_too_and_names_the_agent() {
    let task = tool(|b| b.agent_budget("spender", BudgetLimits::new().with_tokens(500))).await;
    let (ctx, budget) = with_budget(1_000_000);
    let (_, o) = foreground(&task, TaskCall::new("spender", "d", "1000"), &ctx).await;
    assert_eq!(o.status, TaskStatus::LimitReached);
    assert_eq!(
        limit(&o).as_deref(),
        Some("budget_tokens=500 (agent spender)")
    );
    // The caller's budget counts it and is not spent: its next child runs.
    assert_eq!(budget.tokens_used(), 1000);
    assert!(budget.spent().is_none() && !ctx.cancel().is_cancelled());
    let (_, o) = foreground(&task, TaskCall::new("spender", "d", "10"), &ctx).await;
    assert_eq!(o.status, TaskStatus::Completed);
    assert_eq!(budget.tokens_used(), 1010);
}

/// A kind that does not charge (`starter`) starts a background child that charges as it goes
/// (`worker`) and ends while it runs, after the worker's first turn was charged: the starter's
/// report is charged in full, the worker's turns once each, so the budget's total is the sum
/// of both reports exactly; crossing it still refuses the next delegation.
#[tokio::test]
async fn a_background_grandchild_that_outlives_a_non_charging_child_takes_nothing_off_its_bill() {
    use std::sync::Arc;
    use tokio::sync::Notify;

    let charged = Arc::new(Notify::new());
    let go_on = Arc::new(Notify::new());
    let (c, g) = (charged.clone(), go_on.clone());
    let kind = kind()
        // Starts `worker` in the background through the Task tool, waits until its first turn
        // is charged, and ends reporting one turn of 500 tokens; charges nothing itself.
        .agent("starter", move |_, ctx| {
            let charged = c.clone();
            async move {
                let task = ctx
                    .delegation_tools()
                    .into_iter()
                    .find(|t| t.name() == "Task")
                    .expect("the Task tool");
                let input = serde_json::json!({"description": "w", "prompt": "w",
                    "subagent_type": "worker", "run_in_background": true});
                let out = task.call(input, &ctx).await.expect("starts");
                assert!(!out.is_error, "{}", out.content);
                charged.notified().await;
                Ok(TaskOutcome::completed("started").with_usage(
                    Usage::new()
                        .with_tokens(300, 200)
                        .with_turns(1)
                        .with_model("m"),
                ))
            }
        })
        // Charges a turn of 5000 tokens, waits to be let go on, charges a turn of 10.
        .agent("worker", move |_, ctx| {
            let (charged, go_on) = (charged.clone(), g.clone());
            async move {
                let b = ctx.budget().expect("its budget").clone();
                b.charge_turn("m", 4000, 1000);
                charged.notify_one();
                go_on.notified().await;
                b.charge_turn("m", 7, 3);
                Ok(TaskOutcome::completed("worked").with_usage(
                    Usage::new()
                        .with_tokens(4007, 1003)
                        .with_turns(2)
                        .with_model("m"),
                ))
            }
        });
    let task = build_tool(
        kind.into_type(),
        ["starter", "worker", "spender"].map(fn_ref),
        |b| b,
    )
    .await;
    // 500 + 5010 = 5510 tokens in all: one over this budget, crossed by the last turn.
    let (ctx, budget) = with_budget(5509);
    let (_, o) = foreground(&task, TaskCall::new("starter", "d", "go"), &ctx).await;
    assert_eq!(o.status, TaskStatus::Completed);
    let ids = task.running_background_ids();
    assert_eq!(ids.len(), 1, "the worker outlives the starter");
    assert_eq!(
        used(&budget),
        (5500, 2),
        "the starter's report in full, and the worker's first turn"
    );
    go_on.notify_one();
    let snap = task
        .output(&ids[0], Some(Duration::from_secs(60)))
        .await
        .expect("reads");
    assert!(snap.outcome().is_some(), "ended: {:?}", snap.state);
    assert_eq!(
        used(&budget),
        (5510, 3),
        "the sum of every report, each unit once"
    );
    assert_eq!(spent(&budget).as_deref(), Some("budget_tokens=5509"));
    next_is_refused(&task, &ctx, "budget_tokens=5509").await;
    assert_eq!(budget.tokens_used(), 5510, "nothing more was run");
}

/// Calls the Task tool of `ctx`'s run with `input`, then TaskOutput (blocking) on the task it
/// started; returns the usage nodes both results carried.
async fn start_and_read(ctx: &TaskContext, input: serde_json::Value) -> Vec<UsageNode> {
    let tools = ctx.delegation_tools();
    let tool = |name: &str| {
        tools
            .iter()
            .find(|t| t.name() == name)
            .cloned()
            .expect(name)
    };
    let out = tool("Task").call(input, ctx).await.expect("starts");
    let id = common::task_id_in(&out.content);
    let read = tool("TaskOutput")
        .call(
            serde_json::json!({"task_id": id, "timeout_ms": 60_000}),
            ctx,
        )
        .await
        .expect("reads");
    let mut nodes = out.children;
    nodes.extend(read.children);
    nodes
}

/// A run that reads its background child's result reports the child's node; the child
/// settled it itself, so it is charged once: not again in the reader's settling, and not
/// credited against the reader's own usage. A child that fails after announcing usage it did
/// not charge is charged that usage once too.
#[tokio::test]
async fn a_background_childs_result_read_by_its_caller_is_charged_once() {
    let kind = kind()
        // Charges nothing; reports its own 500 tokens and the nodes it was handed.
        .agent("reader", |c, ctx| async move {
            let input = serde_json::json!({"description": "w", "prompt": c.prompt,
                "subagent_type": c.prompt, "run_in_background": true});
            let nodes = start_and_read(&ctx, input).await;
            Ok(TaskOutcome::completed("read")
                .with_usage(Usage::new().with_tokens(300, 200).with_turns(1))
                .with_children(nodes))
        })
        .agent("worker", |_, ctx| async move {
            let b = ctx.budget().expect("its budget").clone();
            b.charge_turn("m", 4000, 1000);
            Ok(TaskOutcome::completed("worked")
                .with_usage(Usage::new().with_tokens(4000, 1000).with_turns(1)))
        })
        // Announces 70 tokens it does not charge, then fails.
        .agent("failing", |_, ctx| async move {
            ctx.emit(ProgressKind::Usage {
                usage: Usage::new().with_tokens(50, 20).with_turns(1),
            });
            Err(SubagentError::execution("failing", "broke"))
        });
    let task = build_tool(
        kind.into_type(),
        ["reader", "worker", "failing"].map(fn_ref),
        |b| b,
    )
    .await;
    for (child, total, turns) in [("worker", 5500, 2), ("failing", 570, 2)] {
        let (ctx, budget) = with_budget(1_000_000);
        let (_, o) = foreground(&task, TaskCall::new("reader", "d", child), &ctx).await;
        assert_eq!(o.status, TaskStatus::Completed, "{child}");
        assert_eq!(o.children.len(), 1, "{child}: {:?}", o.children);
        let reported = o.usage_tree("reader", "FN", None).total();
        assert_eq!(
            (reported.total_tokens(), reported.turns),
            (total, turns),
            "{child}"
        );
        assert_eq!(
            used(&budget),
            (total, turns),
            "{child}: every reported unit once"
        );
    }
}
