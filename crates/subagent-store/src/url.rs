//! Naming a store: `memory`, `sqlite:PATH` or `postgres://...`.

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use crate::StoreError;

/// Where durable state lives, as given by `--store URL` or `store = "..."`.
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum StoreUrl {
    /// Nothing persists; everything is kept in bounded memory.
    Memory,
    /// One SQLite file (WAL mode), created with its directory when missing.
    Sqlite(PathBuf),
    /// A PostgreSQL database, shared by every process given the same URL.
    Postgres(String),
}

impl StoreUrl {
    /// The URL with any password replaced by `***`, safe for logs and messages.
    pub fn redacted(&self) -> String {
        self.to_string()
    }

    /// The default for the command line: SQLite under the user's data directory
    /// ([`default_sqlite_path`]), or memory when no such directory can be found.
    pub fn default_for_cli() -> StoreUrl {
        default_sqlite_path().map_or(StoreUrl::Memory, StoreUrl::Sqlite)
    }
}

/// `$XDG_DATA_HOME/subagents/ledger.db`, else `$HOME/.local/share/subagents/ledger.db`; `None`
/// when neither variable is set to an absolute path.
pub fn default_sqlite_path() -> Option<PathBuf> {
    let absolute = |v: std::ffi::OsString| Some(PathBuf::from(v)).filter(|p| p.is_absolute());
    let data = std::env::var_os("XDG_DATA_HOME")
        .and_then(absolute)
        .or_else(|| {
            std::env::var_os("HOME")
                .and_then(absolute)
                .map(|h| h.join(".local/share"))
        })?;
    Some(data.join("subagents").join("ledger.db"))
}

impl FromStr for StoreUrl {
    type Err = StoreError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.trim();
        let invalid = |reason: &str| StoreError::InvalidUrl {
            url: redact(s),
            reason: reason.to_owned(),
        };
        if s.eq_ignore_ascii_case("memory") || s.eq_ignore_ascii_case("memory:") {
            return Ok(StoreUrl::Memory);
        }
        if let Some(rest) = s.strip_prefix("sqlite:") {
            let path = rest.strip_prefix("//").unwrap_or(rest);
            let path = path.split('?').next().unwrap_or_default();
            if path.is_empty() {
                return Err(invalid("no file path after sqlite:"));
            }
            if path == ":memory:" {
                return Err(invalid("use `memory` for a store that does not persist"));
            }
            return Ok(StoreUrl::Sqlite(PathBuf::from(path)));
        }
        if s.starts_with("postgres://") || s.starts_with("postgresql://") {
            return Ok(StoreUrl::Postgres(s.to_owned()));
        }
        Err(invalid("unknown scheme"))
    }
}

impl fmt::Display for StoreUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreUrl::Memory => f.write_str("memory"),
            StoreUrl::Sqlite(p) => write!(f, "sqlite:{}", p.display()),
            StoreUrl::Postgres(url) => f.write_str(&redact(url)),
        }
    }
}

impl fmt::Debug for StoreUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "StoreUrl({self})")
    }
}

/// `scheme://user:secret@host/...` → `scheme://user:***@host/...`; a `password=` query
/// parameter is masked too.
fn redact(url: &str) -> String {
    let mut out = url.to_owned();
    if let Some(scheme_end) = out.find("://") {
        let auth_start = scheme_end + 3;
        let auth_end = out[auth_start..]
            .find(['/', '?', '#'])
            .map_or(out.len(), |i| auth_start + i);
        if let Some(at) = out[auth_start..auth_end].rfind('@') {
            let userinfo = &out[auth_start..auth_start + at];
            if let Some(colon) = userinfo.find(':') {
                out.replace_range(auth_start + colon + 1..auth_start + at, "***");
            }
        }
    }
    if let Some(q) = out.find('?') {
        let (head, query) = out.split_at(q + 1);
        let masked: Vec<String> = query
            .split('&')
            .map(|kv| match kv.split_once('=') {
                Some((k, _)) if k.eq_ignore_ascii_case("password") => format!("{k}=***"),
                _ => kv.to_owned(),
            })
            .collect();
        out = format!("{head}{}", masked.join("&"));
    }
    out
}

/// The directory a SQLite file lives in, if it has one.
pub(crate) fn parent_dir(path: &Path) -> Option<&Path> {
    path.parent().filter(|p| !p.as_os_str().is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_three_schemes() {
        assert_eq!("memory".parse::<StoreUrl>().unwrap(), StoreUrl::Memory);
        assert_eq!(
            "sqlite:/tmp/x.db".parse::<StoreUrl>().unwrap(),
            StoreUrl::Sqlite("/tmp/x.db".into())
        );
        assert_eq!(
            "sqlite:///tmp/x.db".parse::<StoreUrl>().unwrap(),
            StoreUrl::Sqlite("/tmp/x.db".into())
        );
        assert_eq!(
            "sqlite:rel/x.db".parse::<StoreUrl>().unwrap(),
            StoreUrl::Sqlite("rel/x.db".into())
        );
        assert!(matches!(
            "postgresql://u@h/db".parse::<StoreUrl>().unwrap(),
            StoreUrl::Postgres(_)
        ));
    }

    #[test]
    fn rejects_unknown_and_empty() {
        for bad in ["mysql://x", "sqlite:", "", "sqlite::memory:"] {
            let err = bad.parse::<StoreUrl>().unwrap_err().to_string();
            assert!(err.contains("invalid store URL"), "{bad}: {err}");
        }
    }

    #[test]
    fn never_shows_a_password() {
        let url: StoreUrl = "postgres://app:s3cret@db.example:5432/x?password=also&sslmode=require"
            .parse()
            .unwrap();
        let shown = format!("{url} {url:?} {}", url.redacted());
        assert!(
            !shown.contains("s3cret") && !shown.contains("also"),
            "{shown}"
        );
        assert!(
            shown.contains("postgres://app:***@db.example:5432/x"),
            "{shown}"
        );
        let err = "pg://app:s3cret@h/x".parse::<StoreUrl>().unwrap_err();
        assert!(!err.to_string().contains("s3cret"), "{err}");
    }
}
