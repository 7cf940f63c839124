//! A2A `SendMessage` throughput with the task store in memory, in SQLite and (when
//! `SUBAGENTS_TEST_POSTGRES_URL` is set; a new database is created on that server) in
//! PostgreSQL, in one process and one run. Each
//! message creates a task that completes at once (one store write: the completed task; the
//! server does not write it `submitted` first when its first event is a state change);
//! 32 requests run concurrently per iteration, through the server's router in process
//! (`tower::ServiceExt::oneshot`, no sockets), so the figures compare the stores.
//!
//! ```text
//! cargo bench -p subagent-store --features a2a --bench a2a_store -- --warm-up-time 1 --measurement-time 3
//! ```

use std::sync::Arc;

use axum::body::Body;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use http::{Request, header};
use subagent_a2a::server::{
    A2aHandler, A2aServer, AgentInfo, AgentMount, HandlerError, HandlerRequest, TaskEventSink,
};
use subagent_spi::{CancellationToken, async_trait};
use subagent_store::a2a::{A2aStoreOptions, SqlTaskStore};
use subagent_store::{Db, StoreUrl};
use tower::ServiceExt;

/// A new database on the server (never the shared test database itself).
#[path = "../tests/it/common/pg.rs"]
mod pg;

const BODY: &str = r#"{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"hello, agent"}]}}}"#;
const CONCURRENT: usize = 32;

struct Complete;

#[async_trait]
impl A2aHandler for Complete {
    async fn handle(
        &self,
        _req: HandlerRequest,
        ev: TaskEventSink,
        _cancel: CancellationToken,
    ) -> Result<(), HandlerError> {
        ev.complete(Some(ev.agent_text("done"))).await?;
        Ok(())
    }
}

fn router(store: Option<SqlTaskStore>) -> axum::Router {
    let mut mount = AgentMount::new("/", AgentInfo::new("bench", "completes"), Complete);
    if let Some(s) = store {
        mount = mount.with_store(Arc::new(s.for_agent("")));
    }
    A2aServer::builder()
        .mount(mount)
        .build()
        .expect("server")
        .router()
}

async fn call(app: &axum::Router) {
    let req = Request::post("/")
        .header(header::CONTENT_TYPE, "application/json")
        .header("A2A-Version", "1.0")
        .body(Body::from(BODY))
        .expect("request");
    let resp = app.clone().oneshot(req).await.expect("response");
    assert_eq!(resp.status(), 200);
    let body = axum::body::to_bytes(resp.into_body(), 1 << 20)
        .await
        .expect("body");
    assert!(
        body.windows(20).any(|w| w == b"TASK_STATE_COMPLETED"),
        "{}",
        String::from_utf8_lossy(&body)
    );
}

async fn open(url: &str) -> SqlTaskStore {
    let url: StoreUrl = url.parse().expect("store URL");
    let db = Db::open(&url).await.expect("open").expect("a database");
    SqlTaskStore::open(db, A2aStoreOptions::default())
        .await
        .expect("store")
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let dir = tempfile::tempdir().expect("tempdir");
    let mut stores: Vec<(&str, axum::Router)> = vec![("memory", router(None))];
    let sqlite = format!("sqlite:{}", dir.path().join("bench.db").display());
    stores.push(("sqlite", router(Some(rt.block_on(open(&sqlite))))));
    match std::env::var("SUBAGENTS_TEST_POSTGRES_URL") {
        Ok(url) => {
            let url = rt.block_on(pg::create_database(
                &url,
                &format!("a2a_bench_{}", std::process::id()),
            ));
            stores.push(("postgres", router(Some(rt.block_on(open(&url))))));
        }
        Err(_) => eprintln!("SKIPPED postgres: SUBAGENTS_TEST_POSTGRES_URL is not set"),
    }
    let mut g = c.benchmark_group("a2a_send_message");
    g.throughput(Throughput::Elements(CONCURRENT as u64));
    for (name, app) in &stores {
        g.bench_function(*name, |b| {
            b.to_async(&rt).iter(|| async {
                futures::future::join_all((0..CONCURRENT).map(|_| call(app))).await;
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
