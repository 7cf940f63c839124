//! A model server's base URL, read once by the parser the HTTP client connects with.
//!
//! Every question asked about a spec's server (which origin it is, whether it is this machine,
//! whether it is on a local network) is answered from one [`BaseUrl`], parsed by `reqwest`'s own
//! [`Url`] (the WHATWG URL parser the client uses to connect). A URL that parser would read
//! differently from how it is written is refused rather than guessed at: a backslash (read as
//! `/`, so `http://127.0.0.1:1\@127.0.0.1:2/v1` connects to port 1, not 2), credentials
//! (`user:pass@`), whitespace or control characters (tabs and newlines are silently dropped), a
//! fragment or a query (dropped or moved when paths are joined), and a host or port written in a
//! form the parser rewrites (`127.1`, `0x7f.0.0.1`, `%61`, `[::ffff:127.0.0.1]`, non-ASCII
//! names). What is kept is the parser's own serialization, so the string sent to the client is
//! exactly the one the guards judged.

use std::fmt;
use std::net::IpAddr;

use reqwest::Url;

/// A base URL of a model server (`http://127.0.0.1:8080/v1`), as the HTTP client reads it.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct BaseUrl {
    url: Url,
}

impl BaseUrl {
    /// Parses `text` with the client's parser and refuses what it would read differently from
    /// how it is written (see the module docs). The error says why, without repeating the URL
    /// (it may hold a password): the caller names it, redacted.
    pub fn parse(text: &str) -> Result<BaseUrl, String> {
        let text = text.trim();
        if text.contains('\\') {
            let reads = Url::parse(text)
                .ok()
                .map(|u| format!(" (it would connect to {})", origin_of(&u)))
                .unwrap_or_default();
            return Err(format!(
                "the base URL contains a backslash, which the HTTP client reads as `/`{reads}; \
                 write the URL with `/` only"
            ));
        }
        if let Some(c) = text.chars().find(|c| c.is_whitespace() || c.is_control()) {
            return Err(format!(
                "the base URL contains {}, which the HTTP client drops or rejects",
                match c {
                    ' ' => "a space".to_string(),
                    c => format!("the character U+{:04X}", c as u32),
                }
            ));
        }
        let Some((scheme, rest)) = text.split_once("://") else {
            return Err("the base URL must start with http:// or https://".into());
        };
        let scheme = scheme.to_ascii_lowercase();
        if scheme != "http" && scheme != "https" {
            return Err("the base URL must start with http:// or https://".into());
        }
        // With no backslash, the authority ends where the client's parser ends it.
        let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
        if authority.contains('@') {
            return Err(
                "credentials in the base URL (`user:pass@`) are not accepted: put the key in \
                 OPENAI_COMPATIBLE_API_KEY (sent as a bearer token)"
                    .into(),
            );
        }
        if rest.contains('#') {
            return Err("the base URL has a fragment (`#...`), which is never sent".into());
        }
        if rest.contains('?') {
            return Err(
                "the base URL has a query (`?...`); the spec's options go after the whole URL"
                    .into(),
            );
        }
        let url = Url::parse(text).map_err(|e| format!("the base URL is not a URL ({e})"))?;
        let Some(host) = url.host_str().filter(|h| !h.is_empty()) else {
            return Err("the base URL must name a host".into());
        };
        // The host and port the client connects to must be the ones written.
        let written = authority.to_ascii_lowercase();
        let read = match url.port() {
            Some(port) => format!("{host}:{port}"),
            None => host.to_string(),
        };
        let default_port = format!("{read}:{}", if scheme == "https" { 443 } else { 80 });
        if written != read && written != default_port {
            return Err(format!(
                "the HTTP client reads the base URL's host as `{read}`, not `{authority}` as \
                 written; write it as `{read}`"
            ));
        }
        // One value per server and path: without the trailing `/` (the parser's output
        // parses back to itself).
        let url = Url::parse(url.as_str().trim_end_matches('/')).unwrap_or(url);
        Ok(BaseUrl { url })
    }

    /// The URL as the client uses it, without a trailing `/` (`http://127.0.0.1:8080/v1`).
    pub fn as_str(&self) -> &str {
        self.url.as_str().trim_end_matches('/')
    }

    /// The server: `scheme://host:port` in lower case, the default port filled in
    /// (`https://api.example.com:443`). Two base URLs with one origin send the same key to the
    /// same place.
    pub fn origin(&self) -> String {
        origin_of(&self.url)
    }

    /// The origin followed by the path, without a trailing `/` (`http://host:8080/v1`): one
    /// server and API root, for telling apart models that go to different places.
    pub fn server_and_path(&self) -> String {
        format!("{}{}", self.origin(), self.url.path().trim_end_matches('/'))
    }

    /// The host as the client reads it (`127.0.0.1`, `[::1]`, `gpu-box.lan`).
    pub fn host(&self) -> &str {
        self.url.host_str().unwrap_or_default()
    }

    fn ip(&self) -> Option<IpAddr> {
        let host = self.host();
        let host = host
            .strip_prefix('[')
            .and_then(|h| h.strip_suffix(']'))
            .unwrap_or(host);
        host.parse().ok()
    }

    /// True when the host is this machine through its loopback interface: an address in
    /// `127.0.0.0/8`, `::1`, or the name `localhost`. Nothing else counts, not this machine's
    /// other addresses (they are reachable from the network, and a name for one may point
    /// anywhere), not `0.0.0.0`, not other names (`*.localhost` goes to DNS here).
    pub fn is_loopback(&self) -> bool {
        match self.ip() {
            Some(ip) => ip.to_canonical().is_loopback(),
            None => self.host() == "localhost",
        }
    }

