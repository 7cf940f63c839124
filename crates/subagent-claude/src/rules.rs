//! Permission rules in Claude Code's syntax (`Bash(git status:*)`, `Edit(src/**)`,
//! `WebFetch(domain:example.com)`, `Read(./secrets/**)`, `mcp__github`), and how they match a
//! tool call.

use std::fmt;
use std::path::{Path, PathBuf};

use globset::{Glob, GlobBuilder, GlobSet, GlobSetBuilder};
use serde_json::Value;

/// Which list a rule is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RuleAction {
    /// `permissions.allow`: runs without asking.
    Allow,
    /// `permissions.ask`: always asks (unless the mode is `bypassPermissions`).
    Ask,
    /// `permissions.deny`: never runs, whatever the mode.
    Deny,
}

impl fmt::Display for RuleAction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            RuleAction::Allow => "allow",
            RuleAction::Ask => "ask",
            RuleAction::Deny => "deny",
        })
    }
}

/// A rule that cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("permission rule `{rule}`: {message}")]
#[non_exhaustive]
pub struct RuleError {
    /// The rule as written.
    pub rule: String,
    /// What is wrong with it.
    pub message: String,
}

/// How a rule's specifier (the text in parentheses) is matched.
#[derive(Debug, Clone)]
enum Matcher {
    /// No specifier: every call of the tool.
    Any,
    /// `Bash(...)`: a command pattern.
    Command(String),
    /// `Read(...)`, `Edit(...)`, `Write(...)`: paths (absolute patterns).
    Paths { set: GlobSet, root: PathBuf },
    /// `WebFetch(domain:...)`.
    Domain(String),
    /// `Task(name)` / `Agent(name)`: the agent started.
    Agent(String),
    /// A specifier this crate cannot interpret for that tool: never matches.
    Never,
}

/// One permission rule: a tool (or tool family) and an optional specifier.
#[derive(Debug, Clone)]
pub struct PermissionRule {
    text: String,
    tool: String,
    matcher: Matcher,
    source: String,
}

/// The tools that edit files: `Edit(...)` and `Write(...)` rules cover them all.
const EDIT_TOOLS: &[&str] = &["Edit", "Write", "MultiEdit", "NotebookEdit"];
/// The tools that read files: `Read(...)` rules apply to them (best effort for searches,
/// whose `path` is the directory searched).
const READ_TOOLS: &[&str] = &["Read", "Grep", "Glob", "LS", "NotebookRead"];

fn is_edit_tool(name: &str) -> bool {
    EDIT_TOOLS.contains(&name)
}

fn is_read_tool(name: &str) -> bool {
    READ_TOOLS.contains(&name)
}

fn is_task(name: &str) -> bool {
    name == "Task" || name == "Agent"
}

