//! The assembly behind [`SubagentsBuilder::build`](crate::SubagentsBuilder::build): models,
//! kinds, references, and the wiring between kinds (MCP tools into Markdown agents).

#[allow(unused_imports)]
use std::path::{Path, PathBuf};
#[allow(unused_imports)]
use std::sync::Arc;

use subagent_spi::SubagentReference;

#[cfg(feature = "claude")]
use crate::builder::skipped;
use crate::{Error, SkippedAgent, Subagents, SubagentsBuilder};

pub(crate) async fn assemble(b: SubagentsBuilder) -> Result<Subagents, Error> {
    #[allow(unused_mut)]
    let mut kinds = b.kinds;
    let mut refs: Vec<SubagentReference> = Vec::new();
    #[allow(unused_mut)]
    let mut skipped_files: Vec<SkippedAgent> = Vec::new();
    #[cfg(feature = "claude")]
    let shadowed: Vec<subagent_claude::ShadowedAgent>;
    let root = match &b.workspace {
        Some(r) => r.clone(),
        None => std::env::current_dir().map_err(|e| Error::Workspace {
            path: PathBuf::from("."),
            source: Box::new(e),
        })?,
    };

    #[cfg(feature = "store")]
    let store = open_store(b.store.as_ref(), &b.retention).await?;
    #[allow(unused_mut)]
    let mut task_builder = b.task;
    #[cfg(feature = "store")]
    if let Some(s) = &store {
        task_builder =
            task_builder.ledger(Arc::new(subagent_store::SqlTaskLedger::new(s.db.clone())));
    }

    #[cfg(feature = "claude")]
    let local = {
        let transcripts: Arc<dyn subagent_runtime::TranscriptStore> = {
            #[cfg(feature = "store")]
            match &store {
                Some(s) => Arc::new(subagent_store::SqlTranscriptStore::new(s.db.clone())),
                None => Arc::new(subagent_runtime::InMemoryTranscriptStore::new()),
            }
            #[cfg(not(feature = "store"))]
            Arc::new(subagent_runtime::InMemoryTranscriptStore::new())
        };
        let ws = subagent_tools::Workspace::new(&root).map_err(|e| Error::Workspace {
            path: root.clone(),
            source: Box::new(e),
        })?;
        let (models, default_model) = crate::models::registry(b.model.as_ref(), &b.named_models)?;
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
        let mut claude = subagent_claude::ClaudeSubagentType::builder()
            .models(agent_models)
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
            .permission_rules(rules.clone());
        if let Some(mode) = b.permission_mode {
            claude = claude.permission_mode(mode);
        }
        if let Some(turns) = b.default_max_turns {
            claude = claude.default_max_turns(turns);
        }
        if let Some(window) = b.context_window {
            claude = claude.context_window(window);
        }
        claude = claude.stall_timeout(b.stall_timeout);
        #[cfg(feature = "mcp")]
        {
            claude = claude
                .mcp_tools(mcp_tool_source(b.mcp_config.as_deref(), &root, &untrusted).await?);
        }
        let (claude_kind, claude_executor) = claude.build_with_executor();
        kinds.push(claude_kind);

        // Claude Code's precedence: given directories (`--agents`, one scope) replace
        // discovery; a discovered directory ranks above the ones after it (the project's
        // nearest first, then the user's); a name twice in one scope is an error naming both.
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
        if let Some(d) = discovery.duplicates.first() {
            return Err(task_tool::BuildError::DuplicateName {
                name: d.name.clone(),
                first_uri: d.first.display().to_string(),
                second_uri: d.second.display().to_string(),
            }
            .into());
        }
        for s in &discovery.skipped {
            tracing::debug!(path = %s.path.display(), reason = %s.reason, "agent file skipped");
            skipped_files.push(skipped(&s.path, s.reason.clone(), s.invalid));
        }
        for s in &discovery.shadowed {
            tracing::debug!(
                agent = %s.name,
                path = %s.path.display(),
                by = %s.winner.display(),
                "agent shadowed by one of higher precedence"
            );
        }
        refs.extend(discovery.references());
        shadowed = discovery.shadowed;
        for file in &b.agent_files {
            refs.push(subagent_claude::ClaudeSubagentReferences::file(file));
        }
        Some((
            claude_executor,
            Arc::new(crate::Local {
                workspace: ws,
                models,
                default_model,
                routes,
                main_mode: b.permission_mode.or(settings_mode).unwrap_or_default(),
                rules: Arc::new(rules),
                sandbox: b.sandbox.clone(),
                hooks,
                transcripts,
                stream: b.stream,
                context_window: b.context_window,
                stall_timeout: b.stall_timeout,
            }),
        ))
    };
    #[cfg(not(feature = "claude"))]
    {
        if b.agent_model.is_some() {
            return Err(Error::MissingFeature {
                what: "a model for every agent".into(),
                feature: "claude",
            });
        }
        let _ = (
            &root,
            &b.skill_dirs,
            &b.discover_skills_from,
            b.stream,
            b.hooks,
        );
        let _ = (&b.settings_files, &b.untrusted_files);
        if !b.agent_dirs.is_empty()
            || !b.agent_files.is_empty()
            || b.model.is_some()
            || b.claude_settings.is_some()
        {
            return Err(Error::MissingFeature {
                what: "Markdown agents and models".into(),
                feature: "claude",
            });
        }
    }

    if !b.a2a_agents.is_empty() || !b.a2a_refs.is_empty() {
        #[cfg(feature = "a2a")]
        {
            kinds.push(subagent_a2a::client::a2a_subagent_type());
            for url in &b.a2a_agents {
                refs.push(SubagentReference::new(url, subagent_a2a::client::KIND));
            }
            for r in &b.a2a_refs {
                let mut r = r.clone();
                r.kind = subagent_a2a::client::KIND;
                refs.push(r);
            }
        }
        #[cfg(not(feature = "a2a"))]
        return Err(Error::MissingFeature {
            what: "an A2A agent".into(),
            feature: "a2a",
        });
    }
    if !b.mcp_agents.is_empty() {
        #[cfg(feature = "mcp")]
        {
            // Issue 32: a spec may name the tool and the prompt's argument (`#tool=..&argument=..`);
            // a server with several tools and none named gives one agent per tool. The kind
            // shares the pool that listed them, so each server starts once.
            let pool = subagent_mcp::McpPool::new();
            kinds.push(subagent_mcp::mcp_subagent_type_with_pool(pool.clone()));
            for spec in &b.mcp_agents {
                let reference =
                    subagent_mcp::agent_reference(spec).map_err(|e| Error::McpAgent {
                        spec: spec.clone(),
                        source: Box::new(e),
                    })?;
                refs.extend(subagent_mcp::expand_reference(&pool, &reference).await);
            }
        }
        #[cfg(not(feature = "mcp"))]
        return Err(Error::MissingFeature {
            what: "an MCP agent".into(),
            feature: "mcp",
        });
    }
    #[cfg(not(feature = "mcp"))]
    if b.mcp_config.is_some() {
        return Err(Error::MissingFeature {
            what: "an MCP configuration".into(),
            feature: "mcp",
        });
    }
    refs.extend(b.references);

    let prices = std::sync::Arc::new(b.prices);
    let task = task_builder
        .prices(prices.clone())
        .subagent_types(kinds)
        .subagent_references(refs)
        .build()
        .await?;
    #[cfg(feature = "claude")]
    let (local, agent_warnings) = match local {
        Some((executor, local)) => {
            let warnings = load_warnings(&task, &executor, &local, &root).await;
            (Some(local), warnings)
        }
        None => (None, Vec::new()),
    };
    Ok(Subagents {
        task,
        root,
        skipped: skipped_files,
        #[cfg(feature = "claude")]
        shadowed,
        #[cfg(feature = "claude")]
        agent_warnings,
        approver: b.approver.0,
        budget: b.budget,
        prices,
        #[cfg(feature = "claude")]
        local,
        #[cfg(feature = "store")]
        store,
    })
}

