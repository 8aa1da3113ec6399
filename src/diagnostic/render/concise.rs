//! One line per finding: `file:line:col: severity[CODE] message`, the format editors and grep
//! understand.

use super::{position, FileReport};
use std::fmt::Write;

/// Renders every diagnostic as exactly one line (the help text is left out).
pub fn concise(reports: &[FileReport]) -> String {
    let mut out = String::new();
    for (file, diags) in reports {
        for d in diags {
            let p = position(file, d);
            let _ = writeln!(
                out,
                "{}:{}:{}: {}[{}] {}",
                file.name, p.line, p.column, d.severity, d.code, d.message
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnostic::{Diagnostic, SourceFile, Span};

    #[test]
    fn one_line_per_finding() {
        let f = SourceFile::new("a/Agentfile", "FROM scratch\nNAME é x\n");
        let d = Diagnostic::error("AF004", Span::new(21, 22), "unexpected `x`");
        assert_eq!(
            concise(&[(f, vec![d])]),
            "a/Agentfile:2:8: error[AF004] unexpected `x`\n"
        );
    }
}
