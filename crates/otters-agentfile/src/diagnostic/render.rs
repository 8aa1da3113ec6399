//! Renderers that turn diagnostics into text: human (miette), concise, json, sarif, github, and
//! the CI report formats gitlab (Code Quality), junit and checkstyle.
//!
//! Takes: source files with their diagnostics, and the rule table for names and docs. Returns:
//! one `String` per call. Must never: print, read the environment (the caller picks colour), or
//! depend on a later pipeline stage (rule metadata comes in as [`RuleMeta`] values).
//!
//! Positions are 1-based; columns count Unicode scalar values; `end_column` is exclusive (the
//! column just after the last character), as in SARIF.

mod checkstyle;
mod concise;
mod github;
mod gitlab;
mod human;
mod json;
mod junit;
mod sarif;
mod snippet;
mod wrap;
mod xml;

pub use checkstyle::checkstyle;
pub use concise::concise;
pub use github::github;
pub use gitlab::{gitlab, gitlab_severity};
pub use human::{human, ColorChoice, Human, MAX_SHOWN};
pub use json::{json, Finding};
pub use junit::junit;
pub use sarif::sarif;
pub use wrap::{keep_words, word_separator, word_splitter};

pub use super::codes::RuleMeta;
use super::{Code, Diagnostic, SourceFile};

/// One file's diagnostics, as every renderer takes them.
pub type FileReport = (SourceFile, Vec<Diagnostic>);

/// A diagnostic's start and end as 1-based (line, column), end exclusive.
pub(crate) struct Position {
    pub line: usize,
    pub column: usize,
    pub end_line: usize,
    pub end_column: usize,
}

pub(crate) fn position(file: &SourceFile, d: &Diagnostic) -> Position {
    let span = d.span_or_start();
    let s = file.line_col(span.start);
    let e = file.line_col(span.end.max(span.start));
    Position {
        line: s.line,
        column: s.column,
        end_line: e.line,
        end_column: e.column,
    }
}

pub(crate) fn find_rule(rules: &[RuleMeta], code: Code) -> Option<&RuleMeta> {
    rules.iter().find(|r| r.code == code)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnostic::Span;

    /// A finding without a span renders exactly as one at the start of the file, in every format.
    #[test]
    fn no_span_renders_at_the_start_of_the_file() {
        let file = SourceFile::new("Agentfile", "FROM scratch\nNAME a\n");
        let at = |span: Option<Span>| {
            let d = Diagnostic::new(Code::IncompleteScratchAgent, span, "m")
                .with_label("l")
                .with_help("h")
                .with_secondary(span, "s");
            vec![(file.clone(), vec![d])]
        };
        let (none, start) = (at(None), at(Some(Span::point(0))));
        assert_eq!(none[0].1[0].labels.len(), 0, "no label without a span");
        let rules = super::super::codes::RULES;
        let plain = |r: &[FileReport]| {
            [
                concise(r),
                json(r),
                sarif(r, rules),
                github(r, rules),
                gitlab(r),
                junit(r, rules),
                checkstyle(r),
            ]
        };
        assert_eq!(plain(&none), plain(&start));
        assert!(concise(&none).starts_with("Agentfile:1:1: warning[AF209] m"));
        // The human view draws the secondary label of the spanned one; the rest is the same.
        let human_none = human(&none, rules, ColorChoice::Never);
        assert!(human_none.contains("Agentfile:1:1"), "{human_none}");
        let start_primary = at(Some(Span::point(0)));
        let mut only_primary = start_primary;
        only_primary[0].1[0].labels.clear();
        assert_eq!(human_none, human(&only_primary, rules, ColorChoice::Never));
    }
}
