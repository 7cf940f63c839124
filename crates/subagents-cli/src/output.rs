//! Printing outcomes (text or JSON) and mapping their status to exit codes.

use serde::Serialize;
use subagents::spi::{ModelPrices, TaskOutcome, TaskStatus, Usage};

use crate::error::CliError;

/// The machine-readable outcome printed by `--json`.
#[derive(Debug, Serialize)]
pub(crate) struct OutcomeJson<'a> {
    /// The agent that answered.
    pub agent: &'a str,
    /// Its kind.
    pub kind: &'a str,
    /// How it ended.
    pub status: TaskStatus,
    /// The final text.
    pub text: &'a str,
    /// The id `resume` accepts.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_id: Option<&'a str>,
    /// The limit that stopped the run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limit: Option<&'a str>,
    /// The task id, for background runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task_id: Option<&'a str>,
    /// Usage of this run and every subagent it delegated to; with prices (`[prices]` of
    /// subagents.toml), each node's `usage` has a `cost_usd` when its model's price is known.
    pub usage: serde_json::Value,
    /// The cost of the whole tree in USD, over the models with a known price.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    /// Models that did work but have no price: their cost is not counted, never guessed.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unpriced_models: Vec<String>,
}

impl<'a> OutcomeJson<'a> {
    /// Builds the JSON view of an outcome.
    pub(crate) fn new(
        agent: &'a str,
        kind: &'a str,
        o: &'a TaskOutcome,
        task_id: Option<&'a str>,
    ) -> Self {
        Self {
            agent,
            kind,
            status: o.status,
            text: &o.text,
            session_id: o.session_id.as_deref(),
            limit: o.limit.as_deref(),
            task_id,
            usage: serde_json::to_value(o.usage_tree(agent, kind, task_id))
                .unwrap_or(serde_json::Value::Null),
            cost_usd: None,
            unpriced_models: Vec::new(),
        }
    }

    /// Adds costs from `prices` (nothing when there are none): `cost_usd` per node whose model
    /// has a price, the total, and the models without one.
    pub(crate) fn with_prices(mut self, prices: &ModelPrices) -> Self {
        if prices.is_empty() {
            return self;
        }
        let mut total = 0.0;
        add_costs(
            &mut self.usage,
            prices,
            &mut total,
            &mut self.unpriced_models,
        );
        self.cost_usd = Some(total);
        self
    }
}

/// The cost of one run's own usage, when its model has a price (input and output tokens).
pub(crate) fn usage_cost(prices: &ModelPrices, usage: &Usage) -> Option<f64> {
    let model = usage.model.as_deref()?;
    prices.cost(model, usage.input_tokens, usage.output_tokens)
}

fn add_costs(
    node: &mut serde_json::Value,
    prices: &ModelPrices,
    total: &mut f64,
    unpriced: &mut Vec<String>,
) {
    if let Some(usage_value) = node.get_mut("usage")
        && let Ok(usage) = serde_json::from_value::<Usage>(usage_value.clone())
    {
        match usage_cost(prices, &usage) {
            Some(cost) => {
                *total += cost;
                usage_value["cost_usd"] = serde_json::json!(cost);
            }
            None if usage.total_tokens() > 0 => {
                let model = usage.model.unwrap_or_else(|| "(unnamed)".into());
                if !unpriced.contains(&model) {
                    unpriced.push(model);
                }
            }
            None => {}
        }
    }
    if let Some(children) = node.get_mut("children").and_then(|c| c.as_array_mut()) {
        for child in children {
            add_costs(child, prices, total, unpriced);
        }
    }
}

/// Prints the outcome (its text, or the JSON) and turns its status into the exit code.
pub(crate) fn finish(
    outcome: &TaskOutcome,
    json: Option<&OutcomeJson<'_>>,
) -> Result<(), CliError> {
    // A run that ended without an answer has none to print: its text says why, on stderr.
    let no_answer = outcome.status == TaskStatus::Failed
        && outcome
            .text
            .starts_with(subagents::runtime::NO_ANSWER_PREFIX);
    match json {
        Some(j) => {
            let text = serde_json::to_string_pretty(j)
                .map_err(|e| CliError::Failed(format!("cannot encode JSON: {e}")))?;
            crate::output::outln!("{text}");
        }
        None if no_answer => {}
        None => crate::output::outln!("{}", outcome.text),
    }
    match outcome.status {
        TaskStatus::Completed => Ok(()),
        TaskStatus::Failed if no_answer => Err(CliError::Failed(format!(
            "the agent ended without an answer ({})",
            outcome.text
        ))),
        TaskStatus::Failed => Err(CliError::Failed("the agent failed".into())),
        TaskStatus::NeedsInput => Err(CliError::Incomplete(format!(
            "the agent needs input{}",
            outcome
                .session_id
                .as_deref()
                .map(|s| format!(" (session {s})"))
                .unwrap_or_default()
        ))),
        other => Err(CliError::Incomplete(format!(
            "the agent ended {other}{}",
            outcome
                .limit
                .as_deref()
                .map(|l| format!(" ({l})"))
                .unwrap_or_default()
        ))),
    }
}

/// Text safe to print on a terminal: control characters (ESC, BEL, newlines...) and bidi
/// controls are shown as `\u{..}` escapes instead of acting on the terminal (one
/// implementation, the Markdown kind's).
pub(crate) use subagents::claude::escape_for_terminal as terminal_safe;

/// Writes one line to stdout. A closed pipe (`subagents agents list | head -1`) ends the
/// process quietly with status 0 instead of a panic: the reader has what it wanted.
pub(crate) fn write_line(args: std::fmt::Arguments<'_>) {
    use std::io::Write as _;
    let mut out = std::io::stdout().lock();
    if let Err(e) = out.write_fmt(args).and_then(|()| out.write_all(b"\n")) {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        eprintln!("subagents: cannot write to stdout: {e}");
        std::process::exit(1);
    }
}

/// `println!` through [`write_line`]: no panic on a closed pipe.
macro_rules! outln {
    ($($arg:tt)*) => {
        $crate::output::write_line(format_args!($($arg)*))
    };
}
pub(crate) use outln;

#[cfg(test)]
mod tests {
    use super::terminal_safe;

    #[test]
    fn control_and_bidi_characters_are_escaped() {
        assert_eq!(terminal_safe("plain-name"), "plain-name");
        assert_eq!(terminal_safe("a\u{1b}[31mb"), "a\\u{1b}[31mb");
        assert_eq!(terminal_safe("x\u{7}\ny"), "x\\u{7}\\u{a}y");
        assert_eq!(terminal_safe("ab\u{202e}cd"), "ab\\u{202e}cd");
    }
}
