//! `SqlTaskStore` on real databases: SQL filtering and pagination, agents kept apart, and
//! retention (TTL, count and byte bounds; running tasks never pruned).

#![cfg(feature = "a2a")]

use crate::common;

use std::time::Duration;

use subagent_a2a::server::{ContextSessionStore, PushConfigStore, TaskFilter, TaskStore};
use subagent_a2a::types::v1;
use subagent_store::Db;
use subagent_store::a2a::{A2aStoreOptions, Retention, SqlTaskStore, prune_a2a_tasks};

fn task(id: &str, ctx: &str, state: v1::TaskState, ts: &str, text_len: usize) -> v1::Task {
    v1::Task {
        id: id.into(),
        context_id: Some(ctx.into()),
        status: v1::TaskStatus {
            state,
            message: None,
            timestamp: Some(ts.into()),
        },
        artifacts: vec![],
        history: vec![v1::Message::new(
            v1::Role::User,
            format!("m-{id}"),
            vec![v1::Part::text("x".repeat(text_len))],
        )],
        metadata: None,
    }
}

async fn open(url: &str) -> (Db, SqlTaskStore) {
    common::task_store(url, A2aStoreOptions::default()).await
}

async fn filters_pages_and_scopes((_, store): (Db, SqlTaskStore)) {
    let a = store.for_agent("/a");
    let b = store.for_agent("/b");
    use v1::TaskState::*;
    for (i, (ctx, state)) in [
        ("c1", Completed),
        ("c1", InputRequired),
        ("c2", Completed),
        ("c1", Completed),
        ("c2", Failed),
    ]
    .into_iter()
    .enumerate()
    {
        let ts = format!("2026-01-01T00:00:0{i}.000Z");
        a.save(task(&format!("t{i}"), ctx, state, &ts, 10))
            .await
            .unwrap();
    }
    b.save(task(
        "other",
        "c1",
        Completed,
        "2026-01-01T00:00:09.000Z",
        10,
    ))
    .await
    .unwrap();

    let all = a.list(&TaskFilter::default(), 0, 10).await.unwrap();
    let ids: Vec<_> = all.tasks.iter().map(|t| t.id.as_str()).collect();
    assert_eq!(ids, ["t4", "t3", "t2", "t1", "t0"]);
    assert_eq!(all.total, 5);
    let page = a.list(&TaskFilter::default(), 2, 2).await.unwrap();
    let ids: Vec<_> = page.tasks.iter().map(|t| t.id.as_str()).collect();
    assert_eq!((ids, page.total), (vec!["t2", "t1"], 5));
    let past_end = a.list(&TaskFilter::default(), 9, 2).await.unwrap();
    assert!(past_end.tasks.is_empty() && past_end.total == 5);

    let mut f = TaskFilter::default();
    f.context_id = Some("c1".into());
    f.state = Some(Completed);
    let got = a.list(&f, 0, 10).await.unwrap();
    let ids: Vec<_> = got.tasks.iter().map(|t| t.id.as_str()).collect();
    assert_eq!(ids, ["t3", "t0"]);
    let mut f = TaskFilter::default();
    f.status_timestamp_after = Some("2026-01-01T00:00:02.500Z".into());
    assert_eq!(a.list(&f, 0, 10).await.unwrap().total, 2);

    // Agents see their own tasks only; a saved task reads back equal.
    assert!(b.get("t0").await.unwrap().is_none());
    assert_eq!(
        b.list(&TaskFilter::default(), 0, 10).await.unwrap().total,
        1
    );
    let back = a.get("t1").await.unwrap().unwrap();
    assert_eq!(
        back,
        task("t1", "c1", InputRequired, "2026-01-01T00:00:01.000Z", 10)
    );
}

/// Prunes by `retention`, which must evict something, then checks which of the tasks are kept
/// (`(id, kept)`).
async fn evicts(db: &Db, s: &SqlTaskStore, retention: &Retention, kept: &[(&str, bool)]) {
    let r = prune_a2a_tasks(db, retention).await.unwrap();
    assert!(r.evicted > 0, "{r:?}");
    for (id, want) in kept {
        let there = s.get(id).await.unwrap().is_some();
        assert_eq!(there, *want, "task {id} kept: {there}, expected {want}");
    }
}

