//! The integration tests of `subagent-a2a`, one test binary (`tests/it`): one module per area.
//!
//! Shared modules, declared here once: `common` (an echo agent and servers), `js` (the official
//! JavaScript SDK's peers, `tests/js`) and `python` (the official Python SDKs' peers,
//! `tests/py` and `tests/py_clients`; the workspace's `tests` crate and `subagents-cli`'s tests
//! use it too, by `#[path]`). The peers' scripts stay in `tests/`.

mod common;
#[path = "common/js.rs"]
mod js;
mod python;

#[cfg(all(feature = "client", feature = "server"))]
mod card_signing;
#[cfg(feature = "client")]
mod client_interop_py;
#[cfg(all(feature = "client", feature = "server"))]
mod client_mock;
#[cfg(all(feature = "client", feature = "server"))]
mod continuations;
#[cfg(feature = "client")]
mod credential_origin;
#[cfg(all(feature = "client", feature = "server"))]
mod extended_card_trust;
#[cfg(all(
    feature = "client",
    feature = "server",
    feature = "push",
    feature = "grpc-server",
    feature = "grpc-client"
))]
mod grpc;
#[cfg(all(feature = "client", feature = "grpc-client"))]
mod grpc_interop_js;
#[cfg(all(feature = "client", feature = "grpc-client"))]
mod grpc_interop_py;
#[cfg(all(feature = "client", feature = "server"))]
mod hostile_client;
#[cfg(all(feature = "client", feature = "server"))]
mod hostile_props;
#[cfg(all(feature = "client", feature = "server"))]
mod hostile_server;
#[cfg(all(feature = "client", feature = "server", feature = "push"))]
mod interop_js;
#[cfg(all(feature = "client", feature = "server", feature = "push"))]
mod push_http;
#[cfg(all(feature = "client", feature = "server", feature = "push"))]
mod rest_v03;
#[cfg(all(feature = "client", feature = "server"))]
mod server_http;
#[cfg(all(feature = "client", feature = "server"))]
mod server_interop_py;
#[cfg(all(feature = "client", feature = "server"))]
mod server_memory;
mod steer;
mod types_roundtrip;
