//! # subagent-claude
//!
//! The local subagent kind of the `subagents` framework: **Claude Code-style Markdown agents**.
//! An agent is a Markdown file whose YAML frontmatter configures it (`name`, `description`,
//! `tools`, `model`, `permissionMode`, ...) and whose body is its system prompt, the format
//! Claude Code reads from `.claude/agents/`. Public collections of such files load as they are:
//! strict YAML is tried first and a lenient reading (with a warning) rescues files that strict
//! YAML rejects.
//!
//! | item | role |
//! |---|---|
//! | [`parse_agent`], [`load_agent_file`], [`scan_dir`] | Markdown → [`ClaudeAgentDefinition`] |
//! | [`ClaudeResolver`] | the `CLAUDE` resolver: file paths, directories, `embedded:NAME` |
//! | [`ClaudeSubagentReferences`] | builds references (one per file of a directory, ...) |
//! | [`discover_agents`] | project `.claude/agents` (walking up) + `~/.claude/agents` |
//! | [`SkillSet`], [`parse_skill`] | Agent Skills (`<dir>/<skill>/SKILL.md`) preloaded into prompts |
//! | [`agent_slug`] | an agent name as a path or URL segment (memory, worktrees, served paths) |
//! | [`ProjectInstructions`] | the project's `CLAUDE.md`/`AGENTS.md` (and the user's), bounded, for system prompts |
//! | [`agent_load_warnings`], [`LoadCheck`] | an agent's load warnings on a host (tools, models, skills, memory location) |
//! | [`BUILTIN_AGENTS`] | `general-purpose`, `Explore`, `Plan`, `Bash`, compiled in |
//! | [`PermissionPolicy`], [`PermissionRules`], [`PermissionSettings`], [`guard_tools`] | permission modes and allow/ask/deny rules (Claude Code's syntax, `.claude/settings.json`) enforced on tool calls |
//! | [`ClaudeSubagentType::builder`] | the `CLAUDE` [`SubagentType`](subagent_spi::SubagentType): resolver + [`ClaudeExecutor`] |
//!
//! The executor runs agents on `subagent-runtime`'s loop: system prompt = body (+ preloaded
//! skills), first user message = `TaskCall.prompt`, tools filtered by `disallowedTools` then
//! `tools` (`Task` offered through the context's delegation handle below the nesting limit, as
//! Claude Code does), `permissionMode` and allow/ask/deny [`PermissionRules`] enforced on tool
//! calls (what must be asked goes to the context's [`Approver`](subagent_spi::Approver)), model routed `TaskCall.model` → frontmatter `model` → `inherit`
//! → the default ([`route_model`]), `maxTurns` as the turn limit, and `resume` continuing a
//! stored transcript. The rest of Claude Code's fields act too: `hooks` ([`hooks`], with the
//! settings hooks of [`ClaudeSubagentTypeBuilder::hooks`]), `memory` ([`memory`]),
//! `isolation: worktree` (a temporary `git worktree`), `effort` (on each model request),
//! `background` (for the `Task` tool), `initialPrompt` and `color` (for hosts); values that
//! cannot be used are load warnings.
//!
//! ```
//! use subagent_claude::{parse_agent, PermissionMode};
//! let text = "---\nname: planner\ndescription: Plans changes\npermissionMode: plan\n---\nPlan it.";
//! let parsed = parse_agent("planner.md".as_ref(), text).unwrap();
//! assert_eq!(parsed.definition.permission_mode, PermissionMode::Plan);
//! ```
//!
//! ## Frontmatter: why not `gray_matter`
//!
//! The design card named `gray_matter` for frontmatter. We split the frontmatter by hand and
//! call `yaml-rust2` (the YAML parser `gray_matter` 0.3 itself uses) directly; `gray_matter`
//! stays only as the baseline of the `parse_corpus` bench. Three reasons:
//!
//! - **Speed.** On the 578 files of the shared corpus (397 agents, 181 skills), parsing into
//!   typed definitions takes **13.6 ms** against **29.9 ms** for bare
//!   `gray_matter::Matter::<YAML>::parse::<serde_json::Value>` of the same texts, a ratio of
//!   **0.45x** (`cargo bench -p subagent-claude --bench parse_corpus`, medians, 2026-11-22; see
//!   `docs/perf/subagent-claude.md`): `gray_matter` copies the input, rebuilds the frontmatter
//!   line by line, clones the YAML tree and converts it through its own `Pod` type.
//! - **Bounds.** `gray_matter` loads YAML with `YamlLoader`, which expands aliases without limit
//!   (a few hundred bytes of nested anchors become billions of values) and recurses once per
//!   nesting level (a deep `[[[[...]]]]` overflows the stack). Our reader charges every value
//!   and alias copy to a per-document budget and keeps its own stack.
//! - **Leniency and positions.** Public agent collections contain frontmatter strict YAML
//!   rejects (8 of the 578); we need the split's line numbers for errors and a lenient
//!   second reading, which `gray_matter`'s API does not expose.

