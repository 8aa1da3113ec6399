//! Formatting: the whole document, or the lines of a range, as `otters fmt` writes them
//! (`otters_agentfile::fmt`). A text with syntax errors is not formatted (`otters fmt` refuses it
//! too): the answer is then why, naming the first error's line, for the client to show.

use crate::document::Document;
use otters_agentfile::{fmt, Span};
use otters_core::files;

/// The formatted text, or why the document cannot be formatted.
pub fn formatted(doc: &Document) -> Result<String, String> {
    let name = &doc.file.name;
    if doc.text().len() as u64 > files::MAX_AGENTFILE {
        return Err(format!(
            "otters cannot format {name}: it is over {}, the most `otters fmt` reads",
            files::size(files::MAX_AGENTFILE)
        ));
    }
    fmt::format_str(doc.text()).map_err(|errors| {
        let count = errors.len();
        let Some(first) = errors.first() else {
            return format!("otters cannot format {name}");
        };
        let at = doc.file.line_col(first.start());
        let more = match count {
            1 => String::new(),
            n => format!(" (and {} more)", n - 1),
        };
        format!(
            "otters cannot format {name}: a syntax error on line {}: {}{more}. Fix it first; `otters lint {name}` lists every finding.",
            at.line, first.message
        )
    })
}

/// The edits that format the lines `first..=last` (0-based) of the document: each block of the
/// formatting diff that touches those lines, whole (an instruction continued over the range's
/// edge is formatted entirely). Empty when those lines are already formatted.
pub fn range_edits(
    doc: &Document,
    first: usize,
    last: usize,
) -> Result<Vec<(Span, String)>, String> {
    let new = formatted(doc)?;
    let old = doc.text();
    // Byte offset of each old line's start, and one past the end.
    let mut starts = vec![0];
    starts.extend(old.split_inclusive('\n').scan(0, |at, l| {
        *at += l.len();
        Some(*at)
    }));
    let new_lines: Vec<&str> = new.split_inclusive('\n').collect();
    let mut out = Vec::new();
    // A block that keeps its line count is line for line (the usual case: each instruction
    // formatted in place), so a range inside it takes only its own lines.
    let blocks = fmt::line_changes(old, &new).into_iter().flat_map(|c| {
        if c.old.len() == c.new.len() {
            c.old
                .zip(c.new)
                .map(|(o, n)| fmt::LineChange {
                    old: o..o + 1,
                    new: n..n + 1,
                })
                .collect()
        } else {
            vec![c]
        }
    });
    for c in blocks {
        // A pure insertion (empty old range) touches the line it is inserted before.
        let touches = c.old.start <= last && c.old.end.max(c.old.start + 1) > first;
        if !touches {
            continue;
        }
        let span = Span::new(starts[c.old.start], starts[c.old.end]);
        out.push((span, new_lines[c.new.clone()].concat()));
    }
    Ok(out)
}
