//! Read, Write, Edit, Glob and Grep against real temporary directories, including escape
//! attempts.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use serde_json::{Value, json};
use subagent_spi::{TaskContext, Tool, ToolEffect, ToolError, ToolOutput};
use subagent_tools::{EditTool, GlobTool, GrepTool, ReadTool, ToolSet, Workspace, WriteTool};
use tempfile::TempDir;

struct Fixture {
    dir: TempDir,
    outside: TempDir,
    ws: Workspace,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let ws = Workspace::new(dir.path()).unwrap();
    Fixture { dir, outside, ws }
}

impl Fixture {
    fn write(&self, rel: &str, content: &str) {
        let p = self.dir.path().join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, content).unwrap();
    }
    fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.dir.path().join(rel)).unwrap()
    }
}

async fn call(tool: &dyn Tool, input: Value) -> Result<ToolOutput, ToolError> {
    tool.call(input, &TaskContext::new()).await
}

/// The lines of what `tool` answers to `input` (it must succeed).
async fn lines_of(tool: &dyn Tool, input: Value) -> Vec<String> {
    let out = call(tool, input).await.unwrap();
    out.content.lines().map(str::to_string).collect()
}

fn assert_denied(r: Result<ToolOutput, ToolError>, path: &str, root: &Path) {
    match r {
        Err(ToolError::Denied { message, .. }) => {
            assert!(message.contains(path), "names the path: {message}");
            let root = std::fs::canonicalize(root).unwrap();
            assert!(
                message.contains(&root.display().to_string()),
                "names the root: {message}"
            );
        }
        other => panic!("expected Denied for {path}, got {other:?}"),
    }
}

#[tokio::test]
async fn read_numbers_lines_and_pages() {
    let f = fixture();
    let body: String = (1..=5).map(|i| format!("line {i}\n")).collect();
    f.write("a.txt", &body);
    let read = ReadTool::new(f.ws.clone());
    let out = call(&read, json!({"file_path": "a.txt"})).await.unwrap();
    assert!(!out.is_error);
    assert_eq!(out.content.lines().next(), Some("     1\tline 1"));
    assert_eq!(out.content.lines().count(), 5);

    let out = call(
        &read,
        json!({"file_path": "a.txt", "offset": 2, "limit": 2}),
    )
    .await
    .unwrap();
    let lines: Vec<&str> = out.content.lines().collect();
    assert_eq!(lines[0], "     2\tline 2");
    assert_eq!(lines[1], "     3\tline 3");
    assert!(lines[2].contains("offset 4"), "{}", out.content);

    // absolute path inside the root works too
    let abs = f.dir.path().join("a.txt");
    let out = call(
        &read,
        json!({"file_path": abs.to_str().unwrap(), "limit": 1}),
    )
    .await
    .unwrap();
    assert!(out.content.starts_with("     1\tline 1\n"));
}

#[tokio::test]
async fn read_cuts_long_lines_and_reports_errors() {
    let f = fixture();
    f.write("long.txt", &format!("{}\nshort\n", "y".repeat(50_000)));
    f.write("empty.txt", "");
    std::fs::write(f.dir.path().join("bin.dat"), [0u8, 1, 2, 0, 5]).unwrap();
    std::fs::create_dir(f.dir.path().join("sub")).unwrap();
    let read = ReadTool::new(f.ws.clone());

    let out = call(&read, json!({"file_path": "long.txt"})).await.unwrap();
    let first = out.content.lines().next().unwrap();
    assert_eq!(first.matches('y').count(), 2000);
    assert!(first.ends_with("[… line cut]"));

    let out = call(&read, json!({"file_path": "empty.txt"}))
        .await
        .unwrap();
    assert!(out.content.contains("empty"));

    let err = call(&read, json!({"file_path": "missing.txt"}))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("missing.txt"), "{err}");
    let err = call(&read, json!({"file_path": "bin.dat"}))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("binary"), "{err}");
    let err = call(&read, json!({"file_path": "sub"})).await.unwrap_err();
    assert!(err.to_string().contains("directory"), "{err}");
    let err = call(&read, json!({"file_path": "long.txt", "offset": 10}))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("has 2 lines"), "{err}");
    let err = call(&read, json!({"path": "long.txt"})).await.unwrap_err();
    assert!(matches!(err, ToolError::InvalidInput { .. }), "{err}");
}

#[tokio::test]
async fn write_creates_and_overwrites() {
    let f = fixture();
    let write = WriteTool::new(f.ws.clone());
    for (content, verb) in [("hello\n", "Created"), ("bye", "Overwrote")] {
        let out = call(
            &write,
            json!({"file_path": "deep/er/new.txt", "content": content}),
        )
        .await
        .unwrap();
        assert!(out.content.starts_with(verb), "{}", out.content);
        assert_eq!(f.read("deep/er/new.txt"), content);
    }
    let err = call(&write, json!({"file_path": "deep", "content": "x"}))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("directory"), "{err}");
}