/// The `name`, `input_schema` and `effect` of a [`Tool`](subagent_spi::Tool) that wraps the
/// tool in its `inner` field: the inner tool's own (the wrappers change only what a call does,
/// and the description when they say so).
macro_rules! wrapped_tool_identity {
    () => {
        fn name(&self) -> &str {
            self.inner.name()
        }

        fn input_schema(&self) -> serde_json::Value {
            self.inner.input_schema()
        }

        fn effect(&self) -> subagent_spi::ToolEffect {
            self.inner.effect()
        }
    };
}

mod approval;
mod builtin;
mod definition;
mod discovery;
mod error;
mod executor;
mod extras;
mod frontmatter;
pub mod hooks;
mod instructions;
mod loadcheck;
pub mod memory;
mod permissions;
mod resolver;
mod rules;
mod scan;
mod skills;
mod slug;
mod terminal;
mod toolsel;
mod worktree;

pub use approval::{FileApproval, configured_mcp_servers_only, inline_mcp_servers, needs_approval};
pub use builtin::{
    BUILTIN_AGENTS, EMBEDDED_PREFIX, builtin_agent, builtin_names, builtin_references,
};
pub use definition::{
    AGENT_COLORS, ClaudeAgentDefinition, ModelChoice, ParsedAgent, PermissionMode, ToolRule,
    is_canonical_name, is_task_name, parse_agent, parse_tool_list,
};
pub use discovery::{
    AgentDir, AgentScope, DiscoveredAgent, Discovery, DuplicateAgent, ShadowedAgent, agent_dirs,
    discover_agents, home_dir, skill_dirs,
};
pub use error::ClaudeError;
pub use executor::{
    ClaudeExecutor, ClaudeSubagentType, ClaudeSubagentTypeBuilder, ModelSource, route_model,
};
pub use frontmatter::{MAX_YAML_DEPTH, MAX_YAML_NODES, MAX_YAML_SCALAR_BYTES};
pub use hooks::{HookEvent, HookRunner, Hooks, with_hook_session};
pub use instructions::{InstructionFile, MAX_INSTRUCTIONS_BYTES, ProjectInstructions};
pub use loadcheck::{LoadCheck, agent_load_warnings};
pub use memory::MemoryScope;
pub use permissions::{PermissionPolicy, PermissionSettings, guard_tools, summarize_input};
pub use resolver::{ClaudeResolver, ClaudeSubagentReferences};
pub use rules::{PermissionRule, PermissionRules, RuleAction, RuleError};
pub use scan::{
    LoadedAgent, MAX_FILE_BYTES, MAX_SCAN_DEPTH, MAX_SCAN_FILES, ScanReport, SkippedFile,
    load_agent_file, load_agent_file_blocking, scan_dir, scan_dir_blocking,
};
pub use skills::{ParsedSkill, Skill, SkillScan, SkillSet, parse_skill};
pub use slug::{MAX_SLUG_BASE_BYTES, agent_slug};
pub use terminal::{escape_for_terminal, escape_for_terminal_multiline, is_terminal_hazard};

/// The kind of Claude-style Markdown agents.
pub const KIND: subagent_spi::Kind = subagent_spi::Kind::from_static("CLAUDE");