async fn retention((db, store): (Db, SqlTaskStore)) {
    use v1::TaskState::*;
    let s = store.for_agent("/r");
    s.save(task("run", "c", Working, "2026-01-01T00:00:00.000Z", 3000))
        .await
        .unwrap();
    s.save(task(
        "ask",
        "c",
        InputRequired,
        "2026-01-01T00:00:00.000Z",
        3000,
    ))
    .await
    .unwrap();
    for i in 0..10 {
        s.save(task(
            &format!("done{i}"),
            "c",
            Completed,
            "2026-01-01T00:00:01.000Z",
            1000,
        ))
        .await
        .unwrap();
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    // Bytes: finished tasks go first, oldest first; running and interrupted ones stay.
    let bytes = Retention::default().with_max_bytes(12_000);
    let kept = [
        ("run", true),
        ("ask", true),
        ("done0", false),
        ("done9", true),
    ];
    evicts(&db, &s, &bytes, &kept).await;
    // Count: interrupted ones go once no finished task is left; running ones never.
    let count = Retention::default().with_max_tasks(1);
    evicts(&db, &s, &count, &[("run", true), ("ask", false)]).await;
    // TTL: terminal tasks expire, others do not.
    s.save(task("old", "c", Completed, "2026-01-01T00:00:02.000Z", 10))
        .await
        .unwrap();
    let r = expire_ended(&db).await;
    assert_eq!(r.expired, 1, "{r:?}");
    assert!(s.get("old").await.unwrap().is_none());
    assert!(s.get("run").await.unwrap().is_some());
}

common::on_sqlite_and_postgres!(open => filters_pages_and_scopes, retention);

/// Waits 20 ms, then prunes the tasks that ended over 10 ms ago.
async fn expire_ended(db: &Db) -> subagent_store::a2a::PruneReport {
    tokio::time::sleep(Duration::from_millis(20)).await;
    prune_a2a_tasks(
        db,
        &Retention::default().with_terminal_ttl(Duration::from_millis(10)),
    )
    .await
    .unwrap()
}

fn push(task_id: &str, id: &str, url: &str) -> v1::TaskPushNotificationConfig {
    serde_json::from_value(serde_json::json!({"id": id, "taskId": task_id, "url": url})).unwrap()
}

/// Push configs persist with their task: saved in order, replaced by id, bounded per task,
/// deleted idempotently, invisible to other agents, and dropped when their task is pruned.
async fn push_configs((db, store): (Db, SqlTaskStore)) {
    use v1::TaskState::*;
    let a = store.for_agent("/a");
    let b = store.for_agent("/b");
    let err = a
        .save_push_config(push("nope", "c", "https://h/x"))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("no such task"), "{err}");
    a.save(task("t", "c1", Working, "2026-01-01T00:00:00.000Z", 1))
        .await
        .unwrap();
    a.save_push_config(push("t", "one", "https://h/1"))
        .await
        .unwrap();
    a.save_push_config(push("t", "two", "https://h/2"))
        .await
        .unwrap();
    a.save_push_config(push("t", "one", "https://h/1b"))
        .await
        .unwrap();
    let listed = a.list_push_configs("t").await.unwrap();
    let urls: Vec<&str> = listed.iter().map(|c| c.url.as_str()).collect();
    assert_eq!(
        urls,
        ["https://h/1b", "https://h/2"],
        "first-saved order, replaced in place"
    );
    assert_eq!(
        a.get_push_config("t", "two").await.unwrap().unwrap().url,
        "https://h/2"
    );
    assert!(
        b.get_push_config("t", "two").await.unwrap().is_none(),
        "other agent"
    );
    assert!(
        b.list_push_configs("t").await.unwrap().is_empty(),
        "other agent"
    );
    assert!(
        !b.delete_push_config("t", "two").await.unwrap(),
        "other agent"
    );

    for i in 2..16 {
        a.save_push_config(push("t", &format!("c{i}"), "https://h/n"))
            .await
            .unwrap();
    }
    let err = a
        .save_push_config(push("t", "c16", "https://h/n"))
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("16 push notification configs"),
        "{err}"
    );
    a.save_push_config(push("t", "c2", "https://h/again"))
        .await
        .unwrap();

    assert!(a.delete_push_config("t", "two").await.unwrap());
    assert!(
        !a.delete_push_config("t", "two").await.unwrap(),
        "idempotent"
    );
    assert_eq!(a.list_push_configs("t").await.unwrap().len(), 15);

    // The task ends and expires: its configs go with it.
    a.save(task("t", "c1", Completed, "2026-01-01T00:00:01.000Z", 1))
        .await
        .unwrap();
    let retention = Retention::default().with_terminal_ttl(Duration::ZERO);
    tokio::time::sleep(Duration::from_millis(5)).await;
    prune_a2a_tasks(&db, &retention).await.unwrap();
    assert!(a.get("t").await.unwrap().is_none());
    a.save(task("t", "c1", Working, "2026-01-01T00:00:02.000Z", 1))
        .await
        .unwrap();
    assert!(
        a.list_push_configs("t").await.unwrap().is_empty(),
        "a pruned task's configs do not come back with a new task of the same id"
    );
}

