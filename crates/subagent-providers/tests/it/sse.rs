//! SSE decoding when the bytes arrive split anywhere: over real HTTP one byte per write. (Every
//! split point of a recorded stream is tested on the internal decoders, in
//! `src/stream_tests.rs`; the SSE parser itself in `subagent-sse`.)

use crate::common;

use std::time::Duration;

use common::*;
use serde_json::json;
use subagent_spi::chat::ChatModel;
use subagent_testkit::{Reply, ScriptedModelServer};

const TEXT: &str = "Zürich → 東京 🚄 «ok»";

/// Both providers' streams, one byte per write over real HTTP, decode to the same reply.
#[tokio::test]
async fn streams_one_byte_per_write_over_http() {
    let server = ScriptedModelServer::start().await;
    let models: [(&str, Box<dyn ChatModel>); 2] = [
        ("openai", Box::new(openai(&server))),
        ("anthropic", Box::new(anthropic(&server))),
    ];
    for (name, model) in models {
        server.push(
            Reply::text_and_tool_calls(TEXT, vec![("Edit", json!({"old": "é", "new": "😀"}))])
                .with_write_size(1)
                .with_chunk_delay(Duration::from_micros(20)),
        );
        let (reply, deltas) = stream(model.as_ref(), user("q")).await;
        let reply = reply.unwrap();
        assert_eq!(reply.content, TEXT, "{name}");
        assert_eq!(delta_text(&deltas), TEXT, "{name}");
        assert_eq!(
            reply.tool_calls[0].arguments,
            json!({"old": "é", "new": "😀"}),
            "{name}"
        );
    }
}
