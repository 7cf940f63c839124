//! `GET /`: a JSON directory of the hosted agents, for people and tools looking for them.

use std::sync::Arc;

use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};

use super::http::{Shared, agent_url};

/// The directory: `{"agents": [{name, description, url, agentCard, agentCardV03}]}`, with
/// URLs derived exactly as the cards derive theirs (public URL, else checked `X-Forwarded-*`
/// and `Host` headers).
pub(crate) async fn list(State(shared): State<Arc<Shared>>, headers: HeaderMap) -> Response {
    let mut agents: Vec<&super::http::Hosted> = shared.agents.iter().collect();
    agents.sort_by(|a, b| a.path.cmp(&b.path));
    let agents: Vec<serde_json::Value> = agents
        .into_iter()
        .map(|a| {
            let url = agent_url(&shared.cfg, a, &headers);
            serde_json::json!({
                "name": a.info.name,
                "description": a.info.description,
                "url": url,
                "agentCard": format!("{url}/.well-known/agent-card.json"),
                "agentCardV03": format!("{url}/.well-known/agent.json"),
            })
        })
        .collect();
    axum::Json(serde_json::json!({ "agents": agents })).into_response()
}
