//! Workspace control files the user approved: the settings in them that lift a limit or run
//! something apply only once the user has approved that file's content.
//!
//! A model confined to the workspace cannot write `subagents.toml`, `.claude/settings*.json`
//! or `.mcp.json` any more (they are protected paths), but a file may have been written before,
//! by a model run unconfined, or come with a cloned repository. So, as Claude Code's trust
//! dialog does, the `subagents` command remembers approvals by content: the file's canonical
//! path and the SHA-256 of its bytes, in `trusted.json` beside the default store (the user's
//! data directory, never the workspace). A changed file needs approval again.
//!
//! What needs approval ("weakening" settings): in the workspace's `subagents.toml`
//! (found in the current directory, not given with `--config`) `[sandbox] enabled = false`,
//! `writable`, `env`; a `[permissions] mode` that asks less than `default`; `[permissions]
//! allow`; `mcp` entries (they start processes); A2A tables naming credential variables
//! (`*_env`: a secret of the user's environment sent to a URL the file names); a network
//! `store` (every transcript sent to a server the file names); a model (`model`, `agent_model`,
//! `[models]`) on a server that is not this machine (`openai-compatible:MODEL@URL`: every prompt
//! and `OPENAI_COMPATIBLE_API_KEY` sent where the file says). In the workspace's
//! `.claude/settings.json` and `settings.local.json`: `hooks`, `permissions.allow`, a
//! `permissions.defaultMode` weaker than `default`. In `.mcp.json`: its servers. A `[prices]`
//! entry that prices a model below the built-in table, its prompt-cache rates included (a file
//! may add or raise prices, never lower one: the entry is raised to the table's price). In an agent file ([`Kind::Agent`]):
//! inline `mcpServers` and a `permissionMode` weaker than `default` (checked by the assembly
//! when the agent runs, [`crate::approval`]). Everything else in those files applies without
//! approval (model, agents, budgets, deny and ask rules, `max_depth`...). The user's own files
//! (`~/.claude/settings.json`, a file given with `--config`) and the command line are the
//! user's word and need none.
//!
//! An approval records the SHA-256 of the file's bytes and of the workspace files its commands
//! name ([`subagent_tools::ScriptPins`]: the stdio `mcp` entries, `.mcp.json` servers, hook
//! commands, an agent's inline servers), so a script a model rewrote is not run on the old
//! approval.
//!
//! This module finds those settings ([`control_files`], [`agent_files`], [`toml_weakening`],
//! [`settings_weakening`], [`mcp_weakening`]), removes them from a configuration
//! ([`strip_weakening`]) and keeps the approvals ([`TrustStore`]); asking the user is the
//! command's. Features `claude`, `providers` and `store`.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use subagent_core::paths::real_prefix;
use subagent_tools::ScriptPins;

use super::{A2aEntry, Config};
use subagent_core::ModelPrice;

/// The largest control file read for approval (bigger ones are not approved: their weakening
/// settings never apply).
pub const MAX_CONTROL_FILE_BYTES: u64 = crate::approval::MAX_APPROVED_FILE_BYTES;
/// Approvals kept; the oldest are dropped beyond it.
pub const MAX_APPROVALS: usize = 1000;
/// The largest approvals file read.
const MAX_STORE_BYTES: u64 = 4 * 1024 * 1024;

/// What kind of control file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Kind {
    /// `subagents.toml`.
    Toml,
    /// `.claude/settings.json` / `settings.local.json`.
    Settings,
    /// `.mcp.json`.
    Mcp,
    /// A Markdown agent file (its inline `mcpServers`, a lenient `permissionMode`).
    Agent,
}

/// One workspace control file and what in it needs approval.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ControlFile {
    /// As found.
    pub path: PathBuf,
    /// Canonical, for the approvals file.
    pub canonical: PathBuf,
    /// Hex SHA-256 of the bytes and of the workspace files its commands name
    /// ([`subagent_tools::ScriptPins`]): what an approval records. Empty when the file cannot
    /// be approved.
    pub sha256: String,
    /// The bytes, as text (lossy).
    pub text: String,
    /// What kind of file.
    pub kind: Kind,
    /// The settings that need approval, one per item, for messages.
    pub weakening: Vec<String>,
}

