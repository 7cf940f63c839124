//! Finding the agent a command names (`task NAME`, `run --agent NAME`): its name, the slug
//! `agents list` prints, or the name with case and separators aside; an unknown name gets
//! "did you mean" suggestions.

use std::sync::Arc;

use subagents::spi::SubagentDefinition;
use subagents::task_tool::TaskTool;

use crate::error::CliError;
use crate::output::terminal_safe;

/// At most this many names are suggested.
const SUGGESTIONS: usize = 3;

/// `name` without case and separators (`Product Manager`, `product-manager`, `product_manager`
/// read alike).
fn folded(name: &str) -> String {
    name.chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_lowercase())
        .collect()
}

/// The agent `name` (given with `flag`, for the message) names: exactly or ignoring case, else
/// the agent whose slug it is (`agents list` prints `product-manager-1a2b3c4d` for `Product
/// Manager`), else the one agent whose name reads the same with case and separators aside. An
/// unknown name is a configuration error (exit 2) suggesting the closest names.
pub(crate) fn agent<'a>(
    task: &'a TaskTool,
    name: &str,
    flag: &str,
) -> Result<&'a Arc<dyn SubagentDefinition>, CliError> {
    if let Some(def) = task.find(name) {
        return Ok(def);
    }
    let agents = task.agents();
    let trimmed = name.trim();
    if let Some(def) = agents
        .iter()
        .find(|a| subagents::claude::agent_slug(a.name()) == trimmed)
    {
        return Ok(def);
    }
    let key = folded(trimmed);
    let alike: Vec<_> = agents
        .iter()
        .filter(|a| !key.is_empty() && folded(a.name()) == key)
        .collect();
    if let [only] = alike.as_slice() {
        return Ok(only);
    }
    Err(CliError::Config(unknown(agents, trimmed, flag)))
}

/// "unknown agent `X`; did you mean `Y`?" with the closest names (by edit distance on the
/// folded names), or the first names when none is close.
fn unknown(agents: &[Arc<dyn SubagentDefinition>], name: &str, flag: &str) -> String {
    let key = folded(name);
    let mut scored: Vec<(usize, &str)> = agents
        .iter()
        .map(|a| {
            (
                strsim::damerau_levenshtein(&key, &folded(a.name())),
                a.name(),
            )
        })
        .filter(|(d, n)| *d <= (folded(n).len().max(key.len()) / 3).max(2))
        .collect();
    scored.sort_by_key(|(d, _)| *d);
    let close: Vec<String> = scored
        .iter()
        .take(SUGGESTIONS)
        .map(|(_, n)| format!("`{}`", terminal_safe(n)))
        .collect();
    let what = format!("unknown agent `{}`{flag}", terminal_safe(name));
    if !close.is_empty() {
        return format!(
            "{what}; did you mean {}? (`subagents agents list` shows all {})",
            close.join(" or "),
            agents.len()
        );
    }
    let names: Vec<String> = agents
        .iter()
        .take(20)
        .map(|a| terminal_safe(a.name()).into_owned())
        .collect();
    let more = agents.len().saturating_sub(names.len());
    format!(
        "{what}; available agents: {}{}",
        names.join(", "),
        if more > 0 {
            format!(" and {more} more (`subagents agents list`)")
        } else {
            String::new()
        }
    )
}

#[cfg(test)]
mod tests {
    use super::folded;

    #[test]
    fn names_fold_case_and_separators() {
        assert_eq!(folded("Product Manager"), "productmanager");
        assert_eq!(folded("product-manager"), "productmanager");
        assert_eq!(folded("product_manager"), "productmanager");
    }
}
