//! Architecture rule: no import circle between the modules of one crate.
//!
//! A module is one source file (`a/b.rs` or `a/b/mod.rs` is `a::b`; `lib.rs`/`main.rs` is the
//! crate root; `src/bin/` is left out). An edge is a `crate::`, `super::` or `self::` path in one
//! module that names another (the longest module prefix of the path), `use` groups expanded.
//! Edges from a module to its own descendants are left out (a parent declares and re-exports its
//! children), and so are the bodies of `#[cfg(test)] mod` blocks and `//` comments. Two modules
//! that reach each other form a circle: each depends on the other, so neither can be read,
//! tested or moved alone. Where one is allowed it is listed in [`ALLOWED`] with the reason, and
//! the list is exact: a listed circle that is gone fails too, so the list only shrinks.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Circles allowed, as (crate, its modules sorted, why). None: the 15 found when the rule came
/// in (issue 43) are cut.
const ALLOWED: &[(&str, &[&str], &str)] = &[];

type Module = Vec<String>;

/// The crate's modules: module path -> file.
fn modules(src: &Path) -> BTreeMap<Module, PathBuf> {
    let mut out = BTreeMap::new();
    let mut stack = vec![src.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("read a source directory") {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                if path != src.join("bin") {
                    stack.push(path);
                }
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let rel = path.strip_prefix(src).unwrap().with_extension("");
            let mut module: Module = rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            if module.last().is_some_and(|l| l == "mod") {
                module.pop();
            }
            if module == ["lib"] || module == ["main"] {
                module.clear();
            }
            out.insert(module, path);
        }
    }
    out
}

/// The text that counts: up to the first `#[cfg(test)] mod … {`, without `//` comments.
fn code_of(text: &str) -> String {
    let mut end = text.len();
    let mut from = 0;
    while let Some(at) = text[from..].find("#[cfg(test)]") {
        let at = from + at;
        let rest = text[at + "#[cfg(test)]".len()..].trim_start();
        let rest = rest
            .strip_prefix("pub(crate) ")
            .or_else(|| rest.strip_prefix("pub "))
            .unwrap_or(rest);
        let line = rest.lines().next().unwrap_or("");
        if rest.starts_with("mod ") && line.trim_end().ends_with('{') {
            end = at;
            break;
        }
        from = at + 1;
    }
    text[..end]
        .lines()
        .map(|l| l.find("//").map_or(l, |i| &l[..i]))
        .collect::<Vec<_>>()
        .join("\n")
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// The paths a `use` tree or a plain path at the start of `s` names: `a::b::{c, d::e}` gives
/// `a::b::c` and `a::b::d::e`.
fn expand(s: &str, prefix: &[String], out: &mut Vec<Vec<String>>) {
    let mut segs = prefix.to_vec();
    let mut rest = s.trim_start();
    loop {
        let len = rest.find(|c: char| !is_ident(c)).unwrap_or(rest.len());
        if len > 0 {
            segs.push(rest[..len].to_string());
            rest = &rest[len..];
        }
        let Some(after) = rest.strip_prefix("::") else {
            break;
        };
        rest = after;
        if let Some(group) = rest.strip_prefix('{') {
            let mut depth = 1;
            let mut start = 0;
            for (i, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' | ',' if depth == 1 => {
                        let item = group[start..i].trim();
                        if !item.is_empty() && item != "self" {
                            expand(item, &segs, out);
                        }
                        start = i + 1;
                        if c == '}' {
                            break;
                        }
                    }
                    '}' => depth -= 1,
                    _ => {}
                }
            }
            out.push(segs);
            return;
        }
        if !rest.starts_with(is_ident) {
            break;
        }
    }
    out.push(segs);
}