#[tokio::test]
async fn edit_replaces_unique_strings_only() {
    let f = fixture();
    f.write("e.rs", "fn a() {}\nfn b() {}\nlet x = 1; let x = 1;\n");
    let edit = EditTool::new(f.ws.clone());
    // An edit of `file`.
    let edit_in = async |file: &str, old: &str, new: &str| {
        call(
            &edit,
            json!({"file_path": file, "old_string": old, "new_string": new}),
        )
        .await
    };
    let edit_e = async |old: &str, new: &str| edit_in("e.rs", old, new).await;

    let out = edit_e("fn a() {}", "fn alpha() {}").await.unwrap();
    assert!(
        out.content.contains("Replaced 1 occurrence"),
        "{}",
        out.content
    );
    assert!(f.read("e.rs").starts_with("fn alpha() {}\n"));

    let err = edit_e("let x = 1;", "let y = 2;").await.unwrap_err();
    assert!(err.to_string().contains("occurs 2 times"), "{err}");
    assert!(
        f.read("e.rs").contains("let x = 1; let x = 1;"),
        "unchanged"
    );

    let out = call(
        &edit,
        json!({"file_path": "e.rs", "old_string": "let x = 1;", "new_string": "let y = 2;", "replace_all": true}),
    )
    .await
    .unwrap();
    assert!(out.content.contains("Replaced 2 occurrences"));
    assert!(f.read("e.rs").contains("let y = 2; let y = 2;"));

    let err = edit_e("nowhere", "x").await.unwrap_err();
    assert!(err.to_string().contains("not found"), "{err}");
    let err = edit_e("fn b", "fn b").await.unwrap_err();
    assert!(matches!(err, ToolError::InvalidInput { .. }));
    let err = edit_in("nope.rs", "a", "b").await.unwrap_err();
    assert!(err.to_string().contains("nope.rs"), "{err}");
}

#[tokio::test]
async fn escapes_are_refused() {
    let f = fixture();
    std::fs::write(f.outside.path().join("secret.txt"), "secret").unwrap();
    std::os::unix::fs::symlink(f.outside.path(), f.dir.path().join("linkdir")).unwrap();
    std::os::unix::fs::symlink(
        f.outside.path().join("secret.txt"),
        f.dir.path().join("linkfile"),
    )
    .unwrap();
    std::os::unix::fs::symlink(
        f.outside.path().join("does-not-exist"),
        f.dir.path().join("dangling"),
    )
    .unwrap();
    let root = f.dir.path();
    let read = ReadTool::new(f.ws.clone());
    let write = WriteTool::new(f.ws.clone());
    let edit = EditTool::new(f.ws.clone());
    let outside_abs = f.outside.path().join("secret.txt");
    let outside_abs = outside_abs.to_str().unwrap();

    for path in [
        "../secret.txt",
        "a/../../x",
        outside_abs,
        "/etc/passwd",
        "linkfile",
        "linkdir/secret.txt",
    ] {
        assert_denied(call(&read, json!({"file_path": path})).await, path, root);
    }
    // writing a new file through a symlinked directory or a dangling link is refused too
    for path in ["linkdir/new.txt", "dangling", "../escape.txt"] {
        assert_denied(
            call(&write, json!({"file_path": path, "content": "x"})).await,
            path,
            root,
        );
    }
    assert!(!f.outside.path().join("new.txt").exists());
    assert!(!f.outside.path().join("does-not-exist").exists());
    assert_denied(
        call(
            &edit,
            json!({"file_path": "linkfile", "old_string": "secret", "new_string": "x"}),
        )
        .await,
        "linkfile",
        root,
    );
    assert_eq!(
        std::fs::read_to_string(f.outside.path().join("secret.txt")).unwrap(),
        "secret"
    );
    let glob = GlobTool::new(f.ws.clone());
    assert_denied(
        call(&glob, json!({"pattern": "*", "path": ".."})).await,
        "..",
        root,
    );
    let grep = GrepTool::new(f.ws.clone());
    assert_denied(
        call(&grep, json!({"pattern": "secret", "path": "linkdir"})).await,
        "linkdir",
        root,
    );
    // a walk of the root does not follow the outward links
    let out = call(&grep, json!({"pattern": "secret"})).await.unwrap();
    assert!(out.content.starts_with("No matches"), "{}", out.content);
    // a dot path that stays inside is fine
    f.write("sub/ok.txt", "fine");
    let out = call(&read, json!({"file_path": "sub/../sub/./ok.txt"}))
        .await
        .unwrap();
    assert!(out.content.contains("fine"));
}

