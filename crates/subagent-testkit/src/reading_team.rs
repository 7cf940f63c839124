//! [`ReadingTeam`]: the scripted model of a long run, for tests of compaction and windows.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use serde_json::{Value, json};

use crate::{Reply, ScriptedModelServer, first_message_text, has_tool_result};

/// The model of a three-level tree, main → `coordinator` → `leaf`, whose leaf reads `big.txt`
/// with `Read` until it has done so `reads` times, then answers `LEAF-DONE`; the coordinator
/// passes that up and the main agent answers `FINAL: LEAF-DONE`. Each request is answered by its
/// system prompt (a compaction request, `You compact…`, gets a numbered summary), so the run can
/// be as long as a test wants. Counts the leaf's turns and the summaries asked for.
#[derive(Debug, Clone)]
pub struct ReadingTeam {
    leaf: String,
    reads: u32,
    leaf_turns: Arc<AtomicU32>,
    summaries: Arc<AtomicU32>,
}

impl ReadingTeam {
    /// The team whose leaf agent is `leaf` (its system prompt says `You are the {leaf}`).
    pub fn new(leaf: &str, reads: u32) -> Self {
        Self {
            leaf: leaf.to_string(),
            reads,
            leaf_turns: Arc::default(),
            summaries: Arc::default(),
        }
    }

    /// The reply to the request `body`.
    pub fn reply(&self, body: &Value) -> Reply {
        let system = first_message_text(body);
        if system.starts_with("You compact") {
            let n = self.summaries.fetch_add(1, Ordering::SeqCst);
            Reply::text(format!("SUMMARY-{n}: big.txt was read again and again."))
        } else if system.contains(&format!("You are the {}", self.leaf)) {
            let n = self.leaf_turns.fetch_add(1, Ordering::SeqCst);
            if n < self.reads {
                Reply::tool_calls(vec![("Read", json!({"file_path": "big.txt"}))])
            } else {
                Reply::text(format!("LEAF-DONE after {n} reads"))
            }
        } else if system.contains("You are the coordinator") {
            if has_tool_result(body) {
                Reply::text("the leaf is done: LEAF-DONE")
            } else {
                Reply::task_call(&self.leaf, "read big.txt again and again")
            }
        } else if has_tool_result(body) {
            Reply::text("FINAL: LEAF-DONE")
        } else {
            Reply::task_call("coordinator", "have big.txt read")
        }
    }

    /// Scripts `server`'s next `requests` requests (any model) to be answered by
    /// [`reply`](Self::reply).
    pub fn script(&self, server: &ScriptedModelServer, requests: usize) {
        let script = server.script();
        for _ in 0..requests {
            let team = self.clone();
            script.push_dynamic(None, move |body| team.reply(body));
        }
    }

    /// The leaf's turns so far.
    pub fn leaf_turns(&self) -> u32 {
        self.leaf_turns.load(Ordering::SeqCst)
    }

    /// The summaries asked for so far.
    pub fn summaries(&self) -> u32 {
        self.summaries.load(Ordering::SeqCst)
    }
}
