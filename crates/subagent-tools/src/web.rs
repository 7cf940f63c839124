//! The `WebFetch` tool (feature `web`).

use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
use subagent_spi::{TaskContext, ToolEffect, ToolError, ToolOutput};

use crate::util::cut_chars;

/// The default cap on a response body.
pub const DEFAULT_MAX_BODY_BYTES: usize = 5 * 1024 * 1024;
/// The default request timeout.
pub const DEFAULT_FETCH_TIMEOUT: Duration = Duration::from_secs(30);
/// The text returned is cut to this many characters.
pub const MAX_FETCH_TEXT_CHARS: usize = 100_000;

/// Input of [`WebFetchTool`].
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WebFetchInput {
    /// The `http://` or `https://` URL to fetch.
    pub url: String,
    /// What you look for (for the log; the whole text comes back).
    #[serde(default)]
    pub prompt: Option<String>,
}

/// Fetches a URL over HTTP(S) and returns the body as text: HTML is turned into plain text,
/// other text types (JSON, XML, plain) are returned as they are, binary types are refused.
/// The body is capped (5 MiB by default) and the request has a timeout (30 s by default).
#[derive(Debug, Clone)]
pub struct WebFetchTool {
    client: Result<reqwest::Client, String>,
    max_body_bytes: usize,
}

impl Default for WebFetchTool {
    fn default() -> Self {
        Self::new()
    }
}

impl WebFetchTool {
    /// The tool's name.
    pub const NAME: &'static str = "WebFetch";

