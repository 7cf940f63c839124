//! Which companions of `Task` a model is offered, so that the texts it reads (the `Task`
//! description and schema, every result's hint) name only tools it can call.
//!
//! A host that offers `Task` alone (`subagents run --main-tools Task`, or its own tool list)
//! gets a [`TaskTool::offering`](crate::TaskTool::offering) view: without `TaskOutput` there is no background run (the
//! schema has no `run_in_background`, a call that sets it to `true` is refused saying why, and
//! an agent that runs in the background by default runs in the foreground); without `TaskStop`
//! no text says to cancel with it.

use subagent_spi::TaskCall;

/// The companion tools offered with `Task` (see [`TaskTool::offering`](crate::TaskTool::offering)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Companions {
    output: bool,
    stop: bool,
}

impl Default for Companions {
    /// [`all`](Self::all).
    fn default() -> Self {
        Self::all()
    }
}

impl Companions {
    /// `TaskOutput` and `TaskStop`: what [`TaskTool::tools`](crate::TaskTool::tools) offers.
    pub const fn all() -> Self {
        Self {
            output: true,
            stop: true,
        }
    }

    /// Neither: `Task` alone.
    pub const fn none() -> Self {
        Self {
            output: false,
            stop: false,
        }
    }

    /// The companions among the tool names a model is offered (`TaskOutput`, `TaskStop`).
    pub fn from_names<S: AsRef<str>>(names: impl IntoIterator<Item = S>) -> Self {
        names
            .into_iter()
            .fold(Self::none(), |c, n| match n.as_ref() {
                "TaskOutput" => Self { output: true, ..c },
                "TaskStop" => Self { stop: true, ..c },
                _ => c,
            })
    }

    /// True when `TaskOutput` is offered (background runs can be read).
    pub const fn output(self) -> bool {
        self.output
    }

    /// True when `TaskStop` is offered (background runs can be cancelled).
    pub const fn stop(self) -> bool {
        self.stop
    }
}

/// The `Task` schema without `run_in_background` (no `TaskOutput` to read a background run)
/// and without `name` (which only names a background agent).
pub(crate) fn foreground_schema(schema: &serde_json::Value) -> serde_json::Value {
    let mut schema = schema.clone();
    if let Some(props) = schema
        .get_mut("properties")
        .and_then(serde_json::Value::as_object_mut)
    {
        props.remove("run_in_background");
        props.remove("name");
    }
    schema
}

/// A model's call checked against what is offered: without `TaskOutput`, `run_in_background:
/// true` is refused (the reason is the error) and an agent's background default is overridden
/// (the call runs in the foreground).
pub(crate) fn check_call(offered: Companions, call: &mut TaskCall) -> Result<(), String> {
    if offered.output() {
        return Ok(());
    }
    if call.run_in_background == Some(true) {
        return Err(
            "`run_in_background` is not available here: no tool to read a background \
                    task's result is offered. Call Task again without it; the agent runs and \
                    its answer comes back in the result."
                .to_string(),
        );
    }
    call.run_in_background = Some(false);
    Ok(())
}
