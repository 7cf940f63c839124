//! Workflows from Rust (feature `workflow`): `agents.workflow(script).args(json).run()` over an
//! in-process kind, journaled in a SQLite store, and resumed by another assembly on the same
//! store without running anything again.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::json;
use subagent_testkit::{FnKind, fn_ref};
use subagents::spi::TaskOutcome;
use subagents::store::StoreUrl;
use subagents::workflows::RunStatus;

async fn agents(store: &StoreUrl, runs: Arc<AtomicUsize>) -> subagents::Subagents {
    let kind = FnKind::new()
        .agent("upper", move |call, _ctx| {
            let runs = runs.clone();
            async move {
                runs.fetch_add(1, Ordering::SeqCst);
                Ok(TaskOutcome::completed(call.prompt.to_uppercase()))
            }
        })
        .into_type();
    subagents::Subagents::builder()
        .builtin_agents(false)
        .kind(kind)
        .reference(fn_ref("upper"))
        .store(store.clone())
        .build()
        .await
        .expect("assembly")
}

#[tokio::test]
async fn a_workflow_runs_from_rust_and_resumes_from_the_store() {
    let dir = tempfile::tempdir().unwrap();
    let store = StoreUrl::Sqlite(dir.path().join("wf.db"));
    let runs = Arc::new(AtomicUsize::new(0));
    let a = agents(&store, runs.clone()).await;
    let out = a
        .workflow("const r = await parallel(args.words.map((w) => () => agent('upper', w))); return r.join(' ');")
        .args(json!({"words": ["a", "b", "c"]}))
        .run()
        .await
        .expect("runs");
    assert_eq!(out.status, RunStatus::Completed, "{:?}", out.error);
    assert_eq!(out.result, Some(json!("A B C")));
    assert_eq!(out.usage_tree().children.len(), 3);
    assert_eq!(runs.load(Ordering::SeqCst), 3);
    drop(a);

    let b = agents(&store, runs.clone()).await;
    let listed = b.workflows().journal().list_runs(10).await.unwrap();
    assert_eq!(listed[0].run_id, out.run_id);
    let again = b.resume_workflow(&out.run_id).run().await.expect("resumes");
    assert_eq!(again.result, Some(json!("A B C")));
    assert_eq!(runs.load(Ordering::SeqCst), 3, "nothing ran again");
    // A resume with another script reuses the calls whose inputs are unchanged.
    let more = b
        .resume_workflow(&out.run_id)
        .script("const r = await parallel(args.words.map((w) => () => agent('upper', w))); return r.join('') + await agent('upper', 'd');")
        .run()
        .await
        .expect("resumes");
    assert_eq!(more.result, Some(json!("ABCD")), "{:?}", more.error);
    assert_eq!(more.calls.replayed, 3);
    assert_eq!(runs.load(Ordering::SeqCst), 4);
}