    /// A tool with its own client: 30 s timeout, at most 5 redirects, 5 MiB body cap.
    pub fn new() -> Self {
        let client = reqwest::Client::builder()
            .timeout(DEFAULT_FETCH_TIMEOUT)
            .redirect(reqwest::redirect::Policy::limited(5))
            .user_agent(concat!("subagent-tools/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| e.to_string());
        Self {
            client,
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
        }
    }

    /// A tool using `client` (its timeout and redirect policy apply).
    pub fn with_client(client: reqwest::Client) -> Self {
        Self {
            client: Ok(client),
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
        }
    }

    /// Sets the body cap (builder style).
    #[must_use]
    pub fn with_max_body_bytes(mut self, n: usize) -> Self {
        self.max_body_bytes = n;
        self
    }

    async fn fetch(&self, url: reqwest::Url) -> Result<ToolOutput, ToolError> {
        let client = self.client.as_ref().map_err(|e| {
            ToolError::failed(
                Self::NAME,
                format!("the HTTP client could not be set up: {e}"),
            )
        })?;
        let mut resp = client.get(url.clone()).send().await.map_err(|e| {
            let what = if e.is_timeout() {
                "timed out"
            } else {
                "failed"
            };
            ToolError::failed(Self::NAME, format!("fetching `{url}` {what}: {e}"))
        })?;
        let status = resp.status();
        let content_type = resp
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_ascii_lowercase();
        let is_html = content_type.contains("html");
        let is_text = content_type.is_empty()
            || content_type.starts_with("text/")
            || content_type.contains("json")
            || content_type.contains("xml")
            || content_type.contains("javascript");
        if !is_html && !is_text {
            return Err(ToolError::failed(
                Self::NAME,
                format!("`{url}` returned `{content_type}`, which is not text"),
            ));
        }
        let mut body = Vec::new();
        let mut capped = false;
        loop {
            let chunk = resp.chunk().await.map_err(|e| {
                ToolError::failed(
                    Self::NAME,
                    format!("reading the body of `{url}` failed: {e}"),
                )
            })?;
            let Some(chunk) = chunk else { break };
            let room = self.max_body_bytes.saturating_sub(body.len());
            if chunk.len() > room {
                body.extend_from_slice(&chunk[..room]);
                capped = true;
                break;
            }
            body.extend_from_slice(&chunk);
        }
        let raw = String::from_utf8_lossy(&body);
        let text = if is_html {
            html_to_text(&raw)
        } else {
            raw.into_owned()
        };
        let (mut text, cut) = cut_chars(&text, MAX_FETCH_TEXT_CHARS);
        if cut > 0 {
            text.push_str(&format!("\n[text truncated: {cut} characters cut]"));
        }
        if capped {
            text.push_str(&format!(
                "\n[body truncated at {} bytes]",
                self.max_body_bytes
            ));
        }
        let head = format!("URL: {url}\nStatus: {status}\n\n");
        if status.is_success() {
            Ok(ToolOutput::text(head + &text))
        } else {
            Ok(ToolOutput::error(head + &text))
        }
    }
}

#[subagent_spi::async_trait]
impl subagent_spi::TypedTool for WebFetchTool {
    type Input = WebFetchInput;

    fn name(&self) -> &str {
        Self::NAME
    }

    fn description(&self) -> String {
        "Fetches an http(s) URL and returns its content as text (HTML converted to plain text, \
         at most 100000 characters)."
            .into()
    }

    fn effect(&self) -> ToolEffect {
        ToolEffect::Execute
    }

    async fn run(&self, input: WebFetchInput, ctx: &TaskContext) -> Result<ToolOutput, ToolError> {
        let url = reqwest::Url::parse(input.url.trim()).map_err(|e| {
            ToolError::invalid(
                Self::NAME,
                format!("`{}` is not a valid URL: {e}", input.url),
            )
        })?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(ToolError::invalid(
                Self::NAME,
                format!(
                    "only http and https URLs can be fetched, not `{}`",
                    url.scheme()
                ),
            ));
        }
        tokio::select! {
            r = self.fetch(url) => r,
            () = ctx.cancel().cancelled() => Err(ToolError::Cancelled { tool: Self::NAME.to_string() }),
        }
    }
}

/// Turns HTML into readable plain text: drops scripts, styles and comments, breaks lines at
/// block elements, decodes common entities and collapses whitespace.
pub fn html_to_text(html: &str) -> String {
    const BLOCKS: &[&str] = &[
        "p",
        "div",
        "br",
        "tr",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "section",
        "article",
        "header",
        "footer",
        "pre",
        "table",
        "ul",
        "ol",
        "blockquote",
        "hr",
        "title",
        "nav",
        "main",
        "aside",
        "dt",
        "dd",
        "form",
    ];
    const SKIPPED: &[&str] = &["script", "style", "noscript", "template", "svg", "head"];
    let mut out = String::with_capacity(html.len() / 2);
    let mut rest = html;
    while let Some(lt) = rest.find('<') {
        push_decoded(&mut out, &rest[..lt]);
        rest = &rest[lt..];
        if let Some(after) = rest.strip_prefix("<!--") {
            rest = after.find("-->").map_or("", |e| &after[e + 3..]);
            continue;
        }
        let Some(gt) = rest.find('>') else {
            push_decoded(&mut out, rest);
            rest = "";
            break;
        };
        let tag = &rest[1..gt];
        rest = &rest[gt + 1..];
        let closing = tag.starts_with('/');
        let name = tag
            .trim_start_matches('/')
            .split(|c: char| c.is_whitespace() || c == '/')
            .next()
            .unwrap_or("")
            .to_ascii_lowercase();
        if !closing && SKIPPED.contains(&name.as_str()) && !tag.ends_with('/') {
            let close = format!("</{name}");
            rest = match rest.to_ascii_lowercase().find(&close) {
                Some(i) => rest[i..].find('>').map_or("", |g| &rest[i + g + 1..]),
                None => "",
            };
            continue;
        }
        if name == "li" && !closing {
            out.push_str("\n- ");
        } else if BLOCKS.contains(&name.as_str()) {
            out.push('\n');
        } else if name == "td" || name == "th" {
            out.push(' ');
        }
    }
    push_decoded(&mut out, rest);
    tidy(&out)
}

fn push_decoded(out: &mut String, text: &str) {
    let mut rest = text;
    while let Some(amp) = rest.find('&') {
        out.push_str(&rest[..amp]);
        rest = &rest[amp..];
        let end = rest
            .char_indices()
            .take(12)
            .find(|(_, c)| *c == ';')
            .map(|(i, _)| i);
        let decoded = end.and_then(|e| decode_entity(&rest[1..e]).map(|c| (c, e)));
        match decoded {
            Some((c, e)) => {
                out.push(c);
                rest = &rest[e + 1..];
            }
            None => {
                out.push('&');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
}

fn decode_entity(name: &str) -> Option<char> {
    if let Some(num) = name.strip_prefix('#') {
        let code = match num.strip_prefix(['x', 'X']) {
            Some(hex) => u32::from_str_radix(hex, 16).ok()?,
            None => num.parse().ok()?,
        };
        return char::from_u32(code);
    }
    Some(match name {
        "amp" => '&',
        "lt" => '<',
        "gt" => '>',
        "quot" => '"',
        "apos" => '\'',
        "nbsp" => ' ',
        "mdash" => '—',
        "ndash" => '–',
        "hellip" => '…',
        "copy" => '©',
        _ => return None,
    })
}

/// Collapses runs of blanks within lines, trims lines, and keeps at most one empty line in a row.
fn tidy(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut blank_run = 0;
    for line in text.lines() {
        let line = line.split_whitespace().collect::<Vec<_>>().join(" ");
        if line.is_empty() {
            blank_run += 1;
            if blank_run > 1 || out.is_empty() {
                continue;
            }
        } else {
            blank_run = 0;
        }
        out.push_str(&line);
        out.push('\n');
    }
    out.trim_end().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn html_becomes_text() {
        let html = "<html><head><title>T</title><style>p{}</style></head><body>\
            <script>var x = '<p>';</script><h1>Title</h1><p>Fish &amp; chips &lt;3 &#x41;&#66;</p>\
            <!-- hidden --><ul><li>one</li><li>two</li></ul>a &unknown; b</body></html>";
        assert_eq!(
            html_to_text(html),
            "Title\n\nFish & chips <3 AB\n\n- one\n- two\na &unknown; b"
        );
    }
}
