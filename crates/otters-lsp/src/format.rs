//! Formatting: the whole document as `otters fmt` would write it, or no edit.
//!
//! TODO(h-fmt): `otters fmt` (`otters_agentfile::fmt`, branch h-fmt) is not merged yet; once it
//! is, `formatted` returns `otters_agentfile::fmt::format_str(text).ok()`. Until then formatting
//! answers "no edits", which every client accepts.

/// The formatted text, or `None` when the text cannot be formatted (syntax errors) or there is
/// no formatter.
pub fn formatted(text: &str) -> Option<String> {
    let _ = text;
    None
}
