//! Findings and fixes → LSP values: diagnostics (ranges in the negotiated encoding), text edits
//! and quick-fix code actions.

use crate::document::Document;
use crate::position::{range, Encoding};
use lsp_types::{
    CodeAction, CodeActionKind, DiagnosticRelatedInformation, DiagnosticSeverity, DiagnosticTag,
    Location, NumberOrString, Position, Range, TextEdit, WorkspaceEdit,
};
use otters_agentfile::diagnostic::Fix;
use otters_agentfile::{Diagnostic, Severity};
use std::collections::HashMap;

/// What LSP clients show as the diagnostic's origin.
pub const SOURCE: &str = "otters";

/// Codes whose finding is about text that does nothing (editors grey it out).
const UNNECESSARY: [&str; 2] = ["AF204", "AF215"];

pub fn diagnostic(doc: &Document, d: &Diagnostic, enc: Encoding) -> lsp_types::Diagnostic {
    let code = d.code.to_string();
    let mut related: Vec<DiagnosticRelatedInformation> = d
        .labels
        .iter()
        .map(|l| DiagnosticRelatedInformation {
            location: Location::new(doc.uri.clone(), range(&doc.file, l.span, enc)),
            message: l.message.clone(),
        })
        .collect();
    if let Some(help) = &d.help {
        related.push(DiagnosticRelatedInformation {
            location: Location::new(doc.uri.clone(), range(&doc.file, d.span_or_start(), enc)),
            message: format!("help: {help}"),
        });
    }
    lsp_types::Diagnostic {
        range: range(&doc.file, d.span_or_start(), enc),
        severity: Some(match d.severity {
            Severity::Error => DiagnosticSeverity::ERROR,
            Severity::Warning => DiagnosticSeverity::WARNING,
            Severity::Info => DiagnosticSeverity::INFORMATION,
        }),
        tags: UNNECESSARY
            .contains(&code.as_str())
            .then(|| vec![DiagnosticTag::UNNECESSARY]),
        code: Some(NumberOrString::String(code)),
        code_description: None,
        source: Some(SOURCE.to_owned()),
        message: d.message.clone(),
        related_information: (!related.is_empty()).then_some(related),
        data: None,
    }
}

/// Every diagnostic of the document, plus one for a problem with its project or size.
pub fn diagnostics(doc: &Document, enc: Encoding) -> Vec<lsp_types::Diagnostic> {
    let mut out: Vec<_> = doc
        .diagnostics
        .iter()
        .map(|d| diagnostic(doc, d, enc))
        .collect();
    if let Some(problem) = &doc.problem {
        out.insert(
            0,
            lsp_types::Diagnostic {
                range: Range::new(Position::new(0, 0), Position::new(0, 0)),
                severity: Some(DiagnosticSeverity::ERROR),
                source: Some(SOURCE.to_owned()),
                message: problem.clone(),
                ..lsp_types::Diagnostic::default()
            },
        );
    }
    out
}

pub fn edits(doc: &Document, fix: &Fix, enc: Encoding) -> Vec<TextEdit> {
    fix.edits
        .iter()
        .map(|(span, text)| TextEdit::new(range(&doc.file, *span, enc), text.clone()))
        .collect()
}

/// A quick fix; `for_diagnostic` is the finding it resolves, if any.
pub fn action(
    doc: &Document,
    fix: &Fix,
    for_diagnostic: Option<lsp_types::Diagnostic>,
    enc: Encoding,
) -> CodeAction {
    let changes = HashMap::from([(doc.uri.clone(), edits(doc, fix, enc))]);
    CodeAction {
        title: fix.title.clone(),
        kind: Some(CodeActionKind::QUICKFIX),
        diagnostics: for_diagnostic.map(|d| vec![d]),
        edit: Some(WorkspaceEdit::new(changes)),
        is_preferred: Some(fix.safe),
        ..CodeAction::default()
    }
}
