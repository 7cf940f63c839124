//! What the frontmatter's keys may be, and the warnings for keys and values a file got wrong
//! (misspelled keys, hooks, memory, isolation, effort, a description with terminal controls).

use super::ClaudeAgentDefinition;
use crate::frontmatter;
use crate::terminal::is_terminal_hazard;

/// The frontmatter keys an agent file may set (compared after `fold_key`) besides those in
/// [`frontmatter::CLAUDE_CODE_KEYS`]: `omitClaudeMd` and ours (`budget`, `maxBudgetUsd`,
/// `outputSchema`).
const OUR_FIELDS: &[&str] = &["omitClaudeMd", "budget", "maxBudgetUsd", "outputSchema"];

/// The agent field `key` looks like a misspelling of (`tool` for `tools`, `permisionMode` for
/// `permissionMode`): at most two edits away once folded, for keys of four characters or more.
pub(super) fn misspelled_field(key: &str) -> Option<&'static str> {
    let folded = frontmatter::fold_key(key);
    if folded.chars().count() < 4 {
        return None;
    }
    frontmatter::CLAUDE_CODE_KEYS
        .iter()
        .chain(OUR_FIELDS)
        .map(|f| (*f, edit_distance(&folded, &frontmatter::fold_key(f))))
        .filter(|(_, d)| (1..=2).contains(d))
        .min_by_key(|(_, d)| *d)
        .map(|(f, _)| f)
}

/// Levenshtein distance of two short strings (keys), by characters.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let swap = usize::from(ca != *cb);
            cur[j + 1] = (prev[j] + swap).min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

/// Warnings for the field values of `def` that will not be acted on and that a person would
/// want to know about: a key that looks like a misspelled agent field, hooks that cannot run,
/// unknown `memory`, `isolation` or `effort` values. As in Claude Code, other keys
/// (`category`, `version`...) are kept in [`metadata`](ClaudeAgentDefinition::metadata)
/// quietly, and an unknown `color` just leaves the name uncoloured.
pub(crate) fn field_warnings(def: &ClaudeAgentDefinition) -> Vec<String> {
    let mut w = Vec::new();
    for key in def.metadata.keys() {
        if let Some(field) = misspelled_field(key) {
            w.push(format!(
                "field `{key}` is not an agent field (did you mean `{field}`?); it has no effect"
            ));
        }
    }
    if let Some(hooks) = &def.hooks {
        let (_, hook_warnings) = crate::hooks::Hooks::from_frontmatter(hooks);
        w.extend(hook_warnings.into_iter().map(|h| format!("hooks: {h}")));
    }
    if let Err(e) = crate::memory::MemoryScope::from_value(def.memory.as_ref()) {
        w.push(e);
    }
    if let Err(e) = crate::extras::parse_isolation(def.isolation.as_deref()) {
        w.push(e);
    }
    if let Some(effort) = &def.effort
        && crate::extras::parse_effort(effort).is_none()
    {
        w.push(format!(
            "unknown `effort: {effort}` (low, medium, high, xhigh or max); the model's default \
             is used"
        ));
    }
    w
}

/// A warning when a description holds characters that would act on a terminal (newlines and
/// tabs are fine); it names up to three of them.
pub(crate) fn description_warning(description: &str) -> Option<String> {
    let mut found: Vec<String> = Vec::new();
    for c in description.chars() {
        if c != '\n' && c != '\t' && is_terminal_hazard(c) {
            let code = format!("U+{:04X}", u32::from(c));
            if !found.contains(&code) {
                found.push(code);
            }
            if found.len() == 3 {
                break;
            }
        }
    }
    if found.is_empty() {
        return None;
    }
    Some(format!(
        "`description` holds terminal control or bidi characters ({}); print it escaped \
         (ClaudeAgentDefinition::description_for_terminal)",
        found.join(", ")
    ))
}
