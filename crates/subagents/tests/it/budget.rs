//! Budgets over a delegation tree, over real HTTP: a grandchild that spends the token budget
//! stops its siblings and the whole tree reports the budget; a remote child served by our A2A
//! server receives `CancelTask`.

use crate::common;
use crate::common::Built as _;

use std::time::{Duration, Instant};

use common::{last_message, task, team_builder};
use serde_json::Value;
use subagent_testkit::{Reply, ScriptedModelServer};
use subagents::TaskStatus;
use subagents::spi::BudgetLimits;

/// Answers by prompt: the main agent starts the coordinator, the coordinator starts a burner
/// and a slow leaf in parallel, the burner uses 5000 tokens at once, the slow leaf takes 30 s.
fn respond(body: &Value) -> Reply {
    let last = last_message(body);
    if last.contains("BURN-PROMPT") {
        // A moment late, so the slow sibling is in flight when the budget is spent.
        Reply::text("burned a lot")
            .with_usage(4000, 1000)
            .with_delay(Duration::from_millis(500))
    } else if last.contains("SLOW-PROMPT") {
        Reply::text("slow answer").with_delay(Duration::from_secs(30))
    } else if last.contains("COORD-PROMPT") {
        Reply::tool_calls(vec![
            task("leaf", "BURN-PROMPT"),
            task("leaf", "SLOW-PROMPT"),
        ])
        .with_usage(10, 10)
    } else {
        Reply::tool_calls(vec![task("coordinator", "COORD-PROMPT")]).with_usage(10, 10)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grandchild_spending_the_token_budget_cancels_its_siblings_and_the_tree_names_it() {
    let server = ScriptedModelServer::start().await;
    for _ in 0..4 {
        server.script().push_dynamic(None, respond);
    }
    let agents = team_builder(&server)
        .budget(BudgetLimits::new().with_tokens(1000))
        .built()
        .await;
    let started = Instant::now();
    let outcome = agents.main_agent().run("go").await.expect("runs");
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "the slow sibling was cancelled, not waited for ({:?})",
        started.elapsed()
    );
    common::assert_limit(&outcome, "budget_tokens=1000");
    assert_eq!(server.request_count(), 4, "nobody asked its model again");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_budget_the_same_tree_runs_to_its_end() {
    // The control: the budget, not the script, stops the tree above.
    let server = ScriptedModelServer::start().await;
    common::push_chain(
        &server,
        ["COORD", "L"],
        [
            Reply::text("leaf").with_usage(4000, 1000),
            Reply::text("coordinator"),
            Reply::text("main"),
        ],
    );
    let agents = team_builder(&server).built().await;
    let outcome = agents.main_agent().run("go").await.expect("runs");
    assert_eq!(outcome.status, TaskStatus::Completed);
}

#[cfg(feature = "server")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_child_receives_cancel_task_when_the_budget_is_spent() {
    use std::sync::Arc;
    use subagents::a2a::server::{A2aServer, AgentMount, InMemoryTaskStore, TaskFilter, TaskStore};
    use subagents::spi::TaskContext;

    // The remote side: our A2A server hosting `leaf`, whose model takes 30 s to answer.
    let remote_model = ScriptedModelServer::start().await;
    remote_model.push(Reply::text("remote answer").with_delay(Duration::from_secs(30)));
    let remote = team_builder(&remote_model).built().await;
    let store = Arc::new(InMemoryTaskStore::new(100, Duration::from_secs(600)));
    let leaf = remote.task().find("leaf").expect("leaf").clone();
    let executor = remote.task().executor_of("leaf").expect("executor");
    let server = A2aServer::builder()
        .mount(
            AgentMount::subagent_with_context("/leaf", leaf, executor, TaskContext::new())
                .with_store(store.clone()),
        )
        .build()
        .expect("server");
    let url = common::serve_at(server, "leaf", ()).await;

    // The local side: main starts the remote leaf and a local burner in parallel.
    let model = ScriptedModelServer::start().await;
    model.script().push_dynamic(None, |_| {
        Reply::tool_calls(vec![
            task("leaf", "BURN-PROMPT"),
            task("remote-leaf", "REMOTE"),
        ])
    });
    // A moment late, so the remote task is running when the budget is spent.
    model.script().push_dynamic(None, |_| {
        Reply::text("burned")
            .with_usage(4000, 1000)
            .with_delay(Duration::from_millis(1000))
    });
    let agents = team_builder(&model)
        .a2a_reference(common::remote_reference(&url, "remote-leaf"))
        .budget(BudgetLimits::new().with_tokens(1000))
        .built()
        .await;
    let outcome = agents.main_agent().run("go").await.expect("runs");
    common::assert_limit(&outcome, "budget_tokens=1000");

    // The remote task was canceled by CancelTask, long before its model would have answered.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let page = store
            .list(&TaskFilter::default(), 0, 100)
            .await
            .expect("lists");
        let states: Vec<String> = page
            .tasks
            .iter()
            .map(|t| t.status.state.to_string())
            .collect();
        if states
            .iter()
            .any(|s| s.contains("CANCELED") || s.contains("canceled"))
        {
            break;
        }
        assert!(Instant::now() < deadline, "remote task states: {states:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A local tree (coordinator → leaf, both the Claude-style loop, which charges each turn as it
/// goes): the budget is charged the turns' usage exactly once, though the Task tool also settles
/// each child's report when it ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_local_tree_is_charged_its_turns_usage_exactly_once() {
    use subagents::policy::{Budget, BudgetExt};
    use subagents::spi::{TaskCall, TaskContext};

    let server = ScriptedModelServer::start().await;
    server.push(Reply::task_call("leaf", "L").with_usage(10, 20));
    server.push(Reply::text("leaf answer").with_usage(4000, 1000));
    server.push(Reply::text("coordinator answer").with_usage(7, 3));
    let agents = team_builder(&server).built().await;
    let ctx = TaskContext::new();
    let budget = Budget::new(
        BudgetLimits::new().with_tokens(1_000_000),
        ctx.cancel().clone(),
    );
    let ctx = ctx.with_budget(budget.clone());
    let outcome = match agents
        .dispatch(TaskCall::new("coordinator", "d", "COORD"), &ctx)
        .await
        .expect("runs")
    {
        subagents::Dispatch::Foreground { outcome, .. } => outcome,
        other => panic!("not a foreground run: {other:?}"),
    };
    assert_eq!(outcome.status, TaskStatus::Completed);
    let reported = outcome.usage_tree("coordinator", "CLAUDE", None).total();
    assert_eq!(reported.total_tokens(), 5040, "the three turns");
    assert_eq!(reported.turns, 3);
    assert_eq!(budget.tokens_used(), 5040, "charged once");
    assert_eq!(budget.turns_used(), 3);
}

/// The main agent (the Claude-style loop) with a 10,000-token budget delegates to a kind that
/// does not charge the budget and reports a million tokens: the budget is spent by the report,
/// the main agent is not asked again, and the run names the budget.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kind_that_does_not_charge_spends_the_main_agents_budget_with_its_report() {
    use subagent_testkit::{FnKind, fn_ref};
    use subagents::TaskOutcome;
    use subagents::spi::Usage;

    let kind = FnKind::new()
        .agent("spender", |_, _| async move {
            Ok(TaskOutcome::completed("spent a million")
                .with_usage(Usage::new().with_tokens(1_000_000, 0).with_turns(1)))
        })
        .into_type();
    let server = ScriptedModelServer::start().await;
    server.push(Reply::task_call("spender", "go").with_usage(10, 10));
    server.push(Reply::task_call("spender", "again").with_usage(10, 10));
    server.push(Reply::text("main answer"));
    let agents = team_builder(&server)
        .kind(kind)
        .reference(fn_ref("spender?Spends tokens."))
        .budget(BudgetLimits::new().with_tokens(10_000))
        .built()
        .await;
    let outcome = agents.main_agent().run("go").await.expect("runs");
    common::assert_limit_on_first_turn(&outcome, &server, "budget_tokens=10000");
    let child = &outcome.children[0];
    assert_eq!(child.status, TaskStatus::LimitReached, "{child:?}");
}

/// A kind that does not charge the budget (`starter`, the FN kind) starts the leaf (the
/// Claude-style loop, which charges each turn as it goes, on a real model server) in the
/// background and ends after the leaf's first turn, while the leaf works on: the budget is
/// charged the starter's report and each of the leaf's turns exactly once (the sum of every
/// node's usage), and once that total crosses it, the next delegation is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_background_leaf_that_outlives_a_non_charging_starter_is_charged_once_and_so_is_the_starter()
 {
    use serde_json::json;
    use subagent_testkit::{FnKind, fn_ref};
    use subagents::TaskOutcome;
    use subagents::policy::{Budget, BudgetExt};
    use subagents::spi::{CancellationToken, SubagentError, TaskCall, TaskContext, Usage};

    let kind = FnKind::new()
        .agent("starter", |_, ctx| async move {
            let task = ctx
                .delegation_tools()
                .into_iter()
                .find(|t| t.name() == "Task")
                .expect("the Task tool");
            let input = json!({"description": "look", "prompt": "LEAF", "subagent_type": "leaf",
                "run_in_background": true});
            let out = task.call(input, &ctx).await.expect("starts");
            assert!(!out.is_error, "{}", out.content);
            // Until the leaf's first turn is charged (the meter counts the subtree).
            let meter = ctx.budget().expect("its meter").clone();
            let deadline = Instant::now() + Duration::from_secs(60);
            while meter.tokens_used() < 5000 {
                assert!(
                    Instant::now() < deadline,
                    "the leaf's first turn never came"
                );
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            Ok(TaskOutcome::completed("started the leaf")
                .with_usage(Usage::new().with_tokens(300, 200).with_turns(1)))
        })
        .into_type();
    let server = ScriptedModelServer::start().await;
    server.push(
        Reply::tool_calls(vec![("Read", json!({"file_path": "nothing-here.txt"}))])
            .with_usage(4000, 1000),
    );
    // A moment late, so the leaf is likely still at work when the starter ends (the totals
    // are the same either way).
    server.push(
        Reply::text("leaf answer")
            .with_usage(7, 3)
            .with_delay(Duration::from_millis(200)),
    );
    let agents = team_builder(&server)
        .kind(kind)
        .reference(fn_ref("starter?Starts the leaf."))
        .built()
        .await;
    let ctx = TaskContext::new();
    // 500 + 5010 = 5510 tokens in all: one over this budget.
    let budget = Budget::new(BudgetLimits::new().with_tokens(5509), ctx.cancel().clone());
    let ctx = ctx.with_budget(budget.clone());
    match agents
        .dispatch(TaskCall::new("starter", "d", "go"), &ctx)
        .await
        .expect("runs")
    {
        subagents::Dispatch::Foreground { .. } => {}
        other => panic!("not a foreground run: {other:?}"),
    }
    let ended = agents.finish_background(&CancellationToken::new()).await;
    assert_eq!(ended.len(), 1, "the leaf");
    let leaf = ended[0].outcome().expect("the leaf ended");
    assert_eq!(
        (leaf.usage.total_tokens(), leaf.usage.turns),
        (5010, 2),
        "{leaf:?}"
    );
    assert_eq!(server.request_count(), 2);
    assert_eq!(
        (budget.tokens_used(), budget.turns_used()),
        (5510, 3),
        "the starter's 500 tokens and 1 turn, the leaf's 5010 and 2: each once"
    );
    assert_eq!(
        budget.spent().map(|l| l.to_string()).as_deref(),
        Some("budget_tokens=5509")
    );
    match agents
        .dispatch(TaskCall::new("starter", "d", "again"), &ctx)
        .await
    {
        Err(SubagentError::LimitReached { limit, .. }) => {
            assert_eq!(limit.to_string(), "budget_tokens=5509");
        }
        other => panic!("not refused: {other:?}"),
    }
    assert_eq!(server.request_count(), 2, "nothing more was run");
}