impl ControlFile {
    /// Reads `path`, a control file of `kind` of the workspace at `root` (the base of the
    /// relative paths its commands name); `None` when it does not exist. A file that cannot be
    /// read or is too big is reported as needing approval it cannot get.
    pub fn read(path: &Path, kind: Kind, config: Option<&Config>, root: &Path) -> Option<Self> {
        let (bytes, problem) = match crate::approval::read_capped(path) {
            Ok(None) => return None,
            Ok(Some(b)) => (b, None),
            Err(e) => (Vec::new(), Some(e)),
        };
        let text = String::from_utf8_lossy(&bytes).into_owned();
        let (weakening, pins, problem) = match (problem, kind) {
            (Some(p), _) => (Vec::new(), ScriptPins::default(), Some(p)),
            (None, Kind::Toml) => (
                config.map(toml_weakening).unwrap_or_default(),
                config.map(|c| toml_pins(c, root)).unwrap_or_default(),
                None,
            ),
            (None, Kind::Settings) => (settings_weakening(&text), settings_pins(&text, root), None),
            (None, Kind::Mcp) => (mcp_weakening(&text), mcp_pins(&text, root), None),
            (None, Kind::Agent) => match crate::approval::read_agent_file(path, root) {
                Ok((def, _)) => (
                    subagent_claude::needs_approval(&def),
                    def.mcp_servers
                        .as_ref()
                        .map(|v| crate::approval::pins_of_commands(v, root))
                        .unwrap_or_default(),
                    None,
                ),
                Err(e) => (Vec::new(), ScriptPins::default(), Some(e)),
            },
        };
        let (weakening, sha256) = match problem {
            Some(p) => (
                vec![format!("everything that needs approval ({p})")],
                String::new(),
            ),
            None => (weakening, crate::approval::approval_digest(&bytes, &pins)),
        };
        Some(Self {
            canonical: std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf()),
            sha256,
            path: path.to_path_buf(),
            text,
            kind,
            weakening,
        })
    }
}

/// The workspace files the `stdio:` entries of `mcp` name.
fn toml_pins(c: &Config, root: &Path) -> ScriptPins {
    let mut pins = ScriptPins::default();
    for entry in &c.mcp {
        if let Some(line) = entry.trim().strip_prefix("stdio:") {
            let line = line
                .rsplit_once('#')
                .filter(|(_, options)| options.contains('='))
                .map_or(line, |(command, _)| command);
            pins.extend(ScriptPins::of_shell(line, root));
        }
    }
    pins
}

/// The workspace files the hook commands of a settings file name.
fn settings_pins(text: &str, root: &Path) -> ScriptPins {
    let mut pins = ScriptPins::default();
    let Ok(v) = serde_json::from_str::<Value>(text) else {
        return pins;
    };
    let commands = v
        .get("hooks")
        .and_then(Value::as_object)
        .into_iter()
        .flat_map(|events| events.values())
        .filter_map(Value::as_array)
        .flatten()
        .filter_map(|g| g.get("hooks").and_then(Value::as_array))
        .flatten()
        .filter_map(|h| h.get("command").and_then(Value::as_str));
    for command in commands {
        pins.extend(ScriptPins::of_shell(command, root));
    }
    pins
}

/// The workspace files the stdio servers of `.mcp.json` name.
fn mcp_pins(text: &str, root: &Path) -> ScriptPins {
    match serde_json::from_str::<Value>(text) {
        Ok(v) => crate::approval::pins_of_commands(&v, root),
        Err(_) => ScriptPins::default(),
    }
}

/// The weakening settings of a workspace `subagents.toml`.
pub fn toml_weakening(c: &Config) -> Vec<String> {
    let mut out = Vec::new();
    if c.sandbox.enabled == Some(false) {
        out.push("[sandbox] enabled = false (Bash unconfined)".to_string());
    }
    if !c.sandbox.writable.is_empty() {
        let dirs: Vec<String> = c
            .sandbox
            .writable
            .iter()
            .map(|d| d.display().to_string())
            .collect();
        out.push(format!("[sandbox] writable = {dirs:?}"));
    }
    if !c.sandbox.env.is_empty() {
        out.push(format!("[sandbox] env = {:?}", c.sandbox.env));
    }
    if let Some(mode) = &c.permissions.mode
        && mode
            .parse::<subagent_claude::PermissionMode>()
            .is_ok_and(|m| m.lifts_limits())
    {
        out.push(format!("[permissions] mode = {mode:?}"));
    }
    if !c.permissions.allow.is_empty() {
        out.push(format!("[permissions] allow = {:?}", c.permissions.allow));
    }
    if !c.mcp.is_empty() {
        out.push(format!("mcp = {:?} (commands or servers)", c.mcp));
    }
    for entry in &c.a2a {
        if let A2aEntry::Table { url, settings } = entry {
            let creds: Vec<&String> = settings.keys().filter(|k| is_credential_key(k)).collect();
            if !creds.is_empty() {
                out.push(format!("a2a {url:?} with {creds:?}"));
            }
        }
    }
    if let Some(store) = &c.store
        && is_network_store(store)
    {
        out.push("store (a database server)".to_string());
    }
    for (key, spec) in model_specs(c) {
        if let Some(server) = remote_model_server(spec) {
            out.push(format!("{key} sends every prompt to {server}"));
        }
    }
    for (model, [input, output, read, write]) in lowered_prices(c) {
        out.push(format!(
            "[prices] {model:?} lowers the built-in price (input {input}, output {output}, \
             cache_read {read}, cache_write {write} USD per million tokens), which USD budgets \
             count with"
        ));
    }
    out
}