impl PermissionRule {
    /// Parses a rule. `root` resolves relative path patterns (`src/**`, `./x`, `/x`): the
    /// project (workspace) root. `source` names where the rule came from, for messages.
    pub fn parse(text: &str, root: &Path, source: impl Into<String>) -> Result<Self, RuleError> {
        let err = |message: &str| RuleError {
            rule: text.to_string(),
            message: message.to_string(),
        };
        let t = text.trim();
        if t.is_empty() {
            return Err(err("empty rule"));
        }
        let (tool, spec) = match t.find('(') {
            Some(open) => {
                if !t.ends_with(')') {
                    return Err(err(
                        "an opening `(` needs a closing `)` at the end, as in `Bash(git status:*)`",
                    ));
                }
                (t[..open].trim(), Some(t[open + 1..t.len() - 1].trim()))
            }
            None => (t, None),
        };
        if tool.is_empty()
            || !tool
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '*')
        {
            return Err(err(
                "the tool name must be letters, digits, `_` or `-` (e.g. `Bash`, `mcp__github__create_issue`)",
            ));
        }
        let spec = spec.filter(|s| !s.is_empty() && *s != "*");
        let matcher = match spec {
            None => Matcher::Any,
            Some(s) if tool == "Bash" => Matcher::Command(normalize_ws(s)),
            Some(s) if is_edit_tool(tool) || is_read_tool(tool) => Matcher::Paths {
                set: path_set(s, root).map_err(|m| err(&m))?,
                root: root.to_path_buf(),
            },
            Some(s) if tool == "WebFetch" => match s.strip_prefix("domain:") {
                Some(d) if !d.trim().is_empty() => Matcher::Domain(d.trim().to_ascii_lowercase()),
                _ => return Err(err("a WebFetch rule reads `WebFetch(domain:example.com)`")),
            },
            Some(s) if is_task(tool) => Matcher::Agent(s.to_string()),
            Some(_) => Matcher::Never,
        };
        Ok(Self {
            text: t.to_string(),
            tool: tool.to_string(),
            matcher,
            source: source.into(),
        })
    }

    /// The rule as written.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Where the rule came from (a file name, `--permission-mode`, ...).
    pub fn source(&self) -> &str {
        &self.source
    }

    /// A warning when the rule can never match (a specifier this crate does not interpret).
    pub fn warning(&self) -> Option<String> {
        matches!(self.matcher, Matcher::Never).then(|| {
            format!(
                "permission rule `{}` ({}): a specifier is understood only for Bash, Read, \
                 Edit, Write, WebFetch and Task/Agent; this rule never matches",
                self.text, self.source
            )
        })
    }

    /// True when the rule's tool part names `tool`.
    fn names(&self, tool: &str) -> bool {
        let r = self.tool.as_str();
        if r == tool {
            return true;
        }
        if is_edit_tool(r) && is_edit_tool(tool) {
            return true;
        }
        if r == "Read" && is_read_tool(tool) {
            return true;
        }
        if is_task(r) && is_task(tool) {
            return true;
        }
        if let Some(prefix) = r.strip_suffix('*') {
            return tool.starts_with(prefix);
        }
        // `mcp__server` covers every tool of that server.
        r.starts_with("mcp__") && r.matches("__").count() == 1 && {
            tool.strip_prefix(r)
                .is_some_and(|rest| rest.starts_with("__"))
        }
    }

    /// True when a deny or ask rule matches the call (for Bash: the whole command or any of
    /// its parts).
    fn matches_any_part(&self, tool: &str, input: &Value) -> bool {
        if !self.names(tool) {
            return false;
        }
        match &self.matcher {
            Matcher::Command(pattern) => {
                let command = command_of(input);
                let parsed = split_command(&command);
                command_matches(pattern, &normalize_ws(&command))
                    || parsed.parts.iter().any(|p| command_matches(pattern, p))
            }
            _ => self.matches_single(tool, input),
        }
    }

    fn matches_single(&self, tool: &str, input: &Value) -> bool {
        match &self.matcher {
            Matcher::Any => true,
            Matcher::Command(pattern) => {
                command_matches(pattern, &normalize_ws(&command_of(input)))
            }
            Matcher::Paths { set, root } => {
                let Some(p) = path_of(tool, input) else {
                    // A search without a path searches the root.
                    return is_read_tool(tool) && set.is_match(root);
                };
                set.is_match(resolve(root, &p))
            }
            Matcher::Domain(d) => url_host(input).is_some_and(|h| domain_matches(d, &h)),
            Matcher::Agent(name) => input
                .get("subagent_type")
                .and_then(Value::as_str)
                .is_some_and(|a| a == name),
            Matcher::Never => false,
        }
    }
}

impl fmt::Display for PermissionRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// Allow, ask and deny rules, from settings files, `subagents.toml` or code. Deny wins, then
/// ask, then allow.
#[derive(Debug, Clone, Default)]
pub struct PermissionRules {
    allow: Vec<PermissionRule>,
    ask: Vec<PermissionRule>,
    deny: Vec<PermissionRule>,
}

impl PermissionRules {
    /// No rules.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds one parsed rule to a list.
    pub fn push(&mut self, action: RuleAction, rule: PermissionRule) {
        match action {
            RuleAction::Allow => self.allow.push(rule),
            RuleAction::Ask => self.ask.push(rule),
            RuleAction::Deny => self.deny.push(rule),
        }
    }

    /// Parses and adds a rule (builder style); see [`PermissionRule::parse`].
    pub fn with_rule(
        mut self,
        action: RuleAction,
        text: &str,
        root: &Path,
        source: &str,
    ) -> Result<Self, RuleError> {
        self.push(action, PermissionRule::parse(text, root, source)?);
        Ok(self)
    }

    /// Adds every rule of `other`.
    pub fn extend(&mut self, other: PermissionRules) {
        self.allow.extend(other.allow);
        self.ask.extend(other.ask);
        self.deny.extend(other.deny);
    }

