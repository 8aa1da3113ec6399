//! One diagnostic type for every stage, plus the source map that turns byte spans into lines.
//!
//! Takes: nothing but values. Returns: [`Diagnostic`] values that the CLI renders (see
//! [`render`]). Must never: print, or depend on any later pipeline stage.

pub mod codes;
pub mod render;
mod source;

pub use codes::{Code, RuleMeta};
pub use source::{LineCol, SourceFile};

use serde::Serialize;
use std::fmt;

/// A half-open byte range `[start, end)` into the source text.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct Span {
    pub start: usize,
    pub end: usize,
}

impl Span {
    pub const fn new(start: usize, end: usize) -> Self {
        Self { start, end }
    }

    /// An empty span at `at`, for "something is missing here".
    pub const fn point(at: usize) -> Self {
        Self { start: at, end: at }
    }

    pub const fn len(self) -> usize {
        self.end - self.start
    }

    pub const fn is_empty(self) -> bool {
        self.start == self.end
    }

    /// The smallest span covering both.
    #[must_use]
    pub fn cover(self, other: Span) -> Span {
        Span::new(self.start.min(other.start), self.end.max(other.end))
    }
}

impl From<pest::Span<'_>> for Span {
    fn from(s: pest::Span<'_>) -> Self {
        Span::new(s.start(), s.end())
    }
}

/// How serious a finding is. Ordered: `Info < Warning < Error`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Info,
    Warning,
    Error,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }

    pub fn parse(s: &str) -> Option<Severity> {
        match s {
            "info" | "note" => Some(Severity::Info),
            "warning" | "warn" => Some(Severity::Warning),
            "error" => Some(Severity::Error),
            _ => None,
        }
    }
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A secondary span with its own short message ("first declared here").
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Label {
    pub span: Span,
    pub message: String,
}

/// One finding: a stable code, a severity, what is wrong, where, and how to fix it.
///
/// Built through the constructor functions of each stage (see `check::rules`). The severity
/// starts as the code's default (the table in [`codes`]); only `otters.toml` overrides change it.
///
/// `#[non_exhaustive]`: other crates build one only with [`Diagnostic::new`], never with a literal
/// whose severity could contradict the table.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Diagnostic {
    /// Serialised as the code string (`AF201`).
    pub code: Code,
    pub severity: Severity,
    pub message: String,
    /// The primary location; its label is `label` when given. `None` when the finding is about
    /// something that was not written in the file (an item inherited from a parent image or read
    /// from a config blob); renderers then point at the start of the file.
    pub span: Option<Span>,
    pub label: Option<String>,
    pub labels: Vec<Label>,
    pub help: Option<String>,
    /// Changes that resolve the finding, as data: editors offer them as code actions, `otters
    /// lint --fix` applies the safe ones. Not part of any report format.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub fixes: Vec<Fix>,
}

/// A change that resolves a finding: byte spans of the file and their replacements.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Fix {
    /// What the change does, as an editor lists it ("Replace with `FROM`").
    pub title: String,
    /// Non-overlapping replacements, each of a span of the text the finding was made on.
    pub edits: Vec<(Span, String)>,
    /// True when applying it keeps what the file means (or is a one-edit typo of the only
    /// candidate), so `otters lint --fix` may apply it without review.
    pub safe: bool,
}

impl Fix {
    /// One replacement of `span` by `text`.
    pub fn replace(
        title: impl Into<String>,
        span: Span,
        text: impl Into<String>,
        safe: bool,
    ) -> Fix {
        Fix {
            title: title.into(),
            edits: vec![(span, text.into())],
            safe,
        }
    }
}

/// The longest message, label or help a diagnostic keeps, in bytes: they quote the file, and a
/// quoted megabyte helps nobody (and would be printed once per finding).
pub const MAX_TEXT: usize = 1024;

/// `s`, cut to at most [`MAX_TEXT`] bytes on a character boundary, with `…` when cut.
fn bounded(s: String) -> String {
    if s.len() <= MAX_TEXT {
        return s;
    }
    let mut end = MAX_TEXT;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    let mut cut = s[..end].to_owned();
    cut.push('…');
    cut
}

impl Diagnostic {
    /// A finding of `code` at `span` (a [`Span`], or `None` when there is none), with the code's
    /// default severity.
    pub fn new(code: Code, span: impl Into<Option<Span>>, message: impl Into<String>) -> Self {
        Self {
            code,
            severity: code.default_severity(),
            message: bounded(message.into()),
            span: span.into(),
            label: None,
            labels: Vec::new(),
            help: None,
            fixes: Vec::new(),
        }
    }