fn set_mtime(path: &Path, secs_ago: u64) {
    let f = std::fs::File::options().write(true).open(path).unwrap();
    f.set_modified(SystemTime::now() - Duration::from_secs(secs_ago))
        .unwrap();
}

#[tokio::test]
async fn glob_is_gitignore_aware_and_newest_first() {
    let f = fixture();
    f.write(".gitignore", "target/\n*.log\n");
    f.write("src/old.rs", "");
    f.write("src/new.rs", "");
    f.write("src/nested/mid.rs", "");
    f.write("top.rs", "");
    f.write("target/gen.rs", "");
    f.write("debug.log", "");
    set_mtime(&f.dir.path().join("src/old.rs"), 3000);
    set_mtime(&f.dir.path().join("src/nested/mid.rs"), 2000);
    set_mtime(&f.dir.path().join("top.rs"), 1000);
    set_mtime(&f.dir.path().join("src/new.rs"), 10);
    let glob = GlobTool::new(f.ws.clone());

    let out = call(&glob, json!({"pattern": "**/*.rs"})).await.unwrap();
    let lines: Vec<&str> = out.content.lines().collect();
    assert_eq!(
        lines,
        vec!["src/new.rs", "top.rs", "src/nested/mid.rs", "src/old.rs"]
    );
    // `*` does not cross directories; `path` scopes the search
    let out = call(&glob, json!({"pattern": "*.rs"})).await.unwrap();
    assert_eq!(out.content.trim(), "top.rs");
    assert_eq!(
        lines_of(&glob, json!({"pattern": "*.rs", "path": "src"})).await,
        vec!["src/new.rs", "src/old.rs"]
    );
    // an absolute pattern inside the root works; one outside is refused
    let root = std::fs::canonicalize(f.dir.path()).unwrap();
    let abs = format!("{}/src/**/*.rs", root.display());
    let out = call(&glob, json!({"pattern": abs})).await.unwrap();
    assert_eq!(out.content.lines().count(), 3, "{}", out.content);
    let out = call(
        &glob,
        json!({"pattern": format!("{}/top.rs", root.display())}),
    )
    .await
    .unwrap();
    assert_eq!(out.content.trim(), "top.rs");
    let outside = format!("{}/**/*", f.outside.path().display());
    assert_denied(
        call(&glob, json!({"pattern": outside.clone()})).await,
        &f.outside.path().display().to_string(),
        f.dir.path(),
    );
    let out = call(&glob, json!({"pattern": "*.log"})).await.unwrap();
    assert!(out.content.starts_with("No files"), "{}", out.content);
    let err = call(&glob, json!({"pattern": "a[", "path": "."}))
        .await
        .unwrap_err();
    assert!(matches!(err, ToolError::InvalidInput { .. }), "{err}");
}

#[tokio::test]
async fn grep_modes_filters_and_case() {
    let f = fixture();
    f.write(".gitignore", "ignored/\n");
    f.write(
        "src/a.rs",
        "fn main() {\n    println!(\"Hello\");\n}\n// hello again\n",
    );
    f.write("src/b.txt", "hello text\n");
    f.write("ignored/c.rs", "hello hidden\n");
    std::fs::write(f.dir.path().join("bin.dat"), b"hello\0binary").unwrap();
    set_mtime(&f.dir.path().join("src/a.rs"), 100);
    let grep = GrepTool::new(f.ws.clone());

    assert_eq!(
        lines_of(&grep, json!({"pattern": "hello"})).await,
        vec!["src/b.txt", "src/a.rs"]
    );

    assert_eq!(
        lines_of(
            &grep,
            json!({"pattern": "hello", "output_mode": "content", "-i": true})
        )
        .await,
        vec![
            "src/a.rs:2:    println!(\"Hello\");",
            "src/a.rs:4:// hello again",
            "src/b.txt:1:hello text"
        ]
    );

    let out = call(
        &grep,
        json!({"pattern": "HELLO", "output_mode": "count", "case_insensitive": true, "glob": "*.rs"}),
    )
    .await
    .unwrap();
    assert_eq!(out.content.trim(), "src/a.rs:2");

    let out = call(
        &grep,
        json!({"pattern": "hello", "path": "src/b.txt", "output_mode": "content"}),
    )
    .await
    .unwrap();
    assert_eq!(out.content.trim(), "src/b.txt:1:hello text");

    let out = call(
        &grep,
        json!({"pattern": "l+o", "output_mode": "content", "head_limit": 1}),
    )
    .await
    .unwrap();
    assert!(out.content.starts_with("src/a.rs:2:"), "{}", out.content);
    assert!(out.content.contains("results stop at 1"), "{}", out.content);

    // ripgrep file types, and `-n` accepted
    let out = call(
        &grep,
        json!({"pattern": "hello", "type": "rust", "-n": true, "-i": true, "output_mode": "count"}),
    )
    .await
    .unwrap();
    assert_eq!(out.content.trim(), "src/a.rs:2");
    let err = call(&grep, json!({"pattern": "x", "type": "klingon"}))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("klingon"), "{err}");

    let out = call(&grep, json!({"pattern": "zzz"})).await.unwrap();
    assert!(out.content.starts_with("No matches"));
    let err = call(&grep, json!({"pattern": "(unclosed"}))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("bad regex"), "{err}");
    let err = call(&grep, json!({"pattern": "x", "output_mode": "lines"}))
        .await
        .unwrap_err();
    assert!(matches!(err, ToolError::InvalidInput { .. }));
}