/// The module graph of one crate: module -> (module it names -> first line naming it).
fn graph(
    src: &Path,
) -> (
    BTreeMap<Module, PathBuf>,
    BTreeMap<Module, BTreeMap<Module, usize>>,
) {
    let mods = modules(src);
    let mut edges: BTreeMap<Module, BTreeMap<Module, usize>> = BTreeMap::new();
    for (module, file) in &mods {
        let code = code_of(&std::fs::read_to_string(file).expect("read a source file"));
        for (line_no, line) in code.lines().enumerate() {
            for start in ["crate::", "super::", "self::"]
                .iter()
                .flat_map(|kw| line.match_indices(kw).map(|(i, _)| i))
            {
                if line[..start].ends_with(is_ident) {
                    continue;
                }
                let mut paths = Vec::new();
                expand(&line[start..], &[], &mut paths);
                for path in paths {
                    let Some(target) = target_of(module, &path, &mods) else {
                        continue;
                    };
                    if target.starts_with(module) {
                        continue;
                    }
                    edges
                        .entry(module.clone())
                        .or_default()
                        .entry(target)
                        .or_insert(line_no + 1);
                }
            }
        }
    }
    (mods, edges)
}

/// The module a path names from `module`: its longest prefix that is a module.
fn target_of(module: &Module, path: &[String], mods: &BTreeMap<Module, PathBuf>) -> Option<Module> {
    let (mut base, mut rest) = match path.first().map(String::as_str) {
        Some("crate") => (Vec::new(), &path[1..]),
        Some("self") => (module.clone(), &path[1..]),
        Some("super") => (module.clone(), path),
        _ => return None,
    };
    while rest.first().is_some_and(|s| s == "super") {
        base.pop()?;
        rest = &rest[1..];
    }
    base.extend(rest.iter().cloned());
    (0..=base.len())
        .rev()
        .map(|n| base[..n].to_vec())
        .find(|m| mods.contains_key(m))
}

/// The strongly connected components of more than one module (Tarjan).
fn circles(
    nodes: &[Module],
    edges: &BTreeMap<Module, BTreeMap<Module, usize>>,
) -> Vec<Vec<Module>> {
    struct State<'a> {
        edges: &'a BTreeMap<Module, BTreeMap<Module, usize>>,
        index: BTreeMap<Module, usize>,
        low: BTreeMap<Module, usize>,
        stack: Vec<Module>,
        on_stack: BTreeSet<Module>,
        out: Vec<Vec<Module>>,
    }
    fn visit(s: &mut State<'_>, v: &Module) {
        let i = s.index.len();
        s.index.insert(v.clone(), i);
        s.low.insert(v.clone(), i);
        s.stack.push(v.clone());
        s.on_stack.insert(v.clone());
        let next: Vec<Module> = s
            .edges
            .get(v)
            .map(|e| e.keys().cloned().collect())
            .unwrap_or_default();
        for w in next {
            if !s.index.contains_key(&w) {
                visit(s, &w);
                let low = s.low[v].min(s.low[&w]);
                s.low.insert(v.clone(), low);
            } else if s.on_stack.contains(&w) {
                let low = s.low[v].min(s.index[&w]);
                s.low.insert(v.clone(), low);
            }
        }
        if s.low[v] == s.index[v] {
            let mut comp = Vec::new();
            loop {
                let w = s.stack.pop().unwrap();
                s.on_stack.remove(&w);
                let done = &w == v;
                comp.push(w);
                if done {
                    break;
                }
            }
            if comp.len() > 1 {
                comp.sort();
                s.out.push(comp);
            }
        }
    }
    let mut s = State {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        out: Vec::new(),
    };
    for v in nodes {
        if !s.index.contains_key(v) {
            visit(&mut s, v);
        }
    }
    s.out
}

fn name(m: &Module) -> String {
    if m.is_empty() {
        "crate".to_string()
    } else {
        m.join("::")
    }
}

