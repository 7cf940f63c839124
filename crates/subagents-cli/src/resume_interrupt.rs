//! Ctrl-C during a foreground `tasks resume`: the resumed run is cancelled as Ctrl-C cancels a
//! foreground `task` (the command's one rule, see `interrupt`), and this says what became of
//! the task and how to go on.
//!
//! An MCP task run by its server (session `mcp-task:ID`) is cancelled there too. The resumed
//! run's executor already sends `tasks/cancel` and waits (bounded) for the acknowledgement
//! when it was following the task (`subagent-mcp`); this stop is kept for a Ctrl-C that came
//! before it followed it (while connecting), and for its note, which says whether the server
//! acknowledged (a server that refuses a second `tasks/cancel` of a task it already cancelled
//! gets its reason quoted in the note). The store's record is left as it was (`interrupted`,
//! with its session), as `tasks stop --mcp` leaves it.

use subagents::Subagents;

use crate::output::terminal_safe;

/// Says on stderr what Ctrl-C did to the resumed task `task_id` whose session was `session`,
/// after cancelling an MCP task on its server.
pub(crate) async fn after_ctrl_c(agents: &Subagents, task_id: &str, session: Option<&str>) {
    let id = terminal_safe(task_id);
    let remote = session.and_then(subagents::mcp::task_of_session);
    if remote.is_none() {
        eprintln!(
            "subagents: {id}: the resumed run was cancelled; the task's session is kept. \
             Continue it with: subagents tasks resume {id} MESSAGE"
        );
        return;
    }
    let note = match agents.stop_background(task_id).await {
        Ok(snap) => snap
            .note
            .unwrap_or_else(|| "its MCP server was asked to cancel it".to_string()),
        Err(e) => format!("not cancelled on its MCP server: {e}"),
    };
    eprintln!(
        "subagents: {id}: {}. Its record keeps its session: subagents tasks show {id} (`subagents \
         tasks resume {id} MESSAGE` follows it again and reports how it ended)",
        terminal_safe(&note)
    );
}
