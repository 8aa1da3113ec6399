//! Where report text may wrap: only at ASCII spaces outside backticks, and never inside a word,
//! so a reference, a path or a `command with its arguments` stays on one line and can be copied
//! (issue 18.16: miette's defaults wrapped long references after `/` and at hyphens, and cut
//! words longer than the line).
//!
//! Every miette handler otters renders with (the human lint format here, the CLI's error hook)
//! takes these settings; a line that cannot fit is left long, for the terminal to fold.

use miette::GraphicalReportHandler;
use textwrap::core::Word;
use textwrap::{WordSeparator, WordSplitter};

/// Words end after a run of ASCII spaces outside backticks (see the module header).
pub fn word_separator() -> WordSeparator {
    WordSeparator::Custom(words_outside_code)
}

/// No hyphenation: `my-org/agent` is one word.
pub fn word_splitter() -> WordSplitter {
    WordSplitter::NoHyphenation
}

/// `h` wrapping as the module header says.
pub fn keep_words(h: GraphicalReportHandler) -> GraphicalReportHandler {
    h.with_word_separator(word_separator())
        .with_word_splitter(word_splitter())
        .with_break_words(false)
}

fn words_outside_code(line: &str) -> Box<dyn Iterator<Item = Word<'_>> + '_> {
    let bytes = line.as_bytes();
    let mut words = Vec::new();
    let (mut start, mut i, mut in_code) = (0, 0, false);
    while i < bytes.len() {
        match bytes[i] {
            b'`' => in_code = !in_code,
            b' ' if !in_code => {
                // A word takes the run of spaces after it as its whitespace.
                let end = bytes[i..]
                    .iter()
                    .position(|&b| b != b' ')
                    .map_or(bytes.len(), |n| i + n);
                words.push(Word::from(&line[start..end]));
                start = end;
                i = end;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    if start < line.len() {
        words.push(Word::from(&line[start..]));
    }
    Box::new(words.into_iter())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fill(text: &str, width: usize) -> String {
        let opts = textwrap::Options::new(width)
            .word_separator(word_separator())
            .word_splitter(word_splitter())
            .break_words(false);
        textwrap::fill(text, opts)
    }

    #[test]
    fn references_and_commands_are_never_cut() {
        let r = "registry.example.com:5000/some-long-team-name/agents/weather-forecaster:1.0";
        let text =
            format!("{r}: not in the local store; run `otters pull {r}` or drop --pull never");
        let out = fill(&text, 30);
        let lines: Vec<&str> = out.lines().collect();
        assert!(lines.contains(&format!("{r}:").as_str()), "{out}");
        assert!(
            lines
                .iter()
                .any(|l| l.contains(&format!("`otters pull {r}`"))),
            "{out}"
        );
        // Prose still wraps at its spaces.
        assert!(lines.contains(&"or drop --pull never"), "{out}");
        assert_eq!(out.replace('\n', " "), text);
    }

    #[test]
    fn an_unclosed_backtick_keeps_the_rest_of_the_line_whole() {
        let out = fill("see `otters pull a b c d e f g", 10);
        assert_eq!(out, "see\n`otters pull a b c d e f g");
    }
}