/// The `[prices]` entries that price a model below what it costs without them (the built-in
/// table, [`crate::prices`]), with that price's rates ([`rates`]): a file may add prices for
/// models the table does not know, never lower one, its prompt-cache rates included (a model
/// priced at 0 never spends a USD budget).
fn lowered_prices(c: &Config) -> Vec<(String, [f64; 4])> {
    let table = crate::prices::default_prices();
    c.prices
        .iter()
        .filter_map(|(model, p)| {
            let base = rates(&table.get(model)?);
            rates(&p.price(model, &table))
                .iter()
                .zip(&base)
                .any(|(own, base)| own < base)
                .then(|| (model.clone(), base))
        })
        .collect()
}

/// A price's rates as counted: input, output, cache read and cache write (a cache rate not
/// given is the input rate).
fn rates(p: &ModelPrice) -> [f64; 4] {
    [
        p.input_per_mtok,
        p.output_per_mtok,
        p.cache_read_per_mtok.unwrap_or(p.input_per_mtok),
        p.cache_write_per_mtok.unwrap_or(p.input_per_mtok),
    ]
}

/// The model specs a `subagents.toml` names: `model`, `agent_model`, `[models]`.
fn model_specs(c: &Config) -> Vec<(String, &String)> {
    let mut out = Vec::new();
    if let Some(m) = &c.model {
        out.push(("model".to_string(), m));
    }
    if let Some(m) = &c.agent_model {
        out.push(("agent_model".to_string(), m));
    }
    for (name, spec) in &c.models {
        out.push((format!("[models] {name:?}"), spec));
    }
    out
}

/// The server a model spec names (`openai-compatible:MODEL@URL`) when it is not this machine:
/// a file naming it chooses where the conversation and `OPENAI_COMPATIBLE_API_KEY` go. A
/// server on a loopback address (llama.cpp, Ollama, vLLM on this machine) needs no approval;
/// this machine's other addresses do (they are reachable from the network). Both answers come
/// from the one parse the HTTP client connects with ([`subagent_providers::BaseUrl`]); a spec
/// whose URL that parser would read differently is no spec (it fails when built, naming it).
fn remote_model_server(spec: &str) -> Option<String> {
    let server = subagent_providers::ModelSpec::parse(spec).ok()?.server()?;
    (!server.is_loopback()).then(|| server.origin())
}

/// An A2A setting naming an environment variable whose value is sent (`bearer_env`,
/// `api_key_env`...).
fn is_credential_key(key: &str) -> bool {
    key.to_ascii_lowercase().ends_with("_env")
}

/// A store on another machine (not SQLite, not memory).
fn is_network_store(store: &str) -> bool {
    let s = store.trim().to_ascii_lowercase();
    !(s.starts_with("sqlite:") || s == "memory" || s == "memory:")
}

/// Removes the weakening settings from a workspace `subagents.toml` that was not approved.
pub fn strip_weakening(c: &mut Config) {
    if c.sandbox.enabled == Some(false) {
        c.sandbox.enabled = None;
    }
    c.sandbox.writable.clear();
    c.sandbox.env.clear();
    if c.permissions
        .mode
        .as_deref()
        .and_then(|m| m.parse::<subagent_claude::PermissionMode>().ok())
        .is_some_and(|m| m.lifts_limits())
    {
        c.permissions.mode = None;
    }
    c.permissions.allow.clear();
    c.mcp.clear();
    for entry in &mut c.a2a {
        if let A2aEntry::Table { settings, .. } = entry {
            settings.retain(|k, _| !is_credential_key(k));
        }
    }
    if c.store.as_deref().is_some_and(is_network_store) {
        c.store = None;
    }
    if c.model
        .as_deref()
        .is_some_and(|m| remote_model_server(m).is_some())
    {
        c.model = None;
    }
    if c.agent_model
        .as_deref()
        .is_some_and(|m| remote_model_server(m).is_some())
    {
        c.agent_model = None;
    }
    c.models
        .retain(|_, spec| remote_model_server(spec).is_none());
    // Prices may be added or raised, never lowered below the built-in table's.
    let table = crate::prices::default_prices();
    for (model, base) in lowered_prices(c) {
        if let Some(p) = c.prices.get_mut(&model) {
            let [input, output, read, write] = rates(&p.price(&model, &table));
            p.input = input.max(base[0]);
            p.output = output.max(base[1]);
            p.cache_read = Some(read.max(base[2]));
            p.cache_write = Some(write.max(base[3]));
        }
    }
}

