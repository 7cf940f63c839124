//! CLI errors and their exit codes.

/// An error that ends the command with a documented exit code.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum CliError {
    /// Usage or configuration error (exit 2).
    #[error("{0}")]
    Config(String),
    /// No model could be reached (exit 2).
    #[error("{0}")]
    NoModel(String),
    /// The work failed (exit 1).
    #[error("{0}")]
    Failed(String),
    /// The work ended incomplete (exit 3); the text was already printed.
    #[error("{0}")]
    Incomplete(String),
    /// Ctrl-C stopped the work (exit 130); what it had was already printed.
    #[error("{0}")]
    Interrupted(String),
    /// The agent completed but a child failed, with `--fail-on-child-error` (exit 4); the
    /// outcome was already printed.
    #[error("{0}")]
    ChildFailed(String),
}

/// The exit code of an interrupted command (128 + SIGINT; see crate::interrupt).
pub(crate) const INTERRUPTED_EXIT: i32 = 130;

impl CliError {
    /// The process exit code.
    pub(crate) fn exit_code(&self) -> i32 {
        match self {
            CliError::Config(_) | CliError::NoModel(_) => 2,
            CliError::Failed(_) => 1,
            CliError::Incomplete(_) => 3,
            CliError::ChildFailed(_) => 4,
            CliError::Interrupted(_) => INTERRUPTED_EXIT,
        }
    }
}

/// A facade error as a command error: model problems are "no model" (exit 2), the rest
/// configuration (exit 2).
pub(crate) fn facade_error(e: subagents::Error) -> CliError {
    match e {
        // Its text is the help already.
        subagents::Error::NoModel(_) => CliError::NoModel(e.to_string()),
        // A spec that is none: the likely one, else the accepted forms.
        subagents::Error::Model { ref spec, .. } => {
            match subagents::providers::suggest_spec(spec) {
                Some(meant) => CliError::NoModel(format!("{e}\ndid you mean `{meant}`?")),
                None if subagents::providers::ModelSpec::parse(spec).is_ok() => {
                    CliError::NoModel(e.to_string())
                }
                None => CliError::NoModel(format!("{e}\n{}", subagents::models::NO_MODEL_HELP)),
            }
        }
        other => CliError::Config(other.to_string()),
    }
}

/// A configuration file problem is a configuration error (exit 2); the message names the file.
impl From<subagents::config::ConfigError> for CliError {
    fn from(e: subagents::config::ConfigError) -> Self {
        CliError::Config(e.to_string())
    }
}
