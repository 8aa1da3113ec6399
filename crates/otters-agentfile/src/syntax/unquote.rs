//! Quoted-string escapes, as Go's `strconv.Unquote` reads them for double-quoted strings.

/// Why an escape was refused: byte range within the string's inner text, and a message.
#[derive(Debug, PartialEq, Eq)]
pub struct EscapeError {
    pub start: usize,
    pub end: usize,
    pub message: String,
}

/// Unquotes the text between the quotes. `\'` and `\$` are errors, as in Go; `\x` and octal
/// escapes above 0x7f are refused because they would not be UTF-8.
pub fn unquote(inner: &str) -> Result<String, EscapeError> {
    if !inner.contains('\\') {
        return Ok(inner.to_owned());
    }
    let mut out = String::with_capacity(inner.len());
    let mut chars = inner.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let Some((_, e)) = chars.next() else {
            return Err(err(i, i + 1, "a backslash ends the string".into()));
        };
        let simple = match e {
            'a' => Some('\u{7}'),
            'b' => Some('\u{8}'),
            'f' => Some('\u{c}'),
            'n' => Some('\n'),
            'r' => Some('\r'),
            't' => Some('\t'),
            'v' => Some('\u{b}'),
            '\\' => Some('\\'),
            '"' => Some('"'),
            _ => None,
        };
        if let Some(s) = simple {
            out.push(s);
            continue;
        }
        let (digits, radix, width) = match e {
            'x' => (2, 16, "\\xHH"),
            'u' => (4, 16, "\\uHHHH"),
            'U' => (8, 16, "\\UHHHHHHHH"),
            '0'..='7' => (2, 8, "\\NNN"),
            _ => {
                let end = i + 1 + e.len_utf8();
                return Err(err(i, end, format!("unknown escape `\\{e}`")));
            }
        };
        let mut text = String::new();
        if radix == 8 {
            text.push(e);
        }
        for _ in 0..digits {
            match chars.peek() {
                Some(&(_, d)) if d.is_digit(radix) => {
                    text.push(d);
                    chars.next();
                }
                _ => {
                    let end = chars.peek().map_or(inner.len(), |&(j, _)| j);
                    return Err(err(i, end, format!("incomplete escape: expected {width}")));
                }
            }
        }
        let end = chars.peek().map_or(inner.len(), |&(j, _)| j);
        let code = u32::from_str_radix(&text, radix).unwrap_or(u32::MAX);
        if matches!(e, 'x' | '0'..='7') && code > 0x7f {
            return Err(err(
                i,
                end,
                format!(
                    "escape `{}` is a raw byte above 0x7f, which is not UTF-8",
                    &inner[i..end]
                ),
            ));
        }
        match char::from_u32(code) {
            Some(ch) => out.push(ch),
            None => {
                return Err(err(
                    i,
                    end,
                    format!("escape `{}` is not a Unicode scalar value", &inner[i..end]),
                ))
            }
        }
    }
    Ok(out)
}

fn err(start: usize, end: usize, message: String) -> EscapeError {
    EscapeError {
        start,
        end,
        message,
    }
}

#[cfg(test)]
mod tests {
    use super::unquote;

    #[test]
    fn go_escapes() {
        assert_eq!(unquote(r#"a\"b\\c\n\t"#).unwrap(), "a\"b\\c\n\t");
        assert_eq!(unquote(r"\x41\101\u00e9\U0001F600").unwrap(), "AAé😀");
        assert!(unquote(r"\$").is_err());
        assert!(unquote(r"\'").is_err());
        assert!(unquote(r"\xff").is_err());
        assert!(unquote(r"\x4").is_err());
        assert!(unquote(r"\uD800").is_err());
        assert!(unquote("\\").is_err());
    }
}
