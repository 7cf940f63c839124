//! `subagents serve`: the agents over A2A (v1.0 and v0.3), one path per agent, plus `GET /`
//! listing the hosted cards. The agents are assembled exactly as for `run` (skills,
//! `mcpServers` tools, nesting), so a served coordinator can delegate to the others.

use std::net::SocketAddr;

use subagents::ServeOptions;
use subagents::a2a::server::ServerConfig;

use crate::args::AgentSources;
use crate::cli::{ListenAuthArgs, ServeArgs, ServeLimitArgs};
use crate::config::Config;
use crate::error::CliError;
use crate::setup::Setup;

/// The keys clients of a server listening on `listen` must send: refuses an address beyond
/// loopback without keys unless `--allow-unauthenticated` (shared by `serve` and
/// `mcp --listen`).
pub(crate) fn listen_keys(
    auth: &ListenAuthArgs,
    listen: SocketAddr,
) -> Result<Vec<String>, CliError> {
    let keys: Vec<String> = auth
        .api_key
        .iter()
        .map(|k| k.trim().to_string())
        .filter(|k| !k.is_empty())
        .collect();
    if keys.is_empty() && !listen.ip().is_loopback() && !auth.allow_unauthenticated {
        return Err(CliError::Config(format!(
            "refusing to serve on {listen} (beyond loopback) without credentials: give \
             --api-key KEY (repeatable, or SUBAGENTS_API_KEYS=KEY1,KEY2) so clients must send \
             `Authorization: Bearer KEY` or `X-API-Key: KEY`, or --allow-unauthenticated to \
             serve anyone who can reach the address"
        )));
    }
    Ok(keys)
}

/// The server settings of `serve`'s limit flags (the rest at their defaults).
fn server_config(limits: &ServeLimitArgs) -> ServerConfig {
    let mut c = ServerConfig::default();
    let secs = std::time::Duration::from_secs;
    if let Some(n) = limits.max_connections {
        c.max_connections = n;
    }
    if let Some(s) = limits.header_timeout {
        c.header_read_timeout = secs(s);
    }
    if let Some(s) = limits.idle_timeout {
        c.idle_timeout = secs(s);
    }
    if let Some(n) = limits.push_max_deliveries {
        c.push_max_deliveries = n;
    }
    if let Some(n) = limits.push_max_queued {
        c.push_max_queued = n;
    }
    if let Some(n) = limits.push_max_configs {
        c.push_max_configs_per_task = n;
    }
    c
}

