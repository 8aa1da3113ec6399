//! Source text with a line index, so spans can be shown as `file:line:column`.

use super::Span;

/// A named source text. Columns are 1-based and counted in Unicode scalar values, as editors and
/// SARIF expect.
#[derive(Clone, Debug)]
pub struct SourceFile {
    pub name: String,
    pub text: String,
    line_starts: Vec<usize>,
}

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
        Self {
            name: name.into(),
            text,
            line_starts,
        }
    }

    /// The 1-based line and column of a byte offset (clamped to the text).
    pub fn line_col(&self, offset: usize) -> LineCol {
        let offset = offset.min(self.text.len());
        let line = self.line_starts.partition_point(|&s| s <= offset) - 1;
        let start = self.line_starts[line];
        let mut col_end = offset;
        while !self.text.is_char_boundary(col_end) {
            col_end -= 1;
        }
        LineCol {
            line: line + 1,
            column: self.text[start..col_end].chars().count() + 1,
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
}
