//! The `CLAUDE` kind: Markdown agents run by the agent loop with the built-in tools, their
//! models, permissions, hooks and skills, and the main agent's share of them ([`Local`]).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use subagent_spi::async_trait;

use super::untrusted::{Untrusted, canonical};
use super::{Assembly, Contribution};
use crate::builder::skipped;
use crate::{Error, Local, Subagents, SubagentsBuilder};

/// The Markdown kind, once assembled: what [`wire`](Contribution::wire) keeps in [`Subagents`].
#[derive(Default)]
pub(crate) struct Claude {
    executor: Option<Arc<subagent_claude::ClaudeExecutor>>,
    local: Option<Arc<Local>>,
    shadowed: Vec<subagent_claude::ShadowedAgent>,
    approval: Option<Arc<crate::approval::AgentFileApproval>>,
    duplicates: Vec<subagent_claude::DuplicateAgent>,
}

#[async_trait]
impl Contribution for Claude {
    async fn kinds(&mut self, b: &SubagentsBuilder, a: &mut Assembly) -> Result<(), Error> {
        let root = a.root.clone();
        let transcripts: Arc<dyn subagent_runtime::TranscriptStore> =
            match a.shared.get::<Arc<dyn subagent_runtime::TranscriptStore>>() {
                Some(store) => store.clone(),
                None => Arc::new(subagent_runtime::InMemoryTranscriptStore::new()),
            };
        let ws = subagent_tools::Workspace::new(&root).map_err(|e| Error::Workspace {
            path: root.clone(),
            source: Box::new(e),
        })?;
        // A local server says how large a window it runs the model with (and whether it runs).
        let server = crate::models::probe_server(b.model.as_ref()).await;
        let server_window = match &server {
            crate::models::ServerProbe::Window { tokens, .. } => Some(*tokens),
            _ => None,
        };
        let (models, default_model) =
            crate::models::registry(b.model.as_ref(), &b.named_models, server_window)?;
        let mut rules = b.permission_rules.clone();
        let mut settings_mode = None;
        let untrusted = Untrusted::new(&b.untrusted_files);
        if let Some(project) = &b.claude_settings {
            let settings =
                subagent_claude::PermissionSettings::load_with(project, |p| !untrusted.contains(p))
                    .map_err(|e| Error::Permissions {
                        path: project.join(".claude"),
                        source: Box::new(e),
                    })?;
            for w in &settings.warnings {
                tracing::warn!("{w}");
            }
            rules.extend(settings.rules);
            settings_mode = settings.default_mode;
        }
        for w in rules.warnings() {
            tracing::warn!("{w}");
        }
        let models = Arc::new(models);
        // A model forced for every agent: the agents get a registry of their own.
        let agent_models = match &b.agent_model {
            Some(spec) => Arc::new(crate::models::forced_registry(spec)?),
            None => models.clone(),
        };
        let routes = crate::models::ModelRoutes::new(
            default_model.as_deref(),
            b.named_models
                .iter()
                .filter_map(|(name, choice)| match choice {
                    crate::ModelChoice::Spec(spec) => Some((name.clone(), spec.clone())),
                    crate::ModelChoice::Model(_) => None,
                }),
            b.agent_model.as_deref(),
        );
        let mut skill_dirs = b.skill_dirs.clone();
        if let Some(start) = &b.discover_skills_from {
            skill_dirs.extend(subagent_claude::skill_dirs(
                start,
                subagent_claude::home_dir().as_deref(),
            ));
        }
        let hooks = settings_hooks(
            b.hooks,
            b.discover_from.is_some(),
            &b.settings_files,
            &root,
            &untrusted,
        )
        .await;
        let main_mode = b.permission_mode.or(settings_mode).unwrap_or_default();
        let approval = Arc::new(crate::approval::AgentFileApproval {
            root: root.clone(),
            approvals: b.approvals.clone(),
        });
        self.approval = Some(approval.clone());
        // The project's instructions (CLAUDE.md, AGENTS.md), with Claude Code's discovery.
        let instructions = match (&b.discover_from, b.claude_md) {
            (Some(_), true) => {
                let found = subagent_claude::ProjectInstructions::load(
                    ws.root().to_path_buf(),
                    subagent_claude::home_dir(),
                )
                .await;
                for why in &found.refused {
                    tracing::info!("project instructions: {why}");
                }
                Some(Arc::new(found))
            }
            _ => None,
        };
        let mut claude = subagent_claude::ClaudeSubagentType::builder()
            .models(agent_models)
            .strict_models(b.strict_models)
            .tools(subagent_tools::ToolSet::all_with_sandbox(
                ws.clone(),
                &b.sandbox,
            ))
            .workspace(ws.root())
            .hooks(hooks.clone())
            .sandbox(b.sandbox.clone())
            .skill_dirs(skill_dirs)
            .builtin_agents(b.builtin_agents)
            .stream(b.stream)
            .transcript_store(transcripts.clone())
            .permission_rules(rules.clone())
            // Inline `mcpServers` and a lenient `permissionMode` of a workspace agent file
            // apply only once approved (crate::approval).
            .file_approval(approval.clone())
            .session_mode(main_mode);
        if let Some(mode) = b.permission_mode {
            claude = claude.permission_mode(mode);
        }
        if let Some(turns) = b.default_max_turns {
            claude = claude.default_max_turns(turns);
        }
        if let Some(window) = b.context_window {
            claude = claude.context_window(window);
        }
        if let Some(i) = &instructions {
            claude = claude.project_instructions(i.clone());
        }
        claude = claude.stall_timeout(b.stall_timeout);
        // The tools other features offer agents (the MCP servers of `.mcp.json`).
        if let Some(tools) = a.agent_tools().await? {
            claude = claude.mcp_tools(tools);
        }
        let (claude_kind, claude_executor) = claude.build_with_executor();
        a.kinds.push(claude_kind);

        // Claude Code's precedence: given directories (`--agents`, one scope) replace
        // discovery; a discovered directory ranks above the ones after it (the project's
        // nearest first, then the user's); of a name twice in one scope the first file is used
        // (Subagents::duplicates lists the other).
        let dirs: Vec<subagent_claude::AgentDir> = if !b.agent_dirs.is_empty() {
            b.agent_dirs
                .iter()
                .map(|d| subagent_claude::AgentDir::new(d, subagent_claude::AgentScope::Cli))
                .collect()
        } else if let Some(start) = &b.discover_from {
            subagent_claude::agent_dirs(start, subagent_claude::home_dir().as_deref())
        } else {
            Vec::new()
        };
        let mut discovery = subagent_claude::Discovery::default();
        for dir in dirs {
            let report = subagent_claude::scan_dir(dir.path.clone())
                .await
                .map_err(|e| Error::AgentDir {
                    path: dir.path.clone(),
                    source: Box::new(e),
                })?;
            discovery.add_scan(dir, report);
        }
        for d in &discovery.duplicates {
            tracing::debug!(agent = %d.name, used = %d.first.display(), not_used = %d.second.display(), "agent name defined twice in one scope");
        }
        for s in &discovery.skipped {
            tracing::debug!(path = %s.path.display(), reason = %s.reason, "agent file skipped");
            a.skipped
                .push(skipped(&s.path, s.reason.clone(), s.invalid));
        }
        for s in &discovery.shadowed {
            tracing::debug!(
                agent = %s.name,
                path = %s.path.display(),
                by = %s.winner.display(),
                "agent shadowed by one of higher precedence"
            );
        }
        a.references.extend(discovery.references());
        self.shadowed = discovery.shadowed;
        self.duplicates = discovery.duplicates;
        for file in &b.agent_files {
            a.references
                .push(subagent_claude::ClaudeSubagentReferences::file(file));
        }
        self.executor = Some(claude_executor);
        self.local = Some(Arc::new(Local {
            workspace: ws,
            models,
            default_model,
            routes,
            main_mode,
            rules: Arc::new(rules),
            sandbox: b.sandbox.clone(),
            hooks,
            transcripts,
            stream: b.stream,
            context_window: b.context_window,
            server,
            stall_timeout: b.stall_timeout,
            instructions,
        }));
        Ok(())
    }

