//! The unified diff of two texts (a CONTEXT, a BIN's USAGE), with `a/` and `b/` headers.
//!
//! Takes: a name and two texts. Returns: the diff, empty when they are equal. Must never: be
//! quadratic on a hostile text (the bounded Myers diff of `otters_agentfile::fmt` does the work).

/// The unified diff from `old` to `new` with `--- a/NAME` and `+++ b/NAME` headers (`/dev/null`
/// for a side that has no text); empty when the texts are equal.
pub fn unified(name: &str, old: Option<&str>, new: Option<&str>) -> String {
    let body = otters_agentfile::fmt::unified(name, old.unwrap_or(""), new.unwrap_or(""));
    if body.is_empty() {
        return body;
    }
    let hunks: String = body.split_inclusive('\n').skip(2).collect();
    let a = old.map_or_else(|| "/dev/null".to_owned(), |_| format!("a/{name}"));
    let b = new.map_or_else(|| "/dev/null".to_owned(), |_| format!("b/{name}"));
    format!("--- {a}\n+++ {b}\n{hunks}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_changed_line_is_one_hunk_with_git_headers() {
        let d = unified("SOUL.md", Some("a\nb\nc\n"), Some("a\nB\nc\n"));
        assert_eq!(
            d,
            "--- a/SOUL.md\n+++ b/SOUL.md\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n"
        );
        assert_eq!(unified("x", Some("same\n"), Some("same\n")), "");
    }

    #[test]
    fn a_new_text_is_diffed_against_dev_null() {
        let d = unified("N.md", None, Some("hi\n"));
        assert!(d.starts_with("--- /dev/null\n+++ b/N.md\n"), "{d}");
        assert!(d.ends_with("+hi\n"), "{d}");
    }
}