    #[must_use]
    pub fn with_label(mut self, label: impl Into<String>) -> Self {
        self.label = Some(bounded(label.into()));
        self
    }

    /// Adds a secondary label at `span`; without a span (an item not written in the file) there
    /// is nothing to point at and no label is added.
    #[must_use]
    pub fn with_secondary(
        mut self,
        span: impl Into<Option<Span>>,
        message: impl Into<String>,
    ) -> Self {
        if let Some(span) = span.into() {
            self.labels.push(Label {
                span,
                message: bounded(message.into()),
            });
        }
        self
    }

    /// Where the finding starts: the primary span's start, or 0 (the start of the file) without
    /// one. Findings are sorted by it.
    pub fn start(&self) -> usize {
        self.span.map_or(0, |s| s.start)
    }

    /// The primary span, or the empty span at the start of the file without one: where
    /// renderers and suppression comments place a finding.
    pub fn span_or_start(&self) -> Span {
        self.span.unwrap_or(Span::point(0))
    }

    #[must_use]
    pub fn with_help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(bounded(help.into()));
        self
    }

    #[must_use]
    pub fn with_fix(mut self, fix: Fix) -> Self {
        self.fixes.push(fix);
        self
    }

    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }
}

/// `text` with the safe fixes of `diags` applied, or `None` when there is none to apply. An edit
/// that overlaps one already taken, or whose span is not inside `text` on character boundaries,
/// is skipped (with the rest of its fix), so the result is always well-formed.
pub fn apply_safe_fixes(text: &str, diags: &[Diagnostic]) -> Option<String> {
    let mut taken: Vec<(Span, &str)> = Vec::new();
    for fix in diags.iter().flat_map(|d| &d.fixes).filter(|f| f.safe) {
        let fits = fix.edits.iter().all(|(s, _)| {
            s.start <= s.end
                && text.is_char_boundary(s.start)
                && text.is_char_boundary(s.end)
                && s.end <= text.len()
        });
        let overlaps = |s: &Span| {
            taken
                .iter()
                .any(|(t, _)| (s.start < t.end && t.start < s.end) || s.start == t.start)
        };
        if fits && !fix.edits.iter().any(|(s, _)| overlaps(s)) {
            taken.extend(fix.edits.iter().map(|(s, t)| (*s, t.as_str())));
        }
    }
    if taken.is_empty() {
        return None;
    }
    taken.sort_by_key(|(s, _)| (s.start, s.end));
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for (span, replacement) in taken {
        out.push_str(&text[at..span.start]);
        out.push_str(replacement);
        at = span.end;
    }
    out.push_str(&text[at..]);
    Some(out)
}

/// True when any diagnostic is an error.
pub fn has_errors(diags: &[Diagnostic]) -> bool {
    diags.iter().any(Diagnostic::is_error)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_texts_are_cut_on_a_char_boundary() {
        let d = Diagnostic::new(Code::UnknownInstruction, Span::default(), "é".repeat(2000))
            .with_label("x".repeat(5000))
            .with_help("short");
        assert!(d.message.len() <= MAX_TEXT + 3 && d.message.ends_with('…'));
        assert_eq!(d.label.as_deref().map(str::len), Some(MAX_TEXT + 3));
        assert_eq!(d.help.as_deref(), Some("short"));
    }

    #[test]
    fn safe_fixes_apply_in_order_and_skip_overlaps_and_unsafe_ones() {
        let text = "from scratch\nNAEM a\n";
        let d = |span: Span, to: &str, safe: bool| {
            Diagnostic::new(Code::KeywordCase, span, "m")
                .with_fix(Fix::replace("t", span, to, safe))
        };
        let diags = [
            d(Span::new(13, 17), "NAME", true),
            d(Span::new(0, 4), "FROM", true),
            d(Span::new(1, 3), "xx", true),
            d(Span::new(5, 12), "nope", false),
            d(Span::new(20, 99), "out of range", true),
        ];
        assert_eq!(
            apply_safe_fixes(text, &diags).as_deref(),
            Some("FROM scratch\nNAME a\n")
        );
        assert_eq!(apply_safe_fixes(text, &diags[3..]), None);
    }

    #[test]
    fn severity_comes_from_the_code() {
        for &c in Code::ALL {
            assert_eq!(
                Diagnostic::new(c, Span::default(), "m").severity,
                c.default_severity()
            );
        }
        let d = Diagnostic::new(Code::KeywordCase, Span::new(0, 4), "m");
        assert_eq!(d.severity, Severity::Info);
        assert!(!d.is_error());
        assert!(Diagnostic::new(Code::MissingFrom, Span::default(), "m").is_error());
    }
}
