//! Small helpers shared by the tools.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;
use subagent_spi::ToolError;

/// The JSON Schema of a tool's input type, in the short form every tool offers
/// ([`subagent_spi::input_schema`]).
pub(crate) fn schema_for<T: JsonSchema>() -> Value {
    subagent_spi::input_schema::<T>()
}

/// Parses a tool's input, naming the tool and the problem on failure.
pub(crate) fn parse<T: DeserializeOwned>(tool: &str, input: Value) -> Result<T, ToolError> {
    serde_json::from_value(input).map_err(|e| ToolError::invalid(tool, e.to_string()))
}

/// Cuts `s` to `max` characters, appending a marker with the number cut.
pub(crate) fn cut_chars(s: &str, max: usize) -> (String, usize) {
    match s.char_indices().nth(max) {
        Some((i, _)) => (s[..i].to_string(), s[i..].chars().count()),
        None => (s.to_string(), 0),
    }
}

/// Set when the async side stops waiting, so a blocking walk can stop early.
#[derive(Clone, Default)]
pub(crate) struct StopFlag(Arc<AtomicBool>);

impl StopFlag {
    pub(crate) fn is_set(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}

/// Sets the flag when dropped (the tool's future was dropped or finished).
pub(crate) struct StopOnDrop(pub(crate) StopFlag);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.0.store(true, Ordering::Relaxed);
    }
}

/// Runs a blocking closure on the blocking pool; a panic or cancellation becomes a tool error.
pub(crate) async fn blocking<T, F>(tool: &str, f: F) -> Result<T, ToolError>
where
    F: FnOnce(StopFlag) -> Result<T, ToolError> + Send + 'static,
    T: Send + 'static,
{
    let flag = StopFlag::default();
    let _guard = StopOnDrop(flag.clone());
    tokio::task::spawn_blocking(move || f(flag))
        .await
        .map_err(|e| ToolError::failed(tool, format!("internal error: {e}")))?
}

/// The `Tool` impl of a built-in tool: its name (`Self::NAME`), description, input schema
/// (from the input type) and effect; `call` parses the input, naming the tool when it does not
/// parse, and hands it to the tool's `run`.
macro_rules! builtin_tool {
    ($tool:ty, $input:ty, $effect:expr, $description:expr $(,)?) => {
        #[subagent_spi::async_trait]
        impl subagent_spi::Tool for $tool {
            fn name(&self) -> &str {
                Self::NAME
            }

            fn description(&self) -> String {
                $description.into()
            }

            fn input_schema(&self) -> serde_json::Value {
                $crate::util::schema_for::<$input>()
            }

            fn effect(&self) -> subagent_spi::ToolEffect {
                $effect
            }

            async fn call(
                &self,
                input: serde_json::Value,
                ctx: &subagent_spi::TaskContext,
            ) -> Result<subagent_spi::ToolOutput, subagent_spi::ToolError> {
                self.run($crate::util::parse(Self::NAME, input)?, ctx).await
            }
        }
    };
}
pub(crate) use builtin_tool;
