//! Choosing an agent's tools from the configured set: `disallowedTools` first, then `tools`.

use std::sync::Arc;

use async_trait::async_trait;
use subagent_spi::{TaskContext, Tool, ToolError, ToolOutput};

use crate::definition::{ClaudeAgentDefinition, ToolRule, is_task_name};

/// The tools an agent gets, and warnings about its rules.
pub(crate) struct Selection {
    pub tools: Vec<Arc<dyn Tool>>,
    pub warnings: Vec<String>,
}

/// The companions of the delegation tool: granted and withheld together with `Task`.
const COMPANIONS: [&str; 3] = ["TaskOutput", "TaskStop", "SendMessage"];

/// True for the delegation tool (`Task`/`Agent`) and its companions (`TaskOutput`, `TaskStop`,
/// `SendMessage`).
pub(crate) fn is_delegation_tool(name: &str) -> bool {
    is_task_name(name) || COMPANIONS.contains(&name)
}

/// The built-in read-only agents (`Explore`, `Plan`) never delegate, as in Claude Code.
pub(crate) fn never_delegates(def: &ClaudeAgentDefinition) -> bool {
    matches!(
        def.reference.uri.as_str(),
        "embedded:Explore" | "embedded:Plan"
    )
}

/// True when `rule` covers the tool `name`: directly, or as a delegation rule covering a
/// companion of the delegation tool.
fn covers(rule: &ToolRule, name: &str) -> bool {
    rule.matches(name) || (COMPANIONS.contains(&name) && rule.is_delegation())
}

