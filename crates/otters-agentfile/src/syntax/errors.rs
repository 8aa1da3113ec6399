//! Constructors for the syntax stage's diagnostics (`AF0xx`).

use super::ast::Keyword;
use crate::diagnostic::{Code, Diagnostic, Fix, Span};

pub fn invalid_utf8(offset: usize) -> Diagnostic {
    Diagnostic::new(
        Code::InvalidUtf8,
        Span::point(offset),
        format!("the file is not valid UTF-8 (first bad byte at offset {offset})"),
    )
    .with_help("save the Agentfile as UTF-8")
}

pub fn byte_order_mark(span: Span) -> Diagnostic {
    Diagnostic::new(
        Code::ByteOrderMark,
        span,
        "the file starts with a byte-order mark",
    )
    .with_label("U+FEFF here")
    .with_help("save the file as UTF-8 without a BOM")
}

pub fn unknown_instruction(span: Span, word: &str) -> Diagnostic {
    let upper = word.to_ascii_uppercase();
    // No keyword is longer than 10 letters: a longer word is no typo of one, and the edit
    // distance of a megabyte-long word costs seconds.
    let best = Keyword::ALL
        .iter()
        .filter(|_| upper.len() <= 20)
        .map(|k| (strsim::damerau_levenshtein(&upper, k.as_str()), k.as_str()))
        .min();
    let guess = best
        .filter(|&(d, k)| d <= 2 || (k.starts_with(&upper) && upper.len() >= 2))
        .map(|(_, k)| k);
    let help = match guess {
        Some(k) => format!("did you mean `{k}`?"),
        None => "instructions are FROM, RUNTIME, MODEL, NAME, CONTEXT, CONFIG, ENV, BIN, EXEC, ADD, LABEL, ARG, CAPABILITY, MOUNT and EGRESS; a `#` starts a comment line".to_owned(),
    };
    let d = Diagnostic::new(
        Code::UnknownInstruction,
        span,
        format!("unknown instruction `{word}`"),
    )
    .with_label("not an instruction")
    .with_help(help);
    match guess {
        Some(k) => {
            // Safe when one edit away from this keyword and from no other: a typo, not a guess.
            let near = |k: &str| strsim::damerau_levenshtein(&upper, k) <= 1;
            let safe = near(k) && Keyword::ALL.iter().filter(|o| near(o.as_str())).count() == 1;
            d.with_fix(Fix::replace(format!("Replace with `{k}`"), span, k, safe))
        }
        None => d,
    }
}

pub fn malformed(span: Span, keyword: Keyword, expected: &str) -> Diagnostic {
    Diagnostic::new(
        Code::MalformedInstruction,
        span,
        format!("malformed {} instruction: {expected}", keyword.as_str()),
    )
    .with_label(expected.to_owned())
    .with_help(format!("write it as `{}`", keyword.usage()))
}

pub fn invalid_escape(span: Span, message: &str) -> Diagnostic {
    Diagnostic::new(Code::InvalidStringEscape, span, format!("invalid string: {message}"))
        .with_label("here")
        .with_help("allowed escapes are \\\" \\\\ \\n \\t \\r \\a \\b \\f \\v \\xHH \\NNN \\uHHHH \\UHHHHHHHH; write a `$` or `'` without a backslash")
}

pub fn unterminated_heredoc(opener: Span, marker: &str) -> Diagnostic {
    Diagnostic::new(
        Code::UnterminatedHeredoc,
        opener,
        format!("unterminated heredoc: no line `{marker}` closes it"),
    )
    .with_label("opened here")
    .with_help(format!(
        "end the body with a line containing only `{marker}`"
    ))
}
