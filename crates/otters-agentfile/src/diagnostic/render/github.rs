//! GitHub Actions workflow commands: `::error file=F,line=L,col=C,endLine=..,endColumn=..,title=..::message`.
//!
//! Escaping follows the runner: in data `%`, `\r`, `\n` become `%25`, `%0D`, `%0A`; in property
//! values `:` and `,` are escaped too (`%3A`, `%2C`). Other control characters and bidi controls
//! are then written as `\u{..}` (the Actions log viewer interprets ANSI escapes).

use super::{find_rule, position, FileReport, RuleMeta};
use crate::diagnostic::Severity;
use std::fmt::Write;

fn escape_data(s: &str) -> String {
    let s = s
        .replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A");
    otters_core::escape::escape(&s).into_owned()
}

fn escape_property(s: &str) -> String {
    escape_data(s).replace(':', "%3A").replace(',', "%2C")
}

/// Renders one annotation per finding: errors as `::error`, warnings as `::warning`, info as
/// `::notice`. The help text becomes a second line of the message.
pub fn github(reports: &[FileReport], rules: &[RuleMeta]) -> String {
    let mut out = String::new();
    for (file, diags) in reports {
        for d in diags {
            let p = position(file, d);
            let command = match d.severity {
                Severity::Error => "error",
                Severity::Warning => "warning",
                Severity::Info => "notice",
            };
            let title = match find_rule(rules, d.code) {
                Some(r) => format!("{} {}", d.code, r.name),
                None => d.code.to_string(),
            };
            let mut message = d.message.clone();
            if let Some(help) = &d.help {
                message.push_str("\nhelp: ");
                message.push_str(help);
            }
            let _ = writeln!(
                out,
                "::{command} file={},line={},col={},endLine={},endColumn={},title={}::{}",
                escape_property(&file.name),
                p.line,
                p.column,
                p.end_line,
                p.end_column,
                escape_property(&title),
                escape_data(&message)
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnostic::{Code, Diagnostic, SourceFile, Span};

    #[test]
    fn escapes_properties_and_data() {
        assert_eq!(escape_data("50%\r\nx"), "50%25%0D%0Ax");
        assert_eq!(escape_property("a:b,c%"), "a%3Ab%2Cc%25");
        assert_eq!(escape_data("\u{1b}[2J\u{202e}"), "\\u{1b}[2J\\u{202e}");
    }

    #[test]
    fn info_becomes_notice_with_help_line() {
        let f = SourceFile::new("dir,x/Agentfile", "FROM scratch\n");
        let d = Diagnostic::new(Code::KeywordCase, Span::new(0, 4), "keyword `from`")
            .with_help("write `FROM`");
        let rules = [RuleMeta {
            code: Code::KeywordCase,
            name: "keyword-case",
            severity: Severity::Info,
            summary: "s",
            doc: "",
        }];
        assert_eq!(
            github(&[(f, vec![d])], &rules),
            "::notice file=dir%2Cx/Agentfile,line=1,col=1,endLine=1,endColumn=5,title=AF208 keyword-case::keyword `from`%0Ahelp: write `FROM`\n"
        );
    }
}
