//! One line per finding: `file:line:col: severity[CODE] message`, the format editors and grep
//! understand.

use super::{position, FileReport};
use otters_core::escape::escape_line;
use std::fmt::Write;

/// Renders every diagnostic as exactly one line (the help text is left out). Control characters,
/// bidi controls and line breaks in the file name and message are escaped (`\u{1b}`).
pub fn concise(reports: &[FileReport]) -> String {
    let mut out = String::new();
    for (file, diags) in reports {
        for d in diags {
            let p = position(file, d);
            let _ = writeln!(
                out,
                "{}:{}:{}: {}[{}] {}",
                escape_line(&file.name),
                p.line,
                p.column,
                d.severity,
                d.code,
                escape_line(&d.message)
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
    fn one_line_per_finding() {
        let f = SourceFile::new("a/Agentfile", "FROM scratch\nNAME é x\n");
        let d = Diagnostic::new(
            Code::MalformedInstruction,
            Span::new(21, 22),
            "unexpected `x`",
        );
        assert_eq!(
            concise(&[(f, vec![d])]),
            "a/Agentfile:2:8: error[AF004] unexpected `x`\n"
        );
    }

    #[test]
    fn controls_and_line_breaks_are_escaped() {
        let f = SourceFile::new("a\u{1b}[2J", "FROM scratch\n");
        let d = Diagnostic::new(
            Code::MalformedInstruction,
            Span::new(0, 1),
            "bad `\r\u{202e}x\ny`",
        );
        assert_eq!(
            concise(&[(f, vec![d])]),
            "a\\u{1b}[2J:1:1: error[AF004] bad `\\u{d}\\u{202e}x\\u{a}y`\n"
        );
    }
}
