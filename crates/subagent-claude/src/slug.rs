//! The one place an agent's name becomes a path segment or a URL path segment.
//!
//! Agent names are free text (`macOS Spatial/Metal Engineer`, `LSP/Index Engineer`, `..`):
//! wherever a name would become part of a path (memory directories, worktrees and their
//! branches, served URL paths), [`agent_slug`] is used instead.

/// Most bytes of a name's readable part in its slug (the hash suffix comes on top).
pub const MAX_SLUG_BASE_BYTES: usize = 48;

/// The path-safe, stable form of an agent name: ASCII letters and digits lowercased, every run
/// of other characters turned into one `-`, trimmed of `-` and cut to [`MAX_SLUG_BASE_BYTES`].
/// When that differs from the name as written (capitals, spaces, `/`, non-ASCII letters, a cut,
/// or nothing left), `-` and 8 hex digits of a hash of the exact name are appended, so two names
/// that read alike (`Code Reviewer`, `code/reviewer`) get different slugs and a
/// `lowercase-hyphen` name is its own slug.
///
/// The result is never empty, never `.` or `..`, and holds only `a-z`, `0-9` and `-`.
///
/// ```
/// use subagent_claude::agent_slug;
/// assert_eq!(agent_slug("code-reviewer"), "code-reviewer");
/// let s = agent_slug("macOS Spatial/Metal Engineer");
/// assert!(s.starts_with("macos-spatial-metal-engineer-") && s.len() == 29 + 8);
/// assert_ne!(agent_slug("Code Reviewer"), agent_slug("code/reviewer"));
/// assert!(agent_slug("..").starts_with("agent-"));
/// ```
pub fn agent_slug(name: &str) -> String {
    let mut base = String::with_capacity(name.len().min(MAX_SLUG_BASE_BYTES));
    for c in name.chars() {
        if base.len() >= MAX_SLUG_BASE_BYTES {
            break;
        }
        if c.is_ascii_alphanumeric() {
            base.push(c.to_ascii_lowercase());
        } else if !base.is_empty() && !base.ends_with('-') {
            base.push('-');
        }
    }
    let base = base.trim_end_matches('-');
    if base == name {
        return base.to_string();
    }
    let base = if base.is_empty() { "agent" } else { base };
    format!("{base}-{:08x}", fnv1a32(name))
}

/// FNV-1a (64-bit) of the name's bytes, folded to 32 bits: stable across builds and platforms.
fn fnv1a32(text: &str) -> u32 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    (h ^ (h >> 32)) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_names_are_their_own_slug_and_others_get_a_hash() {
        for name in ["code-reviewer", "a", "agent42", "dotnet-framework-4-8"] {
            assert_eq!(agent_slug(name), name);
        }
        for (name, base) in [
            ("Code Reviewer", "code-reviewer-"),
            ("code_reviewer", "code-reviewer-"),
            ("LSP/Index Engineer", "lsp-index-engineer-"),
            ("../../etc/passwd", "etc-passwd-"),
            ("..", "agent-"),
            (".", "agent-"),
            ("名前", "agent-"),
            ("-lead-", "lead-"),
            ("plug:rev", "plug-rev-"),
            ("a\\b", "a-b-"),
        ] {
            let s = agent_slug(name);
            assert!(s.starts_with(base), "{name:?} -> {s}");
            assert_eq!(s.len(), base.len() + 8, "{name:?} -> {s}");
            assert!(
                s.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-'),
                "{s}"
            );
        }
        // Stable, and distinct for names that read alike.
        assert_eq!(agent_slug("Code Reviewer"), agent_slug("Code Reviewer"));
        assert_ne!(agent_slug("Code Reviewer"), agent_slug("code reviewer"));
        assert_ne!(agent_slug("名前"), agent_slug("ревьюер"));
        // Long names are cut, then hashed.
        let long = "x".repeat(300);
        let s = agent_slug(&long);
        assert_eq!(s.len(), MAX_SLUG_BASE_BYTES + 9);
    }
}