/// The weakening settings of a Claude Code settings file (none when it is not JSON: the build
/// reports that).
pub fn settings_weakening(text: &str) -> Vec<String> {
    let Ok(v) = serde_json::from_str::<Value>(text) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    if let Some(hooks) = v.get("hooks").and_then(Value::as_object)
        && !hooks.is_empty()
    {
        let commands: usize = hooks
            .values()
            .filter_map(Value::as_array)
            .flatten()
            .filter_map(|g| g.get("hooks").and_then(Value::as_array))
            .map(Vec::len)
            .sum();
        let events: Vec<&String> = hooks.keys().collect();
        out.push(format!("hooks ({commands} command(s) on {events:?})"));
    }
    let perms = v.get("permissions");
    if let Some(allow) = perms
        .and_then(|p| p.get("allow"))
        .and_then(Value::as_array)
        .filter(|a| !a.is_empty())
    {
        let rules: Vec<&str> = allow.iter().filter_map(Value::as_str).collect();
        out.push(format!("permissions.allow = {rules:?}"));
    }
    if let Some(mode) = perms
        .and_then(|p| p.get("defaultMode"))
        .and_then(Value::as_str)
        && subagent_claude::PermissionMode::parse(mode).is_some_and(|m| m.lifts_limits())
    {
        out.push(format!("permissions.defaultMode = {mode:?}"));
    }
    out
}

/// The weakening settings of `.mcp.json`: its servers.
pub fn mcp_weakening(text: &str) -> Vec<String> {
    let Ok(v) = serde_json::from_str::<Value>(text) else {
        return Vec::new();
    };
    match v.get("mcpServers").and_then(Value::as_object) {
        Some(servers) if !servers.is_empty() => {
            let names: Vec<&String> = servers.keys().collect();
            vec![format!("MCP servers {names:?} (commands agents may start)")]
        }
        _ => Vec::new(),
    }
}

/// One approval.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
struct Approval {
    path: PathBuf,
    sha256: String,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct StoreFile {
    #[serde(default)]
    approved: Vec<Approval>,
}

/// The approvals file: `trusted.json` in the user's data directory.
#[derive(Debug)]
pub struct TrustStore {
    path: Option<PathBuf>,
    approved: Vec<Approval>,
}

impl TrustStore {
    /// `$XDG_DATA_HOME/subagents/trusted.json` (else `~/.local/share/...`), beside the default
    /// store. `None` without a data directory.
    pub fn default_path() -> Option<PathBuf> {
        subagent_store::default_sqlite_path()
            .and_then(|p| p.parent().map(|d| d.join("trusted.json")))
    }

    /// Loads the approvals. Unusable (nothing approved, nothing recorded) when there is no data
    /// directory or it lies inside `workspace` (a confined command could write it there).
    pub fn load(workspace: &Path) -> Result<Self, String> {
        let Some(path) = Self::default_path() else {
            return Err("no data directory (neither XDG_DATA_HOME nor HOME is set)".into());
        };
        let ws = std::fs::canonicalize(workspace).unwrap_or_else(|_| workspace.to_path_buf());
        let dir = path.parent().unwrap_or(&path);
        let real_dir = real_prefix(dir);
        if real_dir.starts_with(&ws) {
            return Err(format!(
                "the approvals file `{}` would be inside the workspace `{}`, where a model \
                 could write it",
                path.display(),
                ws.display()
            ));
        }
        Self::load_from(path)
    }

