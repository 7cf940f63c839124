//! The integration tests of `subagent-providers`, one test binary (`tests/it`): one module per area.

mod common;

mod anthropic;
mod errors;
mod openai;
mod ratelimit;
mod sse;
mod stream_cut;
mod window;
