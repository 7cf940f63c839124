//! Finding agents where Claude Code keeps them: project `.claude/agents` directories (walking
//! up from a start directory) and the user's `~/.claude/agents`; and Claude Code's precedence
//! when two of them define one name.
//!
//! Precedence, highest first (as Claude Code ranks them): agents given on the command line
//! (`--agents` directories, which replace discovery in `subagents`), then the project's
//! `.claude/agents` (the nearest first when walking up), then `~/.claude/agents`, then the
//! built-in agents. Claude Code's plugin agents would rank below the user's; `subagents` does
//! not load plugins. The higher directory wins and the other file is listed as shadowed, naming
//! the file that won. Two files of one name in one scope (one directory and its subdirectories,
//! or the given directories together) do not stop anything: as Claude Code keeps one, the first
//! is used — the first in path order within a directory, the directory given first among given
//! ones — and the other is listed in [`Discovery::duplicates`] (hosts say so; a strict
//! validation fails on it).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use subagent_spi::SubagentReference;

use crate::definition::ClaudeAgentDefinition;
use crate::error::ClaudeError;
use crate::resolver::ClaudeSubagentReferences;
use crate::scan::{ScanReport, SkippedFile, scan_dir};

/// Where an agent directory comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum AgentScope {
    /// A project's `.claude/agents`.
    Project,
    /// The user's `~/.claude/agents`.
    User,
    /// A directory given explicitly (`--agents DIR`, `agents` of subagents.toml).
    Cli,
}

impl AgentScope {
    /// `project`, `user` or `cli`.
    pub fn as_str(self) -> &'static str {
        match self {
            AgentScope::Project => "project",
            AgentScope::User => "user",
            AgentScope::Cli => "cli",
        }
    }
}

/// Why `file` (a symlink, say) leads outside `bound` once resolved, or `None` when it stays in.
pub(crate) fn escapes(file: &Path, bound: &Path) -> Option<String> {
    let shown =
        |p: &Path| crate::terminal::escape_for_terminal(&p.display().to_string()).into_owned();
    match std::fs::canonicalize(file) {
        Ok(real) if real.starts_with(bound) => None,
        Ok(real) => Some(format!(
            "it leads outside `{}` (to `{}`); not loaded",
            shown(bound),
            shown(&real)
        )),
        Err(e) => Some(format!("it cannot be resolved ({e}); not loaded")),
    }
}

impl AgentDir {
    /// What the files of this directory must stay inside once symlinks are resolved: the
    /// project (the directory holding `.claude`) for a project directory, the directory itself
    /// for a given one; `None` (no bound) for the user's own `~/.claude/agents`. Blocking.
    pub(crate) fn bound(&self) -> Option<PathBuf> {
        let b = match self.scope {
            AgentScope::User => return None,
            AgentScope::Project => self.path.parent()?.parent()?.to_path_buf(),
            AgentScope::Cli => self.path.clone(),
        };
        std::fs::canonicalize(&b).ok()
    }

    /// A directory of `scope`.
    pub fn new(path: impl Into<PathBuf>, scope: AgentScope) -> Self {
        Self {
            path: path.into(),
            scope,
        }
    }
}

/// One directory to load agents (or skills) from.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct AgentDir {
    /// The directory.
    pub path: PathBuf,
    /// Its scope.
    pub scope: AgentScope,
}

/// The user's home directory from `HOME` (or `USERPROFILE`).
pub fn home_dir() -> Option<PathBuf> {
    std::env::var_os("HOME")
        .or_else(|| std::env::var_os("USERPROFILE"))
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
}

fn claude_dirs(start: &Path, home: Option<&Path>, leaf: &str) -> Vec<AgentDir> {
    let mut out = Vec::new();
    let user = home.map(|h| h.join(".claude").join(leaf));
    for ancestor in start.ancestors() {
        let candidate = ancestor.join(".claude").join(leaf);
        if Some(&candidate) == user.as_ref() {
            continue; // the home directory's is the user scope, listed last
        }
        if candidate.is_dir() {
            out.push(AgentDir {
                path: candidate,
                scope: AgentScope::Project,
            });
        }
    }
    if let Some(u) = user
        && u.is_dir()
    {
        out.push(AgentDir {
            path: u,
            scope: AgentScope::User,
        });
    }
    out
}

/// Existing agent directories in precedence order: project `.claude/agents` from `start` upwards
/// (nearest first), then `<home>/.claude/agents`. Blocking (it checks directories exist).
pub fn agent_dirs(start: &Path, home: Option<&Path>) -> Vec<AgentDir> {
    claude_dirs(start, home, "agents")
}

/// Existing skill directories in the same order: project `.claude/skills` upwards, then
/// `<home>/.claude/skills`. Blocking.
pub fn skill_dirs(start: &Path, home: Option<&Path>) -> Vec<PathBuf> {
    claude_dirs(start, home, "skills")
        .into_iter()
        .map(|d| d.path)
        .collect()
}

