//! Text from files and peers made safe to print on a terminal: control, bidi and invisible
//! characters shown escaped.

use std::borrow::Cow;

/// True for characters that can change how a terminal shows text around them: control
/// characters and Unicode bidirectional-text controls, the line and paragraph separators, and
/// invisible format characters (soft hyphen, zero-width space, word joiner, BOM, tag characters...).
pub fn is_terminal_hazard(c: char) -> bool {
    c.is_control()
        || is_bidi_control(c)
        || matches!(c, '\u{2028}' | '\u{2029}')
        || is_invisible_format(c)
}

/// Characters that show nothing (or only at a line break) yet are part of the text, so they
/// can make two strings look the same or hide text in one: the soft hyphen, the Mongolian
/// vowel separator, the zero-width space, the word joiner and invisible operators
/// (U+2060–U+2064), the deprecated format controls (U+206A–U+206F), the byte order mark, the
/// Hangul fillers, the interlinear annotation controls and the tag characters. The zero-width
/// non-joiner and joiner (U+200C, U+200D) are not among them: emoji and several scripts need
/// them.
fn is_invisible_format(c: char) -> bool {
    matches!(
        c,
        '\u{ad}'
            | '\u{115f}'
            | '\u{1160}'
            | '\u{180e}'
            | '\u{200b}'
            | '\u{2060}'..='\u{2064}'
            | '\u{206a}'..='\u{206f}'
            | '\u{3164}'
            | '\u{feff}'
            | '\u{ffa0}'
            | '\u{fff9}'..='\u{fffb}'
            | '\u{e0000}'..='\u{e007f}'
    )
}

/// Bidirectional-text controls: embeddings and overrides (U+202A–U+202E), isolates
/// (U+2066–U+2069) and the marks (U+200E, U+200F, U+061C).
fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{200e}' | '\u{200f}' | '\u{61c}')
}

fn escape_where(text: &str, hazard: impl Fn(char) -> bool) -> Cow<'_, str> {
    let Some(first) = text.find(&hazard) else {
        return Cow::Borrowed(text);
    };
    let mut out = String::with_capacity(text.len() + 8);
    out.push_str(&text[..first]);
    for c in text[first..].chars() {
        if hazard(c) {
            out.extend(c.escape_unicode());
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// Renders `text` safe to print on one line of a terminal; see
/// [`ClaudeAgentDefinition::escape_for_terminal`](crate::ClaudeAgentDefinition::escape_for_terminal).
pub fn escape_for_terminal(text: &str) -> Cow<'_, str> {
    escape_where(text, is_terminal_hazard)
}

/// Like [`escape_for_terminal`], but newlines and tabs are kept (for multi-line text such as
/// descriptions).
pub fn escape_for_terminal_multiline(text: &str) -> Cow<'_, str> {
    escape_where(text, |c| c != '\n' && c != '\t' && is_terminal_hazard(c))
}

/// Warnings quote values from the file (keys, `permissionMode`, list entries): control and bidi
/// characters in them are shown escaped.
pub(crate) fn terminal_safe(mut warnings: Vec<String>) -> Vec<String> {
    for w in &mut warnings {
        if let Cow::Owned(escaped) = escape_for_terminal(w) {
            *w = escaped;
        }
    }
    warnings
}
