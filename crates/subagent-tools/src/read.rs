//! The `Read` tool.

use schemars::JsonSchema;
use serde::Deserialize;
use subagent_spi::{TaskContext, ToolEffect, ToolError, ToolOutput};
use tokio::io::{AsyncBufReadExt, BufReader};

use crate::Workspace;
use crate::workspace::not_regular;

/// Lines shown when no `limit` is given.
pub const DEFAULT_READ_LINES: u64 = 2000;
/// Longer lines are cut to this many characters.
pub const MAX_LINE_CHARS: usize = 2000;

/// Bytes of one line kept in memory (enough for [`MAX_LINE_CHARS`] characters of any UTF-8).
const LINE_BYTES_KEPT: usize = MAX_LINE_CHARS * 4 + 4;

/// Reads one line into `line` (cleared first), keeping at most `cap` bytes and skipping the rest
/// of the line, so a huge single-line file does not fill memory. `None` at the end of the file;
/// otherwise whether bytes were skipped.
async fn read_line_capped<R: tokio::io::AsyncBufRead + Unpin>(
    reader: &mut R,
    line: &mut Vec<u8>,
    cap: usize,
) -> std::io::Result<Option<bool>> {
    line.clear();
    let mut any = false;
    let mut cut = false;
    loop {
        let buf = reader.fill_buf().await?;
        if buf.is_empty() {
            return Ok(any.then_some(cut));
        }
        any = true;
        let (chunk_len, done) = match buf.iter().position(|b| *b == b'\n') {
            Some(i) => (i + 1, true),
            None => (buf.len(), false),
        };
        let room = cap.saturating_sub(line.len());
        let keep = room.min(chunk_len);
        line.extend_from_slice(&buf[..keep]);
        if keep < chunk_len && !(done && keep + 1 == chunk_len) {
            cut = true;
        }
        reader.consume(chunk_len);
        if done {
            return Ok(Some(cut));
        }
    }
}

/// Input of [`ReadTool`].
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadInput {
    /// The file: relative to the workspace root, or absolute inside it.
    pub file_path: String,
    /// The first line (1-based).
    #[serde(default)]
    pub offset: Option<u64>,
    /// How many lines.
    #[serde(default)]
    pub limit: Option<u64>,
}

/// Reads a text file and shows it with line numbers, like `cat -n`: each line is
/// `<number, right-aligned to 6>\t<text>`. At most `limit` lines (default 2,000) from `offset`;
/// lines longer than 2,000 characters are cut. Binary files, directories, special files (FIFOs,
/// devices) and files with more than one hard link are refused.
#[derive(Debug, Clone)]
pub struct ReadTool {
    workspace: Workspace,
}

impl ReadTool {
    /// The tool's name.
    pub const NAME: &'static str = "Read";

    /// A `Read` tool confined to `workspace`.
    pub fn new(workspace: Workspace) -> Self {
        Self { workspace }
    }
}

#[subagent_spi::async_trait]
impl subagent_spi::TypedTool for ReadTool {
    type Input = ReadInput;

    fn name(&self) -> &str {
        Self::NAME
    }

    fn description(&self) -> String {
        "Reads a text file with line numbers (cat -n style): up to `limit` lines (default 2000) \
         from line `offset` (default 1); lines over 2000 characters are cut."
            .into()
    }

    fn effect(&self) -> ToolEffect {
        ToolEffect::ReadOnly
    }

    async fn run(&self, input: ReadInput, _ctx: &TaskContext) -> Result<ToolOutput, ToolError> {
        let path = self.workspace.resolve(Self::NAME, &input.file_path).await?;
        let shown = self.workspace.display_path(&path);
        let offset = input.offset.unwrap_or(1).max(1);
        let limit = input.limit.unwrap_or(DEFAULT_READ_LINES);
        if limit == 0 {
            return Err(ToolError::invalid(Self::NAME, "`limit` must be at least 1"));
        }
        let meta = tokio::fs::metadata(&path)
            .await
            .map_err(|e| ToolError::failed(Self::NAME, format!("cannot read `{shown}`: {e}")))?;
        if meta.is_dir() {
            return Err(ToolError::failed(
                Self::NAME,
                format!("`{shown}` is a directory; use Glob to list files"),
            ));
        }
        if !meta.is_file() {
            // Opening a FIFO would block until something writes to it.
            return Err(not_regular(Self::NAME, &shown));
        }
        let file = tokio::fs::File::open(&path)
            .await
            .map_err(|e| ToolError::failed(Self::NAME, format!("cannot open `{shown}`: {e}")))?;
        // Checked again on the open handle: the path may have changed since.
        let meta = file
            .metadata()
            .await
            .map_err(|e| ToolError::failed(Self::NAME, format!("cannot read `{shown}`: {e}")))?;
        if !meta.is_file() {
            return Err(not_regular(Self::NAME, &shown));
        }
        self.workspace
            .check_links(Self::NAME, &input.file_path, &meta)?;
        let mut reader = BufReader::new(file);

        // Refuse binary files: a NUL byte near the start.
        let head = reader
            .fill_buf()
            .await
            .map_err(|e| ToolError::failed(Self::NAME, format!("cannot read `{shown}`: {e}")))?;
        if head.iter().take(8192).any(|b| *b == 0) {
            return Err(ToolError::failed(
                Self::NAME,
                format!("`{shown}` looks like a binary file; Read shows text files only"),
            ));
        }

        let mut out = String::new();
        let mut line = Vec::with_capacity(256);
        let mut number: u64 = 0;
        let mut shown_lines: u64 = 0;
        let mut more = false;
        loop {
            let Some(cut_bytes) = read_line_capped(&mut reader, &mut line, LINE_BYTES_KEPT)
                .await
                .map_err(|e| {
                    ToolError::failed(Self::NAME, format!("cannot read `{shown}`: {e}"))
                })?
            else {
                break;
            };
            number += 1;
            if number < offset {
                continue;
            }
            if shown_lines == limit {
                more = true;
                break;
            }
            shown_lines += 1;
            while matches!(line.last(), Some(b'\n' | b'\r')) {
                line.pop();
            }
            let text = String::from_utf8_lossy(&line);
            out.push_str(&format!("{number:>6}\t"));
            match text.char_indices().nth(MAX_LINE_CHARS) {
                Some((i, _)) => {
                    out.push_str(&text[..i]);
                    out.push_str(" [… line cut]");
                }
                None if cut_bytes => {
                    out.push_str(&text);
                    out.push_str(" [… line cut]");
                }
                None => out.push_str(&text),
            }
            out.push('\n');
        }

        if number == 0 {
            return Ok(ToolOutput::text(format!("(`{shown}` is empty)")));
        }
        if shown_lines == 0 {
            return Err(ToolError::invalid(
                Self::NAME,
                format!("`offset` {offset} is past the end of `{shown}`, which has {number} lines"),
            ));
        }
        if more {
            let next = offset + shown_lines;
            out.push_str(&format!(
                "(showing lines {offset}-{}; the file goes on: read again with offset {next})\n",
                next - 1
            ));
        }
        Ok(ToolOutput::text(out))
    }
}
