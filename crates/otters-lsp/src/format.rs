//! Formatting: the whole document as `otters fmt` writes it (`otters_agentfile::fmt`), or no
//! edit when the text has syntax errors (which `otters fmt` refuses too).

/// The formatted text, or `None` when the text cannot be formatted.
pub fn formatted(text: &str) -> Option<String> {
    otters_agentfile::fmt::format_str(text).ok()
}
