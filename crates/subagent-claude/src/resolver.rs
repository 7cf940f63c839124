//! The `CLAUDE` resolver: file paths, directories and `embedded:NAME` URIs.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use subagent_spi::{SubagentDefinition, SubagentError, SubagentReference, SubagentResolver};

use crate::KIND;
use crate::builtin::{BUILTIN_AGENTS, EMBEDDED_PREFIX, parse_embedded};
use crate::definition::ClaudeAgentDefinition;
use crate::error::ClaudeError;
use crate::scan::{SkippedFile, load_agent_file, scan_dir};

/// Resolves `CLAUDE` references.
///
/// URIs:
/// - a file path, with or without a `file:` / `file://` prefix;
/// - a directory: scanned recursively for `*.md`; resolves when it holds exactly one agent
///   (use [`ClaudeSubagentReferences::from_dir`] to register every agent of a directory);
/// - `embedded:NAME`: an agent compiled into the binary (the built-ins, plus any added with
///   [`with_embedded`](Self::with_embedded)).
///
/// Relative paths are taken against the base directory when one is set, else the process's
/// current directory. Warnings (lenient YAML, odd names) are logged with `tracing`.
#[derive(Debug, Clone)]
pub struct ClaudeResolver {
    embedded: BTreeMap<String, (String, Arc<str>)>,
    base_dir: Option<PathBuf>,
}

impl Default for ClaudeResolver {
    fn default() -> Self {
        Self::new()
    }
}

impl ClaudeResolver {
    /// A resolver knowing the built-in embedded agents.
    pub fn new() -> Self {
        let mut embedded = BTreeMap::new();
        for (name, text) in BUILTIN_AGENTS {
            embedded.insert(name.to_lowercase(), (name.to_string(), Arc::from(*text)));
        }
        Self {
            embedded,
            base_dir: None,
        }
    }

    /// Adds (or replaces) an embedded agent reachable as `embedded:NAME`, e.g. from
    /// `include_str!` (builder style).
    #[must_use]
    pub fn with_embedded(mut self, name: impl Into<String>, text: impl Into<Arc<str>>) -> Self {
        let name = name.into();
        self.embedded
            .insert(name.to_lowercase(), (name, text.into()));
        self
    }

    /// Sets the directory relative paths are resolved against (builder style).
    #[must_use]
    pub fn with_base_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.base_dir = Some(dir.into());
        self
    }

    /// The names reachable as `embedded:NAME`.
    pub fn embedded_names(&self) -> Vec<String> {
        self.embedded.values().map(|(n, _)| n.clone()).collect()
    }

    fn path_of(&self, uri: &str) -> PathBuf {
        let raw = uri
            .strip_prefix("file://")
            .or_else(|| uri.strip_prefix("file:"))
            .unwrap_or(uri);
        let p = Path::new(raw);
        match &self.base_dir {
            Some(base) if p.is_relative() => base.join(p),
            _ => p.to_path_buf(),
        }
    }

    /// Resolves a reference into the typed definition, as a [`SubagentError`] naming the URI
    /// on failure; the warnings are kept in the definition (`load_warnings`) for hosts to show
    /// and logged for the record.
    pub(crate) async fn resolve_typed(
        &self,
        reference: &SubagentReference,
    ) -> Result<ClaudeAgentDefinition, SubagentError> {
        let (def, warnings) = self
            .resolve_definition(reference)
            .await
            .map_err(|e| SubagentError::resolution(reference.uri.clone(), e))?;
        for w in warnings {
            tracing::debug!(uri = %reference.uri, agent = %def.name, "{w}");
        }
        Ok(def)
    }

    /// Resolves a reference into the typed definition and its warnings.
    pub async fn resolve_definition(
        &self,
        reference: &SubagentReference,
    ) -> Result<(ClaudeAgentDefinition, Vec<String>), ClaudeError> {
        let uri = reference.uri.trim();
        if let Some(name) = uri.strip_prefix(EMBEDDED_PREFIX) {
            let (n, text) = self
                .embedded
                .get(&name.trim().to_lowercase())
                .ok_or_else(|| ClaudeError::UnknownEmbedded {
                    name: name.to_string(),
                    available: self.embedded_names(),
                })?;
            let (mut def, warnings) = parse_embedded(n, text)?;
            def.reference = reference.clone();
            return Ok((def, warnings));
        }
        let path = self.path_of(uri);
        let meta = tokio::fs::metadata(&path)
            .await
            .map_err(|source| ClaudeError::Io {
                path: path.clone(),
                source,
            })?;
        let (mut def, warnings) = if meta.is_dir() {
            let mut report = scan_dir(path.clone()).await?;
            match report.loaded.len() {
                1 => {
                    let a = report.loaded.remove(0);
                    (Arc::unwrap_or_clone(a.definition), a.warnings)
                }
                0 => {
                    return Err(ClaudeError::Directory {
                        path,
                        message: format!(
                            "holds no agent files ({} Markdown files skipped)",
                            report.skipped.len()
                        ),
                    });
                }
                n => {
                    let names: Vec<_> = report
                        .loaded
                        .iter()
                        .map(|a| a.definition.name.as_str())
                        .collect();
                    return Err(ClaudeError::Directory {
                        path,
                        message: format!(
                            "holds {n} agents ({}); a reference names one agent, so expand the \
                             directory into one reference per file (ClaudeSubagentReferences::from_dir)",
                            names.join(", ")
                        ),
                    });
                }
            }
        } else {
            load_agent_file(path).await?
        };
        def.reference = reference.clone();
        Ok((def, warnings))
    }
}

