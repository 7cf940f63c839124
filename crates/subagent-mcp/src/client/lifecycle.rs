//! Which MCP lifecycle a new connection uses.
//!
//! The 2026-07-28 revision first (`server/discover`, no handshake), falling back to the
//! 2025-11-25 `initialize` handshake on the same transport when the server answers
//! `server/discover` with an error (rmcp's `Auto` lifecycle). A legacy server that answers the
//! unknown method with a result that is not a discover result (an empty `{}`, as some
//! hand-written servers and the conformance suite's 2025-era fixtures do) does not fit that
//! rule: rmcp gives up. Such a server is tried once more, on a fresh transport, with the
//! `initialize` handshake alone.

use rmcp::RoleClient;
use rmcp::model::{ProtocolVersion, ServerResult};
use rmcp::service::{ClientInitializeError, ClientLifecycleMode, ClientServiceExt, RunningService};
use rmcp::transport::Transport;
use tokio_util::sync::CancellationToken as Signal;

use super::{ClientState, Watched};
use crate::McpError;

/// The lifecycle tried first: discover, with the `initialize` fallback.
fn discover_first() -> ClientLifecycleMode {
    ClientLifecycleMode::Auto {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28, ProtocolVersion::V_2025_11_25],
        legacy_version: Some(ProtocolVersion::V_2025_11_25),
    }
}

/// Whether a failed discover lifecycle means "a legacy server that answered `server/discover`
/// with some other result", worth one `initialize`-only attempt.
fn answered_discover_wrongly(error: &ClientInitializeError) -> bool {
    matches!(
        error,
        ClientInitializeError::ExpectedInitResult(Some(answer))
            if !matches!(
                answer,
                ServerResult::DiscoverResult(_) | ServerResult::InitializeResult(_)
            )
    )
}

/// A live session, the server's process id (stdio) and the signal its transport cancels when
/// it closes.
pub(super) type Served = (RunningService<RoleClient, ClientState>, Option<u32>, Signal);

/// Opens a transport with `open` (a child process, an HTTP client) and runs the lifecycle on
/// it: discover first; when the server answered `server/discover` with a result that is not
/// one, a second transport from `open` and the `initialize` handshake. The caller bounds the
/// whole in time.
pub(super) async fn serve<T, F>(
    state: &ClientState,
    label: &str,
    mut open: F,
) -> Result<Served, McpError>
where
    T: Transport<RoleClient> + Send + 'static,
    F: FnMut() -> Result<(T, Option<u32>), McpError>,
{
    let connect_error = |e: ClientInitializeError| McpError::Connect {
        target: label.to_string(),
        message: e.to_string(),
    };
    let closed = Signal::new();
    let (transport, pid) = open()?;
    let first = state
        .clone()
        .serve_with_lifecycle(Watched::new(transport, &closed), discover_first())
        .await;
    match first {
        Ok(service) => return Ok((service, pid, closed)),
        Err(e) if answered_discover_wrongly(&e) => {
            tracing::debug!(
                server = %label,
                error = %e,
                "server/discover answered with another result: trying the initialize handshake"
            );
        }
        Err(e) => return Err(connect_error(e)),
    }
    // The first transport (and its process) is gone; its signal with it.
    let closed = Signal::new();
    let (transport, pid) = open()?;
    state
        .clone()
        .serve_with_lifecycle(
            Watched::new(transport, &closed),
            ClientLifecycleMode::Initialize,
        )
        .await
        .map(|service| (service, pid, closed))
        .map_err(connect_error)
}
