//! Which model each agent runs on: the model forced for every agent (`--agent-model`,
//! `CLAUDE_CODE_SUBAGENT_MODEL`, `agent_model`), each agent's resolved model for `agents list`,
//! and the notice of `run` when agents go to another provider than `--model`.

use subagents::claude::ClaudeAgentDefinition;
use subagents::models::{ModelRoutes, provider_of, redacted};

use crate::args::ModelArgs;
use crate::config::{self, Config};
use crate::error::CliError;
use crate::output::terminal_safe;

/// Claude Code's variable for one subagent model, honoured as `--agent-model` is.
pub(crate) const CLAUDE_CODE_SUBAGENT_MODEL: &str = "CLAUDE_CODE_SUBAGENT_MODEL";

/// The model forced for every agent: `--agent-model` (folded into `config.agent_model` by the
/// commands, see [`fold_flag`]), else `$CLAUDE_CODE_SUBAGENT_MODEL`, else `agent_model` of
/// subagents.toml; a name of `[models]` or an alias (`sonnet`) stands for its spec.
pub(crate) fn agent_model(config: &Config, default: Option<&str>) -> Option<String> {
    let chosen = config.agent_model.clone()?;
    Some(
        routes(config, default, None)
            .spec_of(&chosen)
            .unwrap_or(chosen),
    )
}

/// Folds `--agent-model` and `$CLAUDE_CODE_SUBAGENT_MODEL` over the config file's
/// `agent_model` (flag, then variable, then file).
pub(crate) fn fold_flag(config: &mut Config, flag: Option<&str>) {
    let env = std::env::var(CLAUDE_CODE_SUBAGENT_MODEL)
        .ok()
        .filter(|v| !v.trim().is_empty());
    if let Some(m) = flag.map(str::to_string).or(env) {
        config.agent_model = Some(m);
    }
}

/// The models of a command that runs agents: folds `--agent-model` into `config` (see
/// [`fold_flag`]) and picks the default model spec from `--model` (see
/// [`config::choose_model_spec`]; exit 2 when there is none).
pub(crate) async fn choose(models: &ModelArgs, config: &mut Config) -> Result<String, CliError> {
    fold_flag(config, models.agent_model.as_deref());
    config::choose_model_spec(models.model.as_deref(), config).await
}

/// The routes of model names under this configuration.
pub(crate) fn routes(config: &Config, default: Option<&str>, forced: Option<&str>) -> ModelRoutes {
    ModelRoutes::new(
        default,
        config.models.iter().map(|(n, s)| (n.clone(), s.clone())),
        forced,
    )
}

/// The routes `agents list` shows: the default model `run` would pick (none when no model is
/// reachable: agents that need it show `-`) and the model forced for every agent.
pub(crate) async fn for_listing(flag: Option<&str>, config: &Config) -> ModelRoutes {
    let default = crate::config::choose_model_spec(flag, config).await.ok();
    let forced = agent_model(config, default.as_deref());
    routes(config, default.as_deref(), forced.as_deref())
}

/// The model an agent runs on, for display: its spec with credentials hidden, or `-` when no
/// model is known (no default model and an alias that needs one).
pub(crate) fn shown(routes: &ModelRoutes, def: &ClaudeAgentDefinition) -> String {
    routes
        .agent_spec(def)
        .map_or_else(|| "-".to_string(), |s| redacted(&s))
}

/// Says once, on stderr, which agents go to another provider than the main model (an alias
/// such as `haiku` goes to Anthropic when `ANTHROPIC_API_KEY` is set, whatever `--model` is).
pub(crate) fn notice_other_providers(agents: &subagents::Subagents) {
    let Some(routes) = agents.model_routes() else {
        return;
    };
    let Some(main) = routes.default_spec() else {
        return;
    };
    let home = provider_of(main);
    let elsewhere: Vec<String> = agents
        .agents()
        .iter()
        .filter_map(|a| a.downcast_ref::<ClaudeAgentDefinition>())
        .filter_map(|def| {
            let spec = routes.agent_spec(def)?;
            (provider_of(&spec) != home).then(|| {
                format!(
                    "{} → {}",
                    terminal_safe(&def.name),
                    terminal_safe(&redacted(&spec))
                )
            })
        })
        .collect();
    if elsewhere.is_empty() {
        return;
    }
    eprintln!(
        "subagents: note: these agents run on another provider than the main model ({}): {}. \
         --agent-model SPEC (or CLAUDE_CODE_SUBAGENT_MODEL) runs every agent on one model.",
        terminal_safe(&redacted(main)),
        elsewhere.join(", ")
    );
}
