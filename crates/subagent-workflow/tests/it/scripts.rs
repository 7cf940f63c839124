//! What a script can do: agent(), parallel(), typed results, ask(), args, its result.

use std::sync::Arc;

use serde_json::json;
use subagent_spi::TaskContext;
use subagent_testkit::ScriptedApprover;
use subagent_workflow::{CallState, Journal, RunStatus, WorkflowLimits};

use crate::common::World;

#[tokio::test]
async fn parallel_returns_results_in_order_and_failures_as_values() {
    let w = World::new(WorkflowLimits::default()).await;
    let script = r#"
        const [a, b, c] = await parallel([
          () => agent("slow", "first:60"),
          () => agent("fail", "x"),
          async () => { const t = await agent("echo", "one"); return t + "+" + await agent("echo", "two"); },
        ]);
        return { a, b: b instanceof Error ? b.error : "no error", c, n: args.n };
    "#;
    let out = w
        .workflows
        .run(script, json!({"n": 7}), &TaskContext::new())
        .await
        .expect("runs");
    assert_eq!(out.status, RunStatus::Completed, "{:?}", out.error);
    let r = out.result.expect("result");
    assert_eq!(r["a"], "slow:first:60");
    assert_eq!(r["c"], "echo:one+echo:two");
    assert_eq!(r["n"], 7);
    assert!(r["b"].as_str().unwrap().contains("refused x"), "{r}");
    assert_eq!(out.calls.done, 3);
    assert_eq!(out.calls.failed, 1);
    // Usage of every call, in position order.
    assert_eq!(out.children.len(), 3, "the failed call reported no usage");
    let calls = w.journal.load_calls(&out.run_id).await.unwrap();
    assert_eq!(calls.len(), 4);
    assert!(calls.iter().all(|c| c.state.is_finished()));
    assert_eq!(calls[1].state, CallState::Failed);
    assert_eq!(calls[0].agent, "slow");
    let run = w.journal.load_run(&out.run_id).await.unwrap().unwrap();
    assert_eq!(run.status, RunStatus::Completed);
    assert_eq!(run.result.as_ref().unwrap()["a"], "slow:first:60");
}

#[tokio::test]
async fn a_typed_call_returns_a_value_and_an_invalid_one_fails() {
    let w = World::new(WorkflowLimits::default()).await;
    let script = r#"
        const schema = { type: "object", properties: { n: { type: "integer" } }, required: ["n"] };
        const v = await agent("json", '{"n": 41}', { schema });
        let bad;
        try { await agent("json", '{"n": "x"}', { schema }); } catch (e) { bad = e.status + ": " + e.error; }
        return { n: v.n + 1, bad };
    "#;
    let out = w
        .workflows
        .run(script, json!(null), &TaskContext::new())
        .await
        .unwrap();
    let r = out.result.unwrap_or_else(|| panic!("{:?}", out.error));
    assert_eq!(r["n"], 42);
    assert!(r["bad"].as_str().unwrap().starts_with("failed: "), "{r}");
    assert!(r["bad"].as_str().unwrap().contains("invalid output"), "{r}");
}