    async fn wire(&mut self, agents: &mut Subagents) {
        agents.shadowed = std::mem::take(&mut self.shadowed);
        agents.duplicates = std::mem::take(&mut self.duplicates);
        if let (Some(executor), Some(local), Some(approval)) =
            (&self.executor, &self.local, &self.approval)
        {
            agents.agent_warnings =
                load_warnings(&agents.task, executor, local, approval, &agents.root).await;
        }
        agents.local = self.local.take();
    }
}

/// The load warnings of every registered Markdown agent (not the built-ins), from the one
/// function that computes them ([`subagent_claude::agent_load_warnings`]) against this
/// assembly's tools, models, skills and workspace.
async fn load_warnings(
    task: &task_tool::TaskTool,
    executor: &subagent_claude::ClaudeExecutor,
    local: &Local,
    approval: &crate::approval::AgentFileApproval,
    root: &Path,
) -> Vec<crate::AgentWarnings> {
    let defs: Vec<&subagent_claude::ClaudeAgentDefinition> = task
        .user_agents()
        .iter()
        .filter_map(|d| d.downcast_ref::<subagent_claude::ClaudeAgentDefinition>())
        .collect();
    if defs.is_empty() {
        return Vec::new();
    }
    // Claude Code's model names always count as known: with no Anthropic key the session's
    // model stands in for them (and the run says so).
    #[cfg_attr(not(feature = "providers"), allow(unused_mut))]
    let mut models = local.models.names();
    #[cfg(feature = "providers")]
    models.extend(
        subagent_providers::default_aliases()
            .into_iter()
            .map(|(alias, _)| alias.to_string())
            .chain([crate::models::CLAUDE_MODEL_IDS.to_string()]),
    );
    let mut check = subagent_claude::LoadCheck::new()
        .tools(executor.base_tool_names().await)
        .models(models)
        .project(root, subagent_claude::home_dir());
    if defs.iter().any(|d| !d.skills.is_empty()) {
        check = check.skills(executor.skill_names().await);
    }
    let mut out = Vec::new();
    for def in defs {
        // A few metadata calls for `memory` locations; no file is read (but those that need
        // approval, to check it).
        let mut warnings = subagent_claude::agent_load_warnings(def, &check);
        if let Some(why) = subagent_claude::FileApproval::refusal(approval, def).await {
            warnings.push(format!(
                "not applied: {}: {why}",
                subagent_claude::needs_approval(def).join("; ")
            ));
        }
        if warnings.is_empty() {
            continue;
        }
        out.push(crate::AgentWarnings {
            name: def.name.clone(),
            path: def.source.clone(),
            line: def.name_line,
            warnings,
        });
    }
    out
}

