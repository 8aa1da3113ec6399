//! The source text one human-format report shows: only the lines around the diagnostic's labels,
//! with unsafe characters escaped and very long lines shortened, as a miette [`SourceCode`].
//!
//! miette's `SourceCode` for a string scans the text from its start on every look-up, which made
//! human output quadratic in the number of findings (20,000 findings took 15 s). A [`Snippet`]
//! holds a few lines per label, found through the file's line index, so a report costs what it
//! prints. Its line numbers are those of the file; its byte offsets are its own, and
//! [`Snippet::span`] maps a file span into them.
//!
//! Takes: the file and the spans of one diagnostic. Returns: a `SourceCode` for miette. Must
//! never: show a control character raw (see [`otters_core::escape`]), or copy more of a
//! line longer than [`LONG_LINE`] bytes than the parts around its labels.

use crate::diagnostic::{SourceFile, Span};
use miette::{MietteError, MietteSpanContents, SourceCode, SourceSpan, SpanContents};
use otters_core::escape::is_unsafe;
use std::fmt::Write as _;

/// Lines of context miette shows around a label (`GraphicalReportHandler`'s default).
const CONTEXT: usize = 1;
/// A line longer than this many bytes is shortened to the parts around its labels.
pub const LONG_LINE: usize = 512;
/// Bytes kept on each side of a label's start and end on a shortened line.
const KEEP: usize = 96;
/// What stands for the bytes left out of a shortened line.
const GAP: &str = "…";

/// A few lines of one file, ready for miette.
pub(super) struct Snippet {
    name: String,
    text: String,
    segments: Vec<Segment>,
    pieces: Vec<Piece>,
    /// The primary label's start in `text`, and its real 0-based column in characters (miette
    /// would count the bytes of the shortened, escaped line).
    primary: (usize, usize),
}

/// A run of whole lines of the file, stored at `start..end` of the snippet's text.
struct Segment {
    start: usize,
    end: usize,
    /// The 0-based line number of the first line.
    first_line: usize,
}

/// Bytes `orig..orig_end` of the file, shown at `t..t_end`: copied as they are, or replaced (by
/// an escape or a gap), in which case every offset inside maps to `t`.
struct Piece {
    orig: usize,
    orig_end: usize,
    t: usize,
    t_end: usize,
    copied: bool,
}

impl Snippet {
    /// The lines `spans` need (with context), escaped and shortened. `spans[0]` is the primary.
    pub(super) fn new(file: &SourceFile, name: String, spans: &[Span]) -> Snippet {
        let spans: Vec<Span> = spans.iter().map(|s| clamp(file, *s)).collect();
        let last_line = file.line_index(file.text.len());
        let mut ranges: Vec<(usize, usize)> = spans
            .iter()
            .map(|s| {
                let first = file.line_index(s.start);
                let last = file.line_index(s.end.saturating_sub(1).max(s.start));
                (
                    first.saturating_sub(CONTEXT + 1),
                    (last + CONTEXT + 1).min(last_line),
                )
            })
            .collect();
        ranges.sort_unstable();
        let mut merged: Vec<(usize, usize)> = Vec::new();
        for (a, b) in ranges {
            match merged.last_mut() {
                Some(last) if a <= last.1 + 1 => last.1 = last.1.max(b),
                _ => merged.push((a, b)),
            }
        }
        let mut s = Snippet {
            name,
            text: String::new(),
            segments: Vec::new(),
            pieces: Vec::new(),
            primary: (0, 0),
        };
        for (a, b) in merged {
            let start = s.text.len();
            for line in a..=b {
                s.push_line(file, line, &spans);
            }
            s.segments.push(Segment {
                start,
                end: s.text.len(),
                first_line: a,
            });
        }
        if let Some(p) = spans.first() {
            let column = file.line_col(p.start).column - 1;
            s.primary = (s.offset(p.start), column);
        }
        s
    }

    /// A span of the file as a span of this snippet.
    pub(super) fn span(&self, file: &SourceFile, s: Span) -> SourceSpan {
        let s = clamp(file, s);
        let start = self.offset(s.start);
        let end = self.offset(s.end).max(start);
        SourceSpan::new(start.into(), end - start)
    }

