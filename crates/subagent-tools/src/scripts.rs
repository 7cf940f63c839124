//! The workspace files a command names, pinned to their content ([`ScriptPins`]).
//!
//! A command written by the user (a hook in `~/.claude/settings.json`) or approved by the user
//! (an MCP server of an approved `.mcp.json`) may run a file that lives in the workspace, where
//! a model can rewrite it: `sh .claude/hooks/fmt.sh`, `python3 tools/server.py`, `make fmt`. An
//! approval of the command is only an approval of what it runs if the content of those files
//! is part of it. [`ScriptPins`] finds them and remembers their content (SHA-256), so a host can
//! include them in an approval and notice when one changed.
//!
//! Which files a command names is read, not parsed as a shell would: every word that could be a
//! path in the workspace counts (relative words against the workspace root, absolute ones inside
//! it, `$CLAUDE_PROJECT_DIR/...`, an option's `--flag=PATH` value), including words inside
//! quotes, and a word naming no file yet is pinned as absent (creating it is a change). The
//! program word counts when it has a `/` (a bare name is looked up in `PATH`), and `make` names
//! the workspace's makefile. Code a command runs without naming it (an `npm` script, a build
//! script, a module imported from the workspace) is not found.

use std::io::Read as _;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::workspace::normalize_path;

/// The most files pinned for one command (more words are not looked at).
pub const MAX_PINNED_FILES: usize = 64;
/// The most bytes of one file hashed; a longer file is pinned by these and its length.
pub const MAX_PINNED_BYTES: u64 = 64 * 1024 * 1024;

/// What a pinned path held.
#[derive(Debug, Clone, PartialEq, Eq)]
enum State {
    /// Nothing there.
    Absent,
    /// A file (through symlinks): hex SHA-256 of its content (capped) and its length.
    File(String, u64),
    /// A directory or another kind of file.
    Other,
    /// It could not be read (the error's kind).
    Unreadable(String),
}

impl State {
    fn of(path: &Path) -> State {
        let meta = match std::fs::metadata(path) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return State::Absent,
            Err(e) => return State::Unreadable(format!("{:?}", e.kind())),
        };
        if !meta.is_file() {
            return State::Other;
        }
        let hash = || -> std::io::Result<String> {
            let mut file = std::fs::File::open(path)?.take(MAX_PINNED_BYTES);
            let mut hasher = Sha256::new();
            let mut buf = vec![0u8; 64 * 1024];
            loop {
                let n = file.read(&mut buf)?;
                if n == 0 {
                    break;
                }
                hasher.update(&buf[..n]);
            }
            Ok(hasher
                .finalize()
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect())
        };
        match hash() {
            Ok(h) => State::File(h, meta.len()),
            Err(e) => State::Unreadable(format!("{:?}", e.kind())),
        }
    }

    fn describe(&self) -> String {
        match self {
            State::Absent => "absent".into(),
            State::File(h, len) => format!("sha256:{h}:{len}"),
            State::Other => "not a file".into(),
            State::Unreadable(why) => format!("unreadable:{why}"),
        }
    }
}

/// The workspace files one command names, with their content when pinned.
///
/// Blocking: building and [`changed`](Self::changed) read the files (call them off async
/// threads).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ScriptPins {
    root: PathBuf,
    pins: Vec<(PathBuf, State)>,
}

impl ScriptPins {
    /// The files shell command `command` names in the workspace at `root`, pinned now.
    pub fn of_shell(command: &str, root: &Path) -> Self {
        Self::pin(root, candidates(&shell_words(command), root))
    }

    /// The files a program and its arguments name (as `.mcp.json` gives them), pinned now.
    pub fn of_argv(program: &str, args: &[String], root: &Path) -> Self {
        let words: Vec<Word> = std::iter::once(Word::program(program))
            .chain(args.iter().map(|a| Word::arg(a)))
            .collect();
        Self::pin(root, candidates(&words, root))
    }

    fn pin(root: &Path, paths: Vec<PathBuf>) -> Self {
        Self {
            root: root.to_path_buf(),
            pins: paths
                .into_iter()
                .map(|p| {
                    let state = State::of(&p);
                    (p, state)
                })
                .collect(),
        }
    }

