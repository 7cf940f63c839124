//! # subagent-workflow
//!
//! Workflows: the orchestration of many agent calls written as a JavaScript script (what
//! models write best), run in a sandboxed engine, journaled call by call so a run that stopped
//! (Ctrl-C, `kill -9`, a reboot) resumes without running a finished agent call again.
//!
//! ```js
//! const parts = await parallel(args.files.map((f) => () =>
//!   agent("reviewer", `Review ${f}`, { schema: { type: "object", properties: { ok: { type: "boolean" } } } })));
//! if (parts.some((p) => p instanceof Error)) log("some reviews failed");
//! return await agent("writer", `Summarise: ${JSON.stringify(parts)}`);
//! ```
//!
//! The script sees only this API:
//!
//! - `await agent(name, prompt, {schema, model, description})`: the agent's answer (a string),
//!   or with `schema` the value it ended with, checked as `Task.output_schema` is (the schema
//!   under the strict profile a model's schemas get). A failure (an error, or an end other than
//!   `completed`) rejects with an `Error` carrying `agent`, `status` and `text`.
//! - `await parallel([() => …, …])`: runs the thunks at once (under the tree's concurrency cap)
//!   and returns their results in order; a thunk that fails gives its `Error` in its place
//!   (`r instanceof Error`, `r.error` is the message), never losing its siblings.
//! - `await ask(question)`: asks the user through the approval path: `true` for yes.
//! - `log(...)` / `console.log(...)`: a status line on the workflow's node.
//! - `args`: the JSON the caller gave. The script's return value (JSON) is the result; it may
//!   `await` and `return` at the top level.
//!
//! There is no clock (`Date` throws), no randomness (`Math.random` throws), no `WeakRef` or
//! timers, no network, files or modules. Limits ([`WorkflowLimits`]) bound steps, memory,
//! stack, wall time, calls, and the sizes of the script, `args` and result; crossing one is an
//! uncatchable stop with an error naming it (`max_steps=200000`).
//!
//! ## The engine
//!
//! QuickJS (QuickJS-ng through `rquickjs`): a small interpreter whose runtime has a memory
//! limit, a stack limit and an interrupt handler, which give every limit above without
//! touching the script; it starts in well under a millisecond. Boa was the alternative: pure
//! Rust, but no per-runtime memory limit (a hostile allocation would reach our allocator), and
//! a larger build. Each run's engine lives on a thread of its own: the async worker threads never
//! run or wait for the script.
//!
//! ## Calls and the journal
//!
//! Calls go to an [`AgentCaller`]; the Task tool is one ([`task_tool::TaskTool`]), so every
//! kind (Markdown, A2A, MCP, a third party's) is called the same way, under the tree's
//! concurrency cap and budgets, and needs no change. Every call is saved in the [`Journal`]
//! before it starts (its **position**, the agent, a SHA-256 of its inputs), again when its
//! child's task and session ids are known, and when it ends (the value the script gets, the
//! usage, and `seq`, the order the script got it in) before the script sees the value.
//!
//! **Why positions are deterministic.** A position is the order in which the script made the
//! call. The engine hands the script one value at a time and runs every job that value makes
//! runnable before the next; the script has no other source of change. So the calls a script
//! makes, and their order, are a function of the order it got values in. A resume runs the
//! script from the top and hands the journaled values over again in their `seq` order (a value
//! only once the script has made that call again), holding back live results until then: the
//! script makes the same calls at the same positions whatever order the calls finish in now.
//! (Structured positions, a branch path plus a counter, would need the engine to tell which
//! `parallel` branch an `await` resumes in; QuickJS has no async context to ask.)
//!
//! On resume, a call whose position and input hash match a finished entry gets the journaled
//! value and nothing runs; an unfinished one is re-attached or runs again: when its child
//! announced a session the call continues it ([`CONTINUE_PROMPT`]): an A2A task the peer still
//! works on is followed by its id to its end (no message sent), an MCP server's task
//! (`mcp-task:ID`) likewise (no new `tools/call`), a Markdown agent continues its transcript
//! (the turns it had are not paid again). Without a session, or when continuing fails (an A2A
//! task that already ended, a transcript never written), it runs from the start. A call whose
//! inputs changed at a journaled position, or a
//! journaled value the script no longer asks for, stops the resume with
//! [`WorkflowError::Diverged`] naming the position and the agent. Usage of journaled calls is
//! charged to the resumed run's budget: what was spent stays spent.

mod caller;
mod engine;
mod error;
mod journal;
mod limits;
mod runner;
mod tool;

pub use caller::{AgentCaller, CallDone};
pub use error::{SCRIPT_NAME, WorkflowError};
pub use journal::{
    CallKind, CallRecord, CallState, Journal, JournalError, MEMORY_JOURNAL_RUNS, MemoryJournal,
    RunRecord, RunStatus, RunSummary,
};
pub use limits::WorkflowLimits;
pub use runner::{
    CONTINUE_PROMPT, CallCounts, PreparedRun, WORKFLOW_AGENT, WORKFLOW_KIND, WorkflowOutcome,
    Workflows,
};
pub use tool::{WORKFLOW_TOOL, WorkflowInput, WorkflowTool};
