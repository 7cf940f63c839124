//! The built-in agents, compiled into the binary.

use std::path::Path;

use subagent_spi::SubagentReference;

use crate::KIND;
use crate::definition::{ClaudeAgentDefinition, parse_agent};
use crate::error::ClaudeError;

/// The built-in agents as `(name, Markdown text)`, in registration order.
pub const BUILTIN_AGENTS: &[(&str, &str)] = &[
    (
        "general-purpose",
        include_str!("../agents/general-purpose.md"),
    ),
    ("Explore", include_str!("../agents/Explore.md")),
    ("Plan", include_str!("../agents/Plan.md")),
    ("Bash", include_str!("../agents/Bash.md")),
];

/// The URI prefix of agents compiled into the binary.
pub const EMBEDDED_PREFIX: &str = "embedded:";

/// The names of the built-in agents.
pub fn builtin_names() -> Vec<String> {
    BUILTIN_AGENTS.iter().map(|(n, _)| n.to_string()).collect()
}

/// One `embedded:NAME` reference per built-in agent, as the Claude type contributes them.
pub fn builtin_references() -> Vec<SubagentReference> {
    BUILTIN_AGENTS
        .iter()
        .map(|(n, _)| SubagentReference::new(format!("{EMBEDDED_PREFIX}{n}"), KIND))
        .collect()
}

/// Parses an embedded agent text under the URI `embedded:NAME`.
pub(crate) fn parse_embedded(
    name: &str,
    text: &str,
) -> Result<(ClaudeAgentDefinition, Vec<String>), ClaudeError> {
    let uri = format!("{EMBEDDED_PREFIX}{name}");
    let parsed = parse_agent(Path::new(&uri), text)?;
    let mut def = parsed.definition;
    def.source = None;
    def.reference = SubagentReference::new(uri, KIND);
    let mut warnings = parsed.warnings;
    // The built-ins keep Claude Code's own capitalised names on purpose.
    if BUILTIN_AGENTS.iter().any(|(n, t)| *n == name && *t == text) {
        warnings.retain(|w| !w.contains("lowercase-hyphen"));
    }
    Ok((def, warnings))
}

/// A built-in agent by name (ignoring case).
pub fn builtin_agent(name: &str) -> Result<ClaudeAgentDefinition, ClaudeError> {
    let (n, text) = BUILTIN_AGENTS
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .ok_or_else(|| ClaudeError::UnknownEmbedded {
            name: name.to_string(),
            available: builtin_names(),
        })?;
    parse_embedded(n, text).map(|(d, _)| d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::definition::{PermissionMode, ToolRule};

    #[test]
    fn builtins_parse_cleanly() {
        for (name, text) in BUILTIN_AGENTS {
            let (def, warnings) = parse_embedded(name, text).unwrap();
            assert_eq!(def.name, *name);
            assert!(!def.prompt.is_empty());
            assert!(warnings.is_empty(), "{name}: {warnings:?}");
        }
        let explore = builtin_agent("explore").unwrap();
        assert_eq!(explore.permission_mode, PermissionMode::Plan);
        assert!(
            explore
                .tools
                .as_ref()
                .unwrap()
                .iter()
                .all(|t| !t.matches("Write") && !t.matches("Bash"))
        );
        assert_eq!(builtin_agent("general-purpose").unwrap().tools, None);
        assert_eq!(
            builtin_agent("Bash").unwrap().tools,
            Some(vec![ToolRule::Name("Bash".into())])
        );
        assert_eq!(
            builtin_agent("Plan").unwrap().reference.uri,
            "embedded:Plan"
        );
        assert!(
            builtin_agent("nope")
                .unwrap_err()
                .to_string()
                .contains("Explore")
        );
    }
}
