//! YAML scalars as otters writes them: the one quoter of every YAML file it makes (`agent.yaml`,
//! the `kube` objects), so that no key or value can change a document's shape or its meaning
//! under any reader, YAML 1.1 (`PyYAML`, the Go `yaml.v2` kubectl uses) or YAML 1.2.
//!
//! Takes: a key or a string value. Returns: its YAML text. Must never: write a key plain that
//! some reader takes for a boolean, a null or a number (`ON`, `Y`, `NULL`, `~`), or a character a
//! reader refuses or reads as a line break (the C0 and C1 controls, U+2028/U+2029, U+FEFF,
//! U+FFFE/U+FFFF) raw.

use std::borrow::Cow;
use std::fmt::Write as _;

/// A YAML double-quoted scalar: `"` and `\` escaped, tab and line breaks as `\t`, `\n`, `\r`, and
/// every character outside YAML's printable set or read as a line break (C0, DEL, C1 with NEL,
/// U+2028, U+2029, the byte-order mark U+FEFF, the non-characters U+FFFE and U+FFFF) as `\uXXXX`.
/// Everything else is kept as it is, so the bytes are stable and readable.
pub fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if needs_escape(c) => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A character [`quote`] writes as `\uXXXX`.
fn needs_escape(c: char) -> bool {
    matches!(
        c,
        '\0'..='\u{1f}' | '\u{7f}'..='\u{9f}' | '\u{2028}' | '\u{2029}' | '\u{feff}' | '\u{fffe}' | '\u{ffff}'
    )
}

/// A mapping key: plain when [`is_plain_key`], else quoted as a value is.
pub fn key(k: &str) -> Cow<'_, str> {
    if is_plain_key(k) {
        Cow::Borrowed(k)
    } else {
        Cow::Owned(quote(k))
    }
}

/// The words YAML 1.1 resolves to a boolean or a null when plain (spelled lower-case here; a key
/// is compared without regard to case, so `ON`, `On`, `NULL` and `Yes` are among them).
const SPECIAL_WORDS: &[&str] = &["y", "n", "yes", "no", "on", "off", "true", "false", "null"];

/// Whether `k` reads back as the same string under YAML 1.1 and 1.2 when written plain: an ASCII
/// letter, then letters, digits, `.`, `_`, `/` and `-` (so no number, timestamp, `~`, `<<`, `=` or
/// indicator), and none of YAML 1.1's boolean and null words in any case.
pub fn is_plain_key(k: &str) -> bool {
    k.bytes().next().is_some_and(|b| b.is_ascii_alphabetic())
        && k.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._/-".contains(&b))
        && !SPECIAL_WORDS.iter().any(|w| w.eq_ignore_ascii_case(k))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn yaml_1_1_booleans_and_nulls_are_quoted_in_any_case() {
        for k in [
            "y", "Y", "n", "N", "yes", "Yes", "YES", "no", "No", "NO", "on", "On", "ON", "off",
            "Off", "OFF", "true", "True", "TRUE", "false", "False", "FALSE", "null", "Null",
            "NULL", "nUlL",
        ] {
            assert_eq!(key(k), format!("\"{k}\""), "{k}");
        }
    }

    #[test]
    fn other_non_identifiers_are_quoted() {
        for (k, quoted) in [
            ("~", "\"~\""),
            ("", "\"\""),
            ("<<", "\"<<\""),
            ("=", "\"=\""),
            ("_X", "\"_X\""),
            ("1X", "\"1X\""),
            ("0x1F", "\"0x1F\""),
            ("1_000", "\"1_000\""),
            (".inf", "\".inf\""),
            ("-a", "\"-a\""),
            ("a b", "\"a b\""),
            ("a: b", "\"a: b\""),
            ("k#c", "\"k#c\""),
            ("ÄRGER", "\"ÄRGER\""),
            ("a\u{2028}", "\"a\\u2028\""),
        ] {
            assert_eq!(key(k), quoted, "{k:?}");
        }
    }

    #[test]
    fn identifiers_stay_plain() {
        for k in [
            "name",
            "RUNTIME_ON",
            "ONE",
            "NOT",
            "YAML",
            "Nope",
            "app.kubernetes.io/name",
            "read_only",
            "a-1",
        ] {
            assert_eq!(key(k), k, "{k}");
        }
    }

    #[test]
    fn values_escape_what_readers_refuse_or_break_lines_at() {
        assert_eq!(quote("plain é ✓"), "\"plain é ✓\"");
        assert_eq!(quote("a\"b\\c\nd\te\rf"), "\"a\\\"b\\\\c\\nd\\te\\rf\"");
        assert_eq!(
            quote("\0\u{1b}\u{7f}\u{85}\u{9f}\u{2028}\u{2029}\u{feff}\u{fffe}\u{ffff}"),
            "\"\\u0000\\u001b\\u007f\\u0085\\u009f\\u2028\\u2029\\ufeff\\ufffe\\uffff\""
        );
        // Printable in YAML: kept as they are.
        assert_eq!(
            quote("\u{a0}\u{fffd}\u{1fffe}"),
            "\"\u{a0}\u{fffd}\u{1fffe}\""
        );
    }
}
