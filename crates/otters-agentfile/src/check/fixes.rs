//! The fix every finding can have whatever its rule: a `# otters:ignore CODE <reason>` comment
//! above its line, for the findings a suppression can silence.
//!
//! Takes: the file, its AST and one finding. Returns: the (unsafe) [`Fix`], made on demand (an
//! editor asks for the fixes of the few findings under the cursor; a file with 50,000 findings
//! does not carry 50,000 of them). Must never: offer a suppression that would not work (an error
//! code, a finding with no span, one inside a heredoc body, where a comment line would become
//! part of the body).

use crate::diagnostic::{Code, Diagnostic, Fix, Severity, SourceFile, Span};
use crate::syntax::Ast;

/// The placeholder the user replaces with the reason (AF214 wants one).
pub const REASON_PLACEHOLDER: &str = "<reason>";

/// A `# otters:ignore CODE <reason>` line above the finding's line, when that would silence it.
pub fn suppression(file: &SourceFile, ast: &Ast, d: &Diagnostic) -> Option<Fix> {
    // AF214/AF215 are about suppression comments themselves.
    if matches!(
        d.code,
        Code::SuppressionWithoutReason | Code::UnusedSuppression
    ) || d.code.default_severity() == Severity::Error
    {
        return None;
    }
    let start = file.line_start(file.line_index(d.span?.start));
    // A suppression applies to the logical line after it: only a logical line's first physical
    // line can have one above.
    let i = ast.lines.partition_point(|l| l.span.start < start);
    if ast.lines.get(i).is_none_or(|l| l.span.start != start) {
        return None;
    }
    let indent: String = file.text[start..]
        .chars()
        .take_while(|c| *c == ' ' || *c == '\t')
        .collect();
    let newline = if file.text.contains("\r\n") {
        "\r\n"
    } else {
        "\n"
    };
    Some(Fix::replace(
        format!("Suppress {} on this line", d.code),
        Span::point(start),
        format!(
            "{indent}# otters:ignore {} {REASON_PLACEHOLDER}{newline}",
            d.code
        ),
        false,
    ))
}

#[cfg(test)]
mod tests {
    use super::suppression;
    use crate::check::{analyze, Options};
    use crate::diagnostic::{Code, SourceFile};
    use crate::syntax::parse;

    fn fixed(text: &str, code: Code) -> Option<String> {
        let file = SourceFile::new("Agentfile", text);
        let a = analyze(&file, &Options::default());
        let d = a.diagnostics.iter().find(|d| d.code == code)?;
        let fix = suppression(&file, &parse(&file), d)?;
        let (span, with) = &fix.edits[0];
        Some(format!(
            "{}{with}{}",
            &text[..span.start],
            &text[span.end..]
        ))
    }

    #[test]
    fn the_suppression_silences_the_finding_and_asks_for_a_reason() {
        let text = "FROM scratch\nRUNTIME r:latest\nNAME a\nMODEL m/x\n";
        let new = fixed(text, Code::UnpinnedImageReference).unwrap();
        assert_eq!(
            new,
            "FROM scratch\n# otters:ignore AF201 <reason>\nRUNTIME r:latest\nNAME a\nMODEL m/x\n"
        );
        let after = analyze(&SourceFile::new("A", new.as_str()), &Options::default());
        assert!(
            after
                .diagnostics
                .iter()
                .all(|d| d.code != Code::UnpinnedImageReference),
            "{:?}",
            after.diagnostics
        );
    }

    #[test]
    fn no_suppression_for_errors_or_inside_a_heredoc_body() {
        assert_eq!(fixed("NAME a\n", Code::MissingFrom), None);
        // AF219 (a hidden character) on a body line: a comment there would join the body.
        let text = "FROM scratch\nCONTEXT A <<E\nx\u{1b}y\nE\n";
        let file = SourceFile::new("A", text);
        let a = analyze(&file, &Options::default());
        let body: Vec<_> = a.diagnostics.iter().filter(|d| d.start() > 27).collect();
        assert!(!body.is_empty(), "{:?}", a.diagnostics);
        let ast = parse(&file);
        assert!(
            body.iter().all(|d| suppression(&file, &ast, d).is_none()),
            "{body:?}"
        );
    }

    #[test]
    fn typos_and_keyword_case_have_safe_fixes_only_when_unambiguous() {
        let text = "from scratch\nNAEM a\nMODLE m/x\nRUNTIMEXX r:1\n";
        let a = analyze(&SourceFile::new("A", text), &Options::default());
        let fixed = crate::diagnostic::apply_safe_fixes(text, &a.diagnostics)
            .unwrap_or_else(|| panic!("{:#?}", a.diagnostics));
        // NAEM and MODLE are one edit from one keyword; RUNTIMEXX is two, a guess left to review.
        assert_eq!(fixed, "FROM scratch\nNAME a\nMODEL m/x\nRUNTIMEXX r:1\n");
        let at = text.find("RUNTIMEXX").unwrap_or_default();
        let guess = a.diagnostics.iter().find(|d| d.start() == at);
        let fix = &guess
            .unwrap_or_else(|| panic!("{:#?}", a.diagnostics))
            .fixes[0];
        assert_eq!(
            (fix.title.as_str(), fix.safe),
            ("Replace with `RUNTIME`", false)
        );
    }
}