    /// True when there are no rules.
    pub fn is_empty(&self) -> bool {
        self.allow.is_empty() && self.ask.is_empty() && self.deny.is_empty()
    }

    /// The rules of one list.
    pub fn rules(&self, action: RuleAction) -> &[PermissionRule] {
        match action {
            RuleAction::Allow => &self.allow,
            RuleAction::Ask => &self.ask,
            RuleAction::Deny => &self.deny,
        }
    }

    /// Warnings about rules that can never match.
    pub fn warnings(&self) -> Vec<String> {
        self.allow
            .iter()
            .chain(&self.ask)
            .chain(&self.deny)
            .filter_map(PermissionRule::warning)
            .collect()
    }

    /// The first deny rule matching the call.
    pub(crate) fn denied_by(&self, tool: &str, input: &Value) -> Option<&PermissionRule> {
        self.deny.iter().find(|r| r.matches_any_part(tool, input))
    }

    /// The first ask rule matching the call.
    pub(crate) fn asked_by(&self, tool: &str, input: &Value) -> Option<&PermissionRule> {
        self.ask.iter().find(|r| r.matches_any_part(tool, input))
    }

    /// True when allow rules cover the call. A Bash command is covered when each of its parts
    /// (split on `&&`, `||`, `;`, `|`, `&` and newlines) is, and never when it holds a command
    /// substitution or writes through a redirection.
    pub(crate) fn allows(&self, tool: &str, input: &Value) -> bool {
        let rules: Vec<&PermissionRule> = self.allow.iter().filter(|r| r.names(tool)).collect();
        if rules.is_empty() {
            return false;
        }
        if rules.iter().any(|r| matches!(r.matcher, Matcher::Any)) {
            return true;
        }
        if tool == "Bash" {
            let parsed = split_command(&command_of(input));
            return !parsed.unsafe_for_allow
                && !parsed.parts.is_empty()
                && parsed.parts.iter().all(|p| {
                    rules.iter().any(|r| match &r.matcher {
                        Matcher::Command(pattern) => command_matches(pattern, p),
                        _ => false,
                    })
                });
        }
        rules.iter().any(|r| r.matches_single(tool, input))
    }
}

// --- Bash commands ---

