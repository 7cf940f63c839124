//! Credentials go only to the origin they were given for: an agent card served on
//! 127.0.0.1:A that names another port, another host (127.0.0.2, loopback too) or redirects
//! elsewhere never makes the client send its bearer token or API key there; the call fails
//! with an error naming both URLs, or goes through when that origin is allowed.

use std::sync::{Arc, Mutex};

use axum::Router;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};
use subagent_a2a::client::{KIND, a2a_subagent_type};
use subagent_spi::{SubagentReference, TaskCall, TaskContext};

use crate::common;

/// What a listener saw: the auth headers of every request (`None` when absent).
#[derive(Clone, Default)]
struct Seen(Arc<Mutex<Vec<(String, Option<String>, Option<String>)>>>);

impl Seen {
    fn record(&self, path: &str, h: &HeaderMap) {
        let get = |k: &str| h.get(k).and_then(|v| v.to_str().ok()).map(str::to_string);
        self.0
            .lock()
            .unwrap()
            .push((path.to_string(), get("authorization"), get("x-api-key")));
    }
    fn requests(&self) -> usize {
        self.0.lock().unwrap().len()
    }
    fn saw_credentials(&self) -> bool {
        self.0
            .lock()
            .unwrap()
            .iter()
            .any(|(_, a, k)| a.is_some() || k.is_some())
    }
}

fn card(rpc_url: &str) -> Value {
    json!({
        "name": "remote", "description": "d", "version": "1",
        "supportedInterfaces": [{"url": rpc_url, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}],
        "capabilities": {}, "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"],
        "skills": []
    })
}

/// An A2A peer answering every `SendMessage` with `pong`, recording what it saw.
fn rpc_routes(seen: Seen) -> Router {
    Router::new().route(
        "/rpc",
        post(move |h: HeaderMap, body: String| {
            let seen = seen.clone();
            async move {
                seen.record("/rpc", &h);
                let req: Value = serde_json::from_str(&body).unwrap_or_default();
                axum::Json(
                    json!({"jsonrpc": "2.0", "id": req["id"], "result": {"message": {
                    "messageId": "r", "role": "ROLE_AGENT", "parts": [{"text": "pong"}]}}}),
                )
                .into_response()
            }
        }),
    )
}

/// Serves `router` on `listener`.
fn serve(listener: tokio::net::TcpListener, router: Router) {
    tokio::spawn(async move {
        axum::serve(listener, router).await.ok();
    });
}

async fn bind(ip: &str) -> (tokio::net::TcpListener, String) {
    let l = tokio::net::TcpListener::bind((ip, 0)).await.expect("bind");
    let base = format!("http://{}", l.local_addr().unwrap());
    (l, base)
}

/// The card naming `rpc_url` at the well-known path; records what it saw.
fn card_route(rpc_url: &str, seen: Seen) -> Router {
    let c = card(rpc_url);
    Router::new().route(
        "/.well-known/agent-card.json",
        get(move |h: HeaderMap| {
            let (seen, c) = (seen.clone(), c.clone());
            async move {
                seen.record("card", &h);
                axum::Json(c).into_response()
            }
        }),
    )
}

/// The card server on 127.0.0.1 (its base URL), naming `rpc_url`; records what it saw.
async fn card_server(rpc_url: String, seen: Seen) -> String {
    let (l, base) = bind("127.0.0.1").await;
    let router = card_route(&rpc_url, seen).merge(rpc_routes(Seen::default()));
    serve(l, router);
    base
}

/// The other listener, on `ip`: an A2A peer at `/rpc` recording what it saw; its base URL.
async fn other_server(ip: &str, seen: Seen) -> String {
    let (l, base) = bind(ip).await;
    serve(l, rpc_routes(seen));
    base
}

fn with_credentials(uri: &str) -> SubagentReference {
    common::a2a_ref(
        uri,
        &[
            ("bearer", "s3cret"),
            ("api_key_header", "X-API-Key"),
            ("api_key", "k3y"),
        ],
    )
}

/// Resolves and calls the agent once; the answer's text or the error.
async fn call(reference: SubagentReference) -> Result<String, String> {
    let kind = a2a_subagent_type();
    let def = kind
        .resolver()
        .resolve(&reference)
        .await
        .map_err(|e| e.to_string())?;
    let call = TaskCall::new(def.name(), "ping", "ping");
    kind.executor()
        .execute(call, def, TaskContext::new())
        .await
        .map(|o| o.text)
        .map_err(|e| e.to_string())
}

