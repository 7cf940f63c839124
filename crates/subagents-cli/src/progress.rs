//! Live progress on stderr: a tree of running subagents (turns, tokens, elapsed time) on a
//! terminal, plain lines otherwise.

use std::collections::HashMap;
use std::io::IsTerminal;
use std::sync::Arc;
use std::time::{Duration, Instant};

use indicatif::{MultiProgress, ProgressBar, ProgressStyle};
use subagents::policy::ModelPrices;
use subagents::spi::{ProgressEvent, ProgressKind, ProgressSink};
use tokio::sync::mpsc;

/// Events waiting to be drawn; past this, text deltas are dropped (never blocks the task path).
pub(crate) const QUEUE: usize = 4096;

/// A progress sink feeding a renderer task.
pub(crate) struct Progress {
    tx: mpsc::Sender<ProgressEvent>,
}

impl ProgressSink for Progress {
    fn emit(&self, event: ProgressEvent) {
        // Never block the task path: a full queue drops the event.
        let _ = self.tx.try_send(event);
    }
}

/// The live display's bars when stderr is a terminal (shared with the approval prompt, which
/// suspends it while asking).
pub(crate) fn terminal() -> Option<MultiProgress> {
    std::io::stderr().is_terminal().then(MultiProgress::new)
}

/// Starts the renderer; returns the sink and a handle that finishes drawing when awaited. With
/// `multi` (a terminal), a live tree; otherwise plain lines.
pub(crate) fn start(
    quiet: bool,
    multi: Option<MultiProgress>,
) -> (Arc<dyn ProgressSink>, tokio::task::JoinHandle<()>) {
    start_with_colours(quiet, multi, HashMap::new())
}

/// [`start`], with agents' `color`s (agent name → colour name) for the live tree. Names are
/// coloured only on a terminal and never when `NO_COLOR` is set.
pub(crate) fn start_with_colours(
    quiet: bool,
    multi: Option<MultiProgress>,
    colours: HashMap<String, String>,
) -> (Arc<dyn ProgressSink>, tokio::task::JoinHandle<()>) {
    start_with_prices(quiet, multi, colours, Arc::new(ModelPrices::new()))
}

/// [`start_with_colours`], showing each run's cost next to its tokens when its model has a
/// price in `prices`.
pub(crate) fn start_with_prices(
    quiet: bool,
    multi: Option<MultiProgress>,
    colours: HashMap<String, String>,
    prices: Arc<ModelPrices>,
) -> (Arc<dyn ProgressSink>, tokio::task::JoinHandle<()>) {
    let (tx, rx) = mpsc::channel(QUEUE);
    let colours = if multi.is_some() && colour_allowed(std::env::var_os("NO_COLOR").as_deref()) {
        colours
    } else {
        HashMap::new()
    };
    let handle = tokio::spawn(async move {
        match multi {
            _ if quiet => drain(rx).await,
            Some(multi) => render_tree(rx, multi, colours, prices).await,
            None => render_lines(rx, prices).await,
        }
    });
    (Arc::new(Progress { tx }), handle)
}

/// True unless `NO_COLOR` is set to something (https://no-color.org).
fn colour_allowed(no_color: Option<&std::ffi::OsStr>) -> bool {
    no_color.is_none_or(|v| v.is_empty())
}

/// The `color` of every Markdown agent that has one, by agent name.
pub(crate) fn agent_colours(agents: &subagents::Subagents) -> HashMap<String, String> {
    agents
        .agents()
        .iter()
        .filter_map(|a| {
            let def = a.downcast_ref::<subagents::claude::ClaudeAgentDefinition>()?;
            Some((def.name.clone(), def.color.clone()?))
        })
        .collect()
}

/// The ANSI SGR parameters of a Claude Code agent colour; `None` for an unknown one.
fn sgr(colour: &str) -> Option<&'static str> {
    Some(match colour.trim().to_ascii_lowercase().as_str() {
        "red" => "31",
        "green" => "32",
        "yellow" => "33",
        "blue" => "34",
        "purple" | "magenta" => "35",
        "cyan" => "36",
        "orange" => "38;5;208",
        "pink" => "38;5;213",
        _ => return None,
    })
}

/// `name` (already escaped for the terminal) in the agent's colour, when it has a known one.
fn coloured(name: &str, colour: Option<&String>) -> String {
    match colour.and_then(|c| sgr(c)) {
        Some(code) => format!("\u{1b}[{code}m{name}\u{1b}[0m"),
        None => name.to_string(),
    }
}

async fn drain(mut rx: mpsc::Receiver<ProgressEvent>) {
    while rx.recv().await.is_some() {}
}

