//! The main agent's default system prompt, and the lean main agent's texts
//! (`MainAgent::only_tools`, `subagents run --main-tools`): the delegation tools kept are
//! rebuilt so that their texts name only the companions kept, and the default system prompt
//! says nothing of background runs when `TaskOutput` is not kept.

use std::sync::Arc;

use subagent_spi::Tool;
use task_tool::{Companions, TaskTool};

/// The main agent's default system prompt.
pub const MAIN_SYSTEM_PROMPT: &str = "You are the main agent of a team. Work on the user's \
request with your tools. Delegate self-contained pieces of work to subagents with the Task \
tool (`subagent_type`: the agent's name; agents are not tools of their own), with a complete \
prompt. Run independent subagents in parallel or in the background (run_in_background, then \
TaskOutput). When you are done, answer the user directly and concisely.";

/// The part of [`MAIN_SYSTEM_PROMPT`] about background runs, which need `TaskOutput`.
const BACKGROUND_HINT: &str = " or in the background \
(run_in_background, then TaskOutput)";

/// `tools` with the delegation tools among them (`Task`, `TaskOutput`, `TaskStop`,
/// `SendMessage`) made from `task` offering the companions in `tools`, in the same order.
pub(crate) fn follow_offered(tools: Vec<Arc<dyn Tool>>, task: &TaskTool) -> Vec<Arc<dyn Tool>> {
    let offered = Companions::from_names(tools.iter().map(|t| t.name()));
    let own = task.offering(offered).tools().to_vec();
    tools
        .into_iter()
        .map(|t| {
            own.iter()
                .find(|o| o.name() == t.name())
                .cloned()
                .unwrap_or(t)
        })
        .collect()
}

/// `system` for a main agent offered `tools`: the default prompt loses its background hint
/// when `TaskOutput` is not among them; any other prompt is the caller's and stays as is.
pub(crate) fn system_for(system: String, tools: &[Arc<dyn Tool>]) -> String {
    if system == MAIN_SYSTEM_PROMPT && !tools.iter().any(|t| t.name() == "TaskOutput") {
        return system.replacen(BACKGROUND_HINT, "", 1);
    }
    system
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_prompt_holds_the_background_hint_it_drops() {
        assert!(MAIN_SYSTEM_PROMPT.contains(BACKGROUND_HINT));
        let lean = system_for(MAIN_SYSTEM_PROMPT.to_string(), &[]);
        assert!(!lean.contains("TaskOutput"), "{lean}");
        assert!(lean.contains("subagents in parallel."), "{lean}");
        assert_eq!(system_for("mine TaskOutput".into(), &[]), "mine TaskOutput");
    }
}
