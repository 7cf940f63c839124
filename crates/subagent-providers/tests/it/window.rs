//! `probe_context_window`: the window a local server says it runs a model with (llama.cpp's
//! `/props`, Ollama's `/api/show` and `/api/ps`, vLLM's `/v1/models`), `None` when it says
//! nothing, and a clear error when nothing answers.

use std::time::Duration;

use subagent_providers::{ModelSpec, probe_context_window};
use subagent_spi::ModelError;
use subagent_testkit::ScriptedModelServer;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

const WAIT: Duration = Duration::from_secs(5);

/// A server answering `routes` (`(method, path, JSON)`) and 404 to anything else; returns
/// its `http://127.0.0.1:PORT`.
async fn fake(routes: Vec<(&'static str, &'static str, String)>) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("addr"));
    tokio::spawn(async move {
        loop {
            let Ok((mut socket, _)) = listener.accept().await else {
                return;
            };
            let routes = routes.clone();
            tokio::spawn(async move {
                let mut buf = vec![0u8; 8192];
                let mut read = 0;
                // The request head (the probe's bodies are small and come with it).
                while read < buf.len() {
                    let n = socket.read(&mut buf[read..]).await.unwrap_or(0);
                    if n == 0 {
                        break;
                    }
                    read += n;
                    let head = String::from_utf8_lossy(&buf[..read]);
                    if let Some(end) = head.find("\r\n\r\n") {
                        let length = head
                            .lines()
                            .find_map(|l| {
                                l.to_ascii_lowercase()
                                    .strip_prefix("content-length:")
                                    .map(|v| v.trim().parse::<usize>().unwrap_or(0))
                            })
                            .unwrap_or(0);
                        if read >= end + 4 + length {
                            break;
                        }
                    }
                }
                let head = String::from_utf8_lossy(&buf[..read]).into_owned();
                let mut words = head.split_whitespace();
                let (method, path) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
                let reply = routes
                    .iter()
                    .find(|(m, p, _)| *m == method && *p == path)
                    .map(|(_, _, body)| body.clone());
                let response = match reply {
                    Some(body) => format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                        body.len()
                    ),
                    None => {
                        "HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
                            .to_string()
                    }
                };
                let _ = socket.write_all(response.as_bytes()).await;
            });
        }
    });
    base
}

/// The window the server of `model_spec` says it runs the model with (it must say one).
async fn window_of(model_spec: &str) -> subagent_providers::ServerWindow {
    probe_context_window(&spec(model_spec), WAIT)
        .await
        .expect("answers")
        .expect("a window")
}

fn spec(s: &str) -> ModelSpec {
    ModelSpec::parse(s).expect("a spec")
}

#[tokio::test]
async fn llama_cpp_says_its_window_in_props() {
    let server = ScriptedModelServer::start().await;
    server.set_context_window(Some(8_192));
    let w = window_of(&server.openai_model("local")).await;
    assert_eq!((w.tokens, w.source), (8_192, "llama.cpp /props"));
    // A server that says nothing: no window, no error.
    server.set_context_window(None);
    let none = probe_context_window(&spec(&server.openai_model("local")), WAIT).await;
    assert!(matches!(none, Ok(None)), "{none:?}");
    // No model request was made.
    assert_eq!(server.requests().len(), 0);
}

#[tokio::test]
async fn ollama_says_it_in_the_model_parameters_or_for_the_loaded_model() {
    let base = fake(vec![(
        "POST",
        "/api/show",
        r#"{"parameters": "temperature 0.7\nnum_ctx 16384", "model_info": {"qwen2.context_length": 32768}}"#
            .to_string(),
    )])
    .await;
    let w = window_of(&format!("openai-compatible:qwen2.5@{base}/v1")).await;
    assert_eq!((w.tokens, w.source), (16_384, "Ollama /api/show (num_ctx)"));

    let base = fake(vec![
        ("POST", "/api/show", r#"{"model_info": {}}"#.to_string()),
        (
            "GET",
            "/api/ps",
            r#"{"models": [{"name": "qwen2.5:latest", "context_length": 8192}]}"#.to_string(),
        ),
    ])
    .await;
    let w = window_of(&format!("openai-compatible:qwen2.5@{base}/v1")).await;
    assert_eq!((w.tokens, w.source), (8_192, "Ollama /api/ps"));

    // Neither: Ollama's documented default.
    let base = fake(vec![(
        "POST",
        "/api/show",
        r#"{"model_info": {}}"#.to_string(),
    )])
    .await;
    let w = window_of(&format!("openai-compatible:other@{base}/v1")).await;
    assert_eq!(w.tokens, subagent_providers::OLLAMA_DEFAULT_WINDOW);
}

#[tokio::test]
async fn vllm_says_it_in_the_model_list() {
    let base = fake(vec![(
        "GET",
        "/v1/models",
        r#"{"data": [{"id": "other", "max_model_len": 4096}, {"id": "served", "max_model_len": 12288}]}"#
            .to_string(),
    )])
    .await;
    let w = window_of(&format!("openai-compatible:served@{base}/v1")).await;
    assert_eq!(
        (w.tokens, w.source),
        (12_288, "vLLM /v1/models (max_model_len)")
    );
}

#[tokio::test]
async fn nothing_answering_is_an_error_naming_the_address_and_hosted_specs_are_not_asked() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a port")
        .port();
    let base = format!("http://127.0.0.1:{port}/v1");
    let err = probe_context_window(&spec(&format!("openai-compatible:m@{base}")), WAIT)
        .await
        .expect_err("nothing answers");
    assert!(matches!(err, ModelError::Unreachable { .. }), "{err:?}");
    assert!(err.to_string().contains(&base), "{err}");
    // Providers whose server is the user's environment: nothing to ask.
    let hosted = probe_context_window(&spec("openai:gpt-4.1"), WAIT).await;
    assert!(matches!(hosted, Ok(None)), "{hosted:?}");
}
