//! Byte offsets into a document ⇄ LSP positions (0-based line, column in the negotiated unit).
//!
//! LSP counts columns in UTF-16 code units unless client and server agree on UTF-8 (bytes).
//! Offsets out of range or inside a character are clamped, never a panic: a client may send any
//! position.

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

fn to_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// The position of byte `offset` (clamped to the text, moved back to a character boundary).
pub fn position(file: &SourceFile, offset: usize, enc: Encoding) -> Position {
    let text = &file.text;
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    let line = file.line_index(offset);
    let before = &text[file.line_start(line)..offset];
    let character = match enc {
        Encoding::Utf8 => before.len(),
        Encoding::Utf16 => before.chars().map(char::len_utf16).sum(),
    };
    Position::new(to_u32(line), to_u32(character))
}

pub fn range(file: &SourceFile, span: Span, enc: Encoding) -> Range {
    Range::new(
        position(file, span.start, enc),
        position(file, span.end.max(span.start), enc),
    )
}

/// The byte offset of `pos`: a line past the end is the end of the text, a column past the end
/// of its line is the end of the line (before its line break), a column inside a character is
/// that character's start.
pub fn offset(file: &SourceFile, pos: Position, enc: Encoding) -> usize {
    let line = pos.line as usize;
    if line >= file.line_count() {
        return file.text.len();
    }
    let line_span = file.line_span(line + 1);
    let text = &file.text[line_span.start..line_span.end];
    let want = pos.character as usize;
    let mut units = 0;
    for (i, c) in text.char_indices() {
        let next = units
            + match enc {
                Encoding::Utf8 => c.len_utf8(),
                Encoding::Utf16 => c.len_utf16(),
            };
        if next > want {
            return line_span.start + i;
        }
        units = next;
    }
    line_span.end
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utf16_and_utf8_columns() {
        // é is 2 bytes, 1 UTF-16 unit; 😀 is 4 bytes, 2 units.
        let f = SourceFile::new("a", "ab\né😀x\r\nz");
        let x = "ab\né😀".len();
        assert_eq!(position(&f, x, Encoding::Utf16), Position::new(1, 3));
        assert_eq!(position(&f, x, Encoding::Utf8), Position::new(1, 6));
        assert_eq!(offset(&f, Position::new(1, 3), Encoding::Utf16), x);
        assert_eq!(offset(&f, Position::new(1, 6), Encoding::Utf8), x);
        // Inside the emoji: its start. Past the line: before the CRLF. Past the file: its end.
        assert_eq!(offset(&f, Position::new(1, 2), Encoding::Utf16), 5);
        assert_eq!(offset(&f, Position::new(1, 99), Encoding::Utf16), x + 1);
        assert_eq!(
            offset(&f, Position::new(9, 0), Encoding::Utf16),
            f.text.len()
        );
        assert_eq!(position(&f, 4, Encoding::Utf8), Position::new(1, 0));
        assert_eq!(position(&f, 999, Encoding::Utf8), Position::new(2, 1));
    }
}