#[tokio::test]
async fn ask_goes_to_the_approver_and_log_to_progress() {
    let w = World::new(WorkflowLimits::default()).await;
    let approver = ScriptedApprover::answering([
        subagent_spi::ApprovalDecision::AllowOnce,
        subagent_spi::ApprovalDecision::deny("no"),
    ]);
    let recorder = Arc::new(subagent_testkit::ProgressRecorder::new());
    let ctx = TaskContext::new()
        .with_approver(approver.clone())
        .with_progress(recorder.clone());
    let script = r#"
        const first = await ask("Deploy now?");
        const second = await ask("Really?");
        log("asked", { first, second });
        return [first, second];
    "#;
    let out = w.workflows.run(script, json!({}), &ctx).await.unwrap();
    assert_eq!(out.result, Some(json!([true, false])), "{:?}", out.error);
    let asked = approver.requests();
    assert_eq!(asked.len(), 2);
    assert_eq!(asked[0].summary, "Deploy now?");
    assert_eq!(asked[0].tool, "Workflow");
    let events = recorder.events();
    assert!(
        events.iter().any(|e| matches!(&e.kind, subagent_spi::ProgressKind::Status { message } if message == r#"log: asked {"first":true,"second":false}"#)),
        "{events:?}"
    );
}

#[tokio::test]
async fn calls_run_under_the_concurrency_cap() {
    let w = World::with_cap(WorkflowLimits::default(), 3).await;
    let script = r#"
        const r = await parallel(Array.from({ length: 12 }, (_, i) => () => agent("slow", "p" + i + ":30")));
        return r.length;
    "#;
    let out = w.run(script).await;
    assert_eq!(out.result, Some(json!(12)), "{:?}", out.error);
    let peak = w.peak.load(std::sync::atomic::Ordering::SeqCst);
    assert!(peak <= 3, "at most 3 at once, saw {peak}");
    assert!(peak >= 2, "they did run in parallel: {peak}");
}

#[tokio::test]
async fn no_clock_or_randomness() {
    let w = World::new(WorkflowLimits::default()).await;
    for (script, what) in [
        ("return Date.now();", "Date is not available"),
        ("return Math.random();", "Math.random is not available"),
        ("return new Date();", "Date is not available"),
        ("setTimeout(() => 1, 10);", "setTimeout is not available"),
        (
            "return typeof WeakRef + typeof performance + typeof FinalizationRegistry;",
            "",
        ),
    ] {
        let out = w.run(script).await;
        if what.is_empty() {
            assert_eq!(
                out.result,
                Some(json!("undefinedundefinedundefined")),
                "{:?}",
                out.error
            );
            continue;
        }
        let e = out.error.expect(script).to_string();
        assert!(e.contains(what), "{script}: {e}");
        assert!(e.starts_with("workflow.js:1: Error: "), "{e}");
    }
}

#[tokio::test]
async fn the_tool_runs_a_script_and_resumes_only_its_own_runs() {
    use subagent_spi::Tool;
    let w = World::new(WorkflowLimits::default()).await;
    let tool = subagent_workflow::WorkflowTool::new(w.workflows.clone());
    let ctx = TaskContext::new();
    let out = tool
        .call(
            json!({"script": "return await agent('echo', args.p);", "args": {"p": "hi"}}),
            &ctx,
        )
        .await
        .unwrap();
    assert!(!out.is_error, "{}", out.content);
    assert!(
        out.content.starts_with("echo:hi\n\n[workflow wf_"),
        "{}",
        out.content
    );
    assert_eq!(out.children.len(), 1, "the workflow's node");
    assert_eq!(out.children[0].children.len(), 1, "its call below it");
    let own = out.children[0].task_id.clone().unwrap();
    let again = tool.call(json!({"resume": own}), &ctx).await.unwrap();
    assert!(!again.is_error, "{}", again.content);
    assert_eq!(w.calls.total(), 1, "resumed from the journal");
    // A run the tool did not start (another session's, on a shared store) is refused.
    let other = w
        .workflows
        .run("return 1;", json!(null), &ctx)
        .await
        .unwrap()
        .run_id;
    let refused = tool.call(json!({"resume": other}), &ctx).await.unwrap();
    assert!(refused.is_error);
    assert!(
        refused.content.contains("not a run this tool started"),
        "{}",
        refused.content
    );
    let bad = tool
        .call(json!({"script": "return x +;"}), &ctx)
        .await
        .unwrap();
    assert!(bad.is_error);
    assert!(
        bad.content.contains("workflow.js:1: SyntaxError"),
        "{}",
        bad.content
    );
    assert!(bad.content.contains("\"resume\""), "{}", bad.content);
}