/// The settings hooks: the given settings files, plus Claude Code's (user, project, local)
/// with discovery; [`Hooks::disabled`](subagent_claude::Hooks::disabled) when hooks are off.
/// The hooks of untrusted files are left out (their `disableAllHooks` still counts). Only the
/// hooks of the user's own `~/.claude/settings.json` run unconfined; the others run confined
/// like the `Bash` tool.
async fn settings_hooks(
    enabled: bool,
    discover: bool,
    given: &[PathBuf],
    root: &Path,
    untrusted: &Untrusted,
) -> subagent_claude::Hooks {
    if !enabled {
        return subagent_claude::Hooks::disabled();
    }
    let mut files = Vec::new();
    // The user's own file: its hooks run unconfined (the user wrote them), unless it is in the
    // workspace (a workspace at or above the home directory, or a symlink into it) or left out
    // as untrusted; then it counts as one of the workspace's files.
    let mut user = None;
    if discover {
        if let Some(home) = subagent_claude::home_dir() {
            let file = home.join(".claude").join("settings.json");
            if canonical(&file).starts_with(canonical(root)) || untrusted.contains(&file) {
                files.push(file);
            } else {
                user = Some(file);
            }
        }
        files.push(root.join(".claude").join("settings.json"));
        files.push(root.join(".claude").join("settings.local.json"));
    }
    files.extend(given.iter().cloned());
    files.dedup();
    let (left_out, files): (Vec<PathBuf>, Vec<PathBuf>) =
        files.into_iter().partition(|f| untrusted.contains(f));
    if !left_out.is_empty() {
        // Their hooks do not run, but turning every hook off is theirs to ask.
        let (off, _) = subagent_claude::Hooks::from_settings_files(&left_out).await;
        if off.is_disabled() {
            return subagent_claude::Hooks::disabled();
        }
    }
    let (hooks, warnings) = match &user {
        Some(user) => {
            let (hooks, warnings) =
                subagent_claude::Hooks::from_settings_files_with_user(user, &files).await;
            // The user's hooks run unconfined while the workspace files they name are as they
            // are now (a model-rewritten `.claude/hooks/x.sh` runs confined).
            let root = root.to_path_buf();
            let pinned = {
                let hooks = hooks.clone();
                tokio::task::spawn_blocking(move || hooks.pin_workspace_scripts(&root)).await
            };
            match pinned {
                Ok(pinned) => (pinned, warnings),
                // Without pins the user's hooks run confined too.
                Err(_) => {
                    let all: Vec<PathBuf> = std::iter::once(user.clone())
                        .chain(files.iter().cloned())
                        .collect();
                    subagent_claude::Hooks::from_settings_files(&all).await
                }
            }
        }
        None => subagent_claude::Hooks::from_settings_files(&files).await,
    };
    for w in warnings {
        tracing::warn!("settings hooks: {w}");
    }
    if !hooks.is_empty() {
        tracing::info!(hooks = hooks.len(), "settings hooks loaded");
    }
    hooks
}
