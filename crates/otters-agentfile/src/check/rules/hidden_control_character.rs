//! AF219 hidden-control-character: a control character or a bidirectional override anywhere in
//! the file, heredoc bodies included.
//!
//! Reads the source text, since these characters hide in prompts as well as in instructions, and
//! the quoted strings that write such a character as an escape (`"\u001b[2J"`), since the value
//! holds it all the same (and becomes an annotation, an environment variable, a file). One
//! finding per line, at its first such character or string, so a file full of them stays
//! readable and formatting (which writes raw characters of strings as escapes) never adds one.

use super::Ctx;
use crate::diagnostic::{Code, Diagnostic, Span};
use otters_core::escape::escaped;

pub fn hidden_control_character(span: Span, c: char, on_line: usize) -> Diagnostic {
    Diagnostic::new(
        Code::HiddenControlCharacter,
        span,
        format!("the line holds {}{}", describe(c), more_on_line(on_line)),
    )
    .with_label(format!("`{}` here", escaped(c)))
    .with_help("delete it: terminals and editors show such characters differently from what the file holds (write a real line break or tab, and let the text's own letters set its direction)")
}

/// True for the characters AF219 reports: C0 controls but tab, line feed and the carriage return
/// of a CRLF, DEL, C1 controls, and the bidi embeddings, overrides and isolates (the marks
/// U+200E, U+200F, U+061C are ordinary in right-to-left text and are left alone).
fn reported(c: char) -> bool {
    matches!(
        c,
        '\0'..='\u{8}'
            | '\u{b}'..='\u{1f}'
            | '\u{7f}'..='\u{9f}'
            | '\u{202a}'..='\u{202e}'
            | '\u{2066}'..='\u{2069}'
    )
}

/// False for a byte that starts no character [`reported`] is true for (in UTF-8: C0 controls and
/// DEL are one byte, C1 controls start with 0xC2, the bidi controls with 0xE2). Tab and line feed
/// are never reported; a carriage return may be.
fn may_start_reported(b: u8) -> bool {
    (b < 0x20 && b != b'\t' && b != b'\n') || b == 0x7f || b == 0xc2 || b == 0xe2
}

/// The characters of `s` that [`reported`] is true for, with their byte offsets. Only the bytes
/// [`may_start_reported`] lets through are decoded (each is a character's first byte, never a
/// continuation byte), so a line of ordinary text costs one test per byte.
fn reported_in(s: &str) -> impl Iterator<Item = (usize, char)> + '_ {
    s.bytes()
        .enumerate()
        .filter(|&(_, b)| may_start_reported(b))
        .filter_map(move |(i, _)| {
            let c = s.get(i..)?.chars().next()?;
            reported(c).then_some((i, c))
        })
}

fn describe(c: char) -> String {
    let name = match c {
        '\u{1b}' => "ESCAPE, which starts terminal escape sequences",
        '\r' => "a carriage return without a line feed, which moves the cursor back over the line",
        '\0' => "a NUL character",
        '\u{202a}' => "LEFT-TO-RIGHT EMBEDDING",
        '\u{202b}' => "RIGHT-TO-LEFT EMBEDDING",
        '\u{202c}' => "POP DIRECTIONAL FORMATTING",
        '\u{202d}' => "LEFT-TO-RIGHT OVERRIDE",
        '\u{202e}' => "RIGHT-TO-LEFT OVERRIDE",
        '\u{2066}' => "LEFT-TO-RIGHT ISOLATE",
        '\u{2067}' => "RIGHT-TO-LEFT ISOLATE",
        '\u{2068}' => "FIRST STRONG ISOLATE",
        '\u{2069}' => "POP DIRECTIONAL ISOLATE",
        _ => "a control character",
    };
    let kind = if ('\u{202a}'..='\u{2069}').contains(&c) {
        ", a bidirectional control that reorders how the text is shown"
    } else {
        ""
    };
    format!("U+{:04X} {name}{kind}", u32::from(c))
}

pub fn escaped_control_character(span: Span, c: char, on_line: usize) -> Diagnostic {
    Diagnostic::new(
        Code::HiddenControlCharacter,
        span,
        format!(
            "this string holds {} (written as an escape){}",
            describe(c),
            more_on_line(on_line)
        ),
    )
    .with_label(format!("holds `{}`", escaped(c)))
    .with_help("remove the escape: the value reaches image annotations, the runtime's environment or files, where other tools show it raw")
}

fn more_on_line(on_line: usize) -> String {
    if on_line > 1 {
        format!(" (and {} more on this line)", on_line - 1)
    } else {
        String::new()
    }
}

/// One place on a line that AF219 reports: a raw character, or a quoted string that writes one
/// as an escape.
#[derive(Clone, Copy)]
enum Hidden {
    Raw(usize, char),
    Escaped(Span, char),
}

impl Hidden {
    fn start(self) -> usize {
        match self {
            Hidden::Raw(at, _) => at,
            Hidden::Escaped(span, _) => span.start,
        }
    }
}

