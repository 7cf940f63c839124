//! An agent's load warnings: what its file asks for that this host will not do. One function,
//! [`agent_load_warnings`], computes them for every host that shows them (the command's run
//! and `agents validate` alike), so what a run warns about and what validation reports agree.

use std::path::PathBuf;

use serde_json::Value;

use crate::definition::{ClaudeAgentDefinition, ModelChoice, ToolRule};
use crate::memory::{self, MemoryScope};

/// What an agent's warnings are checked against: the host's tools, models, skills and
/// directories. Each check runs only when its part is set.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct LoadCheck {
    /// The tool names an agent may be offered (the delegation tools `Task`, `TaskOutput` and
    /// `TaskStop` always count as available). `None`: tool rules are not checked.
    pub tools: Option<Vec<String>>,
    /// The model names and aliases that resolve (`inherit` and `provider:model` specs always
    /// do); an entry ending in `*` stands for every name it begins (`claude-*`: the Claude
    /// model ids). `None`: models are not checked.
    pub models: Option<Vec<String>>,
    /// The skills that can be preloaded. `None`: `skills` is not checked.
    pub skills: Option<Vec<String>>,
    /// The project root (memory of `project` and `local` scope). `None`: memory locations are
    /// not checked.
    pub project_root: Option<PathBuf>,
    /// The home directory (memory of `user` scope).
    pub home: Option<PathBuf>,
}

impl LoadCheck {
    /// Checks nothing but the file's own warnings.
    pub fn new() -> Self {
        Self::default()
    }

    /// Checks tool rules against these tool names.
    #[must_use]
    pub fn tools(mut self, names: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.tools = Some(names.into_iter().map(Into::into).collect());
        self
    }

    /// Checks `model` against these model names and aliases.
    #[must_use]
    pub fn models(mut self, names: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.models = Some(names.into_iter().map(Into::into).collect());
        self
    }

    /// Checks `skills` against these skill names.
    #[must_use]
    pub fn skills(mut self, names: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.skills = Some(names.into_iter().map(Into::into).collect());
        self
    }

    /// Checks where `memory` would be, in the project `root` (and `home` for `user` scope).
    #[must_use]
    pub fn project(mut self, root: impl Into<PathBuf>, home: Option<PathBuf>) -> Self {
        self.project_root = Some(root.into());
        self.home = home;
        self
    }
}

/// The names of the servers of an agent's `mcpServers` (a map's keys, a list's names).
fn mcp_server_names(servers: Option<&Value>) -> Vec<String> {
    match servers {
        Some(Value::Object(map)) => map.keys().cloned().collect(),
        Some(Value::Array(items)) => items
            .iter()
            .flat_map(|i| match i {
                Value::String(s) => vec![s.clone()],
                Value::Object(m) => m.keys().cloned().collect(),
                _ => Vec::new(),
            })
            .collect(),
        Some(Value::String(s)) => vec![s.clone()],
        _ => Vec::new(),
    }
}

/// Every warning loading `def` gives on this host, each naming what is ignored or refused: the
/// file's own ([`ClaudeAgentDefinition::load_warnings`]: lenient YAML, unknown fields and
/// values), then the `tools`/`disallowedTools` entries naming no tool (grouped), a `model` that
/// does not resolve, `skills` not found, and a memory directory or `MEMORY.md` that symlinks
/// lead out of the workspace (or out of `~/.claude/agent-memory`), which runs refuse.
///
/// ```
/// use subagent_claude::{LoadCheck, agent_load_warnings, parse_agent};
/// let text = "---\nname: scout\ndescription: d\ntools: Read, WebSearch, LS\nmodel: fable\n---\n";
/// let def = parse_agent("scout.md".as_ref(), text).unwrap().definition;
/// let check = LoadCheck::new().tools(["Read", "Grep"]).models(["sonnet"]);
/// let w = agent_load_warnings(&def, &check);
/// assert_eq!(w[0], "ignored tools `WebSearch`, `LS` (no such tool here)");
/// assert!(w[1].starts_with("unknown model `fable`"));
/// ```
pub fn agent_load_warnings(def: &ClaudeAgentDefinition, check: &LoadCheck) -> Vec<String> {
    let mut out = def.load_warnings.clone();
    if let Some(tools) = &check.tools {
        let mut names: Vec<&str> = tools.iter().map(String::as_str).collect();
        names.extend(["Task", "TaskOutput", "TaskStop", "SendMessage"]);
        let servers = mcp_server_names(def.mcp_servers.as_ref());
        // `mcp__<server>__...` tools of the agent's own servers are known only once they run.
        let maybe = |rule: &ToolRule| {
            servers
                .iter()
                .any(|s| rule.name().starts_with(&format!("mcp__{s}__")))
        };
        out.extend(crate::toolsel::rule_warnings(def, &names, maybe));
    }
    if let (Some(models), Some(ModelChoice::Named(m))) = (&check.models, &def.model) {
        let lower = m.to_lowercase();
        let known = m.contains(':')
            || models.iter().any(|k| match k.strip_suffix('*') {
                Some(prefix) => lower.starts_with(&prefix.to_lowercase()),
                None => k.eq_ignore_ascii_case(m),
            });
        if !known {
            out.push(format!(
                "unknown model `{}` (not a configured model, alias or Claude model id); it runs \
                 on the session's model instead, or fails where models are strict",
                crate::terminal::escape_for_terminal(m)
            ));
        }
    }
    if let Some(skills) = &check.skills {
        let missing: Vec<String> = def
            .skills
            .iter()
            .filter(|s| !skills.iter().any(|k| k.eq_ignore_ascii_case(s.trim())))
            .map(|s| format!("`{}`", crate::terminal::escape_for_terminal(s)))
            .collect();
        if !missing.is_empty() {
            out.push(format!("skills not found: {}", missing.join(", ")));
        }
    }
    if let (Some(root), Ok(Some(scope))) = (
        &check.project_root,
        MemoryScope::from_value(def.memory.as_ref()),
    ) {
        out.extend(memory::location_warning(
            scope,
            &def.name,
            root,
            check.home.as_deref(),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_servers_tools_are_not_unknown_and_nothing_is_checked_unasked() {
        let text = "---\nname: a\ndescription: d\ntools: Read, mcp__gh__issue, mcp__x__y\n\
                    mcpServers:\n  gh:\n    command: gh-mcp\nmodel: fable\nskills: pdf\n---\n";
        let def = crate::parse_agent("a.md".as_ref(), text)
            .unwrap()
            .definition;
        assert!(agent_load_warnings(&def, &LoadCheck::new()).is_empty());
        let w = agent_load_warnings(
            &def,
            &LoadCheck::new()
                .tools(["Read"])
                .models(["Fable"])
                .skills(["other"]),
        );
        // A prefix entry: every Claude model id is known.
        let text = "---\nname: a\ndescription: d\nmodel: claude-sonnet-4-20250514\n---\n";
        let dated = crate::parse_agent("a.md".as_ref(), text)
            .unwrap()
            .definition;
        assert!(agent_load_warnings(&dated, &LoadCheck::new().models(["claude-*"])).is_empty());
        assert_eq!(
            agent_load_warnings(&dated, &LoadCheck::new().models(["sonnet"])).len(),
            1
        );
        assert_eq!(
            w,
            vec![
                "ignored tools `mcp__x__y` (no such tool here)".to_string(),
                "skills not found: `pdf`".to_string()
            ]
        );
    }
}
