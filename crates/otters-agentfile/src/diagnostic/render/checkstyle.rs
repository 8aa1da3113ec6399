//! Checkstyle XML, which Jenkins' Warnings plugin, reviewdog, `SonarQube`, Danger and many code
//! review bots read: `<checkstyle><file name><error line column severity message source/></file>`.
//!
//! Every file checked is listed, with or without errors (a reader then knows it was checked);
//! `severity` is `error`, `warning` or `info`; `source` is `otters.CODE`, the rule's id.

use super::xml::attr;
use super::{position, FileReport};
use std::fmt::Write as _;

/// Renders every finding of every file as one checkstyle document (final newline).
pub fn checkstyle(reports: &[FileReport]) -> String {
    let mut out =
        String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<checkstyle version=\"4.3\">\n");
    for (file, diags) in reports {
        if diags.is_empty() {
            let _ = writeln!(out, "  <file name=\"{}\"/>", attr(&file.name));
            continue;
        }
        let _ = writeln!(out, "  <file name=\"{}\">", attr(&file.name));
        for d in diags {
            let p = position(file, d);
            let _ = writeln!(
                out,
                "    <error line=\"{}\" column=\"{}\" severity=\"{}\" message=\"{}\" source=\"otters.{}\"/>",
                p.line,
                p.column,
                d.severity.as_str(),
                attr(&d.message),
                d.code
            );
        }
        out.push_str("  </file>\n");
    }
    out.push_str("</checkstyle>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnostic::{Code, Diagnostic, SourceFile, Span};

    #[test]
    fn errors_with_positions_and_clean_files_listed() {
        let f = SourceFile::new("Agentfile", "FROM scratch\nNAME a b\n");
        let d = Diagnostic::new(Code::UnusedArg, Span::new(18, 21), "m \"q\"\n2");
        let clean = SourceFile::new("ok/Agentfile", "FROM scratch\n");
        let x = checkstyle(&[(f, vec![d]), (clean, vec![])]);
        assert!(x.contains(
            "<error line=\"2\" column=\"6\" severity=\"warning\" message=\"m &quot;q&quot;&#10;2\" source=\"otters.AF204\"/>"
        ), "{x}");
        assert!(x.contains("<file name=\"ok/Agentfile\"/>"), "{x}");
    }
}