/// An agent found by [`discover_agents`].
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct DiscoveredAgent {
    /// A file reference to it (metadata: `name`, `scope`).
    pub reference: SubagentReference,
    /// The definition as loaded during discovery.
    pub definition: Arc<ClaudeAgentDefinition>,
    /// Its scope.
    pub scope: AgentScope,
    /// Its file.
    pub path: PathBuf,
    /// Its warnings.
    pub warnings: Vec<String>,
}

/// An agent hidden by one of the same name (ignoring case) with higher precedence.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ShadowedAgent {
    /// The name.
    pub name: String,
    /// The file that lost.
    pub path: PathBuf,
    /// The file that won.
    pub winner: PathBuf,
}

/// Two agent files of one name (ignoring case) in one scope (the same directory, or two given
/// directories): neither outranks the other, so the first is used (the first in path order; of
/// given directories, the one given first) and the second is not.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct DuplicateAgent {
    /// The name (as the second file writes it).
    pub name: String,
    /// The file used: the one read first.
    pub first: PathBuf,
    /// The file not used.
    pub second: PathBuf,
}

impl std::fmt::Display for DuplicateAgent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "two agents of one scope are named `{}`: {} is used (it comes first in path order), {} is not",
            crate::terminal::escape_for_terminal(&self.name),
            crate::terminal::escape_for_terminal(&self.first.display().to_string()),
            crate::terminal::escape_for_terminal(&self.second.display().to_string()),
        )
    }
}

/// What [`discover_agents`] found.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct Discovery {
    /// The directories scanned, in precedence order.
    pub dirs: Vec<AgentDir>,
    /// One agent per name: the one of the highest-precedence directory.
    pub agents: Vec<DiscoveredAgent>,
    /// Agents hidden by a higher-precedence one of the same name.
    pub shadowed: Vec<ShadowedAgent>,
    /// Names defined twice in one scope: the first file is used, the second is listed here.
    pub duplicates: Vec<DuplicateAgent>,
    /// Files that did not load, with the reason.
    pub skipped: Vec<SkippedFile>,
}

impl Discovery {
    /// The references, ready to register.
    pub fn references(&self) -> Vec<SubagentReference> {
        self.agents.iter().map(|a| a.reference.clone()).collect()
    }

    /// Adds the scan of one directory, ranked below every directory added before it: a name
    /// already defined by an earlier directory is shadowed; a name twice in this one, or in
    /// this and an earlier [`AgentScope::Cli`] directory when this one is given too, is a
    /// duplicate.
    pub fn add_scan(&mut self, dir: AgentDir, report: ScanReport) {
        let known: HashMap<String, (PathBuf, AgentScope)> = self
            .agents
            .iter()
            .map(|a| (a.definition.name.to_lowercase(), (a.path.clone(), a.scope)))
            .collect();
        let mut here: HashMap<String, PathBuf> = HashMap::new();
        self.skipped.extend(report.skipped);
        let bound = dir.bound();
        for a in report.loaded {
            if let Some(reason) = bound.as_deref().and_then(|b| escapes(&a.path, b)) {
                self.skipped.push(SkippedFile {
                    path: a.path,
                    reason,
                    invalid: true,
                });
                continue;
            }
            let key = a.definition.name.to_lowercase();
            if let Some((first, AgentScope::Cli)) = known.get(&key)
                && dir.scope == AgentScope::Cli
            {
                // Given directories are one scope, like Claude Code's `--agents`.
                self.duplicates.push(DuplicateAgent {
                    name: a.definition.name.clone(),
                    first: first.clone(),
                    second: a.path,
                });
                continue;
            }
            if let Some((winner, _)) = known.get(&key) {
                self.shadowed.push(ShadowedAgent {
                    name: a.definition.name.clone(),
                    path: a.path,
                    winner: winner.clone(),
                });
                continue;
            }
            if let Some(first) = here.get(&key) {
                self.duplicates.push(DuplicateAgent {
                    name: a.definition.name.clone(),
                    first: first.clone(),
                    second: a.path,
                });
                continue;
            }
            here.insert(key, a.path.clone());
            self.agents.push(DiscoveredAgent {
                reference: ClaudeSubagentReferences::file(&a.path)
                    .with_metadata("name", a.definition.name.clone())
                    .with_metadata("scope", dir.scope.as_str()),
                definition: a.definition,
                scope: dir.scope,
                path: a.path,
                warnings: a.warnings,
            });
        }
        self.dirs.push(dir);
    }

    /// Scans `dirs` in precedence order (highest first) with [`add_scan`](Self::add_scan).
    pub async fn scan(dirs: Vec<AgentDir>) -> Result<Self, ClaudeError> {
        let mut out = Self::default();
        for dir in dirs {
            let report = scan_dir(dir.path.clone()).await?;
            out.add_scan(dir, report);
        }
        Ok(out)
    }
}

