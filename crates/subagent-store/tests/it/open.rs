//! Opening real SQLite files (and a real PostgreSQL server when CI provides one).

use subagent_store::{Db, StoreUrl, migrations::STEPS};

#[tokio::test]
async fn sqlite_file_is_created_in_wal_mode_and_migrated_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nested/dir/ledger.db");
    let url = StoreUrl::Sqlite(path.clone());
    let db = Db::open(&url)
        .await
        .unwrap()
        .expect("sqlite opens a database");
    assert!(path.exists());
    let latest = STEPS.last().unwrap().version;
    assert_eq!(db.schema_version().await.unwrap(), latest);
    let Db::Sqlite(pool) = &db else {
        panic!("sqlite")
    };
    let mode: String = sqlx::query_scalar("PRAGMA journal_mode")
        .fetch_one(pool)
        .await
        .unwrap();
    assert_eq!(mode, "wal");
    drop(db);
    // Opening again applies nothing new and keeps the data.
    let db = Db::open(&url).await.unwrap().unwrap();
    assert_eq!(db.schema_version().await.unwrap(), latest);
}

/// Processes that open one fresh SQLite file at once (a background server and a `tasks list`
/// started beside it) each see no migration applied; without one writer lock around the whole
/// migration, the second to apply a step failed with "duplicate column name". Separate pools are
/// separate connections, as separate processes are.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_first_opens_of_one_sqlite_file_migrate_it_once() {
    let latest = STEPS.last().unwrap().version;
    for round in 0..10 {
        let dir = tempfile::tempdir().unwrap();
        let url = StoreUrl::Sqlite(dir.path().join("race.db"));
        let opens: Vec<_> = (0..6)
            .map(|_| {
                let url = url.clone();
                tokio::spawn(async move { Db::open(&url).await })
            })
            .collect();
        for open in opens {
            let db = open
                .await
                .unwrap()
                .unwrap_or_else(|e| panic!("round {round}: {e}"))
                .unwrap();
            assert_eq!(db.schema_version().await.unwrap(), latest);
        }
    }
}

#[tokio::test]
async fn memory_opens_nothing() {
    assert!(Db::open(&StoreUrl::Memory).await.unwrap().is_none());
}

#[tokio::test]
async fn unreachable_postgres_is_a_clear_error_without_the_password() {
    let url: StoreUrl = "postgres://app:s3cret@127.0.0.1:1/none?connect_timeout=2"
        .parse()
        .unwrap();
    let err = Db::open(&url).await.unwrap_err().to_string();
    assert!(
        err.contains("cannot open store postgres://app:***@127.0.0.1:1"),
        "{err}"
    );
    assert!(!err.contains("s3cret"), "{err}");
}

/// Needs a PostgreSQL server: `.ci/run` starts one and sets `SUBAGENTS_TEST_POSTGRES_URL`
/// (see `.ci/postgres.sh`; docs/guide/development.md says how to run it locally).
#[tokio::test]
#[ignore = "needs PostgreSQL: set SUBAGENTS_TEST_POSTGRES_URL (.ci/postgres.sh starts one)"]
async fn postgres_is_migrated() {
    let url: StoreUrl = std::env::var("SUBAGENTS_TEST_POSTGRES_URL")
        .expect("SUBAGENTS_TEST_POSTGRES_URL is set (run .ci/postgres.sh)")
        .parse()
        .unwrap();
    let db = Db::open(&url).await.unwrap().unwrap();
    assert_eq!(
        db.schema_version().await.unwrap(),
        STEPS.last().unwrap().version
    );
}
