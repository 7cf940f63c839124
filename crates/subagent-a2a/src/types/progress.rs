//! The progress extension: how our server streams what its run and every run below it do
//! (text deltas, tool calls and results, turns, starts and ends) to a streaming client, and
//! how our client places those events in its own progress tree, under the task that called the
//! peer.
//!
//! A server declares the extension in its card (`capabilities.extensions`, URI
//! [`PROGRESS_EXTENSION_URI`], not required) and sends, while a task runs, status updates in
//! the task's current state with no message and the events in their `metadata` under that URI
//! as key: an array of the SPI's `ProgressEvent` objects, in order, each as the stream-json
//! lines of `subagents run --output-format stream-json` print them (without `type`):
//!
//! ```json
//! {"https://subagents.dev/a2a/ext/progress/v1": [
//!   {"task_id": "…", "parent_task_id": "…", "agent": "leaf", "depth": 1,
//!    "event": "text_delta", "text": "…"}]}
//! ```
//!
//! `depth` is relative to the served run (0); the served run's own events carry the A2A task
//! id. These updates are live only: never saved, pushed or added to the task. Clients that
//! do not know the extension see `working` updates without a message.
//!
//! The events come from a stranger, so reading them is bounded (see [`RemoteProgress`]): at
//! most [`MAX_PROGRESS_BATCH`] events per update, [`MAX_PROGRESS_EVENT_BYTES`] per event,
//! [`MAX_PROGRESS_TASKS`] distinct remote runs per call, [`MAX_PROGRESS_DEPTH`] levels below
//! the peer, [`MAX_PROGRESS_ID`] bytes per id and agent name; events past a bound are
//! dropped, never an error (progress is a view, the run's result does not depend on it).
//! Remote ids are namespaced under the calling task's id, so a peer cannot address or
//! impersonate a local run; the peer's own run's usage, session, start and end are not taken
//! from it (the caller reports those from the task itself), so progress cannot change what a
//! run is charged or how it ends.

use std::collections::HashSet;

use serde_json::Value;
use subagent_spi::{ProgressEvent, ProgressKind, TaskContext};

use super::{JsonObject, v1};

/// The extension's URI: the card declares it, and live status updates carry events under it.
pub const PROGRESS_EXTENSION_URI: &str = "https://subagents.dev/a2a/ext/progress/v1";

/// The most events one status update may carry (a server sends at most this many).
pub const MAX_PROGRESS_BATCH: usize = 64;

/// The largest event read, in bytes of JSON.
pub const MAX_PROGRESS_EVENT_BYTES: usize = 64 * 1024;

/// The most distinct remote runs (task ids) of one call placed in the tree.
pub const MAX_PROGRESS_TASKS: usize = 256;

/// The most levels below the peer's run placed in the tree.
pub const MAX_PROGRESS_DEPTH: u32 = 16;

/// The longest remote task id or agent name kept, in bytes.
pub const MAX_PROGRESS_ID: usize = 256;

/// The card entry declaring the extension (not required: clients may ignore it).
pub fn progress_extension() -> v1::AgentExtension {
    v1::AgentExtension {
        uri: PROGRESS_EXTENSION_URI.to_string(),
        description: Some(
            "Streams the run's progress (text deltas, tool calls and results, and the same for \
             every run it delegates to) in the metadata of live status updates under this URI."
                .to_string(),
        ),
        required: false,
        params: None,
    }
}

/// The metadata object carrying `events` (at most [`MAX_PROGRESS_BATCH`]; the rest are left
/// out).
pub fn progress_to_metadata(events: &[ProgressEvent]) -> JsonObject {
    let list: Vec<Value> = events
        .iter()
        .take(MAX_PROGRESS_BATCH)
        .filter_map(|e| serde_json::to_value(e).ok())
        .collect();
    let mut m = JsonObject::new();
    m.insert(PROGRESS_EXTENSION_URI.to_string(), Value::Array(list));
    m
}

/// Adds `event` to a batch about to be sent, merging a text delta into the previous event
/// when that is a delta of the same run (fewer, larger updates under load). False when the
/// batch is full.
pub fn push_coalesced(batch: &mut Vec<ProgressEvent>, event: ProgressEvent) -> bool {
    if let (Some(last), ProgressKind::TextDelta { text }) = (batch.last_mut(), &event.kind)
        && last.task_id == event.task_id
        && let ProgressKind::TextDelta { text: prev } = &mut last.kind
        && prev.len() + text.len() <= MAX_PROGRESS_EVENT_BYTES / 2
    {
        prev.push_str(text);
        return true;
    }
    if batch.len() >= MAX_PROGRESS_BATCH {
        return false;
    }
    batch.push(event);
    true
}

