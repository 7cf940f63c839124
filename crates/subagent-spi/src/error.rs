use std::time::Duration;

/// A boxed error usable as a `source`.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// Everything that can go wrong between a `Task` call and a subagent's answer.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SubagentError {
    /// No agent with that name is registered.
    #[error("unknown subagent `{name}`; available agents: {}", list_or_none(.available))]
    UnknownSubagent {
        /// The name asked for.
        name: String,
        /// The names that exist.
        available: Vec<String>,
    },
    /// No registered type can resolve this reference.
    #[error("no resolver accepts `{uri}` of kind `{kind}`; registered kinds: {}", list_or_none(.registered))]
    NoResolver {
        /// The reference's kind.
        kind: String,
        /// The reference's URI.
        uri: String,
        /// Kinds that are registered.
        registered: Vec<String>,
    },
    /// No executor is registered for a definition's kind.
    #[error("no executor for kind `{kind}`")]
    NoExecutor {
        /// The kind.
        kind: String,
    },
    /// A resolver failed to turn a reference into a definition.
    #[error("resolving `{uri}` failed: {source}")]
    Resolution {
        /// The reference's URI.
        uri: String,
        /// Why.
        #[source]
        source: BoxError,
    },
    /// The executor failed while running a task.
    #[error("agent `{agent}` failed: {message}")]
    Execution {
        /// The agent.
        agent: String,
        /// What the agent or transport said.
        message: String,
        /// The underlying error, when there is one.
        #[source]
        source: Option<BoxError>,
    },
    /// The run was cancelled.
    #[error("agent `{agent}` was cancelled")]
    Cancelled {
        /// The agent.
        agent: String,
    },
    /// The run took longer than allowed.
    #[error("agent `{agent}` timed out after {} ms", .after.as_millis())]
    TimedOut {
        /// The agent.
        agent: String,
        /// The limit.
        after: Duration,
    },
    /// A turn, token or size limit was reached.
    #[error("agent `{agent}` reached a limit: {limit}")]
    LimitReached {
        /// The agent.
        agent: String,
        /// The limit, e.g. `max_turns=30` ([`Limit::Turns`](crate::Limit::Turns)).
        limit: crate::Limit,
    },
    /// The peer broke its protocol (bad JSON, unexpected reply...).
    #[error("protocol error from `{agent}`: {message}")]
    Protocol {
        /// The agent or endpoint.
        agent: String,
        /// What was wrong.
        message: String,
    },
    /// `resume` was asked of an executor that cannot resume, or with an unknown id.
    #[error("cannot resume `{session}`: {reason}")]
    Resume {
        /// The id given.
        session: String,
        /// Why not.
        reason: String,
    },
    /// The call's input was invalid (missing field, bad type).
    #[error("invalid input: {0}")]
    InvalidInput(String),
    /// A tool failed.
    #[error(transparent)]
    Tool(#[from] ToolError),
    /// A model call failed.
    #[error(transparent)]
    Model(#[from] ModelError),
}

impl SubagentError {
    /// An [`Execution`](Self::Execution) error without a source.
    pub fn execution(agent: impl Into<String>, message: impl Into<String>) -> Self {
        Self::Execution {
            agent: agent.into(),
            message: message.into(),
            source: None,
        }
    }

    /// A [`Resolution`](Self::Resolution) error from any error type.
    pub fn resolution(uri: impl Into<String>, source: impl Into<BoxError>) -> Self {
        Self::Resolution {
            uri: uri.into(),
            source: source.into(),
        }
    }

    /// A [`Protocol`](Self::Protocol) error.
    pub fn protocol(agent: impl Into<String>, message: impl Into<String>) -> Self {
        Self::Protocol {
            agent: agent.into(),
            message: message.into(),
        }
    }
}

fn list_or_none(names: &[String]) -> String {
    if names.is_empty() {
        "(none)".to_string()
    } else {
        names.join(", ")
    }
}

/// A tool call failed. The message goes back to the model as an error tool result, so write it
/// for a model to read and act on.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ToolError {
    /// The input did not match the tool's schema.
    #[error("invalid input for tool `{tool}`: {message}")]
    InvalidInput {
        /// The tool.
        tool: String,
        /// What was wrong.
        message: String,
    },
    /// The call was refused (permissions, workspace confinement, limits).
    #[error("tool `{tool}` refused: {message}")]
    Denied {
        /// The tool.
        tool: String,
        /// Why.
        message: String,
    },
    /// The tool ran and failed.
    #[error("tool `{tool}` failed: {message}")]
    Failed {
        /// The tool.
        tool: String,
        /// What went wrong.
        message: String,
    },
    /// The tool took too long.
    #[error("tool `{tool}` timed out after {} ms", .after.as_millis())]
    TimedOut {
        /// The tool.
        tool: String,
        /// The limit.
        after: Duration,
    },
    /// The call was cancelled.
    #[error("tool `{tool}` was cancelled")]
    Cancelled {
        /// The tool.
        tool: String,
    },
}

