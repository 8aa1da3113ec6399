//! Text for XML 1.0 attributes and character data, shared by the junit and checkstyle renderers.
//!
//! XML 1.0 cannot carry most C0 controls at all, not even as character references, so the
//! terminal-unsafe characters are first written as visible `\u{..}` escapes (as every other
//! format does), the two non-characters U+FFFE and U+FFFF likewise; then `& < > " '` become
//! entities, and in attributes tab, line feed and carriage return become character references
//! (an XML reader would otherwise normalise them to spaces).

use otters_core::escape::{escape, escaped};

/// `s` for the inside of a double-quoted attribute value.
pub(crate) fn attr(s: &str) -> String {
    encode(s, true)
}

/// `s` as element text.
pub(crate) fn text(s: &str) -> String {
    encode(s, false)
}

fn encode(s: &str, attribute: bool) -> String {
    let safe = escape(s);
    let mut out = String::with_capacity(safe.len() + 8);
    for c in safe.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\t' if attribute => out.push_str("&#9;"),
            '\n' if attribute => out.push_str("&#10;"),
            '\r' => out.push_str("&#13;"),
            '\u{fffe}' | '\u{ffff}' => out.push_str(&escaped(c)),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_controls_and_line_breaks() {
        assert_eq!(attr("a<b>&\"c'"), "a&lt;b&gt;&amp;&quot;c&apos;");
        assert_eq!(attr("x\ny\tz"), "x&#10;y&#9;z");
        assert_eq!(text("x\ny"), "x\ny");
        assert_eq!(
            attr("\u{1b}[2J\u{202e}\u{ffff}"),
            "\\u{1b}[2J\\u{202e}\\u{ffff}"
        );
    }
}
