//! Serves a subagent over A2A: any SPI [`SubagentDefinition`] + [`SubagentExecutor`] pair
//! becomes an A2A agent speaking 1.0 and 0.3, JSON-RPC and HTTP+JSON.
//!
//! ```text
//! cargo run -p subagent-a2a --example serve_agent -- --port 8080
//! curl http://127.0.0.1:8080/agents/counter/.well-known/agent-card.json   # 1.0 card
//! curl http://127.0.0.1:8080/agents/counter/.well-known/agent.json        # 0.3 card
//! curl -s http://127.0.0.1:8080/agents/counter -H 'A2A-Version: 1.0' -H 'content-type: application/json' \
//!   -d '{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"count these words"}]}}}'
//! ```
//!
//! `--v03-card` serves the 0.3 card at `agent-card.json` too (for fleets of 0.3 clients);
//! `--bearer TOKEN` requires that token. The agent here is an async function (a word counter)
//! run by the testkit's in-process `FN` kind, which resolves its definition and is its
//! executor; a kind of your own implements `SubagentKind` the same way (the workspace's
//! `examples/custom_kind.rs`), and a Markdown agent from `subagent-claude` is hosted by the CLI
//! (`subagents serve`), passing its definition and executor to [`AgentMount::subagent`].

use std::sync::Arc;

use subagent_a2a::server::{A2aServer, AgentMount, ServerAuth};
use subagent_a2a::types::ProtocolVersion;
use subagent_spi::{
    SubagentDefinition, SubagentError, SubagentExecutor, SubagentKind, TaskCall, TaskContext,
    TaskOutcome,
};
use subagent_testkit::{FnKind, fn_ref};

/// The word counter's task: counts what the prompt holds.
async fn count(call: TaskCall, ctx: TaskContext) -> Result<TaskOutcome, SubagentError> {
    if ctx.cancel().is_cancelled() {
        return Err(SubagentError::Cancelled {
            agent: "word-counter".into(),
        });
    }
    let p = &call.prompt;
    Ok(TaskOutcome::completed(format!(
        "{} words, {} lines, {} characters",
        p.split_whitespace().count(),
        p.lines().count(),
        p.chars().count()
    )))
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut port: u16 = 8080;
    let mut v03_card = false;
    let mut bearer: Option<String> = None;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--port" => {
                let v = args.next().ok_or("--port needs a value")?;
                port = v.parse().map_err(|_| format!("invalid --port `{v}`"))?;
            }
            "--v03-card" => v03_card = true,
            "--bearer" => bearer = Some(args.next().ok_or("--bearer needs a token")?),
            other => {
                return Err(format!(
                    "unknown argument `{other}`; usage: serve_agent [--port N] [--v03-card] [--bearer TOKEN]"
                )
                .into());
            }
        }
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    rt.block_on(async move {
        let kind = FnKind::new().agent("word-counter", count);
        let reference = fn_ref(
            "word-counter?Counts the words, lines and characters of the text it is given.",
        );
        let definition: Arc<dyn SubagentDefinition> =
            Arc::new(SubagentKind::resolve(&kind, &reference).await?);
        let executor: Arc<dyn SubagentExecutor> = Arc::new(kind);
        let mut mount = AgentMount::subagent("/agents/counter", definition, executor);
        if let Some(t) = bearer {
            mount = mount.with_auth(ServerAuth::bearer(t));
        }
        let mut builder = A2aServer::builder().mount(mount);
        if v03_card {
            builder = builder.agent_card_version(ProtocolVersion::V03);
        }
        let server = builder.build()?;
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
        println!(
            "word-counter at http://127.0.0.1:{port}/agents/counter (card: /.well-known/agent-card.json)"
        );
        server.serve(listener, std::future::pending::<()>()).await?;
        Ok::<(), Box<dyn std::error::Error>>(())
    })
}
