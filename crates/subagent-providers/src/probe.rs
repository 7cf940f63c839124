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
