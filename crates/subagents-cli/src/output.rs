//! Printing outcomes (text or JSON) and mapping their status to exit codes.

use std::io::Write as _;

use serde::Serialize;
use subagents::policy::ModelPrices;
use subagents::spi::{TaskOutcome, TaskStatus, Usage};

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
    /// The typed result (`--output-schema`, an agent's `outputSchema`): the JSON value.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub structured: Option<&'a serde_json::Value>,
    /// The id `resume` accepts.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_id: Option<&'a str>,
    /// The limit that stopped the run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limit: Option<&'a subagents::spi::Limit>,
    /// The task id: of a background run, or of the remote task `call` talked to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task_id: Option<&'a str>,
    /// The remote context `call` talked in (with `task_id`, what `--context-id` and
    /// `--task-id` continue).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context_id: Option<&'a str>,
    /// Usage of this run and every subagent it delegated to (each node's own: `input_tokens`
    /// not read from the provider's prompt cache, of which `cache_creation_tokens` were written
    /// to it, and `cache_read_tokens` read from it); with prices, each node's `usage` has a
    /// `cost_usd` when its model's price is known, and a `cache_saved_usd` (what its tokens
    /// would have cost with no cache, less `cost_usd`) when it used the cache.
    pub usage: serde_json::Value,
    /// The cost of the whole tree in USD; `null` when it is not known: a model that did work
    /// has no price (`unpriced_models` names it; an unpriced cost is never counted as 0).
    pub cost_usd: Option<f64>,
    /// What the providers' prompt caches saved the whole tree in USD (priced models; negative
    /// when writes cost more than reads saved).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache_saved_usd: Option<f64>,
    /// The cost of the priced models alone (the text summary's `$X + unpriced: ...`).
    #[serde(skip)]
    pub priced_usd: Option<f64>,
    /// Models that did work but have no price: their cost is not counted, never guessed.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unpriced_models: Vec<String>,
    /// How many of the runs below this one (children at any depth) failed.
    pub failed_children: usize,
    /// Each of them: agent, task id, depth and why (crate::failures).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub failures: Vec<crate::failures::Failure>,
    /// The runs below this one, for the `done ·` line.
    #[serde(skip)]
    pub children_total: usize,
}

impl<'a> OutcomeJson<'a> {
    /// Builds the JSON view of an outcome.
    pub(crate) fn new(
        agent: &'a str,
        kind: &'a str,
        o: &'a TaskOutcome,
        task_id: Option<&'a str>,
    ) -> Self {
        let (children_total, failures) = crate::failures::of(&o.children);
        Self {
            agent,
            kind,
            status: o.status,
            text: &o.text,
            structured: o.structured.as_ref(),
            session_id: o.session_id.as_deref(),
            limit: o.limit.as_ref(),
            task_id,
            context_id: None,
            usage: serde_json::to_value(o.usage_tree(agent, kind, task_id))
                .unwrap_or(serde_json::Value::Null),
            cost_usd: None,
            cache_saved_usd: None,
            priced_usd: None,
            unpriced_models: Vec::new(),
            failed_children: failures.len(),
            failures,
            children_total,
        }
    }

    /// Names the remote context (`call`).
    pub(crate) fn with_context_id(mut self, context_id: Option<&'a str>) -> Self {
        self.context_id = context_id;
        self
    }

    /// Adds costs from `prices` (nothing when there are none): `cost_usd` per node whose model
    /// has a price, the total, and the models without one.
    pub(crate) fn with_prices(mut self, prices: &ModelPrices) -> Self {
        if prices.is_empty() {
            return self;
        }
        let mut total = Costs::default();
        add_costs(
            &mut self.usage,
            prices,
            &mut total,
            &mut self.unpriced_models,
        );
        self.priced_usd = Some(total.cost);
        self.cost_usd = self.unpriced_models.is_empty().then_some(total.cost);
        self.cache_saved_usd = total.cached.then_some(total.saved);
        self
    }
}

/// The cost of one run's own usage, when its model has a price (the prompt cache counted).
pub(crate) fn usage_cost(prices: &ModelPrices, usage: &Usage) -> Option<f64> {
    prices.usage_cost(usage)
}

/// A tree's costs so far.
#[derive(Default)]
struct Costs {
    cost: f64,
    saved: f64,
    /// A priced run used the prompt cache.
    cached: bool,
}

