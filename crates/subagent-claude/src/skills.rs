//! Agent Skills: `<dir>/<skill>/SKILL.md` files whose frontmatter gives a name and a
//! description and whose body is the skill's text.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Map, Value};

use crate::definition::{is_canonical_name, read_named_document};
use crate::error::ClaudeError;
use crate::frontmatter;
use crate::terminal::{escape_for_terminal, terminal_safe};

/// One skill.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Skill {
    /// `name`.
    pub name: String,
    /// `description`.
    pub description: String,
    /// The body: the skill's instructions (trimmed).
    pub body: String,
    /// Other frontmatter keys (`allowed-tools`, `license`, `metadata`...).
    pub metadata: Map<String, Value>,
    /// The `SKILL.md` file.
    pub path: PathBuf,
}

/// A parsed skill and the warnings its file produced.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ParsedSkill {
    /// The skill.
    pub skill: Skill,
    /// Lenient YAML, odd names...
    pub warnings: Vec<String>,
}

/// Parses a `SKILL.md` text. `name` and `description` are required.
pub fn parse_skill(path_for_errors: &Path, text: &str) -> Result<ParsedSkill, ClaudeError> {
    let normalized = frontmatter::normalize(text);
    let mut warnings = Vec::new();
    let (mut doc, name, description) =
        read_named_document(path_for_errors, &normalized, &mut warnings)?;
    if !is_canonical_name(&name) {
        warnings.push(format!("skill name `{name}` is not lowercase-hyphen"));
    }
    Ok(ParsedSkill {
        skill: Skill {
            name,
            description,
            body: doc.body.trim().to_string(),
            metadata: std::mem::take(&mut doc.fields),
            path: path_for_errors.to_path_buf(),
        },
        warnings: terminal_safe(warnings),
    })
}

/// What the skills found in `dir` must stay inside once symlinks are resolved: the directory
/// holding `.claude` for a `.claude/skills` directory (the project, or the home directory),
/// else `dir` itself.
fn skill_bound(dir: &Path) -> Option<PathBuf> {
    let holder = dir
        .ends_with(".claude/skills")
        .then(|| dir.parent().and_then(Path::parent))
        .flatten()
        .unwrap_or(dir);
    std::fs::canonicalize(holder).ok()
}

/// A path for a warning, with control and bidi characters escaped.
fn shown(path: &Path) -> String {
    escape_for_terminal(&path.display().to_string()).into_owned()
}

/// Skills found in the configured skill directories, looked up by name (ignoring case).
#[derive(Debug, Clone, Default)]
pub struct SkillSet {
    skills: Vec<Arc<Skill>>,
    by_name: HashMap<String, usize>,
}

/// What [`SkillSet::discover`] found.
#[derive(Debug, Default)]
#[non_exhaustive]
pub struct SkillScan {
    /// The skills (the first directory wins on a name clash).
    pub skills: SkillSet,
    /// Files that were not loaded, with the reason.
    pub skipped: Vec<(PathBuf, String)>,
    /// Warnings, each naming its file.
    pub warnings: Vec<String>,
}

impl SkillSet {
    /// An empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a skill; a skill with the same name (ignoring case) already present is kept and
    /// `false` is returned.
    pub fn insert(&mut self, skill: Skill) -> bool {
        let key = skill.name.to_lowercase();
        if self.by_name.contains_key(&key) {
            return false;
        }
        self.by_name.insert(key, self.skills.len());
        self.skills.push(Arc::new(skill));
        true
    }

    /// Looks a skill up by name, ignoring case.
    pub fn get(&self, name: &str) -> Option<&Arc<Skill>> {
        self.by_name
            .get(&name.trim().to_lowercase())
            .map(|i| &self.skills[*i])
    }

    /// All skills, in discovery order.
    pub fn iter(&self) -> impl Iterator<Item = &Arc<Skill>> {
        self.skills.iter()
    }

    /// Number of skills.
    pub fn len(&self) -> usize {
        self.skills.len()
    }

    /// True when there are none.
    pub fn is_empty(&self) -> bool {
        self.skills.is_empty()
    }

