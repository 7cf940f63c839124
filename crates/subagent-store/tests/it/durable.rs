//! The transcript store and the background-task ledger on real SQLite files, and on a real
//! PostgreSQL server when `SUBAGENTS_TEST_POSTGRES_URL` names one (ignored tests, run by CI).

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use subagent_runtime::{AgentRuntime, RunSpec, Transcript, TranscriptStore};
use subagent_spi::chat::ChatMessage;
use subagent_spi::{ProgressKind, TaskCall, TaskContext, TaskOutcome, TaskStatus};
use subagent_store::{
    Db, Retention, SqlTaskLedger, SqlTranscriptStore, StoreUrl, prune, recover_interrupted,
};
use subagent_testkit::{FnKind, fn_ref};
use task_tool::{BackgroundState, Dispatch, TaskLedger, TaskRecord, TaskTool};

/// Drops `table` from a SQLite database, so that writes to it fail.
async fn drop_table(db: &Db, table: &str) {
    let Db::Sqlite(pool) = db else { unreachable!() };
    sqlx::query(sqlx::AssertSqlSafe(format!("DROP TABLE {table}")))
        .execute(pool)
        .await
        .unwrap();
}

fn kind() -> FnKind {
    FnKind::new()
        .agent("echo", |c, _| async move {
            let mut o = TaskOutcome::completed(format!("echo: {}", c.prompt));
            o.session_id = Some("sess_echo".into());
            o.usage.input_tokens = 7;
            Ok(o)
        })
        .agent("hang", |_, ctx| async move {
            ctx.emit(ProgressKind::Session {
                session_id: "sess_hang".into(),
            });
            ctx.emit(ProgressKind::TextDelta {
                text: "half done".into(),
            });
            ctx.cancel().cancelled().await;
            Ok(TaskOutcome::with_status("stopped", TaskStatus::Cancelled))
        })
}

async fn task_tool(db: &Db) -> TaskTool {
    TaskTool::builder()
        .subagent_type(kind().into_type())
        .subagent_reference(fn_ref("echo"))
        .subagent_reference(fn_ref("hang"))
        .ledger(Arc::new(SqlTaskLedger::new(db.clone())))
        .build()
        .await
        .unwrap()
}

async fn background(tool: &TaskTool, agent: &str, prompt: &str) -> String {
    let call = TaskCall::new(agent, "test", prompt).in_background(true);
    match tool.dispatch(call, &TaskContext::new()).await.unwrap() {
        Dispatch::Background { task_id, .. } => task_id,
        other => panic!("{other:?}"),
    }
}

// --- transcripts ---

async fn transcripts_append_load_replace(db: Db) {
    let store = SqlTranscriptStore::new(db);
    assert_eq!(store.try_load("nope").await.unwrap(), None);
    store
        .append("s1", Some("be brief"), &[ChatMessage::user("one")])
        .await
        .unwrap();
    store
        .append(
            "s1",
            Some("ignored"),
            &[ChatMessage::user("two"), ChatMessage::user("three")],
        )
        .await
        .unwrap();
    let t = store.try_load("s1").await.unwrap().unwrap();
    assert_eq!(t.system.as_deref(), Some("be brief"));
    assert_eq!(
        t.messages,
        vec![
            ChatMessage::user("one"),
            ChatMessage::user("two"),
            ChatMessage::user("three")
        ]
    );
    let replaced = Transcript {
        system: None,
        messages: vec![ChatMessage::user("only")],
    };
    store.replace("s1", replaced.clone()).await.unwrap();
    assert_eq!(store.load("s1").await, Some(replaced));
    store
        .append("s1", None, &[ChatMessage::user("after")])
        .await
        .unwrap();
    assert_eq!(store.load("s1").await.unwrap().messages.len(), 2);
}

common::on_sqlite_and_postgres!(common::db => transcripts_append_load_replace);

/// A run's transcript is stored turn by turn and resumes from a second runtime (a new process
/// in all but name) on the same file.
#[tokio::test]
async fn a_session_resumes_from_another_runtime_on_the_same_file() {
    use subagent_testkit::{ScriptedModel, Step};
    let dir = tempfile::tempdir().unwrap();
    let url = StoreUrl::Sqlite(dir.path().join("t.db"));
    let session = {
        let db = Db::open(&url).await.unwrap().unwrap();
        let rt = AgentRuntime::new(Arc::new(SqlTranscriptStore::new(db)));
        let model = ScriptedModel::new(vec![Step::text("first answer")]);
        let out = rt
            .run(
                RunSpec::new(model, "hello").with_system("sys"),
                &TaskContext::new(),
            )
            .await
            .unwrap();
        out.session_id.unwrap()
    };
    let db = Db::open(&url).await.unwrap().unwrap();
    let rt = AgentRuntime::new(Arc::new(SqlTranscriptStore::new(db)));
    let model = ScriptedModel::new(vec![Step::text("second answer")]);
    let out = rt
        .run(
            RunSpec::resume(model.clone(), session.clone(), "and then?"),
            &TaskContext::new(),
        )
        .await
        .unwrap();
    assert_eq!(out.text, "second answer");
    assert_eq!(out.session_id.as_deref(), Some(session.as_str()));
    let req = model.requests().pop().unwrap();
    assert_eq!(req.system.as_deref(), Some("sys"));
    assert_eq!(
        req.messages,
        vec![
            ChatMessage::user("hello"),
            ChatMessage::Assistant {
                content: "first answer".into(),
                tool_calls: vec![]
            },
            ChatMessage::user("and then?"),
        ]
    );
}

