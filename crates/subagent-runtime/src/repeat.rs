//! A model stuck repeating a read-only call is asked to answer.
//!
//! Small models often call a read-only tool again, word for word, right after its result came
//! back (Qwen2.5-Coder-1.5B calls `Read notes.txt` turn after turn until the turn limit, so the
//! agent ends `limit_reached` instead of answering). When every call of a turn is a read-only
//! tool ([`ToolEffect::ReadOnly`]: Read, Glob, Grep) and the turn repeats the previous turn's
//! calls exactly (same names, same arguments, same order), the calls still run (their results
//! are fresh), each result says it repeats the previous one, and the next turn is offered no
//! tools, so the model writes its answer from what it has read. A repeat is announced as a
//! [`ProgressKind::Status`](subagent_spi::ProgressKind::Status) event. Tools with other
//! effects (Bash, Edit, Task, TaskOutput polling a background task) are never affected: their
//! repeats can mean something.

use std::sync::Arc;

use serde_json::Value;
use subagent_spi::chat::ToolCall;
use subagent_spi::{TaskContext, Tool, ToolEffect, ToolSpec};

/// What the result of a repeated call gets appended.
pub(crate) const REPEAT_NOTE: &str = "\n\n[This call repeats your previous one with the same \
     arguments, and this is the same result. Do not call it again: answer now from what it says.]";

/// Watches a run's turns for a repeated read-only call.
#[derive(Debug, Default)]
pub(crate) struct RepeatGuard {
    /// The previous turn's calls when they were all read-only.
    last: Option<Vec<(String, Value)>>,
    /// The next turn is offered no tools.
    answer_now: bool,
}

impl RepeatGuard {
    /// The tools to offer this turn: none right after a repeat, else `specs`.
    pub(crate) fn tools_for_turn(&mut self, specs: &[ToolSpec]) -> Vec<ToolSpec> {
        if std::mem::take(&mut self.answer_now) {
            Vec::new()
        } else {
            specs.to_vec()
        }
    }

    /// Looks at a turn's calls (before they run); true when they repeat the previous turn's
    /// read-only calls, which the caller then notes in each result ([`note`]).
    pub(crate) fn observe(
        &mut self,
        calls: &[ToolCall],
        tools: &[Arc<dyn Tool>],
        ctx: &TaskContext,
    ) -> bool {
        let read_only = !calls.is_empty()
            && calls.iter().all(|c| {
                tools
                    .iter()
                    .find(|t| t.name() == c.name)
                    .is_some_and(|t| t.effect() == ToolEffect::ReadOnly)
            });
        let key: Option<Vec<(String, Value)>> = read_only.then(|| {
            calls
                .iter()
                .map(|c| (c.name.clone(), normalised(&c.arguments)))
                .collect()
        });
        let repeated = key.is_some() && key == self.last;
        self.last = key;
        if repeated {
            self.answer_now = true;
            let names: Vec<&str> = calls.iter().map(|c| c.name.as_str()).collect();
            ctx.emit(subagent_spi::ProgressKind::Status {
                message: format!(
                    "the model repeated its previous {} call with the same arguments; its next turn \
                     is offered no tools so that it answers",
                    names.join(", ")
                ),
            });
            tracing::debug!(tools = ?names, "repeated read-only call: the next turn offers no tools");
        }
        repeated
    }
}

/// A tool result with the repeat note appended.
pub(crate) fn note(content: String) -> String {
    content + REPEAT_NOTE
}

/// Arguments as a JSON value (a string holding JSON is parsed), so `{"a":1}` and `"{\"a\": 1}"`
/// compare equal.
fn normalised(arguments: &Value) -> Value {
    match arguments {
        Value::String(s) => serde_json::from_str(s).unwrap_or_else(|_| arguments.clone()),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use subagent_spi::{ToolError, ToolOutput, async_trait};

    struct Fake(&'static str, ToolEffect);

    #[async_trait]
    impl Tool for Fake {
        fn name(&self) -> &str {
            self.0
        }
        fn description(&self) -> String {
            String::new()
        }
        fn input_schema(&self) -> Value {
            json!({"type": "object"})
        }
        fn effect(&self) -> ToolEffect {
            self.1
        }
        async fn call(&self, _: Value, _: &TaskContext) -> Result<ToolOutput, ToolError> {
            Ok(ToolOutput::text(""))
        }
    }

    fn call(name: &str, args: Value) -> ToolCall {
        ToolCall::new("id", name, args)
    }

    #[test]
    fn only_an_exact_repeat_of_read_only_calls_withholds_the_tools() {
        let tools: Vec<Arc<dyn Tool>> = vec![
            Arc::new(Fake("Read", ToolEffect::ReadOnly)),
            Arc::new(Fake("Bash", ToolEffect::Execute)),
        ];
        let specs = vec![ToolSpec::new("Read", "", json!({}))];
        let ctx = TaskContext::default();
        let mut g = RepeatGuard::default();
        let read = |p: &str| call("Read", json!({ "file_path": p }));
        assert!(!g.observe(&[read("a")], &tools, &ctx));
        assert_eq!(g.tools_for_turn(&specs).len(), 1);
        assert!(!g.observe(&[read("b")], &tools, &ctx), "other arguments");
        // The same arguments as a JSON string count as the same call.
        let as_text = call("Read", json!("{\"file_path\": \"b\"}"));
        assert!(g.observe(&[as_text], &tools, &ctx));
        assert!(g.tools_for_turn(&specs).is_empty(), "no tools right after");
        assert_eq!(g.tools_for_turn(&specs).len(), 1, "then the tools again");
        let bash = || call("Bash", json!({"command": "ls"}));
        assert!(!g.observe(&[bash()], &tools, &ctx));
        assert!(
            !g.observe(&[bash()], &tools, &ctx),
            "Bash repeats are left alone"
        );
        assert!(!g.observe(&[read("a"), bash()], &tools, &ctx));
        assert!(
            !g.observe(&[read("a"), bash()], &tools, &ctx),
            "a mixed turn"
        );
        assert!(!g.observe(&[call("Nope", json!({}))], &tools, &ctx));
        assert!(
            !g.observe(&[call("Nope", json!({}))], &tools, &ctx),
            "unknown tool"
        );
        assert!(!g.observe(&[], &tools, &ctx));
        assert!(!g.observe(&[], &tools, &ctx));
        assert!(note("x".into()).starts_with("x\n\n[This call repeats"));
    }
}