    /// Loads the approvals file at `path` (an absent file approves nothing).
    pub fn load_from(path: PathBuf) -> Result<Self, String> {
        let approved = match std::fs::metadata(&path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(format!("cannot read `{}`: {e}", path.display())),
            Ok(m) if m.len() > MAX_STORE_BYTES => {
                return Err(format!(
                    "`{}` is larger than {MAX_STORE_BYTES} bytes",
                    path.display()
                ));
            }
            Ok(_) => {
                let text = std::fs::read_to_string(&path)
                    .map_err(|e| format!("cannot read `{}`: {e}", path.display()))?;
                serde_json::from_str::<StoreFile>(&text)
                    .map_err(|e| format!("`{}` is not an approvals file: {e}", path.display()))?
                    .approved
            }
        };
        Ok(Self {
            path: Some(path),
            approved,
        })
    }

    /// True when `file`'s current content was approved.
    pub fn approves(&self, file: &ControlFile) -> bool {
        crate::approval::Approvals::approves(self, &file.canonical, &file.sha256)
    }

    /// Records the approval of `file`'s current content (replacing an earlier one of the same
    /// path) and saves the file (mode 0600, written whole then renamed).
    pub fn approve(&mut self, file: &ControlFile) -> Result<(), String> {
        let Some(path) = self.path.clone() else {
            return Err("approvals cannot be recorded here".into());
        };
        if file.sha256.is_empty() {
            return Err(format!(
                "`{}` cannot be approved: {}",
                file.path.display(),
                file.weakening.join("; ")
            ));
        }
        self.approved.retain(|a| a.path != file.canonical);
        self.approved.push(Approval {
            path: file.canonical.clone(),
            sha256: file.sha256.clone(),
        });
        if self.approved.len() > MAX_APPROVALS {
            let extra = self.approved.len() - MAX_APPROVALS;
            self.approved.drain(..extra);
        }
        let text = serde_json::to_string_pretty(&StoreFile {
            approved: self.approved.clone(),
        })
        .map_err(|e| e.to_string())?;
        let dir = path.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create `{}`: {e}", dir.display()))?;
        let tmp = dir.join(format!("trusted.json.{}.tmp", std::process::id()));
        let write = || -> std::io::Result<()> {
            let mut opts = std::fs::OpenOptions::new();
            opts.write(true).create(true).truncate(true);
            #[cfg(unix)]
            std::os::unix::fs::OpenOptionsExt::mode(&mut opts, 0o600);
            let mut f = opts.open(&tmp)?;
            f.write_all(text.as_bytes())?;
            f.sync_all()?;
            std::fs::rename(&tmp, &path)
        };
        write().map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            format!("cannot write `{}`: {e}", path.display())
        })
    }
}

/// The workspace control files the command reads: `./subagents.toml` when it was found (not
/// given with `--config`), and the workspace's `.claude/settings.json`,
/// `.claude/settings.local.json` and `.mcp.json` (not the user's own
/// `~/.claude/settings.json`, when the workspace is the home directory).
pub fn control_files(config: &Config, explicit_config: bool, root: &Path) -> Vec<ControlFile> {
    let mut out = Vec::new();
    if !explicit_config
        && let Some(path) = &config.path
        && let Some(f) = ControlFile::read(path, Kind::Toml, Some(config), root)
    {
        out.push(f);
    }
    let user_settings = subagent_claude::home_dir()
        .map(|h| h.join(".claude").join("settings.json"))
        .and_then(|p| std::fs::canonicalize(p).ok());
    for (rel, kind) in [
        (".claude/settings.json", Kind::Settings),
        (".claude/settings.local.json", Kind::Settings),
        (".mcp.json", Kind::Mcp),
    ] {
        if let Some(f) = ControlFile::read(&root.join(rel), kind, None, root)
            && Some(&f.canonical) != user_settings.as_ref()
        {
            out.push(f);
        }
    }
    out
}

/// The agent files of `dirs` (every `*.md` agent file in them, as the assembly scans them) with
/// something that needs approval: inline `mcpServers`, a `permissionMode` that asks less than
/// `default` (see [`subagent_claude::needs_approval`]). Blocking.
pub fn agent_files(dirs: &[PathBuf], root: &Path) -> Vec<ControlFile> {
    let mut out = Vec::new();
    for dir in dirs {
        let Ok(report) = subagent_claude::scan_dir_blocking(dir) else {
            continue;
        };
        for agent in report.loaded {
            if let Some(f) = ControlFile::read(&agent.path, Kind::Agent, None, root)
                && !f.weakening.is_empty()
            {
                out.push(f);
            }
        }
    }
    out
}

impl crate::approval::Approvals for TrustStore {
    fn approves(&self, path: &Path, sha256: &str) -> bool {
        !sha256.is_empty()
            && self
                .approved
                .iter()
                .any(|a| a.path == path && a.sha256 == sha256)
    }
}
