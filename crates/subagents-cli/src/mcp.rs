//! `subagents mcp`: Task / TaskOutput / TaskStop over MCP (stdio, or streamable HTTP with
//! `--listen`), so any MCP client can delegate to the same agents `run` sees.

use crate::cli::McpArgs;
use crate::config::Config;
use crate::error::CliError;
use crate::setup::Setup;

/// `subagents mcp`.
pub(crate) async fn serve(args: McpArgs, mut config: Config) -> Result<(), CliError> {
    // Over HTTP, the same credential rule as `serve`: beyond loopback only with keys.
    let keys = match args.listen {
        Some(addr) => crate::serve::listen_keys(&args.auth, addr)?,
        None => Vec::new(),
    };
    // Local agents need a model; remote ones do not. Without one, local agents answer with a
    // clear model error when called, and the server still serves the rest.
    let spec = match crate::routes::choose(&args.models, &mut config).await {
        Ok(spec) => Some(spec),
        Err(e) => {
            tracing::warn!("{e}");
            None
        }
    };
    // No prompt while serving: the client is asked (by elicitation, or by an `input_required`
    // result for a 2026-07-28 client) when it supports it, else the call is denied; a
    // background task's question waits for the client's TaskOutput answer, an MCP task's for
    // its `tasks/update`.
    let agents = Setup::serving(
        &args.sources,
        &config,
        spec.as_deref(),
        &args.tree,
        &args.permissions,
    )
    .build()
    .await?;
    let names = agents.task().agent_names();
    let mut server = agents.mcp_server();
    if !keys.is_empty() {
        // The check `serve` uses: Bearer or X-API-Key, constant-time, against every key.
        let auth = subagents::a2a::server::ServerAuth::keys(keys);
        server = server.with_http_auth(std::sync::Arc::new(move |headers| auth.verify(headers)));
    }
    // The stop handlers first: a signal while the server starts is a graceful stop too.
    let stop = crate::interrupt::stop_signal();
    match args.listen {
        Some(addr) => {
            let http = server
                .serve_streamable_http(addr)
                .await
                .map_err(|e| CliError::Config(format!("cannot serve MCP on {addr}: {e}")))?;
            eprintln!(
                "serving Task/TaskOutput/TaskStop over MCP (streamable HTTP; Task also as MCP tasks) at {} for {} agent(s): {}",
                http.url(),
                names.len(),
                crate::output::terminal_safe(&names.join(", "))
            );
            stop.await;
            http.shutdown()
                .await
                .map_err(|e| CliError::Failed(e.to_string()))
        }
        // Until the client closes stdin, or a stop signal (a graceful stop: exit 0).
        None => tokio::select! {
            r = server.serve_stdio() => {
                r.map_err(|e| CliError::Failed(format!("MCP stdio server: {e}")))
            }
            () = stop => Ok(()),
        },
    }
}