/// Whether the node of this key is a workflow run (`wf_…`, its run id).
fn is_workflow(key: &str) -> bool {
    key.starts_with("wf_")
}

fn key(e: &ProgressEvent) -> String {
    e.task_id.clone().unwrap_or_else(|| e.agent.clone())
}

fn name(e: &ProgressEvent) -> String {
    if e.agent.is_empty() {
        "main".into()
    } else {
        crate::output::terminal_safe(&e.agent).into_owned()
    }
}

/// Plain lines for logs and pipes.
async fn render_lines(mut rx: mpsc::Receiver<ProgressEvent>, prices: Arc<ModelPrices>) {
    let start = Instant::now();
    while let Some(e) = rx.recv().await {
        let t = start.elapsed().as_secs_f64();
        let who = format!("{}{}", "  ".repeat(e.depth as usize), name(&e));
        let line = match &e.kind {
            ProgressKind::Started { description } => format!("started: {description}"),
            ProgressKind::Turn { turn } => format!("turn {turn}"),
            ProgressKind::ToolCall { name, .. } => format!("tool {name}"),
            ProgressKind::ToolResult {
                name,
                is_error: true,
                preview,
                ..
            } => {
                format!("tool {name} failed: {}", first_line(preview))
            }
            ProgressKind::Status { message } => format!("status: {}", first_line(message)),
            ProgressKind::Compacted { .. } => compacted_text(&e.kind),
            ProgressKind::Finished { status, usage } => format!(
                "finished {status}{} · {} turns · {} in / {} out tokens{}{} · {} ms",
                model_text(usage),
                usage.turns,
                usage.input_tokens,
                usage.output_tokens,
                cache_text(usage),
                cost_text(&prices, usage),
                usage.duration_ms
            ),
            _ => continue,
        };
        eprintln!("[{t:>7.2}s] {who}: {}", crate::output::terminal_safe(&line));
    }
}

/// `compacted: ~12000 → ~5000 tokens (3 outputs trimmed, 14 messages summarised)`.
fn compacted_text(kind: &ProgressKind) -> String {
    let ProgressKind::Compacted {
        tokens_before,
        tokens_after,
        trimmed_outputs,
        summarized_messages,
    } = kind
    else {
        return String::new();
    };
    format!(
        "compacted: ~{tokens_before} → ~{tokens_after} tokens ({trimmed_outputs} outputs trimmed, \
         {summarized_messages} messages summarised)"
    )
}

/// The first line of `s` (see [`first_line`]), safe to draw on a terminal.
fn shown(s: &str) -> String {
    crate::output::terminal_safe(&first_line(s)).into_owned()
}

fn first_line(s: &str) -> String {
    let l = s.lines().next().unwrap_or("");
    if l.chars().count() > 100 {
        format!("{}…", l.chars().take(100).collect::<String>())
    } else {
        l.to_string()
    }
}

struct Node {
    bar: ProgressBar,
    /// The parent's key, when the parent is shown.
    parent: Option<String>,
    /// The last bar of this node's subtree: a new child goes right after it.
    last_in_subtree: ProgressBar,
    agent: String,
    depth: u32,
    turns: u32,
    tokens: u64,
    /// ` · $0.0123` when the model's price is known, else empty.
    cost: String,
    /// ` · 40.0k cached` once the provider's prompt cache served part of its prompts.
    cached: String,
    /// ` · MODEL` once the run's usage names its model, else empty.
    model: String,
    /// The latest thing it did, already escaped for the terminal.
    last: String,
    /// The line its model is writing (text deltas).
    text: LiveLine,
    /// When its line was last drawn (text deltas redraw it at most every [`REDRAW_EVERY`]).
    drawn: Option<Instant>,
}

/// The most characters of a run's latest line of text the live tree keeps and shows.
const TAIL_CHARS: usize = 100;

/// Text deltas redraw a run's line at most this often (other events redraw it at once).
const REDRAW_EVERY: Duration = Duration::from_millis(100);

/// The line a run's model is writing, from its text deltas: what the live tree shows of it.
/// Bounded whatever the deltas' size: at most [`TAIL_CHARS`] characters of each line kept.
#[derive(Debug, Default)]
struct LiveLine {
    /// The end of the line being written.
    current: String,
    /// The end of the last non-empty line before it.
    previous: String,
}

impl LiveLine {
    /// Adds a delta.
    fn push(&mut self, delta: &str) {
        for (i, piece) in delta.split('\n').enumerate() {
            if i > 0 {
                if self.current.trim().is_empty() {
                    self.current.clear();
                } else {
                    self.previous = std::mem::take(&mut self.current);
                }
            }
            self.current.push_str(piece);
            keep_end(&mut self.current);
        }
    }

