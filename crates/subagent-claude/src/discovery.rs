//! Finding agents where Claude Code keeps them: project `.claude/agents` directories (walking
//! up from a start directory) and the user's `~/.claude/agents`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use subagent_spi::SubagentReference;

use crate::definition::ClaudeAgentDefinition;
use crate::error::ClaudeError;
use crate::resolver::ClaudeSubagentReferences;
use crate::scan::{SkippedFile, scan_dir};

/// Where an agent directory comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum AgentScope {
    /// A project's `.claude/agents`.
    Project,
    /// The user's `~/.claude/agents`.
    User,
}

impl AgentScope {
    /// `project` or `user`.
    pub fn as_str(self) -> &'static str {
        match self {
            AgentScope::Project => "project",
            AgentScope::User => "user",
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

/// What [`discover_agents`] found.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct Discovery {
    /// The directories scanned, in precedence order.
    pub dirs: Vec<AgentDir>,
    /// One agent per name; the project wins over the user.
    pub agents: Vec<DiscoveredAgent>,
    /// Agents hidden by a higher-precedence one of the same name.
    pub shadowed: Vec<ShadowedAgent>,
    /// Files that did not load, with the reason.
    pub skipped: Vec<SkippedFile>,
}

impl Discovery {
    /// The references, ready to register.
    pub fn references(&self) -> Vec<SubagentReference> {
        self.agents.iter().map(|a| a.reference.clone()).collect()
    }
}

/// Scans the project and user agent directories (see [`agent_dirs`]); on a name clash the
/// higher-precedence directory wins and the other file is listed in `shadowed`.
pub async fn discover_agents(
    start: impl Into<PathBuf>,
    home: Option<PathBuf>,
) -> Result<Discovery, ClaudeError> {
    let start = start.into();
    let dirs = tokio::task::spawn_blocking(move || agent_dirs(&start, home.as_deref()))
        .await
        .unwrap_or_default();
    let mut out = Discovery {
        dirs: dirs.clone(),
        ..Discovery::default()
    };
    let mut winners: HashMap<String, PathBuf> = HashMap::new();
    for dir in dirs {
        let report = scan_dir(dir.path.clone()).await?;
        out.skipped.extend(report.skipped);
        for a in report.loaded {
            let key = a.definition.name.to_lowercase();
            if let Some(winner) = winners.get(&key) {
                out.shadowed.push(ShadowedAgent {
                    name: a.definition.name.clone(),
                    path: a.path,
                    winner: winner.clone(),
                });
                continue;
            }
            winners.insert(key, a.path.clone());
            out.agents.push(DiscoveredAgent {
                reference: ClaudeSubagentReferences::file(&a.path)
                    .with_metadata("name", a.definition.name.clone())
                    .with_metadata("scope", dir.scope.as_str()),
                definition: a.definition,
                scope: dir.scope,
                warnings: a.warnings,
            });
        }
    }
    Ok(out)
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
        assert_eq!(d.references().len(), 2);

        // Starting inside home itself: home's .claude/agents counts once, as user scope.
        let d = discover_agents(&home, Some(home.clone())).await.unwrap();
        assert_eq!(d.dirs.len(), 1);
        assert_eq!(d.dirs[0].scope, AgentScope::User);
    }
}