/// A store whose writes fail (a real SQLite file whose table is gone): the run's result is
/// kept, a Status event says why, and the outcome offers no session (it could not be resumed).
#[tokio::test]
async fn a_failing_transcript_store_keeps_the_result_and_drops_the_session() {
    use subagent_testkit::{ProgressRecorder, ScriptedModel, Step};
    let (_dir, db) = common::sqlite_db().await;
    drop_table(&db, "transcript_messages").await;
    let rec = Arc::new(ProgressRecorder::new());
    let ctx = TaskContext::new().with_progress(rec.clone());
    let out = AgentRuntime::new(Arc::new(SqlTranscriptStore::new(db)))
        .run(
            RunSpec::new(ScriptedModel::new(vec![Step::text("the answer")]), "q"),
            &ctx,
        )
        .await
        .unwrap();
    assert_eq!(out.text, "the answer");
    assert_eq!(out.status, TaskStatus::Completed);
    assert!(
        out.session_id.is_none(),
        "an unsaved session is not offered"
    );
    assert!(rec.kinds().iter().any(|k| matches!(k,
        ProgressKind::Status { message } if message.contains("was not saved") && message.contains("transcript_messages"))));
}

// --- the ledger ---

async fn finished_results_outlive_the_tool(db: Db) {
    let id = {
        let tool = task_tool(&db).await;
        let id = background(&tool, "echo", "hi").await;
        let snap = tool
            .output(&id, Some(Duration::from_secs(5)))
            .await
            .unwrap();
        assert_eq!(snap.status(), TaskStatus::Completed);
        tool.flush_ledger().await.unwrap();
        id
    };
    // A new tool on the same database, as after a restart.
    let tool = task_tool(&db).await;
    let snap = tool.output(&id, None).await.unwrap();
    let BackgroundState::Finished(o) = &snap.state else {
        panic!("{:?}", snap.state)
    };
    assert_eq!(o.text, "echo: hi");
    assert_eq!(o.session_id.as_deref(), Some("sess_echo"));
    assert_eq!(o.usage.input_tokens, 7);
    assert_eq!(snap.agent, "echo");
    assert!(snap.note.as_deref().unwrap().contains("earlier process"));
    let err = tool.output("task_unknown", None).await.unwrap_err();
    assert!(err.to_string().contains("no background task"), "{err}");
}

common::on_sqlite_and_postgres!(common::db => finished_results_outlive_the_tool);