#[async_trait]
impl SubagentResolver for ClaudeResolver {
    fn can_resolve(&self, reference: &SubagentReference) -> bool {
        KIND.matches(reference.kind.as_str())
    }

    async fn resolve(
        &self,
        reference: &SubagentReference,
    ) -> Result<Arc<dyn SubagentDefinition>, SubagentError> {
        Ok(Arc::new(self.resolve_typed(reference).await?))
    }
}

/// Helpers that build `CLAUDE` references.
#[derive(Debug, Clone, Copy)]
pub struct ClaudeSubagentReferences;

impl ClaudeSubagentReferences {
    /// A reference to one agent file.
    pub fn file(path: impl AsRef<Path>) -> SubagentReference {
        SubagentReference::new(path.as_ref().to_string_lossy().into_owned(), KIND)
    }

    /// A reference to an embedded agent.
    pub fn embedded(name: &str) -> SubagentReference {
        SubagentReference::new(format!("{EMBEDDED_PREFIX}{name}"), KIND)
    }

    /// Expands a directory into one reference per agent file it holds (recursively), with the
    /// agent's name in metadata `name`; files that are not agents come back as skipped.
    pub async fn from_dir(
        dir: impl Into<PathBuf>,
    ) -> Result<(Vec<SubagentReference>, Vec<SkippedFile>), ClaudeError> {
        let report = scan_dir(dir).await?;
        let refs = report
            .loaded
            .iter()
            .map(|a| Self::file(&a.path).with_metadata("name", a.definition.name.clone()))
            .collect();
        Ok((refs, report.skipped))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn resolves_files_dirs_and_embedded() {
        let dir = tempfile::tempdir().unwrap();
        let one = dir.path().join("one");
        std::fs::create_dir(&one).unwrap();
        std::fs::write(one.join("a.md"), "---\nname: a\ndescription: A\n---\nbody").unwrap();
        std::fs::write(one.join("README.md"), "# readme").unwrap();
        let r =
            ClaudeResolver::new().with_embedded("mine", "---\nname: mine\ndescription: M\n---\n");

        let file = SubagentReference::new(format!("file:{}", one.join("a.md").display()), KIND);
        let def = r.resolve(&file).await.unwrap();
        assert_eq!(def.name(), "a");
        assert_eq!(def.reference().uri, file.uri);
        let typed = def.downcast_ref::<ClaudeAgentDefinition>().unwrap();
        assert_eq!(typed.prompt, "body");

        let d = SubagentReference::new(one.display().to_string(), KIND);
        assert_eq!(r.resolve(&d).await.unwrap().name(), "a");

        std::fs::write(one.join("b.md"), "---\nname: b\ndescription: B\n---\n").unwrap();
        let err = r.resolve(&d).await.unwrap_err().to_string();
        assert!(err.contains("holds 2 agents (a, b)"), "{err}");

        let (refs, skipped) = ClaudeSubagentReferences::from_dir(&one).await.unwrap();
        assert_eq!(refs.len(), 2);
        assert_eq!(refs[1].metadata("name"), Some("b"));
        assert_eq!(skipped.len(), 1);

        let e = ClaudeSubagentReferences::embedded("explore");
        assert_eq!(r.resolve(&e).await.unwrap().name(), "Explore");
        let m = ClaudeSubagentReferences::embedded("mine");
        assert_eq!(r.resolve(&m).await.unwrap().name(), "mine");
        let bad = ClaudeSubagentReferences::embedded("zzz");
        let err = r.resolve(&bad).await.unwrap_err().to_string();
        assert!(
            err.contains("embedded:zzz") && err.contains("general-purpose"),
            "{err}"
        );

        let missing = ClaudeSubagentReferences::file(dir.path().join("nope.md"));
        let err = r.resolve(&missing).await.unwrap_err().to_string();
        assert!(err.contains("nope.md"), "{err}");
        assert!(r.can_resolve(&SubagentReference::new("x", "claude")));
        assert!(!r.can_resolve(&SubagentReference::new("x", "A2A")));
    }
}