    /// True when the command names no workspace path.
    pub fn is_empty(&self) -> bool {
        self.pins.is_empty()
    }

    /// The pinned paths.
    pub fn paths(&self) -> impl Iterator<Item = &Path> {
        self.pins.iter().map(|(p, _)| p.as_path())
    }

    /// The first pinned path whose content is no longer what it was (changed, created,
    /// removed, replaced); `None` when all are as pinned.
    pub fn changed(&self) -> Option<&Path> {
        self.pins
            .iter()
            .find(|(p, state)| State::of(p) != *state)
            .map(|(p, _)| p.as_path())
    }

    /// One line per pinned path, relative to the root, with what it held (`sha256:HEX:LEN`,
    /// `absent`, ...), sorted: what an approval of the command covers besides its text.
    pub fn fingerprint(&self) -> String {
        let mut lines: Vec<String> = self
            .pins
            .iter()
            .map(|(p, state)| {
                let shown = p.strip_prefix(&self.root).unwrap_or(p);
                format!("{}\t{}\n", shown.display(), state.describe())
            })
            .collect();
        lines.sort();
        lines.concat()
    }

    /// Adds `other`'s pins (a file named twice is pinned once).
    pub fn extend(&mut self, other: ScriptPins) {
        for pin in other.pins {
            if !self.pins.iter().any(|(p, _)| *p == pin.0) {
                self.pins.push(pin);
            }
        }
    }
}

/// One word of a command, and whether it is in the program's place.
struct Word {
    text: String,
    program: bool,
}

impl Word {
    fn program(text: &str) -> Self {
        Self {
            text: text.to_string(),
            program: true,
        }
    }

    fn arg(text: &str) -> Self {
        Self {
            text: text.to_string(),
            program: false,
        }
    }
}

/// The words of a shell command, quotes removed: split at blanks and at `;`, `&`, `|`, `(`,
/// `)`, `<`, `>` and backquotes, also inside quotes (a quoted `sh -c "python3 x.py"` names
/// `x.py`); a quoted string is also kept whole (a file name with spaces). A word right after an
/// operator (or first) is in the program's place, unless it is an assignment (`A=b`).
fn shell_words(command: &str) -> Vec<Word> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut quoted = String::new();
    let mut quote: Option<char> = None;
    let mut program = true;
    let flush = |word: &mut String, program: &mut bool, words: &mut Vec<Word>| {
        if word.is_empty() {
            return;
        }
        let text = std::mem::take(word);
        let is_assignment = text.split_once('=').is_some_and(|(k, _)| {
            !k.is_empty() && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        });
        if *program && is_assignment {
            // `A=b cmd`: an assignment before the program names nothing.
            return;
        }
        words.push(Word {
            text,
            program: std::mem::replace(program, false),
        });
    };
    for c in command.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => {
                quote = None;
                if quoted.contains(char::is_whitespace) {
                    words.push(Word::arg(&quoted));
                }
                quoted.clear();
            }
            (None, '\'' | '"') => quote = Some(c),
            (_, c) if c.is_whitespace() => {
                if quote.is_some() {
                    quoted.push(c);
                }
                flush(&mut word, &mut program, &mut words);
            }
            (_, ';' | '&' | '|' | '(' | ')' | '<' | '>' | '`' | '\n') => {
                flush(&mut word, &mut program, &mut words);
                if matches!(c, ';' | '&' | '|' | '(' | ')' | '`' | '\n') {
                    program = true;
                }
            }
            (_, '\\') if quote != Some('\'') => {}
            (_, c) => {
                if quote.is_some() {
                    quoted.push(c);
                }
                word.push(c);
            }
        }
    }
    flush(&mut word, &mut program, &mut words);
    words
}

