//! WebFetch against a real HTTP server on 127.0.0.1.
#![cfg(feature = "web")]

use serde_json::json;
use subagent_spi::{TaskContext, Tool, ToolError};
use subagent_tools::WebFetchTool;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// Serves each connection one canned response (by path) and closes; stops after `n` requests.
async fn serve(n: usize) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        for _ in 0..n {
            let Ok((mut sock, _)) = listener.accept().await else {
                return;
            };
            let mut buf = vec![0u8; 4096];
            let mut req = Vec::new();
            while !req.windows(4).any(|w| w == b"\r\n\r\n") {
                let Ok(k) = sock.read(&mut buf).await else {
                    break;
                };
                if k == 0 {
                    break;
                }
                req.extend_from_slice(&buf[..k]);
            }
            let req = String::from_utf8_lossy(&req);
            let path = req.split_whitespace().nth(1).unwrap_or("/").to_string();
            let (status, ctype, body): (&str, &str, Vec<u8>) = match path.as_str() {
                "/page" => (
                    "200 OK",
                    "text/html; charset=utf-8",
                    b"<html><head><title>x</title></head><body><h1>Hi</h1><p>a &amp; b</p>\
                      <script>alert(1)</script></body></html>"
                        .to_vec(),
                ),
                "/data.json" => ("200 OK", "application/json", b"{\"k\": 1}".to_vec()),
                "/img" => ("200 OK", "image/png", vec![0x89, b'P', b'N', b'G']),
                "/big" => ("200 OK", "text/plain", vec![b'z'; 10_000]),
                _ => ("404 Not Found", "text/plain", b"no such page".to_vec()),
            };
            let head = format!(
                "HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            );
            let _ = sock.write_all(head.as_bytes()).await;
            let _ = sock.write_all(&body).await;
            let _ = sock.shutdown().await;
        }
    });
    format!("http://{addr}")
}

#[tokio::test]
async fn web_fetch_turns_html_into_text_and_handles_errors() {
    let base = serve(5).await;
    let tool = WebFetchTool::new().with_max_body_bytes(1000);
    let ctx = TaskContext::new();

    let out = tool
        .call(json!({"url": format!("{base}/page")}), &ctx)
        .await
        .unwrap();
    assert!(!out.is_error);
    assert!(out.content.contains("Status: 200 OK"), "{}", out.content);
    assert!(out.content.ends_with("Hi\n\na & b"), "{}", out.content);
    assert!(!out.content.contains("alert"));

    let out = tool
        .call(json!({"url": format!("{base}/data.json")}), &ctx)
        .await
        .unwrap();
    assert!(out.content.ends_with("{\"k\": 1}"), "{}", out.content);

    let err = tool
        .call(json!({"url": format!("{base}/img")}), &ctx)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("image/png"), "{err}");

    let out = tool
        .call(json!({"url": format!("{base}/big")}), &ctx)
        .await
        .unwrap();
    assert!(out.content.contains("[body truncated at 1000 bytes]"));
    assert_eq!(out.content.matches('z').count(), 1000);

    let out = tool
        .call(json!({"url": format!("{base}/missing")}), &ctx)
        .await
        .unwrap();
    assert!(out.is_error);
    assert!(out.content.contains("404"), "{}", out.content);

    let err = tool
        .call(json!({"url": "file:///etc/passwd"}), &ctx)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("only http and https"), "{err}");
    let err = tool
        .call(json!({"url": "not a url"}), &ctx)
        .await
        .unwrap_err();
    assert!(matches!(err, ToolError::InvalidInput { .. }));
}
