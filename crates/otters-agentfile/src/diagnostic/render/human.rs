//! The human format: miette's graphical reports with source snippets, labels and help.
//!
//! The caller decides about colour (from `NO_COLOR` and whether the stream is a terminal); this
//! module picks the matching theme explicitly and never lets miette sniff the environment.

use super::snippet::Snippet;
use super::{find_rule, FileReport, RuleMeta};
use crate::diagnostic::{Diagnostic, Severity, SourceFile, Span};
use miette::{GraphicalReportHandler, GraphicalTheme, LabeledSpan};
use otters_core::escape::escape;
use std::fmt;
use std::fmt::Write as _;

/// Whether to emit ANSI colour codes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ColorChoice {
    Always,
    Never,
}

/// At most this many findings are drawn; the rest are counted in one closing line (the summary
/// and every other format still have them all). Nobody reads more, and each one drawn costs a
/// snippet of the file.
pub const MAX_SHOWN: usize = 200;

/// One diagnostic seen through miette's `Diagnostic` trait, with every text escaped.
struct View<'a> {
    d: &'a Diagnostic,
    code: String,
    message: String,
    help: Option<String>,
    source: Snippet,
    labels: Vec<LabeledSpan>,
}

impl fmt::Debug for View<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl fmt::Display for View<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for View<'_> {}

impl<'a> View<'a> {
    fn new(file: &SourceFile, d: &'a Diagnostic, code: String) -> Self {
        // Without a span the finding points at the start of the file.
        let primary = d.span_or_start();
        let spans: Vec<Span> = std::iter::once(primary)
            .chain(d.labels.iter().map(|l| l.span))
            .collect();
        let source = Snippet::new(file, escape(&file.name).into_owned(), &spans);
        let text = |s: &Option<String>| s.as_deref().map(|s| escape(s).into_owned());
        let mut labels = vec![LabeledSpan::new_primary_with_span(
            text(&d.label),
            source.span(file, primary),
        )];
        labels.extend(d.labels.iter().map(|l| {
            LabeledSpan::new_with_span(
                Some(escape(&l.message).into_owned()),
                source.span(file, l.span),
            )
        }));
        View {
            d,
            code,
            message: escape(&d.message).into_owned(),
            help: text(&d.help),
            source,
            labels,
        }
    }
}

impl miette::Diagnostic for View<'_> {
    fn code<'b>(&'b self) -> Option<Box<dyn fmt::Display + 'b>> {
        Some(Box::new(&self.code))
    }

    fn severity(&self) -> Option<miette::Severity> {
        Some(match self.d.severity {
            Severity::Error => miette::Severity::Error,
            Severity::Warning => miette::Severity::Warning,
            Severity::Info => miette::Severity::Advice,
        })
    }

    fn help<'b>(&'b self) -> Option<Box<dyn fmt::Display + 'b>> {
        self.help
            .as_ref()
            .map(|h| Box::new(h) as Box<dyn fmt::Display>)
    }

    fn source_code(&self) -> Option<&dyn miette::SourceCode> {
        Some(&self.source)
    }

    fn labels(&self) -> Option<Box<dyn Iterator<Item = LabeledSpan> + '_>> {
        Some(Box::new(self.labels.iter().cloned()))
    }
}

fn handler(color: ColorChoice) -> GraphicalReportHandler {
    let theme = match color {
        ColorChoice::Always => GraphicalTheme::unicode(),
        ColorChoice::Never => GraphicalTheme::unicode_nocolor(),
    };
    super::keep_words(
        GraphicalReportHandler::new_themed(theme)
            .with_width(100)
            .with_links(false)
            .with_urls(false)
            .without_syntax_highlighting(),
    )
}

fn render_one(
    h: &GraphicalReportHandler,
    out: &mut String,
    file: &SourceFile,
    d: &Diagnostic,
    rules: &[RuleMeta],
) {
    let code = match find_rule(rules, d.code) {
        Some(r) => format!("{}({})", d.code, r.name),
        None => d.code.to_string(),
    };
    let view = View::new(file, d, code);
    if h.render_report(out, &view).is_err() {
        // Rendering into a String only fails if a Display impl fails; fall back to one line.
        let _ = writeln!(
            out,
            "{}: {}[{}] {}",
            escape(&file.name),
            d.severity,
            d.code,
            view.message
        );
    }
}

/// Renders the diagnostics as miette reports, one after another, separated by blank lines; after
/// [`MAX_SHOWN`] of them, one line counts the rest. Linear in what it prints.
pub fn human(reports: &[FileReport], rules: &[RuleMeta], color: ColorChoice) -> String {
    let mut h = Human::new(rules, color);
    let mut out = String::new();
    for (file, diags) in reports {
        out.push_str(&h.file(file, diags));
    }
    out.push_str(&h.finish());
    out
}

/// [`human`] one file at a time, for a caller that prints each file's part as soon as it is
/// checked (and keeps no file's findings longer than that).
pub struct Human<'r> {
    handler: GraphicalReportHandler,
    rules: &'r [RuleMeta],
    shown: usize,
    hidden: usize,
}

impl<'r> Human<'r> {
    pub fn new(rules: &'r [RuleMeta], color: ColorChoice) -> Self {
        Human {
            handler: handler(color),
            rules,
            shown: 0,
            hidden: 0,
        }
    }

    /// The reports of one file's diagnostics, while fewer than [`MAX_SHOWN`] have been drawn.
    pub fn file(&mut self, file: &SourceFile, diags: &[Diagnostic]) -> String {
        let mut out = String::new();
        for d in diags {
            if self.shown == MAX_SHOWN {
                self.hidden += 1;
                continue;
            }
            render_one(&self.handler, &mut out, file, d, self.rules);
            out.push('\n');
            self.shown += 1;
        }
        out
    }

    /// The closing line that counts the findings not drawn, if any.
    pub fn finish(self) -> String {
        if self.hidden == 0 {
            return String::new();
        }
        format!(
            "… and {} more not shown here (the first {MAX_SHOWN} are); `--format concise` lists every finding\n\n",
            self.hidden
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnostic::Span;

    fn sample() -> Vec<FileReport> {
        let f = SourceFile::new("Agentfile", "FROM scratch\nNAME \"my agent\"\n");
        let d = Diagnostic::new(
            crate::diagnostic::Code::NameNotPathSafe,
            Span::new(18, 28),
            "NAME `my agent` is not path-safe",
        )
        .with_label("becomes a file name")
        .with_help("use letters, digits, `.`, `_` and `-`");
        vec![(f, vec![d])]
    }

    #[test]
    fn plain_has_no_escapes_and_shows_location_label_help() {
        let s = human(&sample(), &[], ColorChoice::Never);
        assert!(!s.contains('\u{1b}'), "{s}");
        assert!(s.contains("Agentfile:2:6"), "{s}");
        assert!(s.contains("becomes a file name"), "{s}");
        assert!(s.contains("help: use letters"), "{s}");
    }

    #[test]
    fn colour_has_escapes() {
        assert!(human(&sample(), &[], ColorChoice::Always).contains('\u{1b}'));
    }
}