fn command_of(input: &Value) -> String {
    input
        .get("command")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

/// Collapses runs of whitespace into one space and trims.
fn normalize_ws(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A command split into its simple parts.
pub(crate) struct ParsedCommand {
    /// The parts, whitespace-normalized, empty ones dropped.
    pub parts: Vec<String>,
    /// A command substitution (`$(..)`, backticks, `<(..)`, `>(..)`) or an output redirection
    /// to a file: allow rules never cover it.
    pub unsafe_for_allow: bool,
}

/// Splits a shell command on `&&`, `||`, `;`, `|`, `&` and newlines outside quotes.
pub(crate) fn split_command(command: &str) -> ParsedCommand {
    let chars: Vec<char> = command.chars().collect();
    let mut parts = Vec::new();
    let mut cur = String::new();
    let mut unsafe_for_allow = false;
    let (mut single, mut double) = (false, false);
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if single {
            if c == '\'' {
                single = false;
            }
            cur.push(c);
            i += 1;
            continue;
        }
        match c {
            '\\' => {
                cur.push(c);
                if let Some(n) = next {
                    cur.push(n);
                }
                i += 2;
                continue;
            }
            '\'' if !double => single = true,
            '"' => double = !double,
            '`' => unsafe_for_allow = true,
            '$' if next == Some('(') => unsafe_for_allow = true,
            '<' | '>' if next == Some('(') && !double => unsafe_for_allow = true,
            '>' if !double => {
                // `2>&1`, `>&2` and `>/dev/null` write nowhere new; other redirections write a
                // file.
                let rest: String = chars[i + 1..].iter().collect();
                let rest = rest.trim_start_matches('>').trim_start();
                if !(rest.starts_with('&') || rest.starts_with("/dev/null")) {
                    unsafe_for_allow = true;
                }
            }
            '\n' | ';' if !double => {
                parts.push(std::mem::take(&mut cur));
                i += 1;
                continue;
            }
            '&' | '|' if !double => {
                // `>&` / `<&` belong to a redirection.
                let prev = if i > 0 { chars[i - 1] } else { ' ' };
                if c == '&' && (prev == '>' || prev == '<') {
                    cur.push(c);
                    i += 1;
                    continue;
                }
                parts.push(std::mem::take(&mut cur));
                i += if next == Some(c) { 2 } else { 1 };
                continue;
            }
            _ => {}
        }
        cur.push(c);
        i += 1;
    }
    parts.push(cur);
    ParsedCommand {
        parts: parts
            .iter()
            .map(|p| normalize_ws(p))
            .filter(|p| !p.is_empty())
            .collect(),
        unsafe_for_allow,
    }
}

/// Claude Code's Bash patterns: `prefix:*` (the prefix as a whole word, then anything),
/// `*` wildcards (a single trailing ` *` also matches the bare prefix), else the exact command.
pub(crate) fn command_matches(pattern: &str, command: &str) -> bool {
    if let Some(prefix) = pattern.strip_suffix(":*") {
        let prefix = prefix.trim_end();
        return command == prefix
            || command
                .strip_prefix(prefix)
                .is_some_and(|rest| rest.starts_with(' '));
    }
    if pattern.contains('*') {
        if let Some(prefix) = pattern.strip_suffix(" *")
            && !prefix.contains('*')
        {
            return command == prefix
                || command
                    .strip_prefix(prefix)
                    .is_some_and(|rest| rest.starts_with(' '));
        }
        return wildcard(pattern, command);
    }
    pattern == command
}

/// `*` matches any run of characters (spaces included).
fn wildcard(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    let (mut pi, mut ti) = (0usize, 0usize);
    let (mut star, mut mark) = (None::<usize>, 0usize);
    while ti < t.len() {
        if pi < p.len() && p[pi] != '*' && p[pi] == t[ti] {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some(pi);
            mark = ti;
            pi += 1;
        } else if let Some(s) = star {
            pi = s + 1;
            mark += 1;
            ti = mark;
        } else {
            return false;
        }
    }
    while pi < p.len() && p[pi] == '*' {
        pi += 1;
    }
    pi == p.len()
}

/// What "allow for the session" covers for a Bash command: `Bash(git status:*)` for commands
/// with a subcommand, `Bash(ls:*)` for others, the exact command when it has several parts or a
/// substitution.
pub(crate) fn bash_session_rule(command: &str) -> String {
    const WITH_SUBCOMMANDS: &[&str] = &[
        "git",
        "cargo",
        "npm",
        "pnpm",
        "yarn",
        "docker",
        "kubectl",
        "go",
        "pip",
        "uv",
        "gh",
        "apt",
        "apt-get",
        "brew",
        "rustup",
        "make",
        "systemctl",
        "python",
        "python3",
    ];
    let parsed = split_command(command);
    if parsed.unsafe_for_allow || parsed.parts.len() != 1 {
        return format!("Bash({})", normalize_ws(command));
    }
    let words: Vec<&str> = parsed.parts[0].split(' ').collect();
    let first = words[0];
    match words.get(1) {
        Some(sub)
            if WITH_SUBCOMMANDS.contains(&first)
                && sub
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
                && !sub.starts_with('-') =>
        {
            format!("Bash({first} {sub}:*)")
        }
        _ => format!("Bash({first}:*)"),
    }
}

// --- paths ---

fn path_of(tool: &str, input: &Value) -> Option<String> {
    let keys: &[&str] = if is_read_tool(tool) && tool != "Read" {
        &["path", "file_path"]
    } else {
        &["file_path", "path", "notebook_path"]
    };
    keys.iter()
        .find_map(|k| input.get(*k).and_then(Value::as_str))
        .map(str::to_string)
}

/// `p` made absolute against `root`, with `.` and `..` removed lexically.
pub(crate) fn resolve(root: &Path, p: &str) -> PathBuf {
    let joined = if Path::new(p).is_absolute() {
        PathBuf::from(p)
    } else {
        root.join(p)
    };
    subagent_tools::normalize_path(&joined)
}

/// Compiles a gitignore-style path pattern: `//abs` is absolute, `~/x` is in the home
/// directory, `/x` and `./x` are relative to `root`, a pattern with no inner `/` matches at any
/// depth below `root`, a trailing `/` means a directory. A pattern also covers everything below
/// what it names.
fn path_set(spec: &str, root: &Path) -> Result<GlobSet, String> {
    let escaped_root = globset::escape(&root.to_string_lossy());
    let base = if let Some(abs) = spec.strip_prefix("//") {
        format!("/{abs}")
    } else if let Some(rest) = spec.strip_prefix("~/") {
        let home = crate::discovery::home_dir()
            .ok_or_else(|| "`~/` needs a home directory, and none is known".to_string())?;
        format!("{}/{rest}", globset::escape(&home.to_string_lossy()))
    } else if let Some(rest) = spec.strip_prefix("./") {
        format!("{escaped_root}/{rest}")
    } else if let Some(rest) = spec.strip_prefix('/') {
        format!("{escaped_root}/{rest}")
    } else if spec.trim_end_matches('/').contains('/') {
        format!("{escaped_root}/{spec}")
    } else {
        format!("{escaped_root}/**/{spec}")
    };
    let base = base.trim_end_matches('/').to_string();
    let mut b = GlobSetBuilder::new();
    for pattern in [base.clone(), format!("{base}/**")] {
        let glob: Glob = GlobBuilder::new(&pattern)
            .literal_separator(true)
            .backslash_escape(true)
            .build()
            .map_err(|e| format!("not a valid path pattern: {e}"))?;
        b.add(glob);
    }
    b.build()
        .map_err(|e| format!("not a valid path pattern: {e}"))
}

// --- web ---

fn url_host(input: &Value) -> Option<String> {
    let url = input.get("url").and_then(Value::as_str)?;
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let authority = rest.split(['/', '?', '#']).next()?;
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host = if let Some(v6) = host_port.strip_prefix('[') {
        v6.split(']').next()?.to_string()
    } else {
        host_port.split(':').next()?.to_string()
    };
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    (!host.is_empty()).then_some(host)
}

fn domain_matches(pattern: &str, host: &str) -> bool {
    match pattern.strip_prefix("*.") {
        Some(suffix) => host.len() > suffix.len() && host.ends_with(&format!(".{suffix}")),
        None => pattern == host,
    }
}

/// The host a WebFetch call reaches, for messages and session rules.
pub(crate) fn web_host(input: &Value) -> Option<String> {
    url_host(input)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rule(text: &str) -> PermissionRule {
        PermissionRule::parse(text, Path::new("/proj"), "test").unwrap()
    }

    fn bash(cmd: &str) -> Value {
        json!({ "command": cmd })
    }

    fn allow(rules: &[&str], tool: &str, input: Value) -> bool {
        let mut r = PermissionRules::new();
        for t in rules {
            r.push(RuleAction::Allow, rule(t));
        }
        r.allows(tool, &input)
    }

    #[test]
    fn bash_prefix_rules_keep_word_boundaries_and_refuse_compound_commands() {
        let g = &["Bash(git status:*)"];
        assert!(allow(g, "Bash", bash("git status")));
        assert!(allow(g, "Bash", bash("git  status   --short")));
        assert!(!allow(g, "Bash", bash("git statusx")));
        assert!(!allow(g, "Bash", bash("git push")));
        assert!(!allow(g, "Bash", bash("git status && rm -rf /")));
        assert!(!allow(g, "Bash", bash("git status; touch x")));
        assert!(!allow(g, "Bash", bash("git status $(touch x)")));
        assert!(!allow(g, "Bash", bash("git status > out.txt")));
        assert!(allow(g, "Bash", bash("git status 2>&1")));
        assert!(allow(g, "Bash", bash("git status >/dev/null")));
        assert!(allow(
            &["Bash(git status:*)", "Bash(wc:*)"],
            "Bash",
            bash("git status | wc -l")
        ));
        assert!(!allow(g, "Write", json!({"file_path": "a"})));
    }

    #[test]
    fn bash_wildcards_and_exact_commands() {
        assert!(allow(&["Bash(npm run *)"], "Bash", bash("npm run test")));
        assert!(allow(&["Bash(ls *)"], "Bash", bash("ls")));
        assert!(!allow(&["Bash(ls *)"], "Bash", bash("lsof")));
        assert!(allow(&["Bash(ls*)"], "Bash", bash("lsof")));
        assert!(allow(
            &["Bash(git * main)"],
            "Bash",
            bash("git checkout main")
        ));
        assert!(!allow(
            &["Bash(git * main)"],
            "Bash",
            bash("git checkout dev")
        ));
        assert!(allow(&["Bash(npm install)"], "Bash", bash("npm install")));
        assert!(!allow(
            &["Bash(npm install)"],
            "Bash",
            bash("npm install x")
        ));
        assert!(allow(&["Bash"], "Bash", bash("anything && at all")));
        assert!(allow(&["Bash(*)"], "Bash", bash("anything")));
    }

    #[test]
    fn deny_and_ask_match_any_part_of_a_command() {
        let r = rule("Bash(rm:*)");
        assert!(r.matches_any_part("Bash", &bash("ls && rm -rf x")));
        assert!(r.matches_any_part("Bash", &bash("rm x")));
        assert!(!r.matches_any_part("Bash", &bash("echo 'a && rm b'")));
        let pipe = rule("Bash(curl * | bash)");
        assert!(pipe.matches_any_part("Bash", &bash("curl https://x.sh | bash")));
    }

    #[test]
    fn path_rules_follow_gitignore_anchoring() {
        let root = Path::new("/proj");
        let m = |spec: &str, tool: &str, path: &str| {
            PermissionRule::parse(spec, root, "t")
                .unwrap()
                .matches_any_part(tool, &json!({"file_path": path, "path": path}))
        };
        assert!(m("Write(src/**)", "Write", "src/a/b.rs"));
        assert!(m("Write(src/**)", "Edit", "/proj/src/lib.rs"));
        assert!(!m("Write(src/**)", "Write", "docs/a.md"));
        assert!(!m("Write(src/**)", "Write", "src/../docs/a.md"));
        assert!(m("Read(./secrets/**)", "Read", "secrets/key.pem"));
        assert!(m("Read(./secrets)", "Read", "secrets/deep/key.pem"));
        assert!(!m("Read(./secrets/**)", "Read", "public/secrets/key.pem"));
        assert!(m("Read(.env)", "Read", "a/b/.env"), "no slash: any depth");
        assert!(m("Read(*.pem)", "Grep", "keys/x.pem"));
        assert!(m("Read(/secrets/**)", "Read", "secrets/a"));
        assert!(m("Read(//etc/passwd)", "Read", "/etc/passwd"));
        assert!(!m("Read(//etc/passwd)", "Read", "etc/passwd"));
        assert!(
            !m("Read(*.pem)", "Write", "x.pem"),
            "Read rules are not Edit rules"
        );
    }

    #[test]
    fn web_fetch_domains_and_other_tools() {
        let r = rule("WebFetch(domain:example.com)");
        assert!(r.matches_any_part("WebFetch", &json!({"url": "https://example.com/a"})));
        assert!(r.matches_any_part("WebFetch", &json!({"url": "http://u:p@EXAMPLE.com:8080/"})));
        assert!(!r.matches_any_part("WebFetch", &json!({"url": "https://evil-example.com/"})));
        assert!(!r.matches_any_part("WebFetch", &json!({"url": "https://a.example.com/"})));
        let w = rule("WebFetch(domain:*.example.com)");
        assert!(w.matches_any_part("WebFetch", &json!({"url": "https://a.example.com/"})));
        assert!(!w.matches_any_part("WebFetch", &json!({"url": "https://example.com/"})));
        assert!(rule("mcp__github").matches_any_part("mcp__github__create_issue", &json!({})));
        assert!(!rule("mcp__github").matches_any_part("mcp__githubx__a", &json!({})));
        assert!(rule("mcp__github__*").matches_any_part("mcp__github__a", &json!({})));
        assert!(rule("Task(leaf)").matches_any_part("Agent", &json!({"subagent_type": "leaf"})));
        assert!(rule("Foo(bar)").warning().is_some());
        assert!(PermissionRule::parse("Bash(git", Path::new("/"), "t").is_err());
        assert!(PermissionRule::parse("Ba sh", Path::new("/"), "t").is_err());
        assert!(PermissionRule::parse("WebFetch(example.com)", Path::new("/"), "t").is_err());
    }

    #[test]
    fn session_rules_generalise_single_commands_only() {
        assert_eq!(bash_session_rule("git status -s"), "Bash(git status:*)");
        assert_eq!(bash_session_rule("touch a.txt"), "Bash(touch:*)");
        assert_eq!(
            bash_session_rule("touch a && rm b"),
            "Bash(touch a && rm b)"
        );
        assert_eq!(bash_session_rule("git --version"), "Bash(git:*)");
    }
}
