//! Turning MCP tool descriptions, results and progress into plain text.

use rmcp::model::{CallToolResult, ContentBlock, ProgressNotificationParam, Tool};

/// What a server tool is for: its description, else its title, else a sentence naming it and
/// `server`.
pub(crate) fn tool_description(tool: &Tool, server: &str) -> String {
    tool.description
        .as_deref()
        .map(str::trim)
        .filter(|d| !d.is_empty())
        .map(str::to_string)
        .or_else(|| tool.title.clone())
        .unwrap_or_else(|| format!("The `{}` tool of MCP server `{server}`", tool.name))
}

/// The text of a tool result: text items joined by newlines (embedded text resources count as
/// text; images, audio and links are named). When there is no text, the structured content as
/// JSON.
pub(crate) fn result_text(result: &CallToolResult) -> String {
    let mut parts: Vec<String> = Vec::new();
    for block in &result.content {
        match block {
            ContentBlock::Text(t) => parts.push(t.text.clone()),
            ContentBlock::Resource(r) => {
                let text = r.get_text();
                if !text.is_empty() {
                    parts.push(text);
                }
            }
            ContentBlock::Image(i) => parts.push(format!("[image: {}]", i.mime_type)),
            ContentBlock::Audio(a) => parts.push(format!("[audio: {}]", a.mime_type)),
            ContentBlock::ResourceLink(l) => parts.push(format!("[resource: {}]", l.uri)),
            _ => parts.push("[unsupported content]".to_string()),
        }
    }
    if parts.is_empty()
        && let Some(structured) = &result.structured_content
    {
        return serde_json::to_string_pretty(structured).unwrap_or_else(|_| structured.to_string());
    }
    parts.join("\n")
}

/// One progress notification as a status line: `message (progress/total)`.
pub(crate) fn progress_line(p: &ProgressNotificationParam) -> String {
    let amount = match p.total {
        Some(total) => format!("{}/{}", p.progress, total),
        None => format!("{}", p.progress),
    };
    match p
        .message
        .as_deref()
        .map(str::trim)
        .filter(|m| !m.is_empty())
    {
        Some(m) => format!("{m} ({amount})"),
        None => format!("progress {amount}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::{NumberOrString, ProgressToken};

    #[test]
    fn joins_text_and_falls_back_to_structured() {
        let r = CallToolResult::success(vec![ContentBlock::text("a"), ContentBlock::text("b")]);
        assert_eq!(result_text(&r), "a\nb");
        let mut s = CallToolResult::success(vec![]);
        s.structured_content = Some(serde_json::json!({"k": 1}));
        assert!(result_text(&s).contains("\"k\": 1"));
    }

    #[test]
    fn renders_progress() {
        let t = ProgressToken(NumberOrString::Number(1));
        let p = ProgressNotificationParam::new(t.clone(), 1.0)
            .with_total(3.0)
            .with_message("step");
        assert_eq!(progress_line(&p), "step (1/3)");
        assert_eq!(
            progress_line(&ProgressNotificationParam::new(t, 2.5)),
            "progress 2.5"
        );
    }
}