    /// The latest non-empty line (its end), or "" before any text.
    fn latest(&self) -> &str {
        if self.current.trim().is_empty() {
            &self.previous
        } else {
            &self.current
        }
    }
}

/// Keeps the last [`TAIL_CHARS`] characters of `s`.
fn keep_end(s: &mut String) {
    // Cheap when short: characters are at most 4 bytes.
    if s.len() <= TAIL_CHARS {
        return;
    }
    let n = s.chars().count();
    if n > TAIL_CHARS
        && let Some((at, _)) = s.char_indices().nth(n - TAIL_CHARS)
    {
        s.drain(..at);
    }
}

/// ` · MODEL` for a usage that names the model that answered (escaped); empty otherwise.
fn model_text(usage: &subagents::spi::Usage) -> String {
    usage
        .model
        .as_deref()
        .map(|m| format!(" · {}", crate::output::terminal_safe(m)))
        .unwrap_or_default()
}

/// ` · cache R read / W written` for a usage that used the provider's prompt cache; empty
/// otherwise.
fn cache_text(usage: &subagents::spi::Usage) -> String {
    if usage.cache_read_tokens == 0 && usage.cache_creation_tokens == 0 {
        return String::new();
    }
    format!(
        " · cache {} read / {} written",
        usage.cache_read_tokens, usage.cache_creation_tokens
    )
}

/// ` · 40.0k cached` for a usage part of whose prompts the provider's cache served (the live
/// tree's short form of [`cache_text`]); empty otherwise.
fn cached_text(usage: &subagents::spi::Usage) -> String {
    if usage.cache_read_tokens == 0 {
        return String::new();
    }
    format!(
        " · {} cached",
        crate::output::human_count(usage.cache_read_tokens)
    )
}

/// ` · $COST` for a usage whose model has a price; empty otherwise (never guessed).
fn cost_text(prices: &ModelPrices, usage: &subagents::spi::Usage) -> String {
    crate::output::usage_cost(prices, usage)
        .map(|c| format!(" · ${c:.4}"))
        .unwrap_or_default()
}

impl Node {
    fn redraw(&mut self) {
        self.drawn = Some(Instant::now());
        self.bar.set_message(format!(
            "{}{}{} · turn {} · {} tokens{}{} · {}",
            "  ".repeat(self.depth as usize),
            self.agent,
            self.model,
            self.turns,
            self.tokens,
            self.cached,
            self.cost,
            self.last
        ));
    }
}