/// What `def`'s `tools` and `disallowedTools` rules warn about against the tool names
/// `names` (a rule for which `maybe` says yes is taken as available: tools only known at run
/// time, such as those of the agent's `mcpServers`). Entries naming no tool are grouped into
/// one warning per field; the delegation tools never count as unknown (they are withheld
/// beyond the nesting limit). Shared by [`select_tools`] (each run) and
/// [`agent_load_warnings`](crate::agent_load_warnings) (at load).
pub(crate) fn rule_warnings(
    def: &ClaudeAgentDefinition,
    names: &[&str],
    maybe: impl Fn(&ToolRule) -> bool,
) -> Vec<String> {
    let mut warnings = Vec::new();
    let unknown = |rule: &ToolRule| {
        !rule.is_delegation() && !names.iter().any(|n| rule.matches(n)) && !maybe(rule)
    };
    let quoted = |rules: &[&ToolRule]| {
        rules
            .iter()
            .map(|r| format!("`{r}`"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut unknown_denied = Vec::new();
    for rule in &def.disallowed_tools {
        if unknown(rule) {
            unknown_denied.push(rule);
        } else if let ToolRule::Scoped { name, .. } = rule
            && !rule.is_delegation()
        {
            warnings.push(format!(
                "`disallowedTools` entry `{rule}`: argument rules are not enforced, so the whole \
                 `{name}` tool is withheld"
            ));
        }
    }
    let mut unknown_granted = Vec::new();
    for rule in def.tools.iter().flatten() {
        match rule {
            ToolRule::Scoped { name, .. } if !rule.is_delegation() => warnings.push(format!(
                "`tools` entry `{rule}`: argument rules are not enforced, so `{name}` is not \
                 granted (list `{name}` to grant the whole tool)"
            )),
            _ if unknown(rule) => unknown_granted.push(rule),
            _ => {}
        }
    }
    if !unknown_granted.is_empty() {
        warnings.insert(
            0,
            format!(
                "ignored tools {} (no such tool here)",
                quoted(&unknown_granted)
            ),
        );
    }
    if !unknown_denied.is_empty() {
        warnings.push(format!(
            "`disallowedTools` entries {} match no tool here",
            quoted(&unknown_denied)
        ));
    }
    warnings
}

/// Filters `available` for `def`:
/// 1. every tool matching a `disallowedTools` rule is removed (a scoped rule such as
///    `Bash(rm:*)` removes the whole tool, since argument-level rules are not enforced);
///    `Task`/`Agent` removes `TaskOutput` and `TaskStop` too;
/// 2. when `tools` is present, only tools matching one of its rules remain; a scoped rule other
///    than `Agent(...)`/`Task(...)` grants nothing (granting the whole tool would widen access);
///    `Task`/`Agent` grants `TaskOutput` and `TaskStop` too.
///
/// The delegation tools are in `available` only below the nesting limit (the caller adds the
/// context's), so a rule naming `Task` beyond it is not an error. Other rules naming no
/// available tool produce a warning; nothing unknown is ever granted.
pub(crate) fn select_tools(def: &ClaudeAgentDefinition, available: &[Arc<dyn Tool>]) -> Selection {
    let names: Vec<&str> = available.iter().map(|t| t.name()).collect();
    let warnings = rule_warnings(def, &names, |_| false);
    let unknown = |rule: &ToolRule| !rule.is_delegation() && !names.iter().any(|n| rule.matches(n));
    let grants: Vec<&ToolRule> = def
        .tools
        .iter()
        .flatten()
        .filter(|rule| match rule {
            ToolRule::Scoped { .. } if !rule.is_delegation() => false,
            _ => !unknown(rule),
        })
        .collect();

    let tools = available
        .iter()
        .filter(|t| !def.disallowed_tools.iter().any(|r| covers(r, t.name())))
        .filter(|t| match &def.tools {
            None => true,
            Some(_) => grants.iter().any(|r| covers(r, t.name())),
        })
        .map(|t| {
            // `Agent(a, b)`: the delegation tool, restricted to those agents.
            let only: Option<Vec<String>> = if is_task_name(t.name()) {
                grants.iter().find_map(|r| match r {
                    ToolRule::Scoped { name, spec } if is_task_name(name) => Some(
                        spec.split(',')
                            .map(|s| s.trim().to_string())
                            .filter(|s| !s.is_empty())
                            .collect(),
                    ),
                    _ => None,
                })
            } else {
                None
            };
            match only {
                Some(allowed) if !allowed.is_empty() => Arc::new(RestrictedDelegation {
                    inner: t.clone(),
                    allowed,
                }) as Arc<dyn Tool>,
                _ => t.clone(),
            }
        })
        .collect();
    Selection { tools, warnings }
}

/// The delegation tool limited to the agents an `Agent(a, b)` rule names.
struct RestrictedDelegation {
    inner: Arc<dyn Tool>,
    allowed: Vec<String>,
}

#[async_trait]
impl Tool for RestrictedDelegation {
    wrapped_tool_identity!();

    fn description(&self) -> String {
        format!(
            "{}\n\nYou may delegate only to: {}.",
            self.inner.description(),
            self.allowed.join(", ")
        )
    }

    async fn call(
        &self,
        input: serde_json::Value,
        ctx: &TaskContext,
    ) -> Result<ToolOutput, ToolError> {
        let wanted = input
            .get("subagent_type")
            .and_then(serde_json::Value::as_str)
            .unwrap_or("");
        // A resume continues an earlier run and names no new agent.
        let resuming = input.get("resume").is_some_and(|v| !v.is_null());
        if !resuming && !self.allowed.iter().any(|a| a.eq_ignore_ascii_case(wanted)) {
            return Err(ToolError::denied(
                self.inner.name(),
                format!(
                    "this agent may delegate only to: {} (asked for `{wanted}`)",
                    self.allowed.join(", ")
                ),
            ));
        }
        self.inner.call(input, ctx).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::definition::parse_tool_list;

    struct Named(&'static str);

    #[async_trait]
    impl Tool for Named {
        fn name(&self) -> &str {
            self.0
        }
        fn description(&self) -> String {
            String::new()
        }
        fn input_schema(&self) -> serde_json::Value {
            serde_json::json!({"type": "object"})
        }
        async fn call(
            &self,
            _: serde_json::Value,
            _: &TaskContext,
        ) -> Result<ToolOutput, ToolError> {
            Ok(ToolOutput::text(""))
        }
    }

    /// The base set, plus the delegation tools when below the nesting limit.
    fn set(with_task: bool) -> Vec<Arc<dyn Tool>> {
        [
            "Read",
            "Write",
            "Bash",
            "mcp__gh__issue",
            "mcp__gh__pr",
            "mcp__x__y",
            "Task",
            "TaskOutput",
            "TaskStop",
            "SendMessage",
        ]
        .into_iter()
        .filter(|n| with_task || !is_delegation_tool(n))
        .map(|n| Arc::new(Named(n)) as Arc<dyn Tool>)
        .collect()
    }

    fn names(def: &ClaudeAgentDefinition, with_task: bool) -> (Vec<String>, Vec<String>) {
        let s = select_tools(def, &set(with_task));
        (
            s.tools.iter().map(|t| t.name().to_string()).collect(),
            s.warnings,
        )
    }

    #[test]
    fn absent_tools_means_all_but_task_at_depth_limit() {
        let d = ClaudeAgentDefinition::new("a", "d", "p");
        let (n, w) = names(&d, false);
        assert_eq!(
            n,
            [
                "Read",
                "Write",
                "Bash",
                "mcp__gh__issue",
                "mcp__gh__pr",
                "mcp__x__y"
            ]
        );
        assert!(w.is_empty());
        let (n, _) = names(&d, true);
        assert!(n.ends_with(&[
            "Task".into(),
            "TaskOutput".into(),
            "TaskStop".into(),
            "SendMessage".into()
        ]));
    }

    #[test]
    fn task_brings_its_companions_and_disallowing_it_removes_them() {
        let mut d = ClaudeAgentDefinition::new("a", "d", "p");
        d.tools = Some(parse_tool_list("Read, Task"));
        assert_eq!(
            names(&d, true).0,
            ["Read", "Task", "TaskOutput", "TaskStop", "SendMessage"]
        );
        let (n, w) = names(&d, false);
        assert_eq!(n, ["Read"]);
        assert!(
            w.is_empty(),
            "Task beyond the limit is not a warning: {w:?}"
        );
        d.tools = Some(parse_tool_list("Read, Agent"));
        assert_eq!(
            names(&d, true).0,
            ["Read", "Task", "TaskOutput", "TaskStop", "SendMessage"]
        );
        let mut d = ClaudeAgentDefinition::new("a", "d", "p");
        d.disallowed_tools = parse_tool_list("Task");
        let (n, _) = names(&d, true);
        assert!(!n.iter().any(|n| is_delegation_tool(n)), "{n:?}");
        d.tools = Some(parse_tool_list("Read"));
        d.disallowed_tools = Vec::new();
        assert_eq!(names(&d, true).0, ["Read"]);
    }

    #[test]
    fn disallowed_first_then_allow_list_with_patterns() {
        let mut d = ClaudeAgentDefinition::new("a", "d", "p");
        d.tools = Some(parse_tool_list(
            "Read, Write, mcp__gh__*, LS, Bash(git:*), Agent(x)",
        ));
        d.disallowed_tools = parse_tool_list("Write, mcp__gh__pr");
        let (n, w) = names(&d, true);
        assert_eq!(
            n,
            [
                "Read",
                "mcp__gh__issue",
                "Task",
                "TaskOutput",
                "TaskStop",
                "SendMessage"
            ]
        );
        assert!(w.iter().any(|w| w.contains("`LS`")), "{w:?}");
        assert!(w.iter().any(|w| w.contains("Bash(git:*)")), "{w:?}");
        let (n, _) = names(&d, false);
        assert_eq!(n, ["Read", "mcp__gh__issue"]);
    }

    #[tokio::test]
    async fn agent_rule_restricts_delegation_targets() {
        let mut d = ClaudeAgentDefinition::new("a", "d", "p");
        d.tools = Some(parse_tool_list("Read, Agent(explore, plan)"));
        let s = select_tools(&d, &set(true));
        let task = s.tools.iter().find(|t| t.name() == "Task").unwrap();
        assert!(task.description().contains("explore, plan"));
        let ctx = TaskContext::new();
        let ok = task
            .call(serde_json::json!({"subagent_type": "Explore"}), &ctx)
            .await;
        assert!(ok.is_ok());
        let err = task
            .call(
                serde_json::json!({"subagent_type": "general-purpose"}),
                &ctx,
            )
            .await
            .unwrap_err()
            .to_string();
        assert!(err.contains("only to: explore, plan"), "{err}");
    }

    #[test]
    fn empty_allow_list_grants_nothing() {
        let mut d = ClaudeAgentDefinition::new("a", "d", "p");
        d.tools = Some(Vec::new());
        assert!(names(&d, true).0.is_empty());
    }
}