    fn offset(&self, orig: usize) -> usize {
        let i = self.pieces.partition_point(|p| p.orig <= orig);
        let Some(p) = i.checked_sub(1).map(|i| &self.pieces[i]) else {
            return 0;
        };
        if orig >= p.orig_end {
            p.t_end
        } else if p.copied {
            p.t + (orig - p.orig)
        } else {
            p.t
        }
    }

    fn push_line(&mut self, file: &SourceFile, line: usize, spans: &[Span]) {
        let start = file.line_start(line);
        let next = file.line_start(line + 1);
        let has_newline = next > start && file.text.as_bytes()[next - 1] == b'\n';
        let end = if has_newline { next - 1 } else { next };
        let mut kept = vec![(start, end)];
        if end - start > LONG_LINE {
            kept = windows(file, start, end, spans);
        }
        let mut at = start;
        for (a, b) in kept {
            if a > at {
                self.replaced(at, a, GAP);
            }
            self.copy_escaped(file, a, b, end);
            at = b;
        }
        if at < end {
            self.replaced(at, end, GAP);
        }
        if has_newline {
            self.copied(end, end + 1, "\n");
        }
    }

    /// Copies `file.text[a..b]`, escaping unsafe characters; a `\r` right before the line's end
    /// (`line_end`) is a CRLF line break and stays.
    fn copy_escaped(&mut self, file: &SourceFile, a: usize, b: usize, line_end: usize) {
        let text = &file.text[a..b];
        let mut run = a;
        for (i, c) in text.char_indices() {
            let at = a + i;
            let crlf = c == '\r' && at + 1 == line_end && line_end < file.text.len();
            if is_unsafe(c) && !crlf {
                if run < at {
                    self.copied(run, at, &file.text[run..at]);
                }
                let mut e = String::new();
                let _ = write!(e, "\\u{{{:x}}}", u32::from(c));
                self.replaced(at, at + c.len_utf8(), &e);
                run = at + c.len_utf8();
            }
        }
        if run < b {
            self.copied(run, b, &file.text[run..b]);
        }
    }

    fn copied(&mut self, orig: usize, orig_end: usize, text: &str) {
        let t = self.text.len();
        self.text.push_str(text);
        match self.pieces.last_mut() {
            Some(p) if p.copied && p.orig_end == orig && p.t_end == t => {
                p.orig_end = orig_end;
                p.t_end = self.text.len();
            }
            _ => self.pieces.push(Piece {
                orig,
                orig_end,
                t,
                t_end: self.text.len(),
                copied: true,
            }),
        }
    }

    fn replaced(&mut self, orig: usize, orig_end: usize, text: &str) {
        let t = self.text.len();
        self.text.push_str(text);
        self.pieces.push(Piece {
            orig,
            orig_end,
            t,
            t_end: self.text.len(),
            copied: false,
        });
    }
}

/// A span inside the text, on character boundaries.
fn clamp(file: &SourceFile, s: Span) -> Span {
    let floor = |mut o: usize| {
        o = o.min(file.text.len());
        while !file.text.is_char_boundary(o) {
            o -= 1;
        }
        o
    };
    let start = floor(s.start);
    Span::new(start, floor(s.end).max(start))
}

/// The parts of a long line `start..end` to show: [`KEEP`] bytes around every label boundary on
/// it (or its beginning, when no boundary is on it), merged, on character boundaries.
fn windows(file: &SourceFile, start: usize, end: usize, spans: &[Span]) -> Vec<(usize, usize)> {
    let text = &file.text;
    let floor = |mut o: usize| {
        while !text.is_char_boundary(o) {
            o -= 1;
        }
        o
    };
    let ceil = |mut o: usize| {
        while !text.is_char_boundary(o) {
            o += 1;
        }
        o
    };
    let mut points: Vec<usize> = spans
        .iter()
        .flat_map(|s| [s.start, s.end])
        .filter(|&p| (start..=end).contains(&p))
        .collect();
    if points.is_empty() {
        points.push(start);
    }
    points.sort_unstable();
    let mut out: Vec<(usize, usize)> = Vec::new();
    for p in points {
        let a = floor(p.saturating_sub(KEEP).max(start));
        let b = ceil((p + KEEP).min(end));
        match out.last_mut() {
            Some(last) if a <= last.1 => last.1 = last.1.max(b),
            _ => out.push((a, b)),
        }
    }
    out
}