    /// True when the host is this machine or a private network: loopback, a private (RFC 1918),
    /// link-local or unique-local address, or a name ending `.local`, `.lan`, `.internal` or
    /// `.home.arpa` (where llama.cpp, vLLM, LM Studio usually run).
    pub fn is_local(&self) -> bool {
        if self.is_loopback() {
            return true;
        }
        match self.ip() {
            Some(IpAddr::V4(v4)) => v4.is_private() || v4.is_link_local(),
            Some(IpAddr::V6(v6)) => {
                (v6.segments()[0] & 0xfe00) == 0xfc00 || (v6.segments()[0] & 0xffc0) == 0xfe80
            }
            None => {
                let host = self.host();
                [".localhost", ".local", ".lan", ".internal", ".home.arpa"]
                    .iter()
                    .any(|s| host.ends_with(s))
            }
        }
    }
}

fn origin_of(url: &Url) -> String {
    let port = url
        .port_or_known_default()
        .map(|p| format!(":{p}"))
        .unwrap_or_default();
    format!(
        "{}://{}{port}",
        url.scheme(),
        url.host_str().unwrap_or_default()
    )
}

impl fmt::Display for BaseUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Debug for BaseUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("BaseUrl").field(&self.as_str()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_the_client_reads_is_what_is_kept() {
        for (written, kept, origin) in [
            (
                "http://127.0.0.1:8080/v1/",
                "http://127.0.0.1:8080/v1",
                "http://127.0.0.1:8080",
            ),
            (
                "HTTP://LocalHost:8080/v1",
                "http://localhost:8080/v1",
                "http://localhost:8080",
            ),
            ("http://[::1]:9/v1", "http://[::1]:9/v1", "http://[::1]:9"),
            (
                "https://api.example.com:443/v1",
                "https://api.example.com/v1",
                "https://api.example.com:443",
            ),
            ("http://h", "http://h", "http://h:80"),
        ] {
            let u = BaseUrl::parse(written).unwrap();
            assert_eq!(
                (u.as_str(), u.origin().as_str()),
                (kept, origin),
                "{written}"
            );
            assert_eq!(BaseUrl::parse(u.as_str()).unwrap(), u, "{written}: stable");
        }
    }

    #[test]
    fn what_the_client_would_read_differently_is_refused() {
        for (bad, says) in [
            (r"http://127.0.0.1:1\@127.0.0.1:2/v1", "backslash"),
            (
                r"http://127.0.0.1:1\@127.0.0.1:2/v1",
                "connect to http://127.0.0.1:1",
            ),
            (r"http:\\127.0.0.1:2/v1", "backslash"),
            ("http://user:SECRET@127.0.0.1:2/v1", "credentials"),
            ("http://user@127.0.0.1:2/v1", "credentials"),
            ("http://@127.0.0.1:2/v1", "credentials"),
            ("http://a@b@127.0.0.1/v1", "credentials"),
            ("http://127.0.0.1:80\t80/v1", "U+0009"),
            ("http://127.0.0.1:8080/v\n1", "U+000A"),
            ("http://127.0.0.1 :8080/v1", "a space"),
            ("http://127.0.0.1:8080/v1#x", "fragment"),
            ("http://127.0.0.1:8080/v1?x=1", "query"),
            ("http://127.1:8080/v1", "`127.0.0.1:8080`"),
            ("http://0x7f.0.0.1:8080/v1", "`127.0.0.1:8080`"),
            ("http://2130706433:8080/v1", "`127.0.0.1:8080`"),
            ("http://ex%61mple.com/v1", "`example.com`"),
            ("http://[::ffff:127.0.0.1]:9/v1", "host as"),
            ("http://[0:0::1]:9/v1", "host as"),
            ("http://127.0.0.1:08080/v1", "host as"),
            ("ftp://h/v1", "http://"),
            ("127.0.0.1:8080/v1", "http://"),
            ("http:///v1", "host"),
            ("http://:80/v1", "URL"),
        ] {
            let err = BaseUrl::parse(bad).unwrap_err();
            assert!(err.contains(says), "{bad:?}: {err}");
            assert!(
                !err.contains("SECRET"),
                "{bad:?}: the URL is not repeated: {err}"
            );
        }
    }

    #[test]
    fn this_machine_is_loopback_only() {
        for here in [
            "http://127.0.0.1:8080/v1",
            "http://127.8.9.10/v1",
            "http://localhost:11434/v1",
            "http://[::1]:8000/v1",
        ] {
            let u = BaseUrl::parse(here).unwrap();
            assert!(u.is_loopback() && u.is_local(), "{here}");
        }
        for elsewhere in [
            "http://0.0.0.0:8080/v1",
            "http://192.168.1.20:8000/v1",
            "http://10.0.0.5/v1",
            "http://gpu-box.lan/v1",
            "http://evil.localhost/v1",
            "http://localhost.evil.com/v1",
            "http://127.0.0.1.example.com/v1",
            "http://[fd00::1]/v1",
        ] {
            assert!(
                !BaseUrl::parse(elsewhere).unwrap().is_loopback(),
                "{elsewhere}"
            );
        }
    }

    #[test]
    fn local_networks() {
        for local in [
            "http://192.168.1.20:8000/v1",
            "http://10.0.0.5/v1",
            "http://169.254.1.1/v1",
            "http://gpu-box.lan:8000/v1",
            "http://box.local/v1",
            "http://[fd00::1]/v1",
            "http://[fe80::1]/v1",
        ] {
            assert!(BaseUrl::parse(local).unwrap().is_local(), "{local}");
        }
        for remote in [
            "https://api.openai.com/v1",
            "http://8.8.8.8/v1",
            "http://127.0.0.1.example.com/v1",
            "http://localhost.evil.com/v1",
        ] {
            assert!(!BaseUrl::parse(remote).unwrap().is_local(), "{remote}");
        }
    }
}