    /// Finds `<dir>/<skill>/SKILL.md` in each directory (blocking I/O; see
    /// [`discover`](Self::discover) for async callers). Missing directories are skipped quietly.
    pub fn discover_blocking(dirs: &[PathBuf]) -> SkillScan {
        let mut scan = SkillScan::default();
        for dir in dirs {
            let Ok(entries) = std::fs::read_dir(dir) else {
                continue;
            };
            let mut files: Vec<PathBuf> = entries
                .filter_map(Result::ok)
                .map(|e| e.path().join("SKILL.md"))
                .filter(|p| p.is_file())
                .collect();
            files.sort();
            let bound = skill_bound(dir);
            for path in files {
                // A skill linked out of its project (a cloned repository's `.claude/skills/x
                // -> ~/...`) would put that file into prompts.
                if let Some(reason) = bound
                    .as_deref()
                    .and_then(|b| crate::discovery::escapes(&path, b))
                {
                    scan.skipped.push((path, reason));
                    continue;
                }
                let text = match crate::scan::read_limited(&path) {
                    Ok(t) => t,
                    Err(e) => {
                        scan.skipped.push((path, e.to_string()));
                        continue;
                    }
                };
                match parse_skill(&path, &text) {
                    Ok(p) => {
                        scan.warnings.extend(
                            p.warnings
                                .into_iter()
                                .map(|w| format!("{}: {w}", shown(&path))),
                        );
                        let name = p.skill.name.clone();
                        if !scan.skills.insert(p.skill) {
                            scan.warnings.push(format!(
                                "{}: skill `{name}` is already defined earlier; ignored",
                                shown(&path)
                            ));
                        }
                    }
                    Err(e) => scan.skipped.push((path, e.to_string())),
                }
            }
        }
        scan
    }

    /// Async wrapper of [`discover_blocking`](Self::discover_blocking) (runs on the blocking
    /// pool).
    pub async fn discover(dirs: Vec<PathBuf>) -> SkillScan {
        tokio::task::spawn_blocking(move || Self::discover_blocking(&dirs))
            .await
            .unwrap_or_default()
    }

    /// Builds the system prompt: the agent's body followed by the text of each named skill.
    /// Names with no skill produce a warning each.
    pub fn compose_prompt(&self, body: &str, skill_names: &[String]) -> (String, Vec<String>) {
        let mut prompt = body.to_string();
        let mut warnings = Vec::new();
        for name in skill_names {
            match self.get(name) {
                Some(skill) => {
                    prompt.push_str("\n\n# Skill: ");
                    prompt.push_str(&skill.name);
                    prompt.push_str("\n\n");
                    prompt.push_str(&skill.body);
                }
                None => warnings.push(format!(
                    "skill `{}` was not found in the configured skill directories{}",
                    escape_for_terminal(name),
                    if self.is_empty() {
                        " (none configured or none found)".to_string()
                    } else {
                        format!(
                            "; known skills: {}",
                            self.skills
                                .iter()
                                .map(|s| s.name.as_str())
                                .collect::<Vec<_>>()
                                .join(", ")
                        )
                    }
                )),
            }
        }
        (prompt, warnings)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Writes `text` as the `SKILL.md` of the skill directory `dir` (created with its parents).
    fn write_skill(dir: &Path, text: &str) {
        std::fs::create_dir_all(dir).unwrap();
        std::fs::write(dir.join("SKILL.md"), text).unwrap();
    }

    #[test]
    fn discovers_and_composes() {
        let dir = tempfile::tempdir().unwrap();
        write_skill(
            &dir.path().join("pdf-tools"),
            "---\nname: pdf-tools\ndescription: Work with PDFs\n---\nUse pdftotext.\n",
        );
        write_skill(&dir.path().join("bad"), "no frontmatter");
        let scan = SkillSet::discover_blocking(&[dir.path().to_path_buf()]);
        assert_eq!(scan.skills.len(), 1);
        assert_eq!(scan.skipped.len(), 1);
        let (prompt, warnings) = scan
            .skills
            .compose_prompt("Base.", &["PDF-Tools".into(), "nope".into()]);
        assert_eq!(prompt, "Base.\n\n# Skill: pdf-tools\n\nUse pdftotext.");
        assert_eq!(warnings.len(), 1);
        assert!(warnings[0].contains("`nope`") && warnings[0].contains("pdf-tools"));
    }

    #[cfg(unix)]
    #[test]
    fn a_skill_linked_out_of_its_project_is_not_loaded() {
        let tmp = tempfile::tempdir().unwrap();
        let skills = tmp.path().join("p/.claude/skills");
        write_skill(
            &skills.join("inside"),
            "---\nname: inside\ndescription: d\n---\nok\n",
        );
        let outside = tmp.path().join("outside");
        write_skill(&outside, "---\nname: leak\ndescription: d\n---\nSECRET\n");
        std::os::unix::fs::symlink(&outside, skills.join("leak")).unwrap();
        let scan = SkillSet::discover_blocking(&[skills]);
        assert_eq!(scan.skills.len(), 1);
        assert!(scan.skills.get("leak").is_none());
        assert!(
            scan.skipped
                .iter()
                .any(|(_, r)| r.contains("leads outside")),
            "{:?}",
            scan.skipped
        );
    }
}
