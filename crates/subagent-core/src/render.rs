//! Usage trees as text.

use std::fmt::Write as _;

use subagent_spi::UsageNode;

/// A usage tree rendered for people.
pub trait UsageTreeText {
    /// Renders the tree as indented lines: `name (kind) status · turns · tokens · time`.
    fn render(&self) -> String;
}

impl UsageTreeText for UsageNode {
    fn render(&self) -> String {
        let mut out = String::new();
        render_into(self, &mut out, 0);
        out
    }
}

fn render_into(node: &UsageNode, out: &mut String, depth: usize) {
    let u = &node.usage;
    let _ = writeln!(
        out,
        "{:indent$}{} ({}) {} · {} turn{} · {} in / {} out tokens · {} ms{}",
        "",
        node.agent,
        node.kind,
        node.status,
        u.turns,
        if u.turns == 1 { "" } else { "s" },
        u.input_tokens,
        u.output_tokens,
        u.duration_ms,
        u.model
            .as_deref()
            .map(|m| format!(" · {m}"))
            .unwrap_or_default(),
        indent = depth * 2
    );
    for c in &node.children {
        render_into(c, out, depth + 1);
    }
}
