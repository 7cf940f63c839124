//! The `A2A` subagent kind: a resolver that reads agent cards and an executor that sends tasks
//! to remote A2A agents (1.0 and 0.3, JSON-RPC and HTTP+JSON).
//!
//! ```no_run
//! use std::sync::Arc;
//! use subagent_a2a::client::{a2a_subagent_type, KIND};
//! use subagent_spi::{SubagentReference, TaskCall, TaskContext};
//!
//! # async fn demo() -> Result<(), subagent_spi::SubagentError> {
//! let kind = a2a_subagent_type();
//! let reference = SubagentReference::new("http://127.0.0.1:10001", KIND)
//!     .with_metadata("bearer_env", "AGENT_TOKEN");
//! let definition = kind.resolver().resolve(&reference).await?;
//! let call = TaskCall::new(definition.name(), "say hello", "Say hello to the user");
//! let outcome = kind.executor().execute(call, definition, TaskContext::new()).await?;
//! println!("{} ({})", outcome.text, outcome.status);
//! # Ok(()) }
//! ```

mod card_trust;
mod config;
mod definition;
mod dialect;
mod endpoint;
mod executor;
#[cfg(feature = "grpc-client")]
mod grpc;
mod resolver;
mod sse;
mod steer;
mod transport;
mod wire;

use std::time::Duration;

pub use card_trust::{CardVerification, MAX_JWKS_BYTES};
pub use config::{A2aConfig, DEFAULT_POLL_INTERVAL, DEFAULT_TIMEOUT, keys};
pub use definition::{A2aSubagentDefinition, AgentCard, describe};
pub use endpoint::{
    Binding, DEFAULT_STREAM_IDLE_TIMEOUT, Endpoint, EventStream, MAX_BODY_BYTES, MAX_EVENT_BYTES,
    stream_idle_error,
};
pub use executor::{A2aExecutor, MAX_ARTIFACT_BYTES, decode_session, encode_session, parts_text};
pub use resolver::{A2aResolver, choose_endpoint, parse_card, usable_endpoints};
use subagent_spi::SubagentType;
pub use transport::A2aClient;

/// The kind of A2A references and definitions.
pub const KIND: subagent_spi::Kind = subagent_spi::Kind::from_static("A2A");

/// The `A2A` subagent type: the [`A2aExecutor`] kind, resolving with an [`A2aResolver`] on the
/// same HTTP client.
pub fn a2a_subagent_type() -> SubagentType {
    SubagentType::from(A2aExecutor::with_client(default_http_client()))
}

/// The HTTP client used when none is given: connect timeout 10 s, no overall timeout (streams
/// may last long; the executor applies the task's own time limit). Redirects are followed
/// only on the same origin, or from `http://` to `https://` on the same host (at most 5): a
/// redirect elsewhere is an error naming both URLs, so credentials (an API key header, which
/// HTTP clients keep across hosts) never follow it.
pub fn default_http_client() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(same_origin_redirects())
        .connect_timeout(Duration::from_secs(10))
        .user_agent(concat!("subagent-a2a/", env!("CARGO_PKG_VERSION")))
        .build()
        .unwrap_or_else(|e| {
            tracing::warn!(error = %e, "building the configured HTTP client failed; using defaults");
            reqwest::Client::new()
        })
}

/// The redirect policy of [`default_http_client`].
fn same_origin_redirects() -> reqwest::redirect::Policy {
    reqwest::redirect::Policy::custom(|attempt| {
        // Each hop from the one before: the origin changes at most by an upgrade to https.
        let Some(last) = attempt.previous().last() else {
            return attempt.follow();
        };
        let (from, to) = (last.clone(), attempt.url().clone());
        let same_origin = from.origin() == to.origin();
        let upgrade = from.scheme() == "http"
            && to.scheme() == "https"
            && from.host_str() == to.host_str()
            && to.port_or_known_default() == Some(443);
        if attempt.previous().len() > 5 {
            attempt.error(format!("more than 5 redirects from {from}"))
        } else if same_origin || upgrade {
            attempt.follow()
        } else {
            attempt.error(format!(
                "{from} redirects to {to}, another origin; not followed (credentials must not \
                 follow a redirect)"
            ))
        }
    })
}