/// Each circle of the crate at `src`, as its sorted module names and a line per edge inside it
/// (`a -> b (a.rs:12)`), so a failure says where to cut.
fn circles_of(src: &Path) -> Vec<(Vec<String>, Vec<String>)> {
    let (mods, edges) = graph(src);
    let nodes: Vec<Module> = mods.keys().cloned().collect();
    circles(&nodes, &edges)
        .into_iter()
        .map(|comp| {
            let names = comp.iter().map(name).collect();
            let mut why = Vec::new();
            for a in &comp {
                for (b, line) in edges.get(a).into_iter().flatten() {
                    if comp.contains(b) {
                        let file = mods[a].strip_prefix(src).unwrap().display();
                        why.push(format!("{} -> {} (src/{file}:{line})", name(a), name(b)));
                    }
                }
            }
            (names, why)
        })
        .collect()
}

#[test]
fn no_crate_has_an_import_circle_between_its_modules() {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("../crates");
    let mut found = Vec::new();
    let mut seen = BTreeSet::new();
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&crates)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("src").is_dir())
        .collect();
    dirs.sort();
    assert!(
        dirs.len() >= 10,
        "crates not found under {}",
        crates.display()
    );
    for dir in dirs {
        let krate = dir.file_name().unwrap().to_string_lossy().into_owned();
        for (names, why) in circles_of(&dir.join("src")) {
            let allowed = ALLOWED.iter().any(|(c, m, _)| {
                *c == krate && m.iter().copied().eq(names.iter().map(String::as_str))
            });
            if allowed {
                seen.insert((krate.clone(), names));
            } else {
                found.push(format!(
                    "{krate}: {}\n    {}",
                    names.join(", "),
                    why.join("\n    ")
                ));
            }
        }
    }
    let stale: Vec<String> = ALLOWED
        .iter()
        .filter(|(c, m, _)| {
            !seen.contains(&(c.to_string(), m.iter().map(|s| s.to_string()).collect()))
        })
        .map(|(c, m, _)| format!("{c}: {}", m.join(", ")))
        .collect();
    assert!(
        found.is_empty(),
        "import circles between modules (move the shared item to a module both can use, or list \
         the circle in ALLOWED with the reason):\n{}",
        found.join("\n")
    );
    assert!(
        stale.is_empty(),
        "ALLOWED lists circles that are gone; remove them:\n{}",
        stale.join("\n")
    );
}

#[test]
fn the_rule_finds_a_circle_through_use_groups_super_and_plain_paths() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path();
    std::fs::create_dir_all(src.join("server/http")).unwrap();
    let files = [
        (
            "lib.rs",
            "mod server;\nmod util;\npub use server::Engine;\n",
        ),
        ("util.rs", "pub fn helper() {}\n"),
        (
            "server/mod.rs",
            "mod engine;\nmod http;\npub use engine::Engine;\n",
        ),
        // engine -> http through a `use` group, http -> engine through `super::super`.
        (
            "server/engine.rs",
            "use crate::{util::helper, server::http::{self, Route}};\npub struct Engine;\n",
        ),
        (
            "server/http/mod.rs",
            "pub struct Route;\nfn f() { super::engine::Engine; }\n",
        ),
        // Only a test block and a comment name the engine here: no edge.
        (
            "server/http/calls.rs",
            "// crate::server::engine\n#[cfg(test)]\nmod tests {\n use crate::server::engine::Engine;\n}\n",
        ),
    ];
    for (path, text) in files {
        std::fs::write(src.join(path), text).unwrap();
    }
    let found = circles_of(src);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].0, ["server::engine", "server::http"]);
    assert!(
        found[0]
            .1
            .contains(&"server::http -> server::engine (src/server/http/mod.rs:2)".to_string()),
        "{:?}",
        found[0].1
    );
    // Cutting the back edge leaves no circle; a parent using its child is not one.
    std::fs::write(src.join("server/http/mod.rs"), "pub struct Route;\n").unwrap();
    assert!(circles_of(src).is_empty());
}
