//! Findings and fixes → LSP values: diagnostics (ranges in the negotiated encoding), text edits
//! and quick-fix code actions.

use crate::document::Document;
use crate::position::Encoding;
use lsp_types::Diagnostic as LspFinding;
use lsp_types::{
    CodeAction, CodeActionKind, DiagnosticRelatedInformation, DiagnosticSeverity, DiagnosticTag,
    Location, NumberOrString, Position, Range, TextEdit, Url, WorkspaceEdit,
};
use otters_agentfile::diagnostic::Fix;
use otters_agentfile::{Code, Diagnostic, Severity};
use std::collections::HashMap;

/// What LSP clients show as the diagnostic's origin.
pub const SOURCE: &str = "otters";

/// Codes whose finding is about text that does nothing (editors grey it out).
const UNNECESSARY: [Code; 2] = [Code::UnusedArg, Code::UnusedSuppression];

pub fn diagnostic(doc: &Document, d: &Diagnostic, enc: Encoding) -> LspFinding {
    let mut related: Vec<DiagnosticRelatedInformation> = d
        .labels
        .iter()
        .map(|l| DiagnosticRelatedInformation {
            location: Location::new(doc.uri.clone(), doc.range(l.span, enc)),
            message: l.message.clone(),
        })
        .collect();
    if let Some(help) = &d.help {
        related.push(DiagnosticRelatedInformation {
            location: Location::new(doc.uri.clone(), doc.range(d.span_or_start(), enc)),
            message: format!("help: {help}"),
        });
    }
    let mut out = LspFinding::new(
        doc.range(d.span_or_start(), enc),
        Some(severity(d.severity)),
        Some(NumberOrString::String(d.code.to_string())),
        Some(SOURCE.to_owned()),
        d.message.clone(),
        (!related.is_empty()).then_some(related),
        UNNECESSARY
            .contains(&d.code)
            .then(|| vec![DiagnosticTag::UNNECESSARY]),
    );
    // The rule's page, as ruff links its findings: editors show the code as a link.
    out.code_description = d
        .code
        .meta()
        .help_uri()
        .and_then(|u| Url::parse(&u).ok())
        .map(|href| lsp_types::CodeDescription { href });
    out
}

fn severity(s: Severity) -> DiagnosticSeverity {
    match s {
        Severity::Error => DiagnosticSeverity::ERROR,
        Severity::Warning => DiagnosticSeverity::WARNING,
        Severity::Info => DiagnosticSeverity::INFORMATION,
    }
}

/// Every diagnostic the document keeps, one counting those it does not (at the first of them,
/// as severe as the worst), and one for a problem with its project or size.
pub fn diagnostics(doc: &Document, enc: Encoding) -> Vec<LspFinding> {
    let mut out: Vec<_> = doc
        .diagnostics
        .iter()
        .map(|d| diagnostic(doc, d, enc))
        .collect();
    if let Some(o) = doc.omitted {
        let place = match &doc.path {
            Some(p) => format!("`otters lint --format concise {}`", p.display()),
            None => "`otters lint --format concise` on the saved file".to_owned(),
        };
        out.push(LspFinding::new(
            doc.range(otters_agentfile::Span::point(o.first.start), enc),
            Some(severity(o.severity)),
            None,
            Some(SOURCE.to_owned()),
            format!(
                "… and {} more findings not shown here (the first {} are); {place} lists every one",
                o.count,
                crate::document::MAX_PUBLISHED
            ),
            None,
            None,
        ));
    }
    if let Some(problem) = &doc.problem {
        let start = Range::new(Position::new(0, 0), Position::new(0, 0));
        let shown = LspFinding::new(
            start,
            Some(DiagnosticSeverity::ERROR),
            None,
            Some(SOURCE.to_owned()),
            problem.clone(),
            None,
            None,
        );
        out.insert(0, shown);
    }
    out
}

pub fn edits(doc: &Document, fix: &Fix, enc: Encoding) -> Vec<TextEdit> {
    fix.edits
        .iter()
        .map(|(span, text)| TextEdit::new(doc.range(*span, enc), text.clone()))
        .collect()
}

/// A quick fix; `for_diagnostic` is the finding it resolves, if any.
pub fn action(
    doc: &Document,
    fix: &Fix,
    for_diagnostic: Option<LspFinding>,
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

/// `action` (a suppression fix) as a snippet edit: the reason a tab stop the editor selects
/// (`${1:reason}`) instead of the text `<reason>`. LSP 3.18's `SnippetTextEdit` inside the
/// `documentChanges` of a workspace edit, for clients that declare `snippetEditSupport`.
pub fn with_snippet_reason(
    doc: &Document,
    fix: &Fix,
    action: CodeAction,
    enc: Encoding,
) -> serde_json::Value {
    use otters_agentfile::check::fixes::REASON_PLACEHOLDER;
    let escape = |t: &str| {
        t.replace('\\', "\\\\")
            .replace('$', "\\$")
            .replace('}', "\\}")
    };
    let edits: Vec<serde_json::Value> = fix
        .edits
        .iter()
        .map(|(span, text)| {
            let value = text
                .split(REASON_PLACEHOLDER)
                .map(escape)
                .collect::<Vec<_>>()
                .join("${1:reason}");
            serde_json::json!({
                "range": doc.range(*span, enc),
                "snippet": {"kind": "snippet", "value": value},
            })
        })
        .collect();
    let mut v = serde_json::to_value(action).unwrap_or_default();
    v["edit"] = serde_json::json!({"documentChanges": [{
        "textDocument": {"uri": doc.uri, "version": doc.version},
        "edits": edits,
    }]});
    v
}

/// The kind of the action that applies every safe fix (`source.fixAll`, as ruff's
/// `source.fixAll.ruff`).
pub const FIX_ALL: &str = "source.fixAll.otters";

/// The `source.fixAll` action: the whole text replaced with `fixed`.
pub fn replace_all(doc: &Document, fixed: String, enc: Encoding) -> CodeAction {
    let whole = otters_agentfile::Span::new(0, doc.text().len());
    let changes = HashMap::from([(
        doc.uri.clone(),
        vec![TextEdit::new(doc.range(whole, enc), fixed)],
    )]);
    CodeAction {
        title: "Apply every safe fix (otters lint --fix)".to_owned(),
        kind: Some(CodeActionKind::new(FIX_ALL)),
        edit: Some(WorkspaceEdit::new(changes)),
        ..CodeAction::default()
    }
}
