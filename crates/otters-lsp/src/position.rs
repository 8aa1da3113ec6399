//! Byte offsets into a document ⇄ LSP positions (0-based line, column in the negotiated unit).
//!
//! LSP counts columns in UTF-16 code units unless client and server agree on UTF-8 (bytes).
//! Offsets out of range or inside a character are clamped, never a panic: a client may send any
//! position.
//!
//! A UTF-16 column is not a byte count, so each document keeps a [`Columns`] table built in one
//! pass over its text: the UTF-16 units before every `BLOCK`-th byte. A conversion either way
//! costs a binary search of the line index and of that table plus at most one block of bytes,
//! however long the line: a 256 KB line with a finding every few bytes stays linear to publish.

use lsp_types::{Position, Range};
use otters_agentfile::diagnostic::SourceFile;
use otters_agentfile::Span;

/// The unit of LSP columns.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Encoding {
    Utf8,
    #[default]
    Utf16,
}

/// Bytes between two checkpoints of the UTF-16 count.
const BLOCK: usize = 256;

fn to_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// UTF-16 units of the characters that start in `bytes`: one per character, two for a character
/// of four UTF-8 bytes (a surrogate pair). Counting lead bytes only, a slice may start or end
/// inside a character.
fn units_in(bytes: &[u8]) -> usize {
    bytes
        .iter()
        .map(|&b| usize::from(b & 0xC0 != 0x80) + usize::from(b >= 0xF0))
        .sum()
}

/// UTF-16 units of the character whose UTF-8 lead byte is `b` (0 for a continuation byte).
fn units_of_char_at(b: u8) -> usize {
    units_in(&[b])
}

/// The per-document table of UTF-16 units: `before[k]` is the count in `text[..k * BLOCK]`.
#[derive(Clone, Debug, Default)]
pub struct Columns {
    before: Vec<usize>,
}

