//! The human format: miette's graphical reports with source snippets, labels and help.
//!
//! The caller decides about colour (from `NO_COLOR` and whether the stream is a terminal); this
//! module picks the matching theme explicitly and never lets miette sniff the environment.

use super::{find_rule, FileReport, RuleMeta};
use crate::diagnostic::{Diagnostic, Severity, SourceFile};
use miette::{GraphicalReportHandler, GraphicalTheme, LabeledSpan, NamedSource, SourceSpan};
use std::fmt;
use std::fmt::Write as _;

/// Whether to emit ANSI colour codes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ColorChoice {
    Always,
    Never,
}

/// One diagnostic seen through miette's `Diagnostic` trait.
struct View<'a> {
    d: &'a Diagnostic,
    code: String,
    source: &'a NamedSource<String>,
    len: usize,
}

impl fmt::Debug for View<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.d.message)
    }
}

impl fmt::Display for View<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.d.message)
    }
}

impl std::error::Error for View<'_> {}

impl View<'_> {
    fn span(&self, s: crate::diagnostic::Span) -> SourceSpan {
        let start = s.start.min(self.len);
        let end = s.end.clamp(start, self.len);
        SourceSpan::new(start.into(), end - start)
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
        self.d
            .help
            .as_ref()
            .map(|h| Box::new(h) as Box<dyn fmt::Display>)
    }

    fn source_code(&self) -> Option<&dyn miette::SourceCode> {
        Some(self.source)
    }

    fn labels(&self) -> Option<Box<dyn Iterator<Item = LabeledSpan> + '_>> {
        let primary =
            LabeledSpan::new_primary_with_span(self.d.label.clone(), self.span(self.d.span));
        let secondary = self
            .d
            .labels
            .iter()
            .map(|l| LabeledSpan::new_with_span(Some(l.message.clone()), self.span(l.span)));
        Some(Box::new(std::iter::once(primary).chain(secondary)))
    }
}

fn handler(color: ColorChoice) -> GraphicalReportHandler {
    let theme = match color {
        ColorChoice::Always => GraphicalTheme::unicode(),
        ColorChoice::Never => GraphicalTheme::unicode_nocolor(),
    };
    GraphicalReportHandler::new_themed(theme)
        .with_width(100)
        .with_links(false)
        .with_urls(false)
        .without_syntax_highlighting()
}

fn render_one(
    h: &GraphicalReportHandler,
    out: &mut String,
    file: &SourceFile,
    source: &NamedSource<String>,
    d: &Diagnostic,
    rules: &[RuleMeta],
) {
    let code = match find_rule(rules, d.code) {
        Some(r) => format!("{}({})", d.code, r.name),
        None => d.code.to_owned(),
    };
    let view = View {
        d,
        code,
        source,
        len: file.text.len(),
    };
    if h.render_report(out, &view).is_err() {
        // Rendering into a String only fails if a Display impl fails; fall back to one line.
        let _ = writeln!(
            out,
            "{}: {}[{}] {}",
            file.name, d.severity, d.code, d.message
        );
    }
}

/// Renders every diagnostic as a miette report, one after another, separated by blank lines.
pub fn human(reports: &[FileReport], rules: &[RuleMeta], color: ColorChoice) -> String {
    let h = handler(color);
    let mut out = String::new();
    for (file, diags) in reports {
        let source = NamedSource::new(file.name.clone(), file.text.clone());
        for d in diags {
            render_one(&h, &mut out, file, &source, d, rules);
            out.push('\n');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnostic::Span;

    fn sample() -> Vec<FileReport> {
        let f = SourceFile::new("Agentfile", "FROM scratch\nNAME \"my agent\"\n");
        let d = Diagnostic::error(
            "AF104",
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