/// A server at `ip` (what it hears: the returned `Seen`) and a card server whose card names
/// that server's `/rpc` as its interface: (what the other heard, its URL, the card's URL).
async fn card_naming_server_at(ip: &str) -> (Seen, String, String) {
    let other = Seen::default();
    let b = other_server(ip, other.clone()).await;
    let a = card_server(format!("{b}/rpc"), Seen::default()).await;
    (other, b, a)
}

#[tokio::test]
async fn a_card_naming_another_port_gets_no_credentials() {
    let (other, b, a) = card_naming_server_at("127.0.0.1").await;
    let err = call(with_credentials(&a)).await.unwrap_err();
    assert!(
        err.contains(&format!("{b}/rpc")),
        "names the interface: {err}"
    );
    assert!(
        err.contains(&a),
        "names the origin the credentials are for: {err}"
    );
    assert!(
        err.contains("allowed_origins"),
        "says how to allow it: {err}"
    );
    assert_eq!(other.requests(), 0, "the other port heard nothing");

    // Allowed: the call goes through, with the credentials.
    let ok = call(with_credentials(&a).with_metadata("allowed_origins", format!("[\"{b}\"]")))
        .await
        .expect("allowed origin");
    assert_eq!(ok, "pong");
    assert!(other.saw_credentials());
}

#[tokio::test]
async fn a_card_naming_another_host_gets_no_credentials() {
    // 127.0.0.2 is loopback as well: the same machine under another host name.
    let (other, b, a) = card_naming_server_at("127.0.0.2").await;
    let err = call(with_credentials(&a)).await.unwrap_err();
    assert!(
        err.contains(&format!("{b}/rpc")) && err.contains(&a),
        "{err}"
    );
    assert_eq!(other.requests(), 0, "the other host heard nothing");

    // Only the API key: refused all the same.
    let err = call(common::a2a_ref(
        &a,
        &[("api_key_header", "X-API-Key"), ("api_key", "k3y")],
    ))
    .await
    .unwrap_err();
    assert!(err.contains("allowed_origins"), "{err}");
    assert_eq!(other.requests(), 0);

    // Without credentials there is nothing to leak: the card's interface is used.
    assert_eq!(
        call(SubagentReference::new(&a, KIND)).await.unwrap(),
        "pong"
    );
    assert_eq!(other.requests(), 1);
    assert!(!other.saw_credentials());
}

#[tokio::test]
async fn a_redirect_to_another_origin_is_not_followed_with_credentials() {
    let other = Seen::default();
    let (lb, b) = bind("127.0.0.1").await;
    serve(lb, card_route(&format!("{b}/rpc"), other.clone()));
    let (la, a) = bind("127.0.0.1").await;
    let target = format!("{b}/.well-known/agent-card.json");
    serve(
        la,
        Router::new()
            .route(
                "/.well-known/agent-card.json",
                get(move || {
                    let t = target.clone();
                    async move { Redirect::temporary(&t) }
                }),
            )
            .fallback(|| async { Response::from(StatusCode::NOT_FOUND.into_response()) }),
    );
    let err = call(with_credentials(&a)).await.unwrap_err();
    assert!(err.contains("redirect"), "{err}");
    assert_eq!(other.requests(), 0, "the redirect target heard nothing");
}

#[test]
fn an_https_card_naming_a_plain_http_interface_is_refused() {
    use subagent_a2a::client::{A2aConfig, parse_card, usable_endpoints};
    let card_url = "https://agents.example.com/.well-known/agent-card.json";
    let card = parse_card(
        card_url,
        card("http://agents.example.com/rpc").to_string().as_bytes(),
    )
    .unwrap();
    for reference in [
        with_credentials("https://agents.example.com"),
        with_credentials("https://agents.example.com")
            .with_metadata("allowed_origins", "http://agents.example.com"),
        SubagentReference::new("https://agents.example.com", KIND),
    ] {
        let config = A2aConfig::from_reference(&reference).unwrap();
        let err = usable_endpoints(&card, &card.to_v1(), card_url, &config)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains(card_url) && err.contains("http://agents.example.com/rpc"),
            "names both URLs: {err}"
        );
        assert!(err.contains("downgrade"), "{err}");
    }
}
