//! Source text with a line index, so spans can be shown as `file:line:column`.
//!
//! Looking a position up costs O(log lines) plus at most one [`CHAR_BLOCK`] of bytes, however
//! long the line: a one-line file with a finding every few bytes stays linear to render.

use super::Span;

/// A named source text. Columns are 1-based and counted in Unicode scalar values, as editors and
/// SARIF expect.
#[derive(Clone, Debug)]
pub struct SourceFile {
    pub name: String,
    pub text: String,
    line_starts: Vec<usize>,
    /// `chars_before[k]`: the number of characters in `text[..k * CHAR_BLOCK]`.
    chars_before: Vec<usize>,
}

/// Bytes between two checkpoints of the character count.
const CHAR_BLOCK: usize = 256;

/// A 1-based line and column.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LineCol {
    pub line: usize,
    pub column: usize,
}

impl SourceFile {
    pub fn new(name: impl Into<String>, text: impl Into<String>) -> Self {
        let text = text.into();
        let mut line_starts = vec![0];
        line_starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        let mut chars_before = Vec::with_capacity(text.len() / CHAR_BLOCK + 1);
        let mut count = 0;
        for block in text.as_bytes().chunks(CHAR_BLOCK) {
            chars_before.push(count);
            count += chars_in(block);
        }
        chars_before.push(count);
        Self {
            name: name.into(),
            text,
            line_starts,
            chars_before,
        }
    }

    /// The number of characters that start before byte `offset`.
    fn chars_to(&self, offset: usize) -> usize {
        let block = offset / CHAR_BLOCK;
        let from = block * CHAR_BLOCK;
        self.chars_before[block] + chars_in(&self.text.as_bytes()[from..offset])
    }

    /// The 0-based line holding byte `offset` (clamped to the text).
    pub fn line_index(&self, offset: usize) -> usize {
        let offset = offset.min(self.text.len());
        self.line_starts.partition_point(|&s| s <= offset) - 1
    }

    /// The byte offset where the 0-based line `index` starts (the text's end past the last).
    pub fn line_start(&self, index: usize) -> usize {
        self.line_starts
            .get(index)
            .copied()
            .unwrap_or(self.text.len())
    }

    /// The 1-based line and column of a byte offset (clamped to the text).
    pub fn line_col(&self, offset: usize) -> LineCol {
        let mut offset = offset.min(self.text.len());
        while !self.text.is_char_boundary(offset) {
            offset -= 1;
        }
        let line = self.line_index(offset);
        let start = self.line_starts[line];
        LineCol {
            line: line + 1,
            column: self.chars_to(offset) - self.chars_to(start) + 1,
        }
    }

    /// The 1-based line of a byte offset.
    pub fn line_of(&self, offset: usize) -> usize {
        self.line_col(offset).line
    }

    /// The byte span of a 1-based line, without its line break.
    pub fn line_span(&self, line: usize) -> Span {
        let start = self
            .line_starts
            .get(line - 1)
            .copied()
            .unwrap_or(self.text.len());
        let mut end = self
            .line_starts
            .get(line)
            .map_or(self.text.len(), |e| e - 1);
        if end > start && self.text.as_bytes()[end - 1] == b'\r' {
            end -= 1;
        }
        Span::new(start, end.max(start))
    }

    pub fn line_count(&self) -> usize {
        self.line_starts.len()
    }
}

/// Characters starting in `bytes`: every byte that is not a UTF-8 continuation byte.
fn chars_in(bytes: &[u8]) -> usize {
    bytes.iter().filter(|&&b| b.cast_signed() >= -0x40).count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_col_counts_chars_not_bytes() {
        let f = SourceFile::new("a", "ab\néx\n");
        assert_eq!(f.line_col(0), LineCol { line: 1, column: 1 });
        assert_eq!(f.line_col(3), LineCol { line: 2, column: 1 });
        assert_eq!(f.line_col(5), LineCol { line: 2, column: 2 });
        assert_eq!(f.line_span(2), Span::new(3, 6));
    }

    #[test]
    fn columns_on_long_lines_match_a_plain_count() {
        let line = "aé✓".repeat(400);
        let text = format!("x\n{line}\n");
        let f = SourceFile::new("a", text.as_str());
        for (offset, _) in text.char_indices().step_by(7) {
            let start = text[..offset].rfind('\n').map_or(0, |i| i + 1);
            let want = text[start..offset].chars().count() + 1;
            assert_eq!(f.line_col(offset).column, want, "{offset}");
        }
        // Inside a character, the column is that character's.
        assert_eq!(f.line_col(4).column, f.line_col(3).column);
    }
}