#[cfg(test)]
thread_local! {
    // How many bytes the conversions of this thread looked at one by one (tests count them).
    pub static SCANNED: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

#[cfg(test)]
fn scanned(n: usize) {
    SCANNED.with(|s| s.set(s.get() + n));
}

#[cfg(not(test))]
fn scanned(_: usize) {}

impl Columns {
    /// One pass over `text`.
    pub fn new(text: &str) -> Columns {
        let mut before = Vec::with_capacity(text.len() / BLOCK + 2);
        let mut count = 0;
        for block in text.as_bytes().chunks(BLOCK) {
            before.push(count);
            count += units_in(block);
        }
        before.push(count);
        Columns { before }
    }

    /// UTF-16 units in `text[..offset]`.
    fn units_to(&self, text: &str, offset: usize) -> usize {
        let block = offset / BLOCK;
        let from = block * BLOCK;
        scanned(offset - from);
        self.before.get(block).copied().unwrap_or(0) + units_in(&text.as_bytes()[from..offset])
    }

    /// The position of byte `offset` (clamped to the text, moved back to a character boundary).
    pub fn position(&self, file: &SourceFile, offset: usize, enc: Encoding) -> Position {
        let text = &file.text;
        let mut offset = offset.min(text.len());
        while !text.is_char_boundary(offset) {
            offset -= 1;
        }
        let line = file.line_index(offset);
        let start = file.line_start(line);
        let character = match enc {
            Encoding::Utf8 => offset - start,
            Encoding::Utf16 => self.units_to(text, offset) - self.units_to(text, start),
        };
        Position::new(to_u32(line), to_u32(character))
    }

    pub fn range(&self, file: &SourceFile, span: Span, enc: Encoding) -> Range {
        Range::new(
            self.position(file, span.start, enc),
            self.position(file, span.end.max(span.start), enc),
        )
    }

    /// The byte offset of `pos`: a line past the end is the end of the text, a column past the
    /// end of its line is the end of the line (before its line break), a column inside a
    /// character is that character's start.
    pub fn offset(&self, file: &SourceFile, pos: Position, enc: Encoding) -> usize {
        let line = pos.line as usize;
        if line >= file.line_count() {
            return file.text.len();
        }
        let text = &file.text;
        let line_span = file.line_span(line + 1);
        let want = pos.character as usize;
        match enc {
            Encoding::Utf8 => {
                let mut at = line_span.start.saturating_add(want).min(line_span.end);
                while !text.is_char_boundary(at) {
                    at -= 1;
                }
                at
            }
            Encoding::Utf16 => {
                let target = self.units_to(text, line_span.start).saturating_add(want);
                if target >= self.units_to(text, line_span.end) {
                    return line_span.end;
                }
                // The last checkpoint at or before the target (never before the line), then the
                // character holding unit `target`, one byte at a time.
                let block = self
                    .before
                    .partition_point(|&u| u <= target)
                    .saturating_sub(1);
                let mut at = (block * BLOCK).max(line_span.start);
                let mut units = self.units_to(text, at);
                let bytes = text.as_bytes();
                while at < line_span.end {
                    scanned(1);
                    let n = units_of_char_at(bytes[at]);
                    if n > 0 && units + n > target {
                        return at;
                    }
                    units += n;
                    at += 1;
                }
                line_span.end
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn both(text: &str) -> (SourceFile, Columns) {
        (SourceFile::new("a", text), Columns::new(text))
    }

    #[test]
    fn utf16_and_utf8_columns() {
        // é is 2 bytes, 1 UTF-16 unit; 😀 is 4 bytes, 2 units.
        let (f, c) = both("ab\né😀x\r\nz");
        let x = "ab\né😀".len();
        assert_eq!(c.position(&f, x, Encoding::Utf16), Position::new(1, 3));
        assert_eq!(c.position(&f, x, Encoding::Utf8), Position::new(1, 6));
        assert_eq!(c.offset(&f, Position::new(1, 3), Encoding::Utf16), x);
        assert_eq!(c.offset(&f, Position::new(1, 6), Encoding::Utf8), x);
        // Inside the emoji: its start. Past the line: before the CRLF. Past the file: its end.
        assert_eq!(c.offset(&f, Position::new(1, 2), Encoding::Utf16), 5);
        assert_eq!(c.offset(&f, Position::new(1, 5), Encoding::Utf8), 5);
        assert_eq!(c.offset(&f, Position::new(1, 99), Encoding::Utf16), x + 1);
        assert_eq!(c.offset(&f, Position::new(1, 99), Encoding::Utf8), x + 1);
        assert_eq!(
            c.offset(&f, Position::new(9, 0), Encoding::Utf16),
            f.text.len()
        );
        assert_eq!(c.position(&f, 4, Encoding::Utf8), Position::new(1, 0));
        assert_eq!(c.position(&f, 999, Encoding::Utf8), Position::new(2, 1));
    }

    /// The table gives what counting from the line's start gives, at every character of lines
    /// that cross many checkpoints with characters of every width straddling them.
    #[test]
    fn the_table_agrees_with_a_plain_count() {
        let line = "aé✓😀".repeat(300);
        let text = format!("x\n{line}\r\n{line}");
        let (f, c) = both(&text);
        for (offset, ch) in text.char_indices() {
            let start = text[..offset].rfind('\n').map_or(0, |i| i + 1);
            let line = text[..offset].matches('\n').count();
            let units: usize = text[start..offset].chars().map(char::len_utf16).sum();
            let pos = Position::new(to_u32(line), to_u32(units));
            assert_eq!(c.position(&f, offset, Encoding::Utf16), pos, "{offset}");
            if ch != '\r' && ch != '\n' {
                assert_eq!(c.offset(&f, pos, Encoding::Utf16), offset, "{offset}");
            }
            if ch.len_utf16() == 2 {
                // The second unit of a surrogate pair is inside the character: its start.
                let inside = Position::new(pos.line, pos.character + 1);
                assert_eq!(c.offset(&f, inside, Encoding::Utf16), offset);
            }
        }
    }

    /// Converting a finding every few bytes of a 256 KB line looks at a bounded number of bytes
    /// per conversion, not at the line up to the finding (which was quadratic: 23 s a keystroke).
    #[test]
    fn conversions_on_a_long_line_scan_a_bounded_number_of_bytes() {
        let line = "é1 ".repeat(256 * 1024 / 4);
        let (f, c) = both(&line);
        SCANNED.with(|s| s.set(0));
        let mut n = 0;
        for (offset, _) in line.char_indices().step_by(3) {
            let p = c.position(&f, offset, Encoding::Utf16);
            assert_eq!(c.offset(&f, p, Encoding::Utf16), offset);
            n += 1;
        }
        let per = SCANNED.with(std::cell::Cell::get) / n;
        assert!(per <= 4 * BLOCK, "{per} bytes looked at per conversion");
    }
}
