//! Splitting a command line into words, shell style (quotes and backslashes, no expansion).

/// Splits `line` into words: whitespace separates words; single quotes keep everything
/// literally; double quotes keep whitespace and allow `\"`, `\\`, `\$` and `` \` `` escapes;
/// outside quotes a backslash escapes the next character.
pub(crate) fn split(line: &str) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => word.push(c),
                        None => return Err("unterminated single quote".to_string()),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(e @ ('"' | '\\' | '$' | '`')) => word.push(e),
                            Some('\n') => {}
                            Some(other) => {
                                word.push('\\');
                                word.push(other);
                            }
                            None => return Err("unterminated double quote".to_string()),
                        },
                        Some(c) => word.push(c),
                        None => return Err("unterminated double quote".to_string()),
                    }
                }
            }
            '\\' => {
                in_word = true;
                match chars.next() {
                    Some('\n') => {}
                    Some(c) => word.push(c),
                    None => return Err("trailing backslash".to_string()),
                }
            }
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if in_word {
        words.push(word);
    }
    Ok(words)
}

#[cfg(test)]
mod tests {
    use super::split;

    #[test]
    fn splits_plain_and_quoted_words() {
        assert_eq!(
            split(r#"npx -y "@scope/server name" 'a b' c\ d "x\"y" '' "#).unwrap(),
            vec!["npx", "-y", "@scope/server name", "a b", "c d", "x\"y", ""]
        );
        assert_eq!(split("  ").unwrap(), Vec::<String>::new());
        assert_eq!(split(r#"a"b"'c'"#).unwrap(), vec!["abc"]);
    }

    #[test]
    fn reports_unterminated_quotes() {
        assert!(split("a 'b").unwrap_err().contains("single quote"));
        assert!(split("a \"b").unwrap_err().contains("double quote"));
        assert!(split("a \\").unwrap_err().contains("backslash"));
    }
}