/// A running task is recorded with its partial output and session; once its owner is gone it
/// reads back as interrupted. (The command's tests kill a real process; here the owner is a
/// process id that does not exist and a lease long run out.)
async fn running_task_of_a_dead_owner_is_interrupted(db: Db) {
    let tool = task_tool(&db).await;
    let id = background(&tool, "hang", "").await;
    // Wait until the writer recorded the partial output.
    let ledger = SqlTaskLedger::new(db.clone());
    let mut rec = None;
    for _ in 0..100 {
        tool.flush_ledger().await.unwrap();
        rec = ledger.get(&id).await.unwrap();
        if rec.as_ref().is_some_and(|r| !r.partial.is_empty()) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let mut rec: TaskRecord = rec.unwrap();
    assert_eq!(rec.status, TaskStatus::Running);
    assert_eq!(rec.partial, "half done");
    assert_eq!(rec.session_id.as_deref(), Some("sess_hang"));
    // The live owner's task stays running for readers.
    assert_eq!(recover_interrupted(&db).await.unwrap(), 0);
    // The same state under an owner that died long ago.
    rec.id = "task_of_a_dead_process".into();
    rec.owner = "4000000000:dead".into(); // no such process on this machine
    ledger.put(&[rec.clone()]).await.unwrap();
    let snap = tool.output("task_of_a_dead_process", None).await.unwrap();
    assert_eq!(snap.status(), TaskStatus::Interrupted);
    let o = snap.outcome().unwrap();
    assert_eq!(o.text, "half done");
    assert_eq!(o.session_id.as_deref(), Some("sess_hang"));
    // An owner on another machine: only its lease decides.
    rec.id = "task_elsewhere".into();
    rec.owner = "1:elsewhere".into();
    ledger.put(&[rec]).await.unwrap();
    set_owner(&db, "task_elsewhere", "other-host/1:elsewhere").await;
    let snap = tool.output("task_elsewhere", None).await.unwrap();
    assert_eq!(snap.status(), TaskStatus::Running, "within its lease");
    assert!(snap.note.unwrap().contains("another process"));
    backdate_heartbeat(&db, "task_elsewhere").await;
    assert_eq!(recover_interrupted(&db).await.unwrap(), 1);
    let snap = tool.output("task_elsewhere", None).await.unwrap();
    assert_eq!(snap.status(), TaskStatus::Interrupted, "lease ran out");
    tool.stop(&id).await.unwrap();
}

async fn set_owner(db: &Db, id: &str, owner: &str) {
    let sql = "UPDATE background_tasks SET owner = $1 WHERE id = $2";
    execute(db, sql, &[owner, id]).await;
}

async fn backdate_heartbeat(db: &Db, id: &str) {
    let sql = "UPDATE background_tasks SET heartbeat_at = 0 WHERE id = $1";
    execute(db, sql, &[id]).await;
}

/// Runs `sql` with text `binds` on either backend.
async fn execute(db: &Db, sql: &'static str, binds: &[&str]) {
    macro_rules! run {
        ($pool:expr) => {{
            let mut query = sqlx::query(sql);
            for b in binds {
                query = query.bind(*b);
            }
            query.execute($pool).await.unwrap();
        }};
    }
    match db {
        Db::Sqlite(p) => run!(p),
        Db::Postgres(p) => run!(p),
        _ => unreachable!(),
    }
}

common::on_sqlite_and_postgres!(common::db => running_task_of_a_dead_owner_is_interrupted);

/// A ledger that cannot write: the result stays readable and says it was not saved.
#[tokio::test]
async fn a_failed_write_is_visible_and_loses_nothing_in_memory() {
    let (_dir, db) = common::sqlite_db().await;
    let tool = task_tool(&db).await;
    // Break the table under the writer.
    drop_table(&db, "background_tasks").await;
    let id = background(&tool, "echo", "kept").await;
    let snap = tool
        .output(&id, Some(Duration::from_secs(5)))
        .await
        .unwrap();
    assert_eq!(snap.outcome().unwrap().text, "echo: kept");
    // Whoever writes the batch (the writer, or this flush) reports the failure; once the flush
    // returns, the attempt has been made.
    if let Err(e) = tool.flush_ledger().await {
        assert!(e.to_string().contains("no such table"), "{e}");
    }
    let snap = tool.output(&id, None).await.unwrap();
    let note = snap.note.clone().unwrap_or_default();
    assert!(note.contains("could not be saved"), "{note}");
    assert_eq!(snap.outcome().unwrap().text, "echo: kept");
}

// --- retention ---

async fn prune_drops_old_and_keeps_running(db: Db) {
    let tool = task_tool(&db).await;
    let done = background(&tool, "echo", "old").await;
    tool.output(&done, Some(Duration::from_secs(5)))
        .await
        .unwrap();
    let running = background(&tool, "hang", "").await;
    tool.flush_ledger().await.unwrap();
    let transcripts = SqlTranscriptStore::new(db.clone());
    transcripts
        .append(
            "sess_old",
            None,
            &[ChatMessage::user("x".repeat(1000).as_str())],
        )
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(20)).await;
    let everything = Retention::default().older_than(Duration::from_millis(1));
    // A dry run drops nothing.
    let dry = prune(&db, &everything, true).await.unwrap();
    assert_eq!((dry.tasks, dry.sessions), (1, 1), "{dry:?}");
    assert!(dry.transcript_bytes >= 1000);
    assert!(transcripts.load("sess_old").await.is_some());
    let done_report = prune(&db, &everything, false).await.unwrap();
    assert_eq!(done_report, dry);
    assert!(transcripts.load("sess_old").await.is_none());
    let ledger = SqlTaskLedger::new(db.clone());
    assert!(ledger.get(&done).await.unwrap().is_none());
    assert!(
        ledger.get(&running).await.unwrap().is_some(),
        "running tasks stay"
    );
    // The byte bound: the least recently written session goes first.
    transcripts
        .append("a", None, &[ChatMessage::user("a".repeat(600).as_str())])
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(5)).await;
    transcripts
        .append("b", None, &[ChatMessage::user("b".repeat(600).as_str())])
        .await
        .unwrap();
    let mut small = Retention::default();
    small.transcript_max_bytes = 1000;
    let r = prune(&db, &small, false).await.unwrap();
    assert_eq!(r.sessions, 1);
    assert!(transcripts.load("a").await.is_none());
    assert!(transcripts.load("b").await.is_some());
    tool.stop(&running).await.unwrap();
}

common::on_sqlite_and_postgres!(common::db => prune_drops_old_and_keeps_running);