#[tokio::test]
async fn tool_sets_effects_and_schemas() {
    let f = fixture();
    let ro = ToolSet::read_only(f.ws.clone());
    let names: Vec<&str> = ro.iter().map(|t| t.name()).collect();
    assert_eq!(names, vec!["Read", "Glob", "Grep"]);
    assert!(ro.iter().all(|t| t.effect() == ToolEffect::ReadOnly));

    let all = ToolSet::all(f.ws.clone());
    let effect = |n: &str| ToolSet::find(&all, n).map(|t| t.effect());
    assert_eq!(effect("Write"), Some(ToolEffect::Edit));
    assert_eq!(effect("Edit"), Some(ToolEffect::Edit));
    assert_eq!(effect("Bash"), Some(ToolEffect::Execute));
    #[cfg(feature = "web")]
    assert_eq!(effect("WebFetch"), Some(ToolEffect::Execute));
    assert_eq!(effect("TodoWrite"), Some(ToolEffect::ReadOnly));
    assert_eq!(
        effect("grep"),
        Some(ToolEffect::ReadOnly),
        "case-insensitive lookup"
    );
    assert!(ToolSet::find(&all, "Nope").is_none());
    assert!(ToolSet::get(&f.ws, "nope").is_none());
    assert_eq!(all.len(), ToolSet::NAMES.len());

    let schema = |n: &str| ToolSet::find(&all, n).unwrap().input_schema();
    let read = schema("Read");
    assert_eq!(read["type"], "object");
    assert!(
        read.get("description").is_none(),
        "rustdoc kept out: {read}"
    );
    assert!(read.get("$schema").is_none());
    assert_eq!(read["required"], json!(["file_path"]));
    for (tool, field) in [
        ("Read", "offset"),
        ("Read", "limit"),
        ("Write", "content"),
        ("Edit", "old_string"),
        ("Edit", "new_string"),
        ("Edit", "replace_all"),
        ("Glob", "pattern"),
        ("Grep", "output_mode"),
        ("Grep", "glob"),
        ("Grep", "case_insensitive"),
        ("Bash", "command"),
        ("Bash", "timeout"),
        #[cfg(feature = "web")]
        ("WebFetch", "url"),
        ("TodoWrite", "todos"),
    ] {
        assert!(
            schema(tool)["properties"].get(field).is_some(),
            "{tool} has `{field}`: {}",
            schema(tool)
        );
    }
    let _: Vec<Arc<dyn Tool>> = all;
}

#[test]
fn workspace_root_must_be_a_directory() {
    let f = fixture();
    f.write("file.txt", "x");
    let err = Workspace::new(f.dir.path().join("file.txt")).unwrap_err();
    assert!(err.to_string().contains("not a directory"), "{err}");
    let err = Workspace::new(f.dir.path().join("missing")).unwrap_err();
    assert!(err.to_string().contains("missing"), "{err}");
}

#[tokio::test]
async fn grep_content_with_context_lines() {
    let f = fixture();
    f.write(
        "a.txt",
        "one\ntwo\nMATCH 1\nfour\nfive\nsix\nseven\nMATCH 2\nnine\n",
    );
    f.write("b.txt", "MATCH 3\nlast\n");
    let grep = GrepTool::new(f.ws.clone());
    assert_eq!(
        lines_of(
            &grep,
            json!({"pattern": "MATCH", "output_mode": "content", "-C": 1})
        )
        .await,
        vec![
            "a.txt-2-two",
            "a.txt:3:MATCH 1",
            "a.txt-4-four",
            "--",
            "a.txt-7-seven",
            "a.txt:8:MATCH 2",
            "a.txt-9-nine",
            "--",
            "b.txt:1:MATCH 3",
            "b.txt-2-last",
        ]
    );
    assert_eq!(
        lines_of(
            &grep,
            json!({"pattern": "MATCH 2", "output_mode": "content", "before": 2, "after": 0})
        )
        .await,
        vec!["a.txt-6-six", "a.txt-7-seven", "a.txt:8:MATCH 2"]
    );
}
