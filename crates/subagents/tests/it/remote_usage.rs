//! Usage from remote children and per-agent budgets, over real sockets: a coordinator served by
//! our A2A server on 127.0.0.1 reports its usage tree (its own tokens and its leaf's) in the
//! task metadata; the caller's usage tree, cost and budget count it. An agent's own budget
//! (frontmatter or builder) stops its subtree while the root budget is larger, naming the
//! budget and the agent.

#![cfg(feature = "server")]

use crate::common;
use crate::common::Built as _;

use std::path::Path;
use std::time::Duration;

use common::{last_message, remote_reference, serve_a2a, task, team_builder};
use subagent_testkit::{Reply, ScriptedModelServer};
use subagents::policy::{ModelPrice, ModelPrices};
use subagents::spi::{BudgetLimits, UsageNode};
use subagents::{ServeOptions, Subagents, SubagentsBuilder, TaskStatus};

/// Serves the team (coordinator, leaf...) over A2A on 127.0.0.1, its models answered by a
/// server of their own scripted by [`script_remote`]; returns that server and the
/// coordinator's URL.
async fn serve_team() -> (ScriptedModelServer, String) {
    let model = ScriptedModelServer::start().await;
    script_remote(&model);
    let remote = team_builder(&model).built().await;
    let url = serve_a2a(remote, &ServeOptions::new(), "coordinator")
        .await
        .0;
    (model, url)
}

/// The remote side's script: the coordinator delegates to the leaf (100 + 10 tokens), the leaf
/// answers (4000 + 1000), the coordinator answers (7 + 3).
fn script_remote(model: &ScriptedModelServer) {
    model.push(
        Reply::tool_calls(vec![task("leaf", "LEAF-PROMPT")])
            .with_usage(100, 10)
            .with_model("m"),
    );
    model.push(
        Reply::text("the fact")
            .with_usage(4000, 1000)
            .with_model("m"),
    );
    model.push(Reply::text("coordinated").with_usage(7, 3).with_model("m"));
}

/// The caller's side: a main agent on `model` with the remote coordinator at `url`.
fn caller(model: &ScriptedModelServer, url: &str) -> SubagentsBuilder {
    Subagents::builder()
        .model(model.openai_model("m"))
        .a2a_reference(remote_reference(url, "remote-coordinator"))
        .workspace(tempfile::tempdir().expect("tmp").keep())
}

