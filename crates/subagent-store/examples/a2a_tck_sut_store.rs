//! `a2a-tck-sut-store`: the A2A TCK's system under test (`subagent-a2a`'s `a2a-tck-sut`, same
//! agent) with its tasks in a durable store.
//!
//! ```text
//! cargo run -p subagent-store --features a2a --example a2a-tck-sut-store -- \
//!     --port 9999 --store sqlite:/tmp/tck.db
//! ```
//!
//! `--store URL`: `memory` (default), `sqlite:PATH` or `postgres://...`; `--lease SECS`: the
//! PostgreSQL lease of running tasks (default 30). Several processes given the same PostgreSQL
//! URL serve the same tasks. The access options of `a2a-tck-sut` (`--grpc-port`,
//! `--bearer-env`, `--extended-card`, `--public-url`, `--grpc-public-addr`) work here too, and
//! the agent offers push notifications like `a2a-tck-sut` (configs in the store).

#[allow(dead_code)]
#[path = "../../subagent-a2a/examples/a2a_tck_sut.rs"]
mod tck;

use std::sync::Arc;
use std::time::Duration;

use subagent_a2a::server::A2aServer;
use subagent_store::a2a::{A2aStoreOptions, SqlTaskStore};
use subagent_store::{Db, StoreUrl};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut port: u16 = 9999;
    let mut store = StoreUrl::Memory;
    let mut lease = Duration::from_secs(30);
    let mut access = tck::Access::default();
    let usage = format!(
        "usage: a2a-tck-sut-store [--port N] [--store URL] [--lease SECS] {}",
        tck::Access::USAGE
    );
    let mut flags = tck::Flags::new(usage.clone());
    while let Some((flag, mut value)) = flags.next_flag() {
        match flag.as_str() {
            "--port" => {
                let v = value()?;
                port = v.parse().map_err(|_| format!("invalid --port `{v}`"))?;
            }
            "--store" => store = value()?.parse()?,
            "--lease" => {
                let v = value()?;
                let secs: u64 = v.parse().map_err(|_| format!("invalid --lease `{v}`"))?;
                lease = Duration::from_secs(secs);
            }
            other => {
                if !access.take(other, &mut value)? {
                    return Err(format!("unknown argument `{other}`; {usage}").into());
                }
            }
        }
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    rt.block_on(async move {
        let mut mount = tck::tck_mount();
        if let Some(db) = Db::open(&store).await? {
            let tasks =
                SqlTaskStore::open(db, A2aStoreOptions::default().with_lease(lease)).await?;
            mount = mount.with_store(Arc::new(tasks.for_agent("")));
        }
        let (mount, builder) = access.apply(mount, A2aServer::builder())?;
        let server = builder.mount(mount).build()?;
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
        // The bound address (`--port 0` picks a free port): tests read it from this line.
        let addr = listener.local_addr()?;
        eprintln!("a2a-tck-sut-store listening on http://{addr} (store {store})");
        access.spawn_grpc(&server, "a2a-tck-sut-store").await?;
        server.serve(listener, std::future::pending::<()>()).await?;
        Ok::<(), Box<dyn std::error::Error>>(())
    })
}
