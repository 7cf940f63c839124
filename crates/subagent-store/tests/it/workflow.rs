//! The workflow journal on a real SQLite file (and PostgreSQL when CI provides one): runs and
//! calls round-trip, listings count calls, a reopened database keeps everything, prune drops
//! old runs with their calls.

use std::time::{Duration, SystemTime};

use serde_json::json;
use subagent_spi::{TaskStatus, Usage, UsageNode};
use subagent_store::{Db, Retention, SqlWorkflowJournal, StoreUrl, prune};
use subagent_workflow::{CallKind, CallRecord, CallState, Journal, RunRecord, RunStatus};

async fn round_trip(url: String) {
    let url: StoreUrl = url.parse().unwrap();
    let db = Db::open(&url).await.unwrap().unwrap();
    let j = SqlWorkflowJournal::new(db.clone());
    let mut run = RunRecord::new("wf_1", "return 1;", json!({"n": 1}));
    j.save_run(&run).await.unwrap();
    let mut done = CallRecord::started(0, CallKind::Agent, "echo", "h0", "first");
    done.state = CallState::Done;
    done.seq = Some(0);
    done.value = Some(json!({"structured": [1, 2]}));
    done.task_id = Some("task_a".into());
    done.session_id = Some("sess_a".into());
    done.usage = Some(UsageNode::new(
        "echo",
        "FN",
        TaskStatus::Completed,
        Usage::new().with_tokens(3, 4),
    ));
    done.finished_at = Some(SystemTime::now());
    j.save_call("wf_1", &done).await.unwrap();
    let running = CallRecord::started(1, CallKind::Ask, "ask", "h1", "");
    j.save_call("wf_1", &running).await.unwrap();
    // An update replaces the row.
    let mut running2 = running.clone();
    running2.session_id = Some("mcp-task:9".into());
    j.save_call("wf_1", &running2).await.unwrap();
    run.status = RunStatus::Failed;
    run.error = Some("boom".into());
    j.save_run(&run).await.unwrap();
    drop(j);
    drop(db);

    let db = Db::open(&url).await.unwrap().unwrap();
    let j = SqlWorkflowJournal::new(db.clone());
    let back = j.load_run("wf_1").await.unwrap().unwrap();
    assert_eq!(back.status, RunStatus::Failed);
    assert_eq!(back.args, json!({"n": 1}));
    assert_eq!(back.error.as_deref(), Some("boom"));
    let calls = j.load_calls("wf_1").await.unwrap();
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[0].value, done.value);
    assert_eq!(calls[0].usage, done.usage);
    assert_eq!(calls[0].seq, Some(0));
    assert_eq!(calls[0].state, CallState::Done);
    assert_eq!(calls[1].kind, CallKind::Ask);
    assert_eq!(calls[1].session_id.as_deref(), Some("mcp-task:9"));
    assert_eq!(calls[1].state, CallState::Running);
    assert!(j.load_run("wf_none").await.unwrap().is_none());
    let list = j.list_runs(10).await.unwrap();
    assert_eq!(list.len(), 1);
    assert_eq!((list[0].calls, list[0].done, list[0].running), (2, 1, 1));
    // Prune by age: the run and its calls go.
    let report = prune(&db, &Retention::default().older_than(Duration::ZERO), false)
        .await
        .unwrap();
    assert_eq!(report.workflows, 1);
    assert!(j.load_run("wf_1").await.unwrap().is_none());
    assert!(j.load_calls("wf_1").await.unwrap().is_empty());
}

crate::common::on_sqlite_and_postgres!(crate::common::url => round_trip);
