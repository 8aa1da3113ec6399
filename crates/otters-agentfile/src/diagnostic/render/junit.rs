//! `JUnit` XML, the test report format GitLab, Jenkins, Azure DevOps and most CI systems read.
//!
//! One `<testsuite>` per file (its name is the file's name as given). Every finding is a
//! `<testcase>` named `CODE rule-name` (class name: the file) holding one `<failure>` whose
//! `type` is the severity and whose text is the concise line plus the help; a file without
//! findings is one passing test case named after the file, so a clean run still reports what
//! it checked. No line number is in a test case's name: CI systems track a test's history by it.

use super::xml::{attr, text};
use super::{find_rule, position, FileReport, RuleMeta};
use std::fmt::Write as _;

/// Renders every file as a test suite inside one `<testsuites>` document (final newline).
pub fn junit(reports: &[FileReport], rules: &[RuleMeta]) -> String {
    let total: usize = reports.iter().map(|(_, d)| d.len().max(1)).sum();
    let failures: usize = reports.iter().map(|(_, d)| d.len()).sum();
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        out,
        "<testsuites name=\"otters lint\" tests=\"{total}\" failures=\"{failures}\" errors=\"0\">"
    );
    for (file, diags) in reports {
        let name = attr(&file.name);
        let _ = writeln!(
            out,
            "  <testsuite name=\"{name}\" tests=\"{}\" failures=\"{}\" errors=\"0\" skipped=\"0\">",
            diags.len().max(1),
            diags.len()
        );
        if diags.is_empty() {
            let _ = writeln!(
                out,
                "    <testcase classname=\"{name}\" name=\"{name}\" file=\"{name}\"/>"
            );
        }
        for d in diags {
            let p = position(file, d);
            let case = match find_rule(rules, d.code) {
                Some(r) => format!("{} {}", d.code, r.name),
                None => d.code.to_string(),
            };
            let mut detail = format!(
                "{}:{}:{}: {}[{}] {}",
                file.name,
                p.line,
                p.column,
                d.severity.as_str(),
                d.code,
                d.message
            );
            if let Some(help) = &d.help {
                let _ = write!(detail, "\nhelp: {help}");
            }
            let _ = writeln!(
                out,
                "    <testcase classname=\"{name}\" name=\"{}\" file=\"{name}\" line=\"{}\">\n      \
                 <failure type=\"{}\" message=\"{}\">{}</failure>\n    </testcase>",
                attr(&case),
                p.line,
                d.severity.as_str(),
                attr(&format!("line {}, column {}: {}", p.line, p.column, d.message)),
                text(&detail),
            );
        }
        out.push_str("  </testsuite>\n");
    }
    out.push_str("</testsuites>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnostic::{codes::RULES, Code, Diagnostic, SourceFile, Span};

    #[test]
    fn a_case_per_finding_and_one_for_a_clean_file() {
        let f = SourceFile::new("a&b/Agentfile", "FROM scratch\nNAME a b\n");
        let d = Diagnostic::new(Code::UnusedArg, Span::new(18, 21), "bad <thing>").with_help("h");
        let clean = SourceFile::new("c/Agentfile", "FROM scratch\n");
        let x = junit(&[(f, vec![d]), (clean, vec![])], RULES);
        assert!(x.contains("tests=\"2\" failures=\"1\""), "{x}");
        assert!(x.contains("name=\"AF204 unused-arg\""), "{x}");
        assert!(x.contains("a&amp;b/Agentfile:2:6: warning[AF204] bad &lt;thing&gt;\nhelp: h"));
        assert!(x.contains("<testcase classname=\"c/Agentfile\" name=\"c/Agentfile\""));
    }
}
