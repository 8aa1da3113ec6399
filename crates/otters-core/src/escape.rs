//! Making untrusted text safe to show on a terminal: control characters and bidirectional
//! overrides become visible `\u{..}` escapes.
//!
//! Agentfiles, file names and registry error bodies are written by others. Shown raw, an `ESC`
//! starts a terminal escape sequence (clear the screen, retitle the window, rewrite earlier
//! lines), a lone `\r` moves the cursor back over what was printed, and the Unicode bidi controls
//! reorder text so that what is seen is not what is there ("Trojan Source", CVE-2021-42574).
//!
//! Takes: text. Returns: the text with every such character replaced, borrowed when nothing
//! needed replacing. Must never: change any other character, so escaped text still lines up
//! with its source.

use std::borrow::Cow;
use std::fmt::Write as _;

/// True for a character that must not reach a terminal raw: the C0 controls except tab and line
/// feed, DEL, the C1 controls, and the Unicode bidirectional formatting characters.
pub fn is_unsafe(c: char) -> bool {
    matches!(c, '\0'..='\u{8}' | '\u{b}'..='\u{1f}' | '\u{7f}'..='\u{9f}') || is_bidi_control(c)
}

/// The Unicode bidirectional formatting characters: the embeddings and overrides U+202A–U+202E,
/// the isolates U+2066–U+2069, and the marks U+200E, U+200F and U+061C.
pub fn is_bidi_control(c: char) -> bool {
    matches!(
        c,
        '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{200e}' | '\u{200f}' | '\u{61c}'
    )
}

/// Escapes [`is_unsafe`] characters; tab and line feed are kept (layout needs them).
pub fn escape(s: &str) -> Cow<'_, str> {
    escape_where(s, is_unsafe)
}

/// Like [`escape`], and line breaks too: for formats that promise one line per finding.
pub fn escape_line(s: &str) -> Cow<'_, str> {
    escape_where(s, |c| c == '\n' || is_unsafe(c))
}

/// The escape written for `c`: `\u{1b}`.
pub fn escaped(c: char) -> String {
    format!("\\u{{{:x}}}", u32::from(c))
}

/// Rewrites the unsafe characters a JSON serialiser leaves raw (DEL, the C1 controls and the bidi
/// controls; it already escapes C0) as JSON `\uXXXX` escapes. Only valid on serialised JSON, where
/// such characters can only occur inside strings.
pub fn json_controls(json: String) -> String {
    if !json.chars().any(is_unsafe) {
        return json;
    }
    let mut out = String::with_capacity(json.len() + 16);
    for c in json.chars() {
        if is_unsafe(c) {
            let _ = write!(out, "\\u{:04x}", u32::from(c));
        } else {
            out.push(c);
        }
    }
    out
}

fn escape_where(s: &str, unsafe_char: impl Fn(char) -> bool) -> Cow<'_, str> {
    if !s.chars().any(&unsafe_char) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 16);
    for c in s.chars() {
        if unsafe_char(c) {
            let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controls_and_bidi_are_escaped_layout_is_kept() {
        assert_eq!(escape("a\u{1b}[2Jb"), "a\\u{1b}[2Jb");
        assert_eq!(escape("x\ry"), "x\\u{d}y");
        assert_eq!(escape("\u{202e}evil\u{2066}"), "\\u{202e}evil\\u{2066}");
        assert_eq!(escape("\u{9b}31m"), "\\u{9b}31m");
        assert_eq!(escape("tab\there\nnext"), "tab\there\nnext");
        assert_eq!(escape_line("a\nb"), "a\\u{a}b");
        assert!(matches!(escape("plain é ✓"), Cow::Borrowed(_)));
        assert_eq!(escaped('\u{7f}'), "\\u{7f}");
        let json = serde_json::to_string("\u{1b}\u{9b}\u{202e}").unwrap();
        let safe = json_controls(json);
        assert_eq!(safe, "\"\\u001b\\u009b\\u202e\"");
        assert_eq!(
            serde_json::from_str::<String>(&safe).unwrap(),
            "\u{1b}\u{9b}\u{202e}"
        );
    }
}