impl ToolError {
    /// A [`Failed`](Self::Failed) error.
    pub fn failed(tool: impl Into<String>, message: impl Into<String>) -> Self {
        Self::Failed {
            tool: tool.into(),
            message: message.into(),
        }
    }

    /// An [`InvalidInput`](Self::InvalidInput) error.
    pub fn invalid(tool: impl Into<String>, message: impl Into<String>) -> Self {
        Self::InvalidInput {
            tool: tool.into(),
            message: message.into(),
        }
    }

    /// A [`Denied`](Self::Denied) error.
    pub fn denied(tool: impl Into<String>, message: impl Into<String>) -> Self {
        Self::Denied {
            tool: tool.into(),
            message: message.into(),
        }
    }
}

/// A chat-model call failed.
///
/// The variants say what the agent loop needs to decide (retry or not, after how long, is the
/// configuration wrong); transport details such as an HTTP status or an endpoint URL live in the
/// provider's own error, kept as the [`source`](std::error::Error::source).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ModelError {
    /// The provider answered with an error; `message` is the provider's own text.
    #[error("{provider} refused the request: {message}")]
    Rejected {
        /// Provider name (`openai`, `anthropic`...).
        provider: String,
        /// The provider's error message.
        message: String,
        /// True when the same request may succeed later (rate limits, overload, 5xx).
        retryable: bool,
        /// The delay the provider asked for before a retry, if any.
        retry_after: Option<Duration>,
        /// The provider's own error (status, endpoint...).
        #[source]
        source: Option<BoxError>,
    },
    /// The provider did not accept the credentials (missing, wrong, or without access).
    #[error("{provider} refused the credentials: {message}")]
    Unauthorized {
        /// Provider name.
        provider: String,
        /// The provider's error message.
        message: String,
        /// The provider's own error.
        #[source]
        source: Option<BoxError>,
    },
    /// The provider could not be reached, or the connection broke.
    #[error("cannot reach {provider}: {message}")]
    Unreachable {
        /// Provider name.
        provider: String,
        /// What failed (the provider includes the endpoint, with any credentials redacted).
        message: String,
        /// The underlying error.
        #[source]
        source: Option<BoxError>,
    },
    /// The request took longer than its timeout.
    #[error("{provider} did not answer within {} ms", .after.as_millis())]
    Timeout {
        /// Provider name.
        provider: String,
        /// The timeout.
        after: Duration,
    },
    /// The reply could not be understood.
    #[error("bad reply from {provider}: {message}")]
    BadResponse {
        /// Provider name.
        provider: String,
        /// What was wrong.
        message: String,
    },
    /// A model name or spec is unknown or malformed.
    #[error("unknown model `{name}`; known models: {}", list_or_none(.known))]
    UnknownModel {
        /// The name asked for.
        name: String,
        /// Names that are configured.
        known: Vec<String>,
    },
    /// Configuration is missing (API key, base URL...).
    #[error("model configuration: {0}")]
    Config(String),
    /// The call was cancelled.
    #[error("model call cancelled")]
    Cancelled,
}

impl ModelError {
    /// True for errors worth retrying: rejections the provider marks retryable (429, 5xx),
    /// connection failures and timeouts.
    pub fn is_retryable(&self) -> bool {
        match self {
            ModelError::Rejected { retryable, .. } => *retryable,
            ModelError::Unreachable { .. } | ModelError::Timeout { .. } => true,
            _ => false,
        }
    }

    /// The delay the provider asked for before a retry, if any.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            ModelError::Rejected { retry_after, .. } => *retry_after,
            _ => None,
        }
    }

    /// True when the error means no model can be used as configured (unreachable, refused
    /// credentials, unknown model, missing configuration): a host reports it as a setup problem
    /// rather than a failed task.
    pub fn is_setup_problem(&self) -> bool {
        matches!(
            self,
            ModelError::Unreachable { .. }
                | ModelError::Unauthorized { .. }
                | ModelError::UnknownModel { .. }
                | ModelError::Config(_)
        )
    }
}