/// Places a peer's progress events in the caller's tree: one per remote call.
///
/// The peer's own run (events with the A2A task's id, or no id) is the calling task's node:
/// its turns, tool calls, tool results and text deltas are emitted on the caller's context.
/// A run below it, with remote id `R`, becomes the task `LOCAL/R` (`LOCAL` the calling task's
/// id) at the caller's depth plus its depth below the peer's run, under `LOCAL/PARENT` (or
/// the calling task for the peer's own children).
#[derive(Debug, Default)]
pub struct RemoteProgress {
    seen: HashSet<String>,
    /// True once a text delta of the peer's own run was emitted.
    streamed_text: bool,
}

impl RemoteProgress {
    /// A mapper for one call.
    pub fn new() -> Self {
        Self::default()
    }

    /// True once the peer streamed its own run's text: its messages and artifacts then repeat
    /// text already shown.
    pub fn streamed_text(&self) -> bool {
        self.streamed_text
    }

    /// Emits on `ctx` the events of `metadata` (none when it has no progress), `remote_task`
    /// being the A2A task's id.
    pub fn read(&mut self, metadata: Option<&JsonObject>, remote_task: &str, ctx: &TaskContext) {
        let Some(Value::Array(list)) = metadata.and_then(|m| m.get(PROGRESS_EXTENSION_URI)) else {
            return;
        };
        if ctx.progress().discards_events() {
            return;
        }
        for raw in list.iter().take(MAX_PROGRESS_BATCH) {
            if serde_json::to_vec(raw).map_or(true, |b| b.len() > MAX_PROGRESS_EVENT_BYTES) {
                continue;
            }
            let Ok(e) = serde_json::from_value::<ProgressEvent>(raw.clone()) else {
                continue;
            };
            self.place(e, remote_task, ctx);
        }
    }

