//! The outline (one symbol per instruction, named by what it declares) and folding ranges (each
//! heredoc, from its instruction line to its terminator).

use crate::document::Document;
use crate::position::Encoding;
use lsp_types::{DocumentSymbol, FoldingRange, FoldingRangeKind, SymbolKind};
use otters_agentfile::syntax::{Args, Instruction, Keyword, LineKind};
use otters_agentfile::Span;

/// The most characters of a value a symbol name shows.
const MAX_NAME: usize = 60;

pub(crate) fn clip(s: &str) -> String {
    match s.char_indices().nth(MAX_NAME) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_owned(),
    }
}

fn kind(k: Keyword) -> SymbolKind {
    match k {
        Keyword::From | Keyword::Runtime | Keyword::Bin => SymbolKind::PACKAGE,
        Keyword::Name | Keyword::Model => SymbolKind::PROPERTY,
        Keyword::Context => SymbolKind::STRING,
        Keyword::Config | Keyword::Env | Keyword::Label => SymbolKind::FIELD,
        Keyword::Arg => SymbolKind::VARIABLE,
        Keyword::Add | Keyword::Mount => SymbolKind::FILE,
        Keyword::Capability => SymbolKind::ENUM_MEMBER,
        Keyword::Egress => SymbolKind::NAMESPACE,
        Keyword::Exec => SymbolKind::FUNCTION,
    }
}

/// The name an instruction is shown by, and the span that names it.
fn named(ins: &Instruction) -> (String, Span) {
    let (what, span) = match &ins.args {
        Args::From { image } | Args::Runtime { image } => (image.text.clone(), image.span),
        Args::Model { model } => (model.text.clone(), model.span),
        Args::Name { name } | Args::Context { name, .. } | Args::Bin { name, .. } => {
            (name.text.clone(), name.span)
        }
        Args::Config { key, .. }
        | Args::Env { key, .. }
        | Args::Label { key, .. }
        | Args::Arg { key, .. } => (key.text.clone(), key.span),
        Args::Add { src, .. } => (src.text.clone(), src.span),
        Args::Mount { target, .. } | Args::Egress { target, .. } => {
            (target.text.clone(), target.span)
        }
        Args::Capability { names } => (
            names
                .iter()
                .map(|n| n.text.as_str())
                .collect::<Vec<_>>()
                .join(" "),
            names
                .first()
                .zip(names.last())
                .map_or(ins.keyword_token.span, |(a, b)| a.span.cover(b.span)),
        ),
        Args::Exec { args } => (
            args.iter()
                .map(|a| a.text.as_str())
                .collect::<Vec<_>>()
                .join(" "),
            ins.span,
        ),
    };
    (format!("{} {}", ins.keyword.as_str(), clip(&what)), span)
}

#[allow(deprecated)] // `DocumentSymbol::deprecated` must be written, and is deprecated.
pub fn symbols(doc: &Document, enc: Encoding) -> Vec<DocumentSymbol> {
    doc.ast()
        .lines
        .iter()
        .filter_map(|l| match &l.kind {
            LineKind::Instruction(ins) => Some((l.span, ins)),
            _ => None,
        })
        .map(|(span, ins)| {
            let (name, sel) = named(ins);
            // The selection must lie inside the range; an empty name falls back to the keyword.
            let sel = if sel.start >= span.start && sel.end <= span.end && !sel.is_empty() {
                sel
            } else {
                ins.keyword_token.span
            };
            let detail = match &ins.args {
                Args::Context { description, .. }
                | Args::Config { description, .. }
                | Args::Env { description, .. }
                | Args::Bin { description, .. }
                | Args::Add { description, .. }
                | Args::Mount { description, .. }
                | Args::Egress { description, .. } => description.as_ref().map(|d| clip(&d.text)),
                _ => None,
            };
            DocumentSymbol {
                name: if name.trim().is_empty() {
                    ins.keyword.as_str().to_owned()
                } else {
                    name
                },
                detail,
                kind: kind(ins.keyword),
                tags: None,
                deprecated: None,
                range: doc.range(span, enc),
                selection_range: doc.range(sel, enc),
                children: None,
            }
        })
        .collect()
}

/// One folding range per heredoc that spans more than its opener's line.
pub fn folding(doc: &Document) -> Vec<FoldingRange> {
    let file = &doc.file;
    let mut out = Vec::new();
    for l in &doc.ast().lines {
        let heredoc = match &l.kind {
            LineKind::Instruction(ins) => ins.heredoc.as_ref(),
            LineKind::Error { heredoc, .. } => heredoc.as_deref(),
            _ => None,
        };
        let Some(h) = heredoc else { continue };
        let start = file.line_index(l.span.start);
        let end = file.line_index(h.terminator.map_or(l.span.end, |t| t.start));
        if end > start {
            out.push(FoldingRange {
                start_line: u32::try_from(start).unwrap_or(u32::MAX),
                end_line: u32::try_from(end).unwrap_or(u32::MAX),
                kind: Some(FoldingRangeKind::Region),
                collapsed_text: Some(format!("<<{}…", clip(&h.marker))),
                ..FoldingRange::default()
            });
        }
    }
    out
}
