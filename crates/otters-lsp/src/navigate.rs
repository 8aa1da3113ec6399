//! Go to definition: from `${NAME}` to the ARG that declares it, from a CONTEXT's `file://path`
//! or an ADD source to that file (relative to the document's directory, as the build reads it).
//!
//! A source is opened only where the build would read it (`otters_pipeline::build::source_path`,
//! the build's own confinement): never an absolute path, `..`, a symlink out of the directory,
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

pub fn definition(doc: &Document, offset: usize) -> Option<Target> {
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
    otters_pipeline::build::source_path(&doc.dir()?, &source.text)
        .ok()
        .map(Target::File)
}

/// The NAME of the `${NAME}` around `offset` on the instruction line `span`.
pub(crate) fn arg_reference(text: &str, span: Span, offset: usize) -> Option<&str> {
    let line = text.get(span.start..span.end)?;
    let mut from = 0;
    while let Some(open) = line[from..].find("${").map(|i| from + i) {
        let close = line[open..].find('}').map(|i| open + i)?;
        let (start, end) = (span.start + open, span.start + close + 1);
        if start <= offset && offset <= end {
            return Some(&line[open + 2..close]);
        }
        from = close + 1;
    }
    None
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