impl SourceCode for Snippet {
    fn read_span<'a>(
        &'a self,
        span: &SourceSpan,
        context_lines_before: usize,
        context_lines_after: usize,
    ) -> Result<Box<dyn SpanContents<'a> + 'a>, MietteError> {
        let start = span.offset();
        let end = start + span.len();
        let seg = self
            .segments
            .iter()
            .find(|s| s.start <= start && end <= s.end)
            .ok_or(MietteError::OutOfBounds)?;
        let slice = &self.text[seg.start..seg.end];
        let local = SourceSpan::new((start - seg.start).into(), span.len());
        let c = <str as SourceCode>::read_span(
            slice,
            &local,
            context_lines_before,
            context_lines_after,
        )?;
        let data = c.data();
        let column = if context_lines_before == 0 && start == self.primary.0 {
            self.primary.1
        } else {
            c.column()
        };
        // The lines this contents covers (miette's own count runs from the file's start, which
        // made it merge far-apart snippets into one that prints every line between them).
        let lines = memchr_count(data);
        Ok(Box::new(MietteSpanContents::new_named(
            self.name.clone(),
            data,
            SourceSpan::new((c.span().offset() + seg.start).into(), c.span().len()),
            seg.first_line + c.line(),
            column,
            lines,
        )))
    }
}

/// Line feeds in `data`.
fn memchr_count(data: &[u8]) -> usize {
    data.split(|&b| b == b'\n').count() - 1
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines_of(s: &Snippet) -> Vec<(usize, &str)> {
        s.segments
            .iter()
            .flat_map(|seg| {
                s.text[seg.start..seg.end]
                    .split_inclusive('\n')
                    .enumerate()
                    .map(move |(i, l)| (seg.first_line + i, l))
            })
            .collect()
    }

    #[test]
    fn keeps_only_the_lines_around_labels() {
        let mut text = String::new();
        for i in 0..100 {
            let _ = writeln!(text, "line {i}");
        }
        let f = SourceFile::new("a", text.as_str());
        let at = |line: usize| f.line_start(line) + 1;
        let s = Snippet::new(
            &f,
            "a".into(),
            &[Span::new(at(50), at(50) + 2), Span::new(at(3), at(3))],
        );
        let shown: Vec<usize> = lines_of(&s).iter().map(|(n, _)| *n).collect();
        assert_eq!(shown, [1, 2, 3, 4, 5, 48, 49, 50, 51, 52]);
        let span = s.span(&f, Span::new(at(50), at(50) + 2));
        assert_eq!(&s.text[span.offset()..span.offset() + span.len()], "in");
        let c = s.read_span(&span, 1, 1).unwrap();
        assert_eq!(c.line(), 49);
        assert_eq!(
            std::str::from_utf8(c.data()).unwrap(),
            "line 49\nline 50\nline 51\n"
        );
    }

    #[test]
    fn escapes_controls_and_maps_spans_over_them() {
        let f = SourceFile::new("a", "NAME a\u{1b}[2Jb\r\nX\ry\n");
        let s = Snippet::new(&f, "a".into(), &[Span::new(5, 11)]);
        assert!(!s.text.contains('\u{1b}'));
        assert!(s.text.contains("a\\u{1b}[2Jb\r\n"), "{:?}", s.text);
        assert!(s.text.contains("X\\u{d}y"), "{:?}", s.text);
        let span = s.span(&f, Span::new(5, 11));
        assert_eq!(
            &s.text[span.offset()..span.offset() + span.len()],
            "a\\u{1b}[2Jb"
        );
    }

    #[test]
    fn shortens_long_lines_around_labels() {
        let long = format!("CAPABILITY {}dup {}", "a ".repeat(5000), "b ".repeat(5000));
        let f = SourceFile::new("a", long.as_str());
        let at = long.find("dup").unwrap();
        let s = Snippet::new(&f, "a".into(), &[Span::new(at, at + 3)]);
        assert!(s.text.len() < 3 * KEEP + 64, "{}", s.text.len());
        assert!(s.text.starts_with('…') && s.text.ends_with('…'));
        let span = s.span(&f, Span::new(at, at + 3));
        assert_eq!(&s.text[span.offset()..span.offset() + span.len()], "dup");
        assert_eq!(s.primary.1, f.line_col(at).column - 1);
    }
}
