//! `subagents.toml` (its schema, loading and validation are the facade's:
//! [`subagents::config`]) and the command's choices over it: the default store and model.

pub(crate) use subagents::config::Config;

use crate::error::CliError;

/// The store: `--store` (already folded into `store`), else SQLite under the data directory.
pub(crate) fn store_url(config: &Config) -> Result<subagents::store::StoreUrl, CliError> {
    Ok(config
        .store_url()?
        .unwrap_or_else(subagents::store::StoreUrl::default_for_cli))
}

/// Picks the default model spec: `--model`, `$SUBAGENTS_MODEL`, the config file's `model`,
/// then a provider key in the environment or a running Ollama (see
/// [`subagents::models::choose_default_model`]). A name from `[models]` stands for its spec.
/// Exit 2 with one message when there is none.
pub(crate) async fn choose_model_spec(
    flag: Option<&str>,
    config: &Config,
) -> Result<String, CliError> {
    let env = std::env::var("SUBAGENTS_MODEL")
        .ok()
        .filter(|v| !v.trim().is_empty());
    let explicit = flag
        .map(str::to_string)
        .or(env)
        .or_else(|| config.model.clone());
    let explicit = explicit.as_deref();
    let spec = subagents::models::choose_default_model(explicit)
        .await
        .map_err(crate::error::facade_error)?;
    Ok(config.model_spec(&spec))
}