fn add_costs(
    node: &mut serde_json::Value,
    prices: &ModelPrices,
    total: &mut Costs,
    unpriced: &mut Vec<String>,
) {
    if let Some(usage_value) = node.get_mut("usage")
        && let Ok(usage) = serde_json::from_value::<Usage>(usage_value.clone())
    {
        match usage_cost(prices, &usage) {
            Some(cost) => {
                total.cost += cost;
                usage_value["cost_usd"] = serde_json::json!(cost);
                if usage.cache_read_tokens > 0 || usage.cache_creation_tokens > 0 {
                    let saved = prices.cache_savings(&usage).unwrap_or(0.0);
                    total.saved += saved;
                    total.cached = true;
                    usage_value["cache_saved_usd"] = serde_json::json!(saved);
                }
            }
            None if usage.total_tokens() > 0 => {
                // Unknown, not free.
                usage_value["cost_usd"] = serde_json::Value::Null;
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

/// Prints the outcome (its text, or the JSON with `json`) and turns its status into the exit
/// code. In text mode the totals of the whole tree follow on stderr ([`summary_line`]).
///
/// The text is printed exactly when stdout is a pipe or a file (the caller asked for the
/// model's text), and through [`terminal_text`] when stdout is a terminal, where control
/// sequences in it would act. The JSON is always exact (see [`json_text`]).
pub(crate) fn finish(
    outcome: &TaskOutcome,
    view: &OutcomeJson<'_>,
    json: bool,
) -> Result<(), CliError> {
    let no_answer = ended_without_answer(outcome);
    // A typed run without a valid value: stdout holds only validated JSON, so nothing.
    let invalid_output = ended_with_invalid_output(outcome);
    if json {
        let text = json_text(view)?;
        crate::output::outln!("{text}");
    } else {
        if !no_answer && !invalid_output {
            crate::output::outln!("{}", stdout_text(&outcome.text));
        }
        eprintln!("{}", summary_line(outcome, view));
    }
    exit_for(outcome)
}

/// True when the run ended without an answer: it has none to print, its text says why.
fn ended_without_answer(outcome: &TaskOutcome) -> bool {
    outcome.status == TaskStatus::Failed
        && outcome
            .text
            .starts_with(subagents::runtime::NO_ANSWER_PREFIX)
}

/// True when a typed run ended without a valid value (see `subagents::schema`).
fn ended_with_invalid_output(outcome: &TaskOutcome) -> bool {
    outcome.status == TaskStatus::Failed
        && outcome
            .text
            .starts_with(subagents::schema::INVALID_OUTPUT_PREFIX)
}

/// The exit code of an outcome's status (what [`finish`] returns after printing it).
pub(crate) fn exit_for(outcome: &TaskOutcome) -> Result<(), CliError> {
    let no_answer = ended_without_answer(outcome);
    let invalid_output = ended_with_invalid_output(outcome);
    match outcome.status {
        TaskStatus::Completed => Ok(()),
        TaskStatus::Failed if no_answer => Err(CliError::Failed(format!(
            "the agent ended without an answer ({})",
            terminal_safe(&outcome.text)
        ))),
        TaskStatus::Failed if invalid_output => Err(CliError::Failed(format!(
            "the agent ended without a valid result ({})",
            terminal_safe(&outcome.text)
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
                .as_ref()
                .map(|l| format!(" ({l})"))
                .unwrap_or_default()
        ))),
    }
}

/// The last line of a run in text mode: how it ended and the whole tree's totals, e.g.
/// `done · 12.3k in / 1.1k out tokens · $0.0400 · session sess_0193…`. The cost counts the
/// priced models; models without a price are named, their cost never guessed.
pub(crate) fn summary_line(outcome: &TaskOutcome, view: &OutcomeJson<'_>) -> String {
    let total = serde_json::from_value::<subagents::spi::UsageNode>(view.usage.clone())
        .map(|tree| tree.total())
        .unwrap_or_else(|_| outcome.usage.clone());
    let mut parts = vec![match outcome.status {
        TaskStatus::Completed => "done".to_string(),
        other => other.to_string(),
    }];
    parts.extend(crate::failures::summary(
        view.children_total,
        &view.failures,
    ));
    parts.push(format!(
        "{} in / {} out tokens",
        human_count(total.input_tokens),
        human_count(total.output_tokens)
    ));
    if total.cache_read_tokens > 0 || total.cache_creation_tokens > 0 {
        parts.push(format!(
            "cache {} read / {} written",
            human_count(total.cache_read_tokens),
            human_count(total.cache_creation_tokens)
        ));
    }
    let saved = match view.cache_saved_usd {
        Some(s) if s >= 0.0 => format!(" (cache saved ${s:.4})"),
        Some(s) => format!(" (cache cost ${:.4} more)", -s),
        None => String::new(),
    };
    let unpriced = view.unpriced_models.join(", ");
    match (view.priced_usd, unpriced.is_empty()) {
        (Some(cost), true) => parts.push(format!("${cost:.4}{saved}")),
        (Some(cost), false) if cost > 0.0 => {
            parts.push(format!(
                "${cost:.4}{saved} + unpriced: {}",
                terminal_safe(&unpriced)
            ));
        }
        (_, false) => parts.push(format!(
            "cost unknown (unpriced: {})",
            terminal_safe(&unpriced)
        )),
        (None, true) => {}
    }
    if let Some(session) = outcome.session_id.as_deref() {
        parts.push(format!("session {}", terminal_safe(session)));
    }
    parts.join(" · ")
}

/// `950`, `12.3k`, `4.5M`.
pub(crate) fn human_count(n: u64) -> String {
    match n {
        0..1_000 => n.to_string(),
        1_000..1_000_000 => format!("{:.1}k", n as f64 / 1e3),
        _ => format!("{:.1}M", n as f64 / 1e6),
    }
}

/// How long ago `t` was, shortly (`42s`, `5m`, `3h`, `2d`).
pub(crate) fn age(t: std::time::SystemTime) -> String {
    duration(
        std::time::SystemTime::now()
            .duration_since(t)
            .unwrap_or_default(),
    )
}

/// `d` shortly (`42s`, `5m`, `3h`, `2d`).
pub(crate) fn duration(d: std::time::Duration) -> String {
    let s = d.as_secs();
    match s {
        0..120 => format!("{s}s"),
        120..7_200 => format!("{}m", s / 60),
        7_200..172_800 => format!("{}h", s / 3600),
        _ => format!("{}d", s / 86_400),
    }
}

/// Text safe to print on one line of a terminal: control characters (ESC, BEL, CR,
/// newlines...), bidi controls and invisible format characters are shown as `\u{..}` escapes
/// instead of acting on the terminal (one implementation, the Markdown kind's). Everything a
/// peer, a model or a file controls goes through it (or [`terminal_text`]) before it reaches
/// a terminal.
pub(crate) use subagents::claude::escape_for_terminal as terminal_safe;

/// [`terminal_safe`] for text of several lines (answers, error messages): newlines and tabs
/// stay, everything else it escapes is escaped.
pub(crate) use subagents::claude::escape_for_terminal_multiline as terminal_text;

/// `text` as it goes to stdout: exact when stdout is not a terminal, else [`terminal_text`].
pub(crate) fn stdout_text(text: &str) -> std::borrow::Cow<'_, str> {
    use std::io::IsTerminal as _;
    if std::io::stdout().is_terminal() {
        terminal_text(text)
    } else {
        std::borrow::Cow::Borrowed(text)
    }
}

/// `value` as pretty JSON that is safe on a terminal and still exact: every character the
/// terminal escaper would escape is written as a JSON `\uXXXX` escape (a surrogate pair above
/// U+FFFF), so a parser reads back the very same strings. serde_json already escapes C0
/// controls; this adds DEL, C1, bidi and invisible format characters. JSON's own structure
/// is ASCII, so every such character is inside a string.
pub(crate) fn json_text(value: &impl Serialize) -> Result<String, CliError> {
    let text = serde_json::to_string_pretty(value)
        .map_err(|e| CliError::Failed(format!("cannot encode JSON: {e}")))?;
    Ok(escape_json_hazards(text))
}

/// Prints a listing (`tasks list`, `workflow list`): `items` as JSON with `json`, else a line
/// each by `line`, or `empty` on stderr when there are none.
pub(crate) fn print_list<T: Serialize>(
    items: &[T],
    json: bool,
    empty: &str,
    line: impl Fn(&T) -> String,
) -> Result<(), CliError> {
    if json {
        outln!("{}", json_text(&items)?);
    } else if items.is_empty() {
        eprintln!("{empty}");
    } else {
        for item in items {
            outln!("{}", line(item));
        }
    }
    Ok(())
}

/// JSON `text` with every character the terminal escaper would escape (but its newlines)
/// written as a JSON `\uXXXX` escape: what [`json_text`] and the stream-json lines print.
pub(crate) fn escape_json_hazards(text: String) -> String {
    let hazard = |c: char| c != '\n' && subagents::claude::is_terminal_hazard(c);
    if !text.contains(hazard) {
        return text;
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if hazard(c) {
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                out.push_str(&format!("\\u{unit:04x}"));
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// The diagnostics log's writer: stderr, with the characters tracing-subscriber leaves in
/// the values it logs (it escapes ESC, C1 and a few C0 controls itself) shown escaped as
/// [`terminal_safe`] shows them: carriage returns, bidi and invisible format characters. ESC
/// passes, for the log's own colours; newlines and tabs pass.
pub(crate) struct LogWriter;

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for LogWriter {
    type Writer = LogWriter;

    fn make_writer(&'a self) -> Self::Writer {
        LogWriter
    }
}

impl std::io::Write for LogWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let hazard = |c: char| {
            !matches!(c, '\n' | '\t' | '\u{1b}') && subagents::claude::is_terminal_hazard(c)
        };
        let text = String::from_utf8_lossy(buf);
        let mut err = std::io::stderr().lock();
        if text.contains(hazard) {
            let mut safe = String::with_capacity(text.len() + 16);
            for c in text.chars() {
                if hazard(c) {
                    safe.extend(c.escape_unicode());
                } else {
                    safe.push(c);
                }
            }
            err.write_all(safe.as_bytes())?;
        } else {
            err.write_all(buf)?;
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        std::io::stderr().flush()
    }
}

/// Writes one line to stdout. A closed pipe (`subagents agents list | head -1`) ends the
/// process quietly with status 0 instead of a panic: the reader has what it wanted.
pub(crate) fn write_line(args: std::fmt::Arguments<'_>) {
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
    use super::{terminal_safe, terminal_text};

    #[test]
    fn the_summary_line_gives_totals_cost_and_session() {
        use subagents::policy::{ModelPrice, ModelPrices};
        use subagents::spi::{TaskOutcome, Usage, UsageNode};
        let mut o = TaskOutcome::completed("ok")
            .with_usage(
                Usage::new()
                    .with_tokens(12_000, 800)
                    .with_model("claude-sonnet-4-5-20250929"),
            )
            .with_session("sess_1");
        o.children.push(UsageNode::new(
            "local",
            "CLAUDE",
            subagents::spi::TaskStatus::Completed,
            Usage::new().with_tokens(300, 300).with_model("qwen2.5"),
        ));
        let prices = ModelPrices::new().with("claude-sonnet-4-5", ModelPrice::new(3.0, 15.0));
        let view = super::OutcomeJson::new("main", "MAIN", &o, None).with_prices(&prices);
        assert_eq!(
            super::summary_line(&o, &view),
            "done · 12.3k in / 1.1k out tokens · $0.0480 + unpriced: qwen2.5 · session sess_1"
        );
        assert_eq!(super::human_count(999), "999");
        // With the prompt cache: what was read and written, and what it saved.
        let cached = TaskOutcome::completed("ok").with_usage(
            Usage::new()
                .with_tokens(2_000, 100)
                .with_cache_tokens(40_000, 1_500)
                .with_model("claude-sonnet-4-5"),
        );
        let prices = ModelPrices::new().with(
            "claude-sonnet-4-5",
            ModelPrice::new(3.0, 15.0).with_cache(0.3, 3.75),
        );
        let view = super::OutcomeJson::new("main", "MAIN", &cached, None).with_prices(&prices);
        // 500 at $3, 1,500 at $3.75, 40,000 at $0.30, 100 at $15 = $0.020625; uncached
        // 42,000 at $3 + 100 at $15 = $0.1275.
        assert_eq!(
            super::summary_line(&cached, &view),
            "done · 2.0k in / 100 out tokens · cache 40.0k read / 1.5k written · $0.0206 \
             (cache saved $0.1069)"
        );
        assert!((view.usage["usage"]["cache_saved_usd"].as_f64().unwrap() - 0.106875).abs() < 1e-9);
        assert_eq!(view.usage["usage"]["cache_read_tokens"], 40_000);
        assert_eq!(super::human_count(4_500_000), "4.5M");
    }

    #[test]
    fn control_and_bidi_characters_are_escaped() {
        assert_eq!(terminal_safe("plain-name"), "plain-name");
        assert_eq!(terminal_safe("a\u{1b}[31mb"), "a\\u{1b}[31mb");
        assert_eq!(terminal_safe("x\u{7}\ny"), "x\\u{7}\\u{a}y");
        assert_eq!(terminal_safe("ab\u{202e}cd"), "ab\\u{202e}cd");
        assert_eq!(terminal_text("a\r\n\tb\u{8}"), "a\\u{d}\n\tb\\u{8}");
    }

    #[test]
    fn json_is_exact_and_terminal_safe() {
        let hostile =
            "a\u{1b}]0;title\u{7}\u{9b}2J\u{202e}\u{7f}\u{200b}\u{e0041}\r\nb é 👩\u{200d}💻";
        let value = serde_json::json!({ "text": hostile });
        let text = super::json_text(&value).expect("encodes");
        for c in text.chars() {
            assert!(
                c == '\n' || !subagents::claude::is_terminal_hazard(c),
                "raw {c:?} in {text}"
            );
        }
        let back: serde_json::Value = serde_json::from_str(&text).expect("still JSON");
        assert_eq!(back["text"], hostile);
        assert!(text.contains("\\udb40\\udc41"), "a surrogate pair: {text}");
    }
}