    fn place(&mut self, e: ProgressEvent, remote_task: &str, ctx: &TaskContext) {
        let own = e.task_id.as_deref().is_none_or(|t| t == remote_task);
        if own {
            match e.kind {
                ProgressKind::TextDelta { .. } => self.streamed_text = true,
                ProgressKind::Turn { .. }
                | ProgressKind::ToolCall { .. }
                | ProgressKind::ToolResult { .. } => {}
                // Usage, session, start and end of the peer's run come from the task itself.
                _ => return,
            }
            ctx.emit(e.kind);
            return;
        }
        if matches!(e.kind, ProgressKind::Session { .. }) || e.depth == 0 {
            return;
        }
        let (Some(id), Some(local)) = (e.task_id.as_deref(), ctx.task_id()) else {
            return;
        };
        if id.len() > MAX_PROGRESS_ID || e.agent.len() > MAX_PROGRESS_ID {
            return;
        }
        if !self.seen.contains(id) {
            if self.seen.len() >= MAX_PROGRESS_TASKS {
                return;
            }
            self.seen.insert(id.to_string());
        }
        let parent = match e.parent_task_id.as_deref() {
            Some(p) if p != remote_task && p.len() <= MAX_PROGRESS_ID => format!("{local}/{p}"),
            _ => local.to_string(),
        };
        let depth = ctx.depth() + e.depth.min(MAX_PROGRESS_DEPTH);
        let placed = ProgressEvent::new(e.agent, depth, e.kind)
            .with_task_id(format!("{local}/{id}"))
            .with_parent_task_id(parent);
        ctx.progress().emit(placed);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;

    fn collecting() -> (TaskContext, Arc<Mutex<Vec<ProgressEvent>>>) {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let s = seen.clone();
        let ctx = TaskContext::new()
            .with_progress(Arc::new(move |e: ProgressEvent| {
                s.lock().expect("lock").push(e)
            }))
            .with_task_id("root")
            .child("peer", Some("task_1".into()));
        (ctx, seen)
    }

    fn ev(task: &str, parent: &str, depth: u32, kind: ProgressKind) -> ProgressEvent {
        ProgressEvent::new("x", depth, kind)
            .with_task_id(task)
            .with_parent_task_id(parent)
    }

    #[test]
    fn remote_runs_are_placed_under_the_calling_task_and_namespaced() {
        let (ctx, seen) = collecting();
        let batch = vec![
            ev("R", "", 0, ProgressKind::TextDelta { text: "hi".into() }),
            ev(
                "R",
                "",
                0,
                ProgressKind::Usage {
                    usage: Default::default(),
                },
            ),
            ev("c1", "R", 1, ProgressKind::Turn { turn: 1 }),
            ev(
                "c2",
                "c1",
                2,
                ProgressKind::ToolCall {
                    id: "t".into(),
                    name: "Read".into(),
                    input: serde_json::json!({}),
                },
            ),
            ev(
                "c2",
                "c1",
                2,
                ProgressKind::Session {
                    session_id: "s".into(),
                },
            ),
        ];
        let mut p = RemoteProgress::new();
        p.read(Some(&progress_to_metadata(&batch)), "R", &ctx);
        assert!(p.streamed_text());
        let seen = seen.lock().expect("lock");
        assert_eq!(seen.len(), 3, "{seen:#?}");
        // The peer's own delta is the calling task's; its usage is not taken.
        assert_eq!(seen[0].task_id.as_deref(), Some("task_1"));
        assert_eq!(seen[0].depth, 1);
        assert_eq!(seen[1].task_id.as_deref(), Some("task_1/c1"));
        assert_eq!(seen[1].parent_task_id.as_deref(), Some("task_1"));
        assert_eq!(seen[1].depth, 2);
        assert_eq!(seen[2].task_id.as_deref(), Some("task_1/c2"));
        assert_eq!(seen[2].parent_task_id.as_deref(), Some("task_1/c1"));
        assert_eq!(seen[2].depth, 3);
    }

    #[test]
    fn a_hostile_peer_is_bounded() {
        let (ctx, seen) = collecting();
        let mut p = RemoteProgress::new();
        // Too many runs, too deep, too long, too big, not events at all.
        let many: Vec<ProgressEvent> = (0..MAX_PROGRESS_TASKS + 10)
            .map(|i| ev(&format!("r{i}"), "R", 1, ProgressKind::Turn { turn: 1 }))
            .collect();
        for chunk in many.chunks(MAX_PROGRESS_BATCH) {
            p.read(Some(&progress_to_metadata(chunk)), "R", &ctx);
        }
        assert_eq!(seen.lock().expect("lock").len(), MAX_PROGRESS_TASKS);
        seen.lock().expect("lock").clear();
        let mut m = JsonObject::new();
        m.insert(
            PROGRESS_EXTENSION_URI.into(),
            serde_json::json!([
                {"task_id": "r0", "agent": "a", "depth": 4_000_000_000u32, "event": "turn", "turn": 2},
                {"task_id": "r1", "agent": "a", "depth": 1, "event": "text_delta",
                 "text": "x".repeat(MAX_PROGRESS_EVENT_BYTES)},
                {"task_id": "x".repeat(MAX_PROGRESS_ID + 1), "agent": "a", "depth": 1,
                 "event": "turn", "turn": 1},
                {"task_id": "r0", "agent": "a", "depth": 1, "event": "no_such_event"},
                "not an event",
            ]),
        );
        p.read(Some(&m), "R", &ctx);
        let seen = seen.lock().expect("lock");
        assert_eq!(seen.len(), 1, "{seen:#?}");
        assert_eq!(seen[0].depth, ctx.depth() + MAX_PROGRESS_DEPTH);
        // A huge array is read up to the batch bound only.
        let mut m = JsonObject::new();
        m.insert(
            PROGRESS_EXTENSION_URI.into(),
            Value::Array(vec![Value::Null; 1_000_000]),
        );
        RemoteProgress::new().read(Some(&m), "R", &ctx);
    }

    #[test]
    fn deltas_of_one_run_are_coalesced_and_batches_bounded() {
        let mut batch = Vec::new();
        for t in ["a", "b", "c"] {
            assert!(push_coalesced(
                &mut batch,
                ev("R", "", 0, ProgressKind::TextDelta { text: t.into() })
            ));
        }
        assert!(push_coalesced(
            &mut batch,
            ev("S", "R", 1, ProgressKind::TextDelta { text: "d".into() })
        ));
        assert_eq!(batch.len(), 2);
        assert_eq!(
            batch[0].kind,
            ProgressKind::TextDelta { text: "abc".into() }
        );
        for i in 2..MAX_PROGRESS_BATCH {
            assert!(push_coalesced(
                &mut batch,
                ev("R", "", 0, ProgressKind::Turn { turn: i as u32 })
            ));
        }
        assert!(!push_coalesced(
            &mut batch,
            ev("R", "", 0, ProgressKind::Turn { turn: 0 })
        ));
    }
}