/// A live tree on a terminal: each child's line goes right under its parent's subtree, so
/// nested and parallel children stay under the run that started them.
async fn render_tree(
    mut rx: mpsc::Receiver<ProgressEvent>,
    multi: MultiProgress,
    colours: HashMap<String, String>,
    prices: Arc<ModelPrices>,
) {
    let style = ProgressStyle::with_template("{spinner} {elapsed:>4} {msg}")
        .unwrap_or_else(|_| ProgressStyle::default_spinner());
    let mut nodes: HashMap<String, Node> = HashMap::new();
    while let Some(e) = rx.recv().await {
        let k = key(&e);
        if !nodes.contains_key(&k) {
            let parent = e.parent_task_id.clone().filter(|p| nodes.contains_key(p));
            let bar = match parent.as_ref().and_then(|p| nodes.get(p)) {
                Some(p) => multi.insert_after(&p.last_in_subtree, ProgressBar::new_spinner()),
                None => multi.add(ProgressBar::new_spinner()),
            };
            bar.set_style(style.clone());
            bar.enable_steady_tick(Duration::from_millis(120));
            // The new bar ends the subtree of every ancestor.
            let mut up = parent.clone();
            while let Some(p) = up {
                let Some(n) = nodes.get_mut(&p) else { break };
                n.last_in_subtree = bar.clone();
                up = n.parent.clone();
            }
            nodes.insert(
                k.clone(),
                Node {
                    last_in_subtree: bar.clone(),
                    bar,
                    parent,
                    agent: coloured(&name(&e), colours.get(&e.agent)),
                    depth: e.depth,
                    turns: 0,
                    tokens: 0,
                    cost: String::new(),
                    cached: String::new(),
                    model: String::new(),
                    last: String::new(),
                    text: LiveLine::default(),
                    drawn: None,
                },
            );
        }
        let Some(node) = nodes.get_mut(&k) else {
            continue;
        };
        // What the agents, models and peers wrote is escaped before it is drawn.
        match &e.kind {
            ProgressKind::Started { description } => node.last = shown(description),
            ProgressKind::Turn { turn } => {
                node.turns = *turn;
                node.text = LiveLine::default();
            }
            ProgressKind::ToolCall { name, .. } => node.last = format!("→ {}", shown(name)),
            ProgressKind::ToolResult {
                name,
                is_error,
                preview,
                ..
            } => {
                node.last = if *is_error {
                    format!("← {} failed: {}", shown(name), shown(preview))
                } else {
                    format!("← {}", shown(name))
                };
            }
            ProgressKind::TextDelta { text } => {
                // Many deltas a second: the line is drawn at most every REDRAW_EVERY (the
                // turn's usage, which follows its text, draws the last of it).
                node.text.push(text);
                if node.drawn.is_some_and(|d| d.elapsed() < REDRAW_EVERY) {
                    continue;
                }
                node.last = shown(node.text.latest());
            }
            ProgressKind::Status { message } => node.last = shown(message),
            ProgressKind::Compacted { .. } => node.last = compacted_text(&e.kind),
            ProgressKind::Usage { usage } => {
                if !node.text.latest().is_empty() {
                    node.last = shown(node.text.latest());
                }
                node.tokens = usage.total_tokens();
                node.model = model_text(usage);
                node.cost = cost_text(&prices, usage);
                node.cached = cached_text(usage);
            }
            ProgressKind::Finished { status, usage } => {
                node.tokens = usage.total_tokens().max(node.tokens);
                let cost = cost_text(&prices, usage);
                if !cost.is_empty() {
                    node.cost = cost;
                }
                let cached = cached_text(usage);
                if !cached.is_empty() {
                    node.cached = cached;
                }
                node.turns = usage.turns.max(node.turns);
                node.last = status.to_string();
                node.redraw();
                // A workflow's calls leave the tree when they end: its own line counts them
                // (running, done, failed, queued), so a run of 1,000 calls shows the active ones.
                if node.parent.as_deref().is_some_and(is_workflow) {
                    node.bar.finish_and_clear();
                } else {
                    node.bar.finish();
                }
                continue;
            }
            _ => continue,
        }
        node.redraw();
    }
    for n in nodes.values() {
        if !n.bar.is_finished() {
            n.bar.finish();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_live_line_is_the_end_of_the_latest_non_empty_line() {
        let mut l = LiveLine::default();
        assert_eq!(l.latest(), "");
        for d in ["Hel", "lo", " world"] {
            l.push(d);
        }
        assert_eq!(l.latest(), "Hello world");
        l.push("!\n");
        assert_eq!(
            l.latest(),
            "Hello world!",
            "a newline alone keeps the line shown"
        );
        l.push("  \n\nNext");
        assert_eq!(l.latest(), "Next");
        l.push(" line\nthird\n");
        assert_eq!(l.latest(), "third");
        // Bounded: a huge delta keeps the end of its last line only.
        let huge = format!("{}\n{}", "x".repeat(10_000), "é".repeat(5_000));
        l.push(&huge);
        assert_eq!(l.latest(), "é".repeat(TAIL_CHARS));
        assert!(l.previous.chars().count() <= TAIL_CHARS);
        for _ in 0..1_000 {
            l.push("yz");
        }
        assert_eq!(l.latest().chars().count(), TAIL_CHARS);
        assert!(l.latest().ends_with("yzyz"));
    }

    #[test]
    fn lines_and_the_live_tree_say_what_the_prompt_cache_served() {
        let plain = subagents::spi::Usage::new().with_tokens(1_000, 50);
        assert_eq!(
            (cache_text(&plain), cached_text(&plain)),
            (String::new(), String::new())
        );
        let cached = plain.clone().with_cache_tokens(40_000, 1_500);
        assert_eq!(cache_text(&cached), " · cache 40000 read / 1500 written");
        assert_eq!(cached_text(&cached), " · 40.0k cached");
    }

    #[test]
    fn colours_follow_claude_code_names_and_no_color() {
        let blue = "blue".to_string();
        assert_eq!(coloured("rev", Some(&blue)), "\u{1b}[34mrev\u{1b}[0m");
        assert_eq!(coloured("rev", Some(&"teal".to_string())), "rev");
        assert_eq!(coloured("rev", None), "rev");
        for c in subagents::claude::AGENT_COLORS {
            assert!(sgr(c).is_some(), "{c}");
        }
        assert!(colour_allowed(None));
        assert!(colour_allowed(Some(std::ffi::OsStr::new(""))));
        assert!(!colour_allowed(Some(std::ffi::OsStr::new("1"))));
    }
}