/// The load warnings of every registered Markdown agent (not the built-ins), from the one
/// function that computes them ([`subagent_claude::agent_load_warnings`]) against this
/// assembly's tools, models, skills and workspace.
#[cfg(feature = "claude")]
async fn load_warnings(
    task: &task_tool::TaskTool,
    executor: &subagent_claude::ClaudeExecutor,
    local: &crate::Local,
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
    let mut check = subagent_claude::LoadCheck::new()
        .tools(executor.base_tool_names().await)
        .models(local.models.names())
        .project(root, subagent_claude::home_dir());
    if defs.iter().any(|d| !d.skills.is_empty()) {
        check = check.skills(executor.skill_names().await);
    }
    let mut out = Vec::new();
    for def in defs {
        // A few metadata calls for `memory` locations; no file is read.
        let warnings = subagent_claude::agent_load_warnings(def, &check);
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

/// Opens the store (`None` for none or `memory`) and starts its maintenance: interrupted tasks
/// marked and retention applied now, then every ten minutes.
#[cfg(feature = "store")]
async fn open_store(
    url: Option<&subagent_store::StoreUrl>,
    retention: &subagent_store::Retention,
) -> Result<Option<Arc<crate::StoreHandle>>, Error> {
    let Some(url) = url else {
        return Ok(None);
    };
    let db = subagent_store::Db::open(url)
        .await
        .map_err(|e| Error::Store {
            url: url.redacted(),
            source: Box::new(e),
        })?;
    let Some(db) = db else {
        return Ok(None);
    };
    tracing::debug!(store = %url, "store opened");
    let maintenance = subagent_store::spawn_maintenance(
        db.clone(),
        retention.clone(),
        std::time::Duration::from_secs(600),
    );
    Ok(Some(Arc::new(crate::StoreHandle { db, maintenance })))
}

/// The files given to [`SubagentsBuilder::untrusted_file`], compared by their canonical path.
#[cfg(feature = "claude")]
struct Untrusted(Vec<PathBuf>);

#[cfg(feature = "claude")]
impl Untrusted {
    fn new(files: &[PathBuf]) -> Self {
        Self(files.iter().map(|f| canonical(f)).collect())
    }

    fn contains(&self, path: &Path) -> bool {
        let path = canonical(path);
        self.0.contains(&path)
    }
}

/// `path` canonicalized, or as given when it does not resolve (a missing file).
#[cfg(feature = "claude")]
fn canonical(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
}

/// The settings hooks: the given settings files, plus Claude Code's (user, project, local)
/// with discovery; [`Hooks::disabled`](subagent_claude::Hooks::disabled) when hooks are off.
/// The hooks of untrusted files are left out (their `disableAllHooks` still counts). Only the
/// hooks of the user's own `~/.claude/settings.json` run unconfined; the others run confined
/// like the `Bash` tool.
#[cfg(feature = "claude")]
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
        Some(user) => subagent_claude::Hooks::from_settings_files_with_user(user, &files).await,
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

/// Where Markdown agents' `mcpServers` come from: the servers named in the MCP configuration
/// (`path`, else `<root>/.mcp.json` when it exists) plus inline definitions.
#[cfg(all(feature = "claude", feature = "mcp"))]
async fn mcp_tool_source(
    path: Option<&Path>,
    root: &Path,
    untrusted: &Untrusted,
) -> Result<Arc<dyn subagent_spi::ToolSource>, Error> {
    let (file, required) = match path {
        Some(p) => (p.to_path_buf(), true),
        None => (root.join(".mcp.json"), false),
    };
    let config = if untrusted.contains(&file) {
        tracing::info!(path = %file.display(), "MCP servers not applied: the file is not approved");
        subagent_mcp::McpServerConfig::new()
    } else if required || file.is_file() {
        subagent_mcp::McpServerConfig::from_file(&file)
            .await
            .map_err(|e| Error::McpConfig {
                path: file.clone(),
                source: Box::new(e),
            })?
    } else {
        subagent_mcp::McpServerConfig::new()
    };
    Ok(Arc::new(subagent_mcp::McpToolProvider::new(config)))
}
