//! [`Subagents::run_typed`]: a foreground run whose result is a Rust value.

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use subagent_spi::{SubagentError, TaskCall, TaskContext, TaskStatus};
use task_tool::Dispatch;

use crate::Subagents;

/// Why [`Subagents::run_typed`] has no value.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TypedRunError {
    /// The run could not start or failed (unknown agent, model error, a schema refused...).
    #[error(transparent)]
    Run(#[from] SubagentError),
    /// The run ended without a valid value: it failed (its text says why, e.g. `invalid
    /// output: ...` after the retries), was cancelled, needs input or reached a limit.
    #[error("agent `{agent}` ended {status} without a valid result: {text}")]
    NoResult {
        /// The agent.
        agent: String,
        /// How it ended.
        status: TaskStatus,
        /// Its text (cut to 1,000 characters).
        text: String,
    },
    /// The value, valid under `T`'s schema, does not deserialize into `T` (a schema weaker
    /// than the type, e.g. a custom `Deserialize`).
    #[error("agent `{agent}`: the result does not fit the type: {source}")]
    Deserialize {
        /// The agent.
        agent: String,
        /// Why.
        #[source]
        source: serde_json::Error,
    },
}

impl Subagents {
    /// Runs `agent` on `prompt` in the foreground and returns its result as a `T`: the call's
    /// `output_schema` is `T`'s JSON Schema (derived with `schemars`), so the agent ends with
    /// a value valid under it (a local agent through its final `StructuredOutput` tool, a
    /// remote one through a data part or structured content; invalid values go back to the
    /// agent, twice at most), and that value is deserialized.
    ///
    /// ```no_run
    /// # async fn demo(agents: subagents::Subagents) -> Result<(), Box<dyn std::error::Error>> {
    /// #[derive(serde::Deserialize, schemars::JsonSchema)]
    /// struct Count { files: u32 }
    /// let n: Count = agents.run_typed("Explore", "How many .rs files are in src/?").await?;
    /// println!("{}", n.files);
    /// # Ok(()) }
    /// ```
    pub async fn run_typed<T: DeserializeOwned + JsonSchema>(
        &self,
        agent: &str,
        prompt: impl Into<String>,
    ) -> Result<T, TypedRunError> {
        self.run_typed_in(agent, prompt, &TaskContext::new()).await
    }

    /// [`run_typed`](Self::run_typed) under a context of the caller's (progress, cancellation,
    /// limits).
    pub async fn run_typed_in<T: DeserializeOwned + JsonSchema>(
        &self,
        agent: &str,
        prompt: impl Into<String>,
        ctx: &TaskContext,
    ) -> Result<T, TypedRunError> {
        // Inlined: no `$ref` (except for recursive types), so a peer or a model that takes
        // schemas only without references (our A2A server does) accepts it.
        let root = schemars::generate::SchemaSettings::draft2020_12()
            .with(|s| s.inline_subschemas = true)
            .into_generator()
            .into_root_schema_for::<T>();
        let schema = serde_json::to_value(root)
            .map_err(|e| SubagentError::InvalidInput(format!("the type's schema: {e}")))?;
        let call = TaskCall::new(agent, "typed run", prompt)
            .with_output_schema(schema)
            .in_background(false);
        let (agent, outcome) = match self.dispatch(call, ctx).await? {
            Dispatch::Foreground { agent, outcome, .. } => (agent, outcome),
            _ => {
                return Err(SubagentError::execution(
                    agent,
                    "the run did not stay in the foreground",
                )
                .into());
            }
        };
        match (outcome.status, outcome.structured) {
            (TaskStatus::Completed, Some(value)) => serde_json::from_value(value)
                .map_err(|source| TypedRunError::Deserialize { agent, source }),
            (status, _) => Err(TypedRunError::NoResult {
                agent,
                status,
                text: subagent_schema::cut(&outcome.text, 1000),
            }),
        }
    }
}
