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

/// A context window a model server reported for a model, and where it was read.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ServerWindow {
    /// The window in tokens (prompt and reply together).
    pub tokens: u64,
    /// Where it was read, for messages: `llama.cpp /props`, `Ollama /api/show`...
    pub source: &'static str,
}

/// Ollama's context window when neither the model nor the loaded instance says otherwise:
/// 4,096 tokens below 24 GiB of VRAM (docs.ollama.com/context-length; larger cards get more,
/// so this errs small: compaction comes early rather than the request being cut).
pub const OLLAMA_DEFAULT_WINDOW: u64 = 4_096;

/// Asks the server of `spec` how large a context window it runs the model with, within
/// `timeout` (each request). Only `ollama:` and `openai-compatible:` specs have a server to ask;
/// other specs give `Ok(None)`. In order:
///
/// - llama.cpp's `llama-server`: `GET /props`, `default_generation_settings.n_ctx` (the
///   window of one slot);
/// - Ollama: `POST /api/show`, `num_ctx` among the model's `parameters`; else `GET /api/ps`,
///   `context_length` of the model when it is loaded; else [`OLLAMA_DEFAULT_WINDOW`];
/// - vLLM: `GET /v1/models`, `max_model_len` of the model.
///
/// `Ok(None)` when the server answers but says nothing of a window; `Err` (unreachable, naming
/// the server's address, credentials hidden) when nothing answers there at all. The key of
/// `OPENAI_COMPATIBLE_API_KEY`, when set, goes only to the spec's own server.
pub async fn probe_context_window(
    spec: &crate::ModelSpec,
    timeout: Duration,
) -> Result<Option<ServerWindow>, ModelError> {
    let base = match (spec.provider, &spec.base_url) {
        (crate::Provider::Ollama, _) => crate::OLLAMA_DEFAULT_BASE_URL.to_string(),
        (crate::Provider::OpenAiCompatible, Some(url)) => url.clone(),
        _ => return Ok(None),
    };
    let base = base.trim_end_matches('/');
    // The server's root: llama.cpp and Ollama answer their own endpoints beside `/v1`.
    let root = base.strip_suffix("/v1").unwrap_or(base);
    let client = reqwest::Client::builder()
        .timeout(timeout)
        .build()
        .map_err(|e| ModelError::Config(format!("cannot build the HTTP client: {e}")))?;
    let key = std::env::var("OPENAI_COMPATIBLE_API_KEY")
        .ok()
        .filter(|k| !k.trim().is_empty() && spec.provider == crate::Provider::OpenAiCompatible);
    let ask = |req: reqwest::RequestBuilder| match &key {
        Some(k) => json_of(req.bearer_auth(k)),
        None => json_of(req),
    };
    // llama.cpp; also the first contact: when nothing answers, the probe ends there.
    let props = match ask(client.get(format!("{root}/props"))).await {
        Ok(v) => v,
        Err(e) if e.is_connect() => {
            return Err(ModelError::Unreachable {
                provider: spec.provider.prefix().to_string(),
                message: format!("nothing answers at {}", redact_url(base)),
                source: Some(Box::new(e)),
            });
        }
        Err(_) => None,
    };
    if let Some(n) = props.as_ref().and_then(|p| {
        p["default_generation_settings"]["n_ctx"]
            .as_u64()
            .or_else(|| p["n_ctx"].as_u64())
    }) {
        return Ok(window(n, "llama.cpp /props"));
    }
    // Ollama.
    let show = ask(client
        .post(format!("{root}/api/show"))
        .json(&serde_json::json!({ "model": spec.model })))
    .await
    .ok()
    .flatten();
    if let Some(show) = show {
        let num_ctx = show["parameters"].as_str().and_then(|params| {
            params.lines().find_map(|l| {
                let mut words = l.split_whitespace();
                (words.next() == Some("num_ctx"))
                    .then(|| words.next()?.parse::<u64>().ok())
                    .flatten()
            })
        });
        if let Some(n) = num_ctx {
            return Ok(window(n, "Ollama /api/show (num_ctx)"));
        }
        let loaded = ask(client.get(format!("{root}/api/ps")))
            .await
            .ok()
            .flatten()
            .and_then(|ps| {
                ps["models"].as_array()?.iter().find_map(|m| {
                    let name = m["name"].as_str().or_else(|| m["model"].as_str())?;
                    (name == spec.model || name == format!("{}:latest", spec.model))
                        .then(|| m["context_length"].as_u64())
                        .flatten()
                })
            });
        if let Some(n) = loaded {
            return Ok(window(n, "Ollama /api/ps"));
        }
        if show.get("model_info").is_some() || show.get("parameters").is_some() {
            return Ok(window(OLLAMA_DEFAULT_WINDOW, "Ollama's default"));
        }
    }
    // vLLM.
    let models = ask(client.get(format!("{base}/models")))
        .await
        .ok()
        .flatten();
    let max_len = models.as_ref().and_then(|m| {
        m["data"].as_array()?.iter().find_map(|d| {
            (d["id"].as_str() == Some(spec.model.as_str()))
                .then(|| d["max_model_len"].as_u64())
                .flatten()
        })
    });
    Ok(max_len.and_then(|n| window(n, "vLLM /v1/models (max_model_len)")))
}

/// Largest reply body the window probe reads (llama.cpp's `/props` carries its chat template).
const MAX_PROBE_BODY: usize = 1 << 20;

/// The JSON body of a successful reply to `req`, read up to [`MAX_PROBE_BODY`]; `None` for an
/// error status, a larger body or one that is no JSON.
async fn json_of(
    req: reqwest::RequestBuilder,
) -> Result<Option<serde_json::Value>, reqwest::Error> {
    let mut resp = req.send().await?;
    if !resp.status().is_success() {
        return Ok(None);
    }
    let mut body = Vec::new();
    while let Some(chunk) = resp.chunk().await? {
        if body.len() + chunk.len() > MAX_PROBE_BODY {
            return Ok(None);
        }
        body.extend_from_slice(&chunk);
    }
    Ok(serde_json::from_slice(&body).ok())
}

/// A plausible window (at least 256 tokens, at most 100 million), else `None`.
fn window(tokens: u64, source: &'static str) -> Option<ServerWindow> {
    (256..=100_000_000)
        .contains(&tokens)
        .then_some(ServerWindow { tokens, source })
}