/// The workspace paths `words` may name (see the module docs), at most [`MAX_PINNED_FILES`].
fn candidates(words: &[Word], root: &Path) -> Vec<PathBuf> {
    let lexical_root = normalize_path(root);
    let real_root = std::fs::canonicalize(root).unwrap_or_else(|_| lexical_root.clone());
    let mut out: Vec<PathBuf> = Vec::new();
    let mut add = |p: PathBuf| {
        if out.len() < MAX_PINNED_FILES && !out.contains(&p) {
            out.push(p);
        }
    };
    for w in words {
        let text = expand_project_dir(&w.text, root);
        if w.program {
            let name = text.rsplit('/').next().unwrap_or_default();
            if matches!(name, "make" | "gmake") {
                for makefile in ["GNUmakefile", "makefile", "Makefile"] {
                    add(root.join(makefile));
                }
            }
            if !text.contains('/') {
                continue;
            }
        }
        let text = match text.strip_prefix('-') {
            // `--config=PATH`: the value; other options name nothing.
            Some(option) => match option.split_once('=') {
                Some((_, value)) => value.to_string(),
                None => continue,
            },
            None => text,
        };
        if text.is_empty()
            || text.starts_with('~')
            || text.contains(['$', '*', '?', '[', '{'])
            || text.contains("://")
        {
            continue;
        }
        let path = normalize_path(&root.join(&text));
        if path.starts_with(&lexical_root) || path.starts_with(&real_root) {
            add(path);
        }
    }
    out
}

/// `$CLAUDE_PROJECT_DIR` and `${CLAUDE_PROJECT_DIR}` replaced by `root` (hooks run with it set).
fn expand_project_dir(word: &str, root: &Path) -> String {
    let root = root.to_string_lossy();
    word.replace("${CLAUDE_PROJECT_DIR}", &root)
        .replace("$CLAUDE_PROJECT_DIR", &root)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(pins: &ScriptPins, root: &Path) -> Vec<String> {
        pins.paths()
            .map(|p| p.strip_prefix(root).unwrap().display().to_string())
            .collect()
    }

    #[test]
    fn the_files_a_command_names_are_found() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let pins = ScriptPins::of_shell(
            "A=1 sh \"$CLAUDE_PROJECT_DIR\"/.claude/hooks/fmt.sh --config=conf/x.toml -v && \
             python3 tools/srv.py 'my file.txt' | ./run.sh > out.log; bash -c \"node app.js\"",
            root,
        );
        let found = names(&pins, root);
        for named in [
            ".claude/hooks/fmt.sh",
            "conf/x.toml",
            "tools/srv.py",
            "my file.txt",
            "run.sh",
            "out.log",
            "app.js",
        ] {
            assert!(found.iter().any(|f| f == named), "{named}: {found:?}");
        }
        for program_or_option in ["sh", "python3", "bash", "A=1", "-v", "1"] {
            assert!(
                !found.iter().any(|f| f == program_or_option),
                "{program_or_option}: {found:?}"
            );
        }
        let pins = ScriptPins::of_shell("make fmt", root);
        assert_eq!(
            names(&pins, root),
            ["GNUmakefile", "makefile", "Makefile", "fmt"]
        );
        let outside = ScriptPins::of_shell(
            "sh /etc/profile ../elsewhere.sh ~/bin/x $HOME/y https://example.com/z",
            root,
        );
        assert!(outside.is_empty(), "{outside:?}");
        let argv = ScriptPins::of_argv("./server", &["--port".into(), "lib/a.py".into()], root);
        assert_eq!(names(&argv, root), ["server", "lib/a.py"]);
    }

    #[test]
    fn a_pinned_file_changes_when_its_content_does() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir(root.join("tools")).unwrap();
        std::fs::write(root.join("tools/fmt.sh"), "echo ok\n").unwrap();
        let pins = ScriptPins::of_shell("sh tools/fmt.sh && sh tools/new.sh", root);
        let print = pins.fingerprint();
        assert!(print.contains("tools/fmt.sh\tsha256:") && print.contains("tools/new.sh\tabsent"));
        assert_eq!(pins.changed(), None);
        std::fs::write(root.join("tools/fmt.sh"), "echo ok\n").unwrap();
        assert_eq!(pins.changed(), None, "the same content");
        std::fs::write(root.join("tools/fmt.sh"), "touch PWNED\n").unwrap();
        assert_eq!(pins.changed(), Some(root.join("tools/fmt.sh").as_path()));
        let pins = ScriptPins::of_shell("sh tools/fmt.sh && sh tools/new.sh", root);
        std::fs::write(root.join("tools/new.sh"), "x").unwrap();
        assert_eq!(pins.changed(), Some(root.join("tools/new.sh").as_path()));
    }
}
