//! `subagents serve`: host Markdown agents over A2A.

use crate::cli::ServeArgs;
use crate::config::Config;
use crate::error::CliError;

/// `subagents serve`.
pub async fn serve(_args: ServeArgs, _config: Config) -> Result<(), CliError> {
    Err(CliError::Config("A2A serving is not wired yet".into()))
}