/// Scans the project and user agent directories (see [`agent_dirs`]) with Claude Code's
/// precedence: on a name clash the higher-precedence directory wins and the other file is
/// listed in `shadowed`; a name twice in one directory keeps the first file in path order and
/// lists the other in `duplicates`.
pub async fn discover_agents(
    start: impl Into<PathBuf>,
    home: Option<PathBuf>,
) -> Result<Discovery, ClaudeError> {
    let start = start.into();
    let dirs = tokio::task::spawn_blocking(move || agent_dirs(&start, home.as_deref()))
        .await
        .unwrap_or_default();
    Discovery::scan(dirs).await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn agent(dir: &Path, file: &str, name: &str, desc: &str) {
        std::fs::create_dir_all(dir).unwrap();
        std::fs::write(
            dir.join(file),
            format!("---\nname: {name}\ndescription: {desc}\n---\n"),
        )
        .unwrap();
    }

    #[tokio::test]
    async fn project_wins_over_user_and_walks_up() {
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().join("home");
        let project = tmp.path().join("proj");
        let start = project.join("src/deep");
        std::fs::create_dir_all(&start).unwrap();
        agent(&home.join(".claude/agents"), "r.md", "reviewer", "user one");
        agent(&home.join(".claude/agents"), "u.md", "only-user", "u");
        agent(
            &project.join(".claude/agents"),
            "r.md",
            "Reviewer",
            "project one",
        );

        let d = discover_agents(&start, Some(home.clone())).await.unwrap();
        assert_eq!(d.dirs.len(), 2);
        assert_eq!(d.dirs[0].scope, AgentScope::Project);
        let names: Vec<_> = d
            .agents
            .iter()
            .map(|a| a.definition.name.as_str())
            .collect();
        assert_eq!(names, vec!["Reviewer", "only-user"]);
        assert_eq!(d.agents[0].definition.description, "project one");
        assert_eq!(d.agents[0].reference.metadata("scope"), Some("project"));
        assert_eq!(d.shadowed.len(), 1);
        assert_eq!(d.shadowed[0].name, "reviewer");
        assert!(d.shadowed[0].winner.starts_with(&project));
        assert_eq!(d.references().len(), 2);
        assert!(d.duplicates.is_empty());

        // Twice in one directory: a duplicate naming both files, not a shadow.
        agent(&project.join(".claude/agents"), "s.md", "REVIEWER", "again");
        let d = discover_agents(&start, Some(home.clone())).await.unwrap();
        assert_eq!(d.duplicates.len(), 1, "{:?}", d.duplicates);
        let text = d.duplicates[0].to_string();
        assert!(text.contains("r.md") && text.contains("s.md"), "{text}");
        // The first in path order is used; the run goes on with it.
        assert!(d.duplicates[0].first.ends_with("r.md"));
        let reviewer = d.agents.iter().find(|a| a.definition.name == "Reviewer");
        assert!(reviewer.is_some_and(|a| a.path.ends_with("r.md")));
        std::fs::remove_file(project.join(".claude/agents/s.md")).unwrap();

        // A project agent file linked out of the project is not loaded.
        #[cfg(unix)]
        {
            let outside = tmp.path().join("outside.md");
            std::fs::write(
                &outside,
                "---\nname: outsider\ndescription: o\n---\nsecret\n",
            )
            .unwrap();
            let link = project.join(".claude/agents/link.md");
            std::os::unix::fs::symlink(&outside, &link).unwrap();
            let d = discover_agents(&start, Some(home.clone())).await.unwrap();
            assert!(!d.agents.iter().any(|a| a.definition.name == "outsider"));
            let s = d.skipped.iter().find(|s| s.path == link).unwrap();
            assert!(s.invalid && s.reason.contains("leads outside"), "{s:?}");
            std::fs::remove_file(&link).unwrap();
        }

        // Starting inside home itself: home's .claude/agents counts once, as user scope.
        let d = discover_agents(&home, Some(home.clone())).await.unwrap();
        assert_eq!(d.dirs.len(), 1);
        assert_eq!(d.dirs[0].scope, AgentScope::User);
    }

    #[tokio::test]
    async fn given_directories_are_one_scope() {
        let tmp = tempfile::tempdir().unwrap();
        let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
        agent(&a, "x.md", "x", "first");
        agent(&b, "x.md", "X", "second");
        agent(&b, "y.md", "y", "only");
        let d = Discovery::scan(vec![
            AgentDir::new(&a, AgentScope::Cli),
            AgentDir::new(&b, AgentScope::Cli),
        ])
        .await
        .unwrap();
        assert_eq!(d.duplicates.len(), 1, "{:?}", d.duplicates);
        assert!(d.shadowed.is_empty());
        assert_eq!(d.agents.len(), 2);
        // A project directory above a user one shadows instead.
        let d = Discovery::scan(vec![
            AgentDir::new(&a, AgentScope::Project),
            AgentDir::new(&b, AgentScope::User),
        ])
        .await
        .unwrap();
        assert!(d.duplicates.is_empty());
        assert_eq!(d.shadowed.len(), 1);
    }
}