/// One finding per line, at the first raw character or escaping string of the line; the message
/// counts the others. Counting both kinds together keeps the number of findings the same when
/// `otters fmt` writes a raw character of a quoted string as its escape (issue 18.2: a line with
/// a stray carriage return and a raw U+202E in a string had one finding, and two after `fmt`).
pub fn check(cx: &Ctx<'_>, out: &mut Vec<Diagnostic>) {
    let text = &cx.file.text;
    let mut escapes: Vec<(Span, char)> = Vec::new();
    for ins in cx.ast.instructions() {
        for t in ins.args.tokens() {
            let Some((_, c)) = reported_in(&t.text).next() else {
                continue;
            };
            let written = text.get(t.span.start..t.span.end).unwrap_or("");
            if !written.contains(c) {
                escapes.push((t.span, c));
            }
        }
    }
    // Almost every file holds none: one pass over its bytes settles it (char-by-char passes over
    // every token and line were a tenth of a lint's instructions, issue 22).
    if escapes.is_empty() && reported_in(text).next().is_none() {
        return;
    }
    escapes.sort_by_key(|(span, _)| span.start);
    let mut escapes = escapes.into_iter().peekable();
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let end = offset + line.len();
        let body = line.strip_suffix('\n').unwrap_or(line);
        let body = body
            .strip_suffix('\r')
            .filter(|_| line.ends_with('\n'))
            .unwrap_or(body);
        let mut first: Option<Hidden> = None;
        let mut count = 0;
        for (i, c) in reported_in(body) {
            count += 1;
            first.get_or_insert(Hidden::Raw(offset + i, c));
        }
        while let Some(&(span, c)) = escapes.peek().filter(|(s, _)| s.start < end) {
            escapes.next();
            count += 1;
            if first.is_none_or(|f| span.start < f.start()) {
                first = Some(Hidden::Escaped(span, c));
            }
        }
        match first {
            Some(Hidden::Raw(at, c)) => out.push(hidden_control_character(
                Span::new(at, at + c.len_utf8()),
                c,
                count,
            )),
            Some(Hidden::Escaped(span, c)) => {
                out.push(escaped_control_character(span, c, count));
            }
            None => {}
        }
        offset = end;
    }
}

#[cfg(test)]
mod tests {
    use crate::diagnostic::Code;

    #[test]
    fn the_byte_prefilter_lets_every_reported_character_through() {
        // The fast path skips a line (or the file) none of whose bytes may start a reported
        // character: every reported character must start with such a byte.
        let mut buf = [0u8; 4];
        let reported = (0..=0x10_ffff_u32)
            .filter_map(char::from_u32)
            .filter(|&c| super::reported(c));
        let mut n = 0;
        for c in reported {
            n += 1;
            let first = c.encode_utf8(&mut buf).as_bytes()[0];
            assert!(super::may_start_reported(first), "U+{:04X}", u32::from(c));
        }
        assert_eq!(n, 9 + 21 + 33 + 5 + 4);
        assert!(!super::may_start_reported(b'\t') && !super::may_start_reported(b'\n'));
    }

    #[test]
    fn reported_in_finds_what_a_char_by_char_scan_finds() {
        let s = "a — b\u{1b}[2J é\u{85}\u{202e}x\u{2066}\r\t\u{200f}→ \u{7f}\u{0}日本 \u{9f}\u{a0}";
        let naive: Vec<(usize, char)> = s
            .char_indices()
            .filter(|&(_, c)| super::reported(c))
            .collect();
        let fast: Vec<(usize, char)> = super::reported_in(s).collect();
        assert_eq!(fast, naive);
        assert_eq!(fast.len(), 8);
    }

    #[test]
    fn table() {
        super::super::assert_table(
            Code::HiddenControlCharacter,
            &[
                ("NAME a\u{1b}[2Jb", &[2]),
                ("CONTEXT S <<E\nsafe \u{202e}txt.exe\u{202c}\nE", &[3]),
                ("LABEL a=b\r\nLABEL c=d\r", &[]),
                ("LABEL a=b\rLABEL c=d", &[2]),
                ("LABEL a=\"\u{200f}שלום\"\tx", &[]),
                ("LABEL a=\u{85}\u{7}\u{7}", &[2]),
                ("LABEL a=\"\\u001b[2J\"", &[2]),
                ("ENV A=\"x\\u202Ey\" \"\\a\"", &[2]),
                ("ENV \rA=\"\\u202e\"\nLABEL a=\"\\a\"", &[2, 3]),
                ("LABEL a=\"\\t\\n ok\"", &[]),
            ],
        );
    }

    /// The AF219 findings of `text`.
    fn findings(text: &str) -> Vec<crate::diagnostic::Diagnostic> {
        let file = crate::diagnostic::SourceFile::new("A", text);
        crate::check::analyze(&file, &crate::check::Options::default())
            .diagnostics
            .into_iter()
            .filter(|d| d.code == Code::HiddenControlCharacter)
            .collect()
    }

    #[test]
    fn one_finding_per_line_counts_the_rest() {
        let d = findings("FROM scratch\nNAME \u{202e}\u{202e}\u{202e}\n");
        assert_eq!(d.len(), 1);
        assert!(
            d[0].message.contains("U+202E RIGHT-TO-LEFT OVERRIDE"),
            "{}",
            d[0].message
        );
        assert!(d[0].message.contains("2 more"), "{}", d[0].message);
        assert_eq!(d[0].span, Some(crate::diagnostic::Span::new(18, 21)));
    }

    #[test]
    fn an_escape_on_a_line_with_a_raw_character_is_counted_not_reported_again() {
        let d = findings("FROM scratch\nENV \rA=\"\\u202e\" \"\\a\"\n");
        assert_eq!(d.len(), 1, "{d:#?}");
        assert!(d[0].message.contains("U+000D"), "{}", d[0].message);
        assert!(d[0].message.contains("2 more"), "{}", d[0].message);
        assert_eq!(d[0].span, Some(crate::diagnostic::Span::new(17, 18)));
    }
}
