//! AST → canonical text: one line per line of the file, in the same order, each written in its
//! canonical form; runs of blank lines shortened to one; heredoc bodies copied.

use super::quote::quote;
use crate::syntax::{Args, Ast, Heredoc, Instruction, LineKind, Token, Value};

/// Renders a parsed file without syntax errors in the canonical layout.
pub(super) fn render(text: &str, ast: &Ast) -> String {
    let mut w = Writer {
        out: String::with_capacity(text.len() + text.len() / 16),
        blank_pending: false,
        started: false,
        leading_blank: false,
    };
    for line in &ast.lines {
        match &line.kind {
            LineKind::Blank => w.blank(),
            LineKind::Comment { text } => w.line(&text.text),
            LineKind::Directive { value } => {
                // A directive counts only on line 1: one that was below a blank line stays below
                // one, so formatting never turns a comment into a directive.
                if !w.started && w.leading_blank {
                    w.out.push('\n');
                }
                w.line(&format!("# syntax={}", value.text));
            }
            LineKind::Instruction(ins) => {
                w.line(&instruction(text, ins));
                if let Some(h) = &ins.heredoc {
                    body(&mut w, text, h);
                }
            }
            // Not reached: files with error lines are refused before rendering. Written as they
            // are, should that ever change.
            LineKind::Error { .. } => {
                let raw = slice(text, line.span.start, line.span.end);
                for l in raw.split('\n') {
                    w.line(l.strip_suffix('\r').unwrap_or(l));
                }
            }
        }
    }
    w.out
}

struct Writer {
    out: String,
    /// A blank line was seen since the last written line.
    blank_pending: bool,
    /// Something has been written.
    started: bool,
    /// Blank lines came before anything else.
    leading_blank: bool,
}

impl Writer {
    fn blank(&mut self) {
        if self.started {
            self.blank_pending = true;
        } else {
            self.leading_blank = true;
        }
    }

    /// Writes one line. A line whose text ends in `\r` keeps a CRLF break, the only way such a
    /// line reads back with its `\r`.
    fn line(&mut self, content: &str) {
        if self.blank_pending {
            self.out.push('\n');
            self.blank_pending = false;
        }
        self.out.push_str(content);
        self.out.push_str(if content.ends_with('\r') {
            "\r\n"
        } else {
            "\n"
        });
        self.started = true;
    }

    /// Copies raw body lines; the last one ends with `\n` (the body of a terminated heredoc).
    fn raw_lines(&mut self, raw: &str) {
        for l in raw.split_inclusive('\n') {
            let content = l.strip_suffix('\n').unwrap_or(l);
            let content = content.strip_suffix('\r').unwrap_or(content);
            self.out.push_str(content);
            self.out.push_str(if content.ends_with('\r') {
                "\r\n"
            } else {
                "\n"
            });
        }
    }
}

fn slice(text: &str, start: usize, end: usize) -> &str {
    text.get(start..end.min(text.len())).unwrap_or("")
}

/// The body verbatim (CRLF breaks become LF; the body reads the same), then the terminator: the
/// marker alone, after the tabs that indented it for a `<<-` heredoc.
fn body(w: &mut Writer, text: &str, h: &Heredoc) {
    w.raw_lines(slice(text, h.body_span.start, h.body_span.end));
    let Some(t) = h.terminator else { return };
    let line_start = text[..t.start.min(text.len())]
        .rfind('\n')
        .map_or(0, |i| i + 1);
    let indent = slice(text, line_start, t.start);
    if h.strip_tabs && indent.bytes().all(|b| b == b'\t') {
        w.out.push_str(indent);
    }
    w.out.push_str(&h.marker);
    w.out.push('\n');
}

fn value(v: &Value) -> String {
    match v {
        Value::Bare(t) => t.text.clone(),
        Value::Quoted(t) => quote(&t.text),
    }
}

/// A word and an optional description (EGRESS).
fn word_described(out: &mut String, w: &Token, description: Option<&Token>) {
    out.push(' ');
    out.push_str(&w.text);
    described(out, description);
}

fn described(out: &mut String, description: Option<&Token>) {
    if let Some(d) = description {
        out.push(' ');
        out.push_str(&quote(&d.text));
    }
}

/// One instruction line: the keyword in capitals, one space between tokens, none around `=` and
/// `!`, strings in their canonical quoting, the heredoc opener as written.
fn instruction(text: &str, ins: &Instruction) -> String {
    let mut out = String::from(ins.keyword.as_str());
    let word = |out: &mut String, t: &Token| {
        out.push(' ');
        out.push_str(&t.text);
    };
    match &ins.args {
        Args::From { image } | Args::Runtime { image } => word(&mut out, image),
        Args::Model { model } => word(&mut out, model),
        Args::Name { name } => word(&mut out, name),
        Args::Context {
            name,
            description,
            file,
        } => {
            word(&mut out, name);
            described(&mut out, description.as_ref());
            if let Some(f) = file {
                out.push(' ');
                out.push_str(slice(text, f.span.start, f.span.end));
            }
        }
        Args::Config {
            key,
            required,
            value: v,
            description,
        } => {
            word(&mut out, key);
            if required.is_some() {
                out.push('!');
            }
            if let Some(v) = v {
                out.push('=');
                out.push_str(&value(v));
            }
            described(&mut out, description.as_ref());
        }
        Args::Env {
            key,
            value: v,
            description,
        } => {
            word(&mut out, key);
            out.push('=');
            out.push_str(&value(v));
            described(&mut out, description.as_ref());
        }
        Args::Bin {
            name,
            image,
            description,
        } => {
            word(&mut out, name);
            word(&mut out, image);
            described(&mut out, description.as_ref());
        }
        Args::Exec { args } => {
            out.push_str(" [");
            for (i, a) in args.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                out.push_str(&quote(&a.text));
            }
            out.push(']');
        }
        Args::Add {
            src,
            dst,
            description,
        } => {
            word(&mut out, src);
            if let Some(d) = dst {
                word(&mut out, d);
            }
            described(&mut out, description.as_ref());
        }
        Args::Label { key, value: v } => {
            word(&mut out, key);
            out.push('=');
            out.push_str(&value(v));
        }
        Args::Arg { key, value: v } => {
            word(&mut out, key);
            match v {
                Some(v) => {
                    out.push('=');
                    out.push_str(&value(v));
                }
                // `ARG NAME=` reads as `ARG NAME`; the `=` is kept as the author's word that
                // the default is empty.
                None if slice(text, key.span.end, ins.span.end).contains('=') => out.push('='),
                None => {}
            }
        }
        Args::Capability { names } => {
            for n in names {
                word(&mut out, n);
            }
        }
        Args::Mount {
            target,
            mode,
            description,
        } => {
            word(&mut out, target);
            if let Some(m) = mode {
                out.push(' ');
                out.push_str(&m.text.to_ascii_lowercase());
            }
            described(&mut out, description.as_ref());
        }
        Args::Egress {
            target,
            description,
        } => word_described(&mut out, target, description.as_ref()),
    }
    if let Some(h) = &ins.heredoc {
        out.push(' ');
        out.push_str(slice(text, h.opener.start, h.opener.end));
    }
    out
}
