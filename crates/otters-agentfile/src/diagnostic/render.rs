//! Renderers that turn diagnostics into text: human (miette), concise, json, sarif, github.
//!
//! Takes: source files with their diagnostics, and the rule table for names and docs. Returns:
//! one `String` per call. Must never: print, read the environment (the caller picks colour), or
//! depend on a later pipeline stage (rule metadata comes in as [`RuleMeta`] values).
//!
//! Positions are 1-based; columns count Unicode scalar values; `end_column` is exclusive (the
//! column just after the last character), as in SARIF.

mod concise;
mod github;
mod human;
mod json;
mod sarif;
mod snippet;

pub use concise::concise;
pub use github::github;
pub use human::{human, ColorChoice, Human, MAX_SHOWN};
pub use json::json;
pub use sarif::sarif;

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
    let s = file.line_col(d.span.start);
    let e = file.line_col(d.span.end.max(d.span.start));
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
