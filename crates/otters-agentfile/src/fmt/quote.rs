//! The canonical spelling of a quoted string: the shortest escapes `unquote` reads back to the
//! same value, with every invisible or terminal-moving character written as an escape.

use std::fmt::Write as _;

/// Quotes `value` so that [`crate::syntax::unquote`] of the inner text gives `value` back.
///
/// `"` and `\` are escaped; so are the C0 controls (tab and line breaks included: a string is
/// one line), DEL, the C1 controls and the Unicode bidirectional controls, which would otherwise
/// hide in the file. Every other character is written as itself.
pub fn quote(value: &str) -> String {
    let mut out = String::with_capacity(value.len() + 2);
    out.push('"');
    for c in value.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{b}' => out.push_str("\\v"),
            '\u{c}' => out.push_str("\\f"),
            '\0'..='\u{1f}' | '\u{7f}' => {
                let _ = write!(out, "\\x{:02x}", u32::from(c));
            }
            c if otters_core::escape::is_unsafe(c) => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}
