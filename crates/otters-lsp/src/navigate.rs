//! Go to definition: from `${NAME}` to the ARG that declares it, from a CONTEXT's `file://path`
//! or an ADD source to that file (relative to the document's directory, as the build reads it).
//!
//! A source is opened only where the build would read it ([`crate::Project::source`]: the
//! binary answers with the build's own confinement): never an absolute path, `..`, a symlink out of the directory,
//! a FIFO or a device, so a hostile Agentfile cannot make the editor open `/etc/shadow`.

use crate::document::Document;
use otters_agentfile::syntax::{Args, LineKind};
use otters_agentfile::Span;
use std::path::PathBuf;

/// Where the thing at `offset` is defined.
pub enum Target {
    /// A span of the same document.
    Here(Span),
    /// A file on disk.
    File(PathBuf),
}

pub fn definition(doc: &Document, project: &dyn crate::Project, offset: usize) -> Option<Target> {
    let line = doc.line_at(offset)?;
    let LineKind::Instruction(ins) = &line.kind else {
        return None;
    };
    // Heredoc bodies are never expanded, and name no file.
    if offset > ins.span.end {
        return None;
    }
    if let Some(name) = arg_reference(doc.text(), ins.span, offset) {
        return arg_declaration(doc, name, offset).map(Target::Here);
    }
    let source = match &ins.args {
        Args::Context { file: Some(f), .. } => Some(f),
        Args::Add { src, .. } => Some(src),
        _ => None,
    }?;
    if !(source.span.start <= offset && offset <= source.span.end) {
        return None;
    }
    project.source(&doc.dir()?, &source.text).map(Target::File)
}

/// Every `${NAME}` on the instruction line `span`: its span (braces included) and the NAME.
pub(crate) fn arg_uses(text: &str, span: Span) -> Vec<(Span, &str)> {
    let Some(line) = text.get(span.start..span.end) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(open) = line[from..].find("${").map(|i| from + i) {
        let Some(close) = line[open..].find('}').map(|i| open + i) else {
            break;
        };
        let whole = Span::new(span.start + open, span.start + close + 1);
        out.push((whole, &line[open + 2..close]));
        from = close + 1;
    }
    out
}

/// The NAME of the `${NAME}` around `offset` on the instruction line `span`.
pub(crate) fn arg_reference(text: &str, span: Span, offset: usize) -> Option<&str> {
    arg_uses(text, span)
        .into_iter()
        .find(|(s, _)| s.start <= offset && offset <= s.end)
        .map(|(_, name)| name)
}

/// The key of the last `ARG name` before `offset`, else of the first one after it.
fn arg_declaration(doc: &Document, name: &str, offset: usize) -> Option<Span> {
    let keys: Vec<Span> = doc
        .ast()
        .instructions()
        .filter_map(|i| match &i.args {
            Args::Arg { key, .. } if key.text == name => Some(key.span),
            _ => None,
        })
        .collect();
    keys.iter()
        .rev()
        .find(|s| s.start < offset)
        .or_else(|| keys.first())
        .copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_reference_around_the_cursor() {
        let line = "BIN ${A} x${BB}y";
        let s = Span::new(10, 10 + line.len());
        let text = format!("{}{line}", " ".repeat(10));
        assert_eq!(arg_reference(&text, s, 15), Some("A"));
        assert_eq!(arg_reference(&text, s, 22), Some("BB"));
        assert_eq!(arg_reference(&text, s, 10), None);
        assert_eq!(arg_reference("${oops", Span::new(0, 6), 3), None);
    }
}

/// One place an ARG or ENV name is written: its declaration (`ARG NAME`, `ENV NAME=`) or a use
/// (`${NAME}`, the span of `NAME` inside it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Occurrence {
    pub span: Span,
    pub declaration: bool,
}

/// The name at `offset` (an ARG or ENV key, or the NAME of a `${NAME}`) and every place it is
/// written: ARG names with their `${NAME}` uses on instruction lines (heredoc bodies are never
/// expanded), ENV keys with the other ENV lines of the same key. `None` elsewhere: nothing else
/// can be renamed.
pub fn occurrences(doc: &Document, offset: usize) -> Option<(String, Vec<Occurrence>)> {
    let line = doc.line_at(offset)?;
    let LineKind::Instruction(ins) = &line.kind else {
        return None;
    };
    if offset > ins.span.end {
        return None;
    }
    let inside = |s: Span| s.start <= offset && offset <= s.end;
    let (name, env) = match &ins.args {
        Args::Arg { key, .. } if inside(key.span) => (key.text.clone(), false),
        Args::Env { key, .. } if inside(key.span) => (key.text.clone(), true),
        _ => (
            arg_reference(doc.text(), ins.span, offset)?.to_owned(),
            false,
        ),
    };
    let mut out = Vec::new();
    for i in doc.ast().instructions() {
        match &i.args {
            Args::Env { key, .. } if env && key.text == name => out.push(Occurrence {
                span: key.span,
                declaration: true,
            }),
            Args::Arg { key, .. } if !env && key.text == name => out.push(Occurrence {
                span: key.span,
                declaration: true,
            }),
            _ => {}
        }
        if env {
            continue;
        }
        let text = doc.text().get(i.span.start..i.span.end).unwrap_or("");
        let pattern = format!("${{{name}}}");
        for (at, _) in text.match_indices(&pattern) {
            let start = i.span.start + at + 2;
            out.push(Occurrence {
                span: Span::new(start, start + name.len()),
                declaration: false,
            });
        }
    }
    out.sort_by_key(|o| o.span.start);
    out.dedup();
    Some((name, out))
}

/// True for a name an ARG or ENV may be renamed to: a letter or `_`, then letters, digits, `_`.
pub fn is_name(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}