fn find<'a>(nodes: &'a [UsageNode], agent: &str) -> &'a UsageNode {
    nodes
        .iter()
        .find(|n| n.agent == agent)
        .unwrap_or_else(|| panic!("no node `{agent}` in {nodes:#?}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_childs_usage_tree_joins_the_callers_and_is_priced() {
    let (_remote_model, url) = serve_team().await;

    let model = ScriptedModelServer::start().await;
    model.push(Reply::task_call("remote-coordinator", "REMOTE").with_usage(1, 1));
    model.push(Reply::text("all done").with_usage(1, 1));
    let agents = caller(&model, &url)
        .prices(ModelPrices::new().with("m", ModelPrice::new(1.0, 2.0)))
        .built()
        .await;
    let outcome = agents.main_agent().run("go").await.expect("runs");
    assert_eq!(outcome.status, TaskStatus::Completed, "{outcome:?}");

    // The remote coordinator's own tokens on its node, its leaf below it.
    let remote = find(&outcome.children, "remote-coordinator");
    assert_eq!(remote.kind, "A2A");
    assert_eq!(
        (remote.usage.input_tokens, remote.usage.output_tokens),
        (107, 13)
    );
    assert_eq!(remote.usage.turns, 2);
    assert_eq!(remote.usage.model.as_deref(), Some("m"));
    let leaf = find(&remote.children, "leaf");
    assert_eq!(leaf.kind, "CLAUDE");
    assert_eq!(
        (leaf.usage.input_tokens, leaf.usage.output_tokens),
        (4000, 1000)
    );
    // The whole tree's total includes the remote subtree.
    let tree = outcome.usage_tree("main", "main", None);
    assert_eq!(tree.total().total_tokens(), 2 + 2 + 120 + 5000);
    // Priced like local runs: every remote node names its model.
    let prices = agents.prices();
    let cost = prices
        .cost(
            leaf.usage.model.as_deref().expect("model"),
            leaf.usage.input_tokens,
            leaf.usage.output_tokens,
        )
        .expect("priced");
    assert!((cost - 0.006).abs() < 1e-9, "{cost}");
}

/// Serves the team ([`serve_team`]) and runs a caller ([`caller`]) under the budgets `tune`
/// sets: its main agent delegates `REMOTE` to the remote coordinator, then answers `after`.
/// Returns the caller's model and the outcome.
async fn run_remote_under_budget(
    after: &str,
    tune: impl FnOnce(SubagentsBuilder) -> SubagentsBuilder,
) -> (ScriptedModelServer, subagents::TaskOutcome) {
    let (_remote_model, url) = serve_team().await;
    let model = ScriptedModelServer::start().await;
    model.push(Reply::task_call("remote-coordinator", "REMOTE"));
    model.push(Reply::text(after));
    let agents = tune(caller(&model, &url)).built().await;
    let outcome = common::run_main(&agents, "go").await;
    (model, outcome)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_childs_reported_tokens_spend_the_callers_budget() {
    let (model, outcome) = run_remote_under_budget("never asked", |b| {
        b.budget(BudgetLimits::new().with_tokens(1000))
    })
    .await;
    common::assert_limit_on_first_turn(&outcome, &model, "budget_tokens=1000");
    let remote = find(&outcome.children, "remote-coordinator");
    assert_eq!(remote.status, TaskStatus::LimitReached);
    assert_eq!(find(&remote.children, "leaf").usage.input_tokens, 4000);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agents_own_budget_stops_its_remote_subtree_and_the_caller_goes_on() {
    let (model, outcome) = run_remote_under_budget("carried on", |b| {
        b.budget(BudgetLimits::new().with_tokens(1_000_000))
            .agent_budget("remote-coordinator", BudgetLimits::new().with_tokens(1000))
    })
    .await;
    assert_eq!(outcome.status, TaskStatus::Completed, "{outcome:?}");
    assert_eq!(outcome.text, "carried on");
    let remote = find(&outcome.children, "remote-coordinator");
    assert_eq!(remote.status, TaskStatus::LimitReached);
    // The main agent read which budget stopped its child.
    let reqs = model.requests();
    let told = last_message(&reqs[1].body);
    assert!(
        told.contains("budget_tokens=1000 (agent remote-coordinator)"),
        "{told}"
    );
}

fn write(dir: &Path, name: &str, text: &str) {
    std::fs::write(dir.join(name), text).expect("write agent");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_frontmatter_budget_cuts_the_agents_subtree_while_the_root_budget_is_larger() {
    let dir = tempfile::tempdir().expect("tmp");
    write(
        dir.path(),
        "thrifty.md",
        "---\nname: thrifty\ndescription: Delegates cheaply.\ntools: Task\nbudget: {tokens: 1000}\n---\nDelegate.\n",
    );
    write(
        dir.path(),
        "leaf.md",
        "---\nname: leaf\ndescription: Answers.\ntools: Read\n---\nAnswer.\n",
    );
    let model = ScriptedModelServer::start().await;
    // main -> thrifty -> (burner leaf, slow leaf) in parallel; the burner spends thrifty's
    // budget, which cancels the slow leaf; main goes on.
    model.push(Reply::task_call("thrifty", "THRIFTY").with_usage(10, 10));
    model.push(
        Reply::tool_calls(vec![task("leaf", "BURN"), task("leaf", "SLOW")]).with_usage(10, 10),
    );
    for _ in 0..2 {
        model.script().push_dynamic(None, |body| {
            let last = last_message(body);
            if last.contains("BURN") {
                Reply::text("burned")
                    .with_usage(4000, 1000)
                    .with_delay(Duration::from_millis(500))
            } else {
                Reply::text("slow").with_delay(Duration::from_secs(30))
            }
        });
    }
    model.push(Reply::text("main carried on"));
    let agents = Subagents::builder()
        .model(model.openai_model("m"))
        .agents_dir(dir.path())
        .workspace(tempfile::tempdir().expect("tmp").keep())
        .budget(BudgetLimits::new().with_tokens(1_000_000))
        .built()
        .await;
    let started = std::time::Instant::now();
    let outcome = agents.main_agent().run("go").await.expect("runs");
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "the slow leaf was cancelled, not waited for"
    );
    assert_eq!(outcome.status, TaskStatus::Completed, "{outcome:?}");
    assert_eq!(outcome.text, "main carried on");
    let thrifty = find(&outcome.children, "thrifty");
    assert_eq!(thrifty.status, TaskStatus::LimitReached, "{thrifty:#?}");
    let reqs = model.requests();
    let told = last_message(&reqs.last().expect("requests").body);
    assert!(
        told.contains("budget_tokens=1000 (agent thrifty)"),
        "{told}"
    );
}
