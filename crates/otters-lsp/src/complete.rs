//! Completion: instruction keywords at the start of a line, ARG names inside `${`, capability
//! names on a CAPABILITY line (the catalogue the checks use: built in, or the project's; without
//! the names AF232 reports for the configured targets, so nothing offered is flagged), and
//! the codes a `# otters:ignore` comment may name.
//!
//! CONFIG keys are not offered: the keys a runtime reads are known only to that runtime image,
//! and the checks have no catalogue of them.

use crate::document::Document;
use crate::hover::reference;
use crate::outline::clip;
use lsp_types::{
    CompletionItem, CompletionItemKind, Documentation, InsertTextFormat, MarkupContent, MarkupKind,
};
use otters_agentfile::diagnostic::codes as registry;
use otters_agentfile::syntax::{Args, Keyword, LineKind};
use otters_agentfile::Severity;

/// The completions at byte `offset`.
pub fn complete(doc: &Document, offset: usize) -> Vec<CompletionItem> {
    let text = doc.text();
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    let line_start = text[..offset].rfind('\n').map_or(0, |i| i + 1);
    let before = &text[line_start..offset];
    let line = doc.line_at(offset);
    // Inside a heredoc body nothing is an instruction or expanded.
    let in_body = line.is_some_and(|l| match &l.kind {
        LineKind::Instruction(i) => i
            .heredoc
            .as_ref()
            .is_some_and(|h| h.body_span.start <= line_start && line_start <= h.body_span.end),
        LineKind::Error { heredoc, .. } => heredoc
            .as_ref()
            .is_some_and(|h| h.body_span.start <= line_start && line_start <= h.body_span.end),
        _ => false,
    });
    if in_body {
        return Vec::new();
    }
    if let Some(open) = before.rfind("${") {
        if !before[open..].contains('}') {
            return arg_names(doc);
        }
    }
    if let Some(rest) = before.trim_start().strip_prefix("# otters:ignore ") {
        return suppressible_codes(rest);
    }
    let word = before.trim_start();
    // Right after `CAPABILITY ` the line is not yet an instruction (a bare keyword is AF004).
    if word
        .split_once(char::is_whitespace)
        .is_some_and(|(k, _)| k.eq_ignore_ascii_case(Keyword::Capability.as_str()))
    {
        return capabilities(doc);
    }
    if word.bytes().all(|b| b.is_ascii_alphabetic()) && !word.starts_with('#') {
        return keywords();
    }
    if let Some(LineKind::Instruction(ins)) = line.map(|l| &l.kind) {
        if ins.keyword == Keyword::Capability && offset > ins.keyword_token.span.end {
            return capabilities(doc);
        }
    }
    Vec::new()
}

fn keywords() -> Vec<CompletionItem> {
    Keyword::ALL
        .iter()
        .map(|k| CompletionItem {
            label: k.as_str().to_owned(),
            kind: Some(CompletionItemKind::KEYWORD),
            detail: Some(k.usage().to_owned()),
            documentation: Some(Documentation::MarkupContent(MarkupContent {
                kind: MarkupKind::Markdown,
                value: reference(*k).to_owned(),
            })),
            insert_text: Some(format!("{} ", k.as_str())),
            insert_text_format: Some(InsertTextFormat::PLAIN_TEXT),
            ..CompletionItem::default()
        })
        .collect()
}

/// The ARGs the document declares, in the order written (each once).
fn arg_names(doc: &Document) -> Vec<CompletionItem> {
    let mut out: Vec<CompletionItem> = Vec::new();
    for ins in doc.ast().instructions() {
        if let Args::Arg { key, value } = &ins.args {
            if out.iter().any(|c| c.label == key.text) {
                continue;
            }
            out.push(CompletionItem {
                label: key.text.clone(),
                kind: Some(CompletionItemKind::VARIABLE),
                detail: Some(match value {
                    Some(v) => format!("ARG {}={}", key.text, clip(&v.token().text)),
                    None => format!("ARG {}", key.text),
                }),
                ..CompletionItem::default()
            });
        }
    }
    out
}

/// The codes a suppression may name (those whose default severity is not error), after
/// `# otters:ignore `; none once the reason has begun.
fn suppressible_codes(rest: &str) -> Vec<CompletionItem> {
    let words: Vec<&str> = rest.split([' ', ',']).filter(|w| !w.is_empty()).collect();
    let typing = !rest.ends_with([' ', ',']);
    let done = words.len() - usize::from(typing && !words.is_empty());
    if words[..done]
        .iter()
        .any(|w| !registry::is_code_shaped(&w.to_ascii_uppercase()))
    {
        return Vec::new();
    }
    registry::RULES
        .iter()
        .filter(|r| r.severity != Severity::Error)
        .map(|r| CompletionItem {
            label: r.code.to_string(),
            kind: Some(CompletionItemKind::CONSTANT),
            detail: Some(format!("{} ({})", r.name, r.severity)),
            documentation: Some(Documentation::String(r.summary.to_owned())),
            ..CompletionItem::default()
        })
        .collect()
}

fn capabilities(doc: &Document) -> Vec<CompletionItem> {
    doc.capabilities
        .iter()
        .map(|c| CompletionItem {
            label: c.clone(),
            kind: Some(CompletionItemKind::ENUM_MEMBER),
            detail: Some("capability".to_owned()),
            ..CompletionItem::default()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use crate::{Encoding, NoProject, State};
    use lsp_types::{Position, Url};

    fn labels(text: &str, line: u32, character: u32) -> Vec<String> {
        let mut state = State::new(Box::new(NoProject), Encoding::Utf8);
        let uri = Url::parse("untitled:a").unwrap();
        state.open(uri.clone(), 1, text.to_owned());
        let items = state.completion(&uri, Position::new(line, character));
        items.into_iter().map(|i| i.label).collect()
    }

    #[test]
    fn codes_after_a_suppression_until_the_reason() {
        let codes = labels("# otters:ignore AF2", 0, 19);
        assert!(codes.contains(&"AF201".to_owned()), "{codes:?}");
        assert!(
            !codes.contains(&"AF101".to_owned()),
            "errors cannot be suppressed"
        );
        assert!(!labels("# otters:ignore AF201, ", 0, 23).is_empty());
        assert!(labels("# otters:ignore AF201 dev ", 0, 26).is_empty());
        assert!(labels("# a comment", 0, 5).is_empty());
    }
}