common::on_sqlite_and_postgres!(open => push_configs);

/// Context sessions: saved per agent and context, read back by a store opened anew on the same
/// database, forgotten on `None`, and pruned with the context's last task.
async fn context_sessions(url: String) {
    let url = url.as_str();
    use v1::TaskState::*;
    let (db, store) = open(url).await;
    let a = store.for_agent("/a");
    a.save(task("t1", "c1", Completed, "2026-01-01T00:00:00.000Z", 10))
        .await
        .unwrap();
    a.save(task("t2", "c2", Completed, "2026-01-01T00:00:00.000Z", 10))
        .await
        .unwrap();
    assert_eq!(a.context_session("c1").await.unwrap(), None);
    a.save_context_session("c1", Some("s1")).await.unwrap();
    a.save_context_session("c1", Some("s2")).await.unwrap();
    a.save_context_session("c2", Some("s3")).await.unwrap();
    drop((db, store, a));

    let (db, store) = open(url).await;
    let a = store.for_agent("/a");
    assert_eq!(
        a.context_session("c1").await.unwrap().as_deref(),
        Some("s2")
    );
    assert_eq!(
        store.for_agent("/b").context_session("c1").await.unwrap(),
        None,
        "another agent's conversation"
    );
    a.save_context_session("c2", None).await.unwrap();
    assert_eq!(a.context_session("c2").await.unwrap(), None);

    // The session goes with the context's last task.
    a.save_context_session("c2", Some("s4")).await.unwrap();
    let r = expire_ended(&db).await;
    assert_eq!(r.expired, 2, "{r:?}");
    assert_eq!(a.context_session("c1").await.unwrap(), None);
    assert_eq!(a.context_session("c2").await.unwrap(), None);
}

common::on_sqlite_and_postgres!(common::url => context_sessions);

/// One SQLite file, one task store: a second opener is refused (naming the file and this
/// process), the first's running task stays running, and once the first is dropped the file
/// opens again.
#[tokio::test]
async fn sqlite_a_second_store_on_the_file_is_refused_until_the_first_goes() {
    use v1::TaskState::*;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("t.db");
    let url = format!("sqlite:{}", file.display());
    let (db, first) = open(&url).await;
    first
        .save(task("run", "c", Working, "2026-01-01T00:00:00.000Z", 1))
        .await
        .unwrap();
    let err = SqlTaskStore::open(db.clone(), A2aStoreOptions::default())
        .await
        .expect_err("a second store is refused")
        .to_string();
    assert!(err.contains(&file.display().to_string()), "{err}");
    assert!(
        err.contains(&format!("this process (pid {})", std::process::id())),
        "{err}"
    );
    assert_eq!(
        first.get("run").await.unwrap().unwrap().status.state,
        Working
    );
    drop(first);
    let (_, again) = open(&url).await;
    // The task's process (this store) is gone: now it is interrupted.
    assert_eq!(
        again.get("run").await.unwrap().unwrap().status.state,
        Failed
    );
}