/// `subagents serve`.
pub(crate) async fn serve(args: ServeArgs, mut config: Config) -> Result<(), CliError> {
    let keys = listen_keys(&args.auth, args.listen)?;
    let spec = crate::routes::choose(&args.models, &mut config).await?;
    let sources = AgentSources {
        agents: args.agents.clone(),
        no_hooks: args.no_hooks,
        ..AgentSources::default()
    };
    // No prompt while serving: the A2A client is asked (the task goes input-required until its
    // answer or --approval-timeout).
    let agents = Setup::serving(
        &sources,
        &config,
        Some(&spec),
        &args.tree,
        &args.permissions,
    )
    // Model replies streamed: their text deltas reach streaming A2A clients (progress
    // extension).
    .build_streaming(true)
    .await?;
    let mut options = ServeOptions::new()
        .agents(args.agent.clone())
        .api_keys(keys.clone())
        .approval_timeout(std::time::Duration::from_secs(args.approval_timeout))
        .legacy_card_discovery(args.legacy_card)
        .push_notifications(args.push)
        .server_config(server_config(&args.limits));
    if let Some(url) = &args.public_url {
        options = options.public_url(url.clone());
    }
    // `--grpc-listen`: the same agents over gRPC on a second port (same credentials).
    let grpc_listener = match args.grpc_listen {
        Some(a) => {
            listen_keys(&args.auth, a)?;
            let l = tokio::net::TcpListener::bind(a)
                .await
                .map_err(|e| CliError::Config(format!("cannot listen on {a}: {e}")))?;
            let addr = l
                .local_addr()
                .map_err(|e| CliError::Config(e.to_string()))?;
            options = options.grpc_url(addr.to_string());
            Some((l, addr))
        }
        None => None,
    };
    if let Some(path) = &args.card_signing_key {
        let mut signer = subagents::a2a::signing::CardSigner::from_file(path)
            .map_err(|e| CliError::Config(e.to_string()))?;
        if let Some(kid) = &args.card_signing_kid {
            signer = signer.with_kid(kid.clone());
        }
        if let Some(jku) = &args.card_signing_jku {
            signer = signer.with_jku(jku.clone());
        }
        eprintln!(
            "  cards signed with {} key `{}`",
            signer.alg(),
            signer.kid()
        );
        options = options.card_signer(signer);
    }
    // `--store`: served A2A tasks live in the same database (restarts, replicas). The default
    // store is every command's: there each address keeps its tasks in a file of its own, so
    // several servers run side by side.
    let own_file = default_store_for(&config, args.listen);
    let task_store = match &own_file {
        Some(url) => subagents::open_task_store(url).await,
        None => agents.a2a_task_store().await,
    };
    if let Some(store) = task_store.map_err(crate::error::facade_error)? {
        options = options.task_store(store);
    }
    let server = agents
        .a2a_server(&options)
        .map_err(crate::error::facade_error)?;
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .map_err(|e| CliError::Config(format!("cannot listen on {}: {e}", args.listen)))?;
    let addr: SocketAddr = listener
        .local_addr()
        .map_err(|e| CliError::Config(e.to_string()))?;
    let served: Vec<(String, String)> = served_agents(&agents, &options);
    let forced = crate::routes::agent_model(&config, Some(&spec))
        .map(|m| format!("; every agent on {}", subagents::models::redacted(&m)))
        .unwrap_or_default();
    eprintln!(
        "serving {} agent(s) over A2A on http://{addr} (model {}{})",
        served.len(),
        subagents::models::redacted(&spec),
        crate::output::terminal_safe(&forced)
    );
    if let Some(url) = &own_file {
        eprintln!(
            "  served A2A tasks kept in {} (one file per address; --store to choose)",
            url.redacted()
        );
    }
    if args.legacy_card {
        eprintln!("  0.3 cards for card requests without `A2A-Version: 1.x` (--legacy-card)");
    }
    if args.push {
        eprintln!("  push notifications on (webhooks at non-public addresses are refused)");
    }
    if keys.is_empty() {
        eprintln!("  no authentication: anyone who can reach this address may call the agents");
    } else {
        eprintln!(
            "  clients must send `Authorization: Bearer KEY` or `X-API-Key: KEY` ({} key(s) accepted)",
            keys.len()
        );
    }
    for (name, path) in &served {
        eprintln!(
            "  {}: http://{addr}{path}",
            crate::output::terminal_safe(name)
        );
    }
    if let Some((grpc, grpc_addr)) = grpc_listener {
        eprintln!("  gRPC (A2A 1.0): {grpc_addr} (tenant = the agent's path without `/`)");
        let s = server.clone();
        tokio::spawn(async move {
            if let Err(e) = s.serve_grpc(grpc, std::future::pending::<()>()).await {
                eprintln!("gRPC server error: {e}");
            }
        });
    }
    server
        .serve(listener, crate::interrupt::stop_signal())
        .await
        .map_err(|e| CliError::Failed(format!("server error: {e}")))
}

/// Where a server on `listen` keeps its A2A tasks when the store is the default one (no
/// `--store`, no `store` in subagents.toml): `serve-HOST-PORT.db` beside the default SQLite
/// file, so servers on different addresses share the default store's transcripts and
/// background tasks without contending for its A2A lock (one file serves one server process),
/// and a restart on the same address finds its tasks. `memory` for port 0 (a new port each
/// time: nothing to find again). `None` with a store of the user's choosing.
fn default_store_for(config: &Config, listen: SocketAddr) -> Option<subagents::store::StoreUrl> {
    if config.store.is_some() {
        return None;
    }
    let ledger = subagents::store::default_sqlite_path()?;
    if listen.port() == 0 {
        return Some(subagents::store::StoreUrl::Memory);
    }
    let host: String = listen
        .ip()
        .to_string()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' {
                c
            } else {
                '-'
            }
        })
        .collect();
    let file = format!("serve-{host}-{}.db", listen.port());
    Some(subagents::store::StoreUrl::Sqlite(
        ledger.with_file_name(file),
    ))
}

/// The agents being served, with their paths, for the banner.
fn served_agents(agents: &subagents::Subagents, options: &ServeOptions) -> Vec<(String, String)> {
    let defs: Vec<_> = if options.agents.is_empty() {
        agents.task().user_agents().to_vec()
    } else {
        options
            .agents
            .iter()
            .filter_map(|n| agents.task().find(n).cloned())
            .collect()
    };
    defs.iter()
        .filter_map(|d| Some((d.name().to_string(), subagents::agent_path(d.name())?)))
        .collect()
}
