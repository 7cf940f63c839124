//! The journal: a stopped run resumes without running a finished call again, in whatever order
//! the calls finished; changed inputs stop the resume naming the call.

use std::time::Duration;

use serde_json::json;
use subagent_spi::{CancellationToken, TaskContext};
use subagent_workflow::{
    CallState, Journal, RunStatus, WorkflowError, WorkflowLimits, WorkflowOutcome,
};

use crate::common::World;

/// Three calls in parallel (finishing in reverse order), then a fourth that waits at the gate.
const SCRIPT: &str = r#"
    const first = await parallel([
      () => agent("slow", "a:90"),
      () => agent("slow", "b:50"),
      () => agent("slow", "c:10"),
    ]);
    const fourth = await agent("gate", "d");
    return [...first, fourth];
"#;

/// Runs `SCRIPT` until the fourth call waits, then cancels it (as Ctrl-C would); returns the
/// run id.
async fn stopped_run(w: &World) -> String {
    // The fourth call is journaled once the first three are done.
    let (run_id, out) = cancelled_once_journaled(w, SCRIPT, 4).await;
    assert_eq!(out.status, RunStatus::Cancelled, "{:?}", out.error);
    run_id
}

/// Runs `script` until `calls` calls are journaled, then cancels it (as Ctrl-C would); returns
/// the run id and how the run ended.
async fn cancelled_once_journaled(
    w: &World,
    script: &str,
    calls: usize,
) -> (String, WorkflowOutcome) {
    let cancel = CancellationToken::new();
    let ctx = TaskContext::new().with_cancel(cancel.clone());
    let run = w.workflows.prepare(script, json!({})).await.unwrap();
    let run_id = run.run_id().to_string();
    let workflows = w.workflows.clone();
    let handle = tokio::spawn(async move { workflows.execute(run, &ctx).await });
    while w.journal.load_calls(&run_id).await.unwrap().len() < calls {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    cancel.cancel();
    (run_id, handle.await.unwrap())
}

/// Resumes `run_id` under `ctx` with the gate opened again and again, for the gated calls that
/// run again.
async fn resume_with_gate_open(w: &World, run_id: &str, ctx: &TaskContext) -> WorkflowOutcome {
    let gate = w.gate.clone();
    let opener = tokio::spawn(async move {
        loop {
            gate.notify_one();
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    });
    let out = w.workflows.resume(run_id, None, ctx).await.unwrap();
    opener.abort();
    out
}

#[tokio::test]
async fn a_resumed_run_runs_no_finished_call_again() {
    let w = World::new(WorkflowLimits::default()).await;
    let run_id = stopped_run(&w).await;
    assert_eq!(w.calls.total(), 3, "the first three finished");
    let calls = w.journal.load_calls(&run_id).await.unwrap();
    let seqs: Vec<Option<u64>> = calls.iter().map(|c| c.seq).collect();
    assert_eq!(
        seqs,
        [Some(2), Some(1), Some(0), None],
        "handed over as they finished"
    );
    assert_eq!(calls[3].state, CallState::Cancelled);
    // Resume: the fourth call runs, the gate opens for it.
    let out = resume_with_gate_open(&w, &run_id, &TaskContext::new()).await;
    assert_eq!(out.status, RunStatus::Completed, "{:?}", out.error);
    assert_eq!(
        out.result,
        Some(json!(["slow:a:90", "slow:b:50", "slow:c:10", "gate:d"]))
    );
    for p in ["a:90", "b:50", "c:10", "d"] {
        assert_eq!(w.calls.of(p), 1, "{p} ran once");
    }
    assert_eq!(out.calls.replayed, 3);
    assert_eq!(out.calls.rerun, 1);
    assert_eq!(out.calls.done, 1);
    // A completed run resumed again runs nothing.
    let again = w
        .workflows
        .resume(&run_id, None, &TaskContext::new())
        .await
        .unwrap();
    assert_eq!(again.result, out.result);
    assert_eq!(w.calls.total(), 4);
}

#[tokio::test]
async fn changed_inputs_stop_the_resume_naming_the_call() {
    let w = World::new(WorkflowLimits::default()).await;
    let run_id = stopped_run(&w).await;
    let edited = SCRIPT.replace(r#""b:50""#, r#""b:51""#);
    let out = w
        .workflows
        .resume(&run_id, Some(&edited), &TaskContext::new())
        .await
        .unwrap();
    assert_eq!(out.status, RunStatus::Failed);
    let e = out.error.unwrap();
    assert!(
        matches!(e, WorkflowError::Diverged { position: 1, .. }),
        "{e}"
    );
    assert_eq!(
        e.to_string(),
        "the resume stopped at call #1 (agent `slow`): its inputs changed (prompt, schema, model or description)"
    );
    let other = SCRIPT.replace(r#"agent("slow", "c:10")"#, r#"agent("echo", "c:10")"#);
    let out = w
        .workflows
        .resume(&run_id, Some(&other), &TaskContext::new())
        .await
        .unwrap();
    assert!(
        out.error
            .unwrap()
            .to_string()
            .contains("call #2 (agent `slow`): the script now calls `echo` there"),
    );
    assert_eq!(w.calls.total(), 3, "nothing ran again");
}

#[tokio::test]
async fn spent_usage_stays_spent_across_a_resume() {
    use subagent_core::{Budget, BudgetExt};
    let w = World::new(WorkflowLimits::default()).await;
    let script = r#"
        await agent("echo", "one");
        await agent("echo", "two");
        return await agent("gate", "three");
    "#;
    let (run_id, _) = cancelled_once_journaled(&w, script, 3).await;
    // 20 tokens were spent; a budget of 25 leaves 5.
    let budget = Budget::new(
        subagent_spi::BudgetLimits::new().with_tokens(25),
        CancellationToken::new(),
    );
    let ctx = TaskContext::new().with_budget(budget.clone());
    let out = resume_with_gate_open(&w, &run_id, &ctx).await;
    assert_eq!(out.result, Some(json!("gate:three")), "{:?}", out.error);
    assert_eq!(
        budget.tokens_used(),
        20,
        "the journaled calls' tokens are charged"
    );
    assert_eq!(out.children.len(), 3);
}

/// Branches that make further calls after their first one: which branch's follow-up gets the
/// next position depends on which first call finished first. The resume hands the journaled
/// values back in the order they were first handed over, so the follow-ups get the same
/// positions (handed back by position, `gate:a` would take position 2 and the resume would stop).
#[tokio::test]
async fn follow_up_calls_keep_their_positions_whatever_finished_first() {
    let w = World::new(WorkflowLimits::default()).await;
    let script = r#"
        return await parallel([
          async () => (await agent("slow", "a:120")) + "/" + (await agent("gate", "after a")),
          async () => (await agent("slow", "b:5")) + "/" + (await agent("gate", "after b")),
        ]);
    "#;
    let (run_id, _) = cancelled_once_journaled(&w, script, 4).await;
    let calls = w.journal.load_calls(&run_id).await.unwrap();
    let order: Vec<(&str, Option<u64>)> = calls.iter().map(|c| (c.agent.as_str(), c.seq)).collect();
    assert_eq!(
        order,
        [
            ("slow", Some(1)),
            ("slow", Some(0)),
            ("gate", None),
            ("gate", None)
        ],
        "b finished first, so its follow-up is #2"
    );
    let out = resume_with_gate_open(&w, &run_id, &TaskContext::new()).await;
    assert_eq!(
        out.result,
        Some(json!(["slow:a:120/gate:after a", "slow:b:5/gate:after b"])),
        "{:?}",
        out.error
    );
    assert_eq!(out.calls.replayed, 2);
    assert_eq!(w.calls.of("a:120") + w.calls.of("b:5"), 2, "ran once each");
}
