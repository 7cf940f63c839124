//! `subagents serve`: host Markdown agents over A2A (v1.0 and v0.3), one path per agent, plus
//! `GET /` listing the hosted cards.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::routing::get;
use subagent_a2a::server::{A2aServer, AgentMount};
use subagent_claude::{ClaudeSubagentReferences, ClaudeSubagentType};
use subagent_spi::SubagentDefinition;
use subagent_tools::ToolSet;

use crate::agents::agent_dirs;
use crate::cli::ServeArgs;
use crate::config::{self, Config};
use crate::error::CliError;
use crate::run::workspace;

/// The URL path an agent is served at: its name in lowercase, runs of other characters
/// turned into single hyphens.
pub fn agent_path(name: &str) -> String {
    let mut slug = String::new();
    for c in name.chars() {
        if c.is_ascii_alphanumeric() {
            slug.push(c.to_ascii_lowercase());
        } else if !slug.ends_with('-') {
            slug.push('-');
        }
    }
    format!("/{}", slug.trim_matches('-'))
}

#[derive(Clone)]
struct Listing {
    agents: Arc<Vec<(String, String, String)>>,
    public_url: Option<String>,
}

async fn list_cards(State(l): State<Listing>, headers: HeaderMap) -> Json<serde_json::Value> {
    let base = l.public_url.clone().unwrap_or_else(|| {
        let host = headers
            .get("x-forwarded-host")
            .or_else(|| headers.get("host"))
            .and_then(|h| h.to_str().ok())
            .unwrap_or("localhost");
        let proto = headers
            .get("x-forwarded-proto")
            .and_then(|h| h.to_str().ok())
            .unwrap_or("http");
        format!("{proto}://{host}")
    });
    let base = base.trim_end_matches('/');
    let agents: Vec<serde_json::Value> = l
        .agents
        .iter()
        .map(|(name, description, path)| {
            serde_json::json!({
                "name": name,
                "description": description,
                "url": format!("{base}{path}"),
                "agentCard": format!("{base}{path}/.well-known/agent-card.json"),
                "agentCardV03": format!("{base}{path}/.well-known/agent.json"),
            })
        })
        .collect();
    Json(serde_json::json!({ "agents": agents }))
}

/// `subagents serve`.
pub async fn serve(args: ServeArgs, config: Config) -> Result<(), CliError> {
    let spec = config::choose_model_spec(args.model.as_deref(), &config).await?;
    let models = config::registry(&spec, &config)?;
    let ws = workspace(args.workspace.as_deref())?;
    let claude = ClaudeSubagentType::builder()
        .models(models)
        .tools(ToolSet::all(ws))
        .build();

    let mut dirs = args.agents.clone();
    dirs.extend(config.agents.iter().cloned());
    let mut defs: Vec<Arc<dyn SubagentDefinition>> = Vec::new();
    for dir in agent_dirs(&dirs) {
        let (refs, skipped) = ClaudeSubagentReferences::from_dir(&dir)
            .await
            .map_err(|e| CliError::Config(e.to_string()))?;
        for s in skipped {
            eprintln!("skipped {}: {}", s.path.display(), s.reason);
        }
        for r in refs {
            let def = claude
                .resolver()
                .resolve(&r)
                .await
                .map_err(|e| CliError::Config(e.to_string()))?;
            defs.push(def);
        }
    }
    if !args.agent.is_empty() {
        let available: Vec<String> = defs.iter().map(|d| d.name().to_string()).collect();
        for wanted in &args.agent {
            if !defs.iter().any(|d| d.name().eq_ignore_ascii_case(wanted)) {
                return Err(CliError::Config(format!(
                    "no agent named `{wanted}` to serve; available: {}",
                    available.join(", ")
                )));
            }
        }
        defs.retain(|d| args.agent.iter().any(|w| d.name().eq_ignore_ascii_case(w)));
    }
    if defs.is_empty() {
        return Err(CliError::Config(
            "no agents to serve: pass --agents DIR (a directory of Markdown agents)".into(),
        ));
    }

    let mut builder = A2aServer::builder();
    if let Some(url) = &args.public_url {
        builder = builder.public_url(url.clone());
    }
    let mut listing = Vec::new();
    for d in &defs {
        let path = agent_path(d.name());
        listing.push((
            d.name().to_string(),
            d.description().to_string(),
            path.clone(),
        ));
        builder = builder.mount(AgentMount::subagent(
            path,
            d.clone(),
            claude.executor().clone(),
        ));
    }
    let server = builder
        .build()
        .map_err(|e| CliError::Config(e.to_string()))?;
    let app = server.router().route(
        "/",
        get(list_cards).with_state(Listing {
            agents: Arc::new(listing.clone()),
            public_url: args.public_url.clone(),
        }),
    );
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .map_err(|e| CliError::Config(format!("cannot listen on {}: {e}", args.listen)))?;
    let addr: SocketAddr = listener
        .local_addr()
        .map_err(|e| CliError::Config(e.to_string()))?;
    eprintln!(
        "serving {} agent(s) over A2A on http://{addr} (model {spec})",
        listing.len()
    );
    for (name, _, path) in &listing {
        eprintln!("  {name}: http://{addr}{path}");
    }
    let shutdown = server.shutdown_token();
    let serve = axum::serve(listener, app).with_graceful_shutdown(async move {
        let _ = tokio::signal::ctrl_c().await;
        shutdown.cancel();
    });
    serve
        .await
        .map_err(|e| CliError::Failed(format!("server error: {e}")))
}

#[cfg(test)]
mod tests {
    use super::agent_path;

    #[test]
    fn paths_are_slugs() {
        assert_eq!(agent_path("code-reviewer"), "/code-reviewer");
        assert_eq!(agent_path("Release Notes Writer"), "/release-notes-writer");
        assert_eq!(agent_path("  weird__name!! "), "/weird-name");
    }
}
