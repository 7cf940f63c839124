//! Finding a local model server: [`probe_ollama`].

use std::time::Duration;

use subagent_spi::ModelError;

use crate::error::redact_url;

/// Asks an Ollama server at `base` (e.g. `http://127.0.0.1:11434`) for its models and returns a
/// spec for the first one (`openai-compatible:NAME@BASE/v1`), within `timeout`. An error says
/// why none can be used: not reachable, not an Ollama server, or no models pulled.
pub async fn probe_ollama(base: &str, timeout: Duration) -> Result<String, ModelError> {
    let base = base.trim_end_matches('/');
    let shown = redact_url(base);
    let unusable = |why: &str| ModelError::Config(format!("Ollama at {shown}: {why}"));
    let client = reqwest::Client::builder()
        .timeout(timeout)
        .build()
        .map_err(|e| ModelError::Config(format!("cannot build the HTTP client: {e}")))?;
    let resp = client
        .get(format!("{base}/api/tags"))
        .send()
        .await
        .map_err(|_| unusable("not reachable"))?;
    let body: serde_json::Value = resp
        .json()
        .await
        .map_err(|_| unusable("not an Ollama server"))?;
    body["models"]
        .as_array()
        .and_then(|m| m.first())
        .and_then(|m| m["name"].as_str().or_else(|| m["model"].as_str()))
        .map(|name| format!("openai-compatible:{name}@{base}/v1"))
        .ok_or_else(|| unusable("has no models (run `ollama pull qwen2.5`)"))
}

/// How long asking a llama.cpp server its properties may take.
const PROPS_TIMEOUT: Duration = Duration::from_secs(2);

/// The most of a properties reply read.
const MAX_PROPS_BYTES: usize = 1 << 20;

/// Asks the server at `props_url` (llama.cpp's `GET /props`) how many slots it has
/// (`total_slots`), with the endpoint's headers (its key). `Some(1)` for a server that answers
/// something else (not llama.cpp: one slot as far as we know); `None` when it cannot be
/// reached (ask again later).
pub(crate) async fn llama_total_slots(
    transport: &crate::transport::Transport,
    props_url: &str,
) -> Option<usize> {
    let resp = transport
        .client
        .get(props_url)
        .headers(transport.headers.clone())
        .timeout(PROPS_TIMEOUT)
        .send()
        .await;
    let Ok(resp) = resp else {
        return None;
    };
    if !resp.status().is_success() {
        return Some(1);
    }
    // Bounded: the properties are a few KiB (the chat template the largest part).
    let mut resp = resp;
    let mut body = Vec::new();
    while let Ok(Some(chunk)) = resp.chunk().await {
        if body.len() + chunk.len() > MAX_PROPS_BYTES {
            return Some(1);
        }
        body.extend_from_slice(&chunk);
    }
    let total = serde_json::from_slice::<serde_json::Value>(&body)
        .ok()
        .and_then(|v| v["total_slots"].as_u64())
        .and_then(|n| usize::try_from(n).ok())
        .filter(|n| (1..=1024).contains(n))
        .unwrap_or(1);
    tracing::debug!(url = %redact_url(props_url), total_slots = total, "llama.cpp slots");
    Some(total)
}
