//! The `syntax` stage: Agentfile text → lossless [`Ast`] with byte spans and diagnostics.
//!
//! Takes: a [`SourceFile`]. Returns: an [`Ast`]; syntax problems are diagnostics inside it (codes
//! `AF0xx`). Must never: fail, stop at the first problem, expand ARGs (that is `ir`'s job), or do
//! I/O.

pub mod ast;
mod builder;
mod errors;
mod unquote;

pub use ast::*;
pub use unquote::{unquote, EscapeError};

use crate::diagnostic::SourceFile;

/// The pest parser generated from `grammar/agentfile.pest`.
#[derive(pest_derive::Parser)]
#[grammar = "../grammar/agentfile.pest"]
pub(crate) struct AgentfileParser;

/// Parses a whole Agentfile. Never fails; see [`Ast::diagnostics`].
pub fn parse(file: &SourceFile) -> Ast {
    builder::parse(&file.text)
}

/// Checks that Agentfile bytes are UTF-8, returning the text or an AF001 diagnostic with the
/// offset of the first bad byte.
// A `Diagnostic` is large, but this runs once per file, never in a loop.
#[allow(clippy::result_large_err)]
pub fn decode(bytes: &[u8]) -> Result<&str, crate::diagnostic::Diagnostic> {
    std::str::from_utf8(bytes).map_err(|e| errors::invalid_utf8(e.valid_up_to()))
}

/// Parses text directly (tests, fuzzing).
pub fn parse_str(text: &str) -> Ast {
    builder::parse(text)
}

#[cfg(test)]
mod tests {
    use crate::diagnostic::Code;

    use super::*;

    fn codes(text: &str) -> Vec<Code> {
        parse_str(text).diagnostics.iter().map(|d| d.code).collect()
    }

    #[test]
    fn conformance_files_parse_cleanly() {
        let Some(root) = crate::corpus::conformance("conformance_files_parse_cleanly") else {
            return;
        };
        let mut stack = vec![root];
        let mut seen = 0;
        while let Some(dir) = stack.pop() {
            let Ok(rd) = std::fs::read_dir(&dir) else {
                continue;
            };
            for e in rd.flatten() {
                let p = e.path();
                if p.is_dir() {
                    stack.push(p);
                } else if p.file_name().is_some_and(|n| n == "Agentfile") {
                    let text = std::fs::read_to_string(&p).unwrap();
                    let ast = parse_str(&text);
                    assert!(
                        ast.diagnostics.is_empty(),
                        "{}: {:#?}",
                        p.display(),
                        ast.diagnostics
                    );
                    assert!(ast.instructions().count() > 3);
                    seen += 1;
                }
            }
        }
        assert!(seen >= 14, "only {seen} conformance Agentfiles");
    }

    #[test]
    fn heredoc_forms() {
        let ast = parse_str(
            "FROM scratch\nCONTEXT A <<-'EOT'\n\t\tx\n\ty\n\tEOT\nBIN b img \"d\" <<U\nuse\n\nU\n",
        );
        let ins: Vec<_> = ast.instructions().collect();
        assert!(ast.diagnostics.is_empty(), "{:?}", ast.diagnostics);
        let h = ins[1].heredoc.as_ref().unwrap();
        assert_eq!(
            (h.marker.as_str(), h.strip_tabs, h.quoted, h.body.as_str()),
            ("EOT", true, true, "x\ny")
        );
        assert_eq!(ins[2].heredoc.as_ref().unwrap().body, "use");
    }

    #[test]
    fn every_bad_line_is_reported() {
        let c = codes("FORM scratch\nNAME a b\nENV X\nCONTEXT S <<E\nbody\n");
        assert_eq!(
            c,
            vec![
                Code::UnknownInstruction,
                Code::MalformedInstruction,
                Code::MalformedInstruction,
                Code::UnterminatedHeredoc
            ]
        );
    }

    #[test]
    fn bad_line_with_heredoc_consumes_its_body() {
        let c = codes("FROM scratch\nBIN x \"d\" <<E\nNOT AN INSTRUCTION\nE\nNAME ok\n");
        assert_eq!(c, vec![Code::MalformedInstruction]);
    }
}
