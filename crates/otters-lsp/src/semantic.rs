//! Semantic tokens (full and delta): what the `TextMate` grammar and tree-sitter queries cannot
//! tell apart by position alone — image references, the model, capability names, CONTEXT names,
//! ADD sources and names, ARG declarations and every `${NAME}` on an instruction line.
//!
//! Tokens come from the lossless AST (no second parser); a token holding `${NAME}` is split so
//! the reference is a `variable` inside it. Heredoc bodies get none (they are never expanded).

use crate::document::Document;
use crate::position::Encoding;
use lsp_types::{SemanticTokenModifier, SemanticTokenType, SemanticTokensLegend};
use otters_agentfile::syntax::{Args, Token};
use otters_agentfile::Span;

/// The legend's types, in the order their indices are sent.
const TYPES: [(&str, SemanticTokenType); 6] = [
    ("image", SemanticTokenType::NAMESPACE),
    ("model", SemanticTokenType::TYPE),
    ("capability", SemanticTokenType::ENUM_MEMBER),
    ("name", SemanticTokenType::PROPERTY),
    ("path", SemanticTokenType::STRING),
    ("variable", SemanticTokenType::VARIABLE),
];

const IMAGE: u32 = 0;
const MODEL: u32 = 1;
const CAPABILITY: u32 = 2;
const NAME: u32 = 3;
const PATH: u32 = 4;
const VARIABLE: u32 = 5;
/// Not a token itself; only the `${…}` inside it are.
const NONE: u32 = u32::MAX;
/// The modifier bit of an ARG's own name.
const DECLARATION: u32 = 1;

pub fn legend() -> SemanticTokensLegend {
    SemanticTokensLegend {
        token_types: TYPES.iter().map(|(_, t)| t.clone()).collect(),
        token_modifiers: vec![SemanticTokenModifier::DECLARATION],
    }
}

/// `(span, type, modifiers)` of every token, in document order.
fn spans(doc: &Document) -> Vec<(Span, u32, u32)> {
    let mut out = Vec::new();
    let mut push = |t: &Token, kind: u32, modifiers: u32| out.push((t.span, kind, modifiers));
    for ins in doc.ast().instructions() {
        match &ins.args {
            Args::From { image } | Args::Runtime { image } => push(image, IMAGE, 0),
            Args::Bin { name, image, .. } => {
                push(name, NAME, 0);
                push(image, IMAGE, 0);
            }
            Args::Model { model } => push(model, MODEL, 0),
            Args::Capability { names } => names.iter().for_each(|n| push(n, CAPABILITY, 0)),
            Args::Context { name, file, .. } => {
                push(name, NAME, 0);
                if let Some(f) = file {
                    push(f, PATH, 0);
                }
            }
            Args::Add { src, dst, .. } => {
                push(src, PATH, 0);
                if let Some(d) = dst {
                    push(d, NAME, 0);
                }
            }
            Args::Arg { key, value } => {
                push(key, VARIABLE, DECLARATION);
                if let Some(v) = value {
                    push(v.token(), NONE, 0);
                }
            }
            other => other.tokens().into_iter().for_each(|t| push(t, NONE, 0)),
        }
    }
    out.sort_by_key(|(s, ..)| (s.start, s.end));
    out
}

/// `kind` over `span`, with each `${…}` inside it a `variable` instead.
fn split(text: &str, span: Span, kind: u32, modifiers: u32, out: &mut Vec<(Span, u32, u32)>) {
    let Some(piece) = text.get(span.start..span.end) else {
        return;
    };
    let mut at = 0;
    while let Some(open) = piece[at..].find("${").map(|i| at + i) {
        let Some(close) = piece[open..].find('}').map(|i| open + i + 1) else {
            break;
        };
        if open > at && kind != NONE {
            out.push((
                Span::new(span.start + at, span.start + open),
                kind,
                modifiers,
            ));
        }
        out.push((
            Span::new(span.start + open, span.start + close),
            VARIABLE,
            0,
        ));
        at = close;
    }
    if at < piece.len() && kind != NONE {
        out.push((Span::new(span.start + at, span.end), kind, modifiers));
    }
}

/// The encoded tokens (LSP's relative five-integer form).
pub fn tokens(doc: &Document, enc: Encoding) -> Vec<u32> {
    let mut pieces = Vec::new();
    for (span, kind, modifiers) in spans(doc) {
        split(doc.text(), span, kind, modifiers, &mut pieces);
    }
    let mut data = Vec::with_capacity(pieces.len() * 5);
    let (mut line, mut col) = (0, 0);
    for (span, kind, modifiers) in pieces {
        let r = doc.range(span, enc);
        // A token spanning lines (a multi-line quoted value) is left out: LSP's default is
        // single-line tokens.
        if r.start.line != r.end.line || r.end.character == r.start.character {
            continue;
        }
        let delta_line = r.start.line - line;
        let delta_col = if delta_line == 0 {
            r.start.character - col
        } else {
            r.start.character
        };
        data.extend([
            delta_line,
            delta_col,
            r.end.character - r.start.character,
            kind,
            modifiers,
        ]);
        (line, col) = (r.start.line, r.start.character);
    }
    data
}

/// One edit turning `old` into `new`: the differing middle between a common prefix and suffix
/// (whole tokens of five integers each).
pub fn delta(old: &[u32], new: &[u32]) -> (u32, u32, Vec<u32>) {
    let prefix = old
        .chunks(5)
        .zip(new.chunks(5))
        .take_while(|(a, b)| a == b)
        .count()
        * 5;
    let suffix = old[prefix..]
        .rchunks(5)
        .zip(new[prefix..].rchunks(5))
        .take_while(|(a, b)| a == b)
        .count()
        * 5;
    let to = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
    (
        to(prefix),
        to(old.len() - prefix - suffix),
        new[prefix..new.len() - suffix].to_vec(),
    )
}

#[cfg(test)]
mod tests {
    use super::delta;

    #[test]
    fn delta_replaces_only_the_middle() {
        let old = [0, 0, 1, 0, 0, 1, 0, 2, 1, 0, 1, 0, 3, 2, 0];
        let new = [0, 0, 1, 0, 0, 1, 0, 4, 1, 0, 1, 0, 3, 2, 0];
        assert_eq!(delta(&old, &new), (5, 5, vec![1, 0, 4, 1, 0]));
        assert_eq!(delta(&old, &old), (15, 0, vec![]));
        assert_eq!(delta(&[], &old), (0, 0, old.to_vec()));
    }
}
