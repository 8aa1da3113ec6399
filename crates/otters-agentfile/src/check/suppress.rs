//! Suppression comments: `# otters:ignore AF201[, AF205 …] <reason>` silences those codes on the
//! line directly below it (a run of suppression comments all apply to the first line after
//! the run).
//!
//! Takes: the file, its AST and every diagnostic found so far. Returns: the diagnostics minus
//! the suppressed ones, plus AF214 (no reason) and AF215 (suppresses nothing, unknown code, or
//! an error code, which cannot be suppressed). Must never: suppress a code whose default
//! severity is `error`, since the build would reject the file anyway.

use crate::diagnostic::codes::suggestions;
use crate::diagnostic::{Code, Diagnostic, Severity, SourceFile, Span};
use crate::syntax::{Ast, LineKind};
use std::collections::HashMap;

const DIRECTIVE: &str = "otters:ignore";

/// One code named by a suppression, with where it was written.
#[derive(Debug)]
struct Named {
    /// As written, upper-cased (`AF201`), for messages.
    written: String,
    /// The code it names, if it names one.
    code: Option<Code>,
    span: Span,
    used: bool,
}

#[derive(Debug)]
struct Suppression {
    span: Span,
    codes: Vec<Named>,
    reason: Reason,
    /// The 1-based line it applies to.
    target_line: usize,
}

/// What follows the codes.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Reason {
    Missing,
    /// A stand-in nobody replaced (`<reason>`, an editor's `${1:reason}`, `TODO`), as written.
    Placeholder(String),
    Given,
}

/// A reason that only stands in for one: the whole text in angle brackets (what an editor's
/// quick fix inserts when it cannot place a snippet), a snippet tab stop (`$1`, `${1:why}`), or
/// a word that says a reason is still to come.
fn is_placeholder(reason: &str) -> bool {
    let r = reason.trim();
    let bracketed = r.len() >= 2 && r.starts_with('<') && r.ends_with('>');
    let tab_stop = r
        .strip_prefix('$')
        .is_some_and(|t| t.starts_with('{') || t.starts_with(|c: char| c.is_ascii_digit()));
    let word = ["reason", "todo", "fixme", "tbd", "xxx", "...", "…", "why"]
        .iter()
        .any(|w| r.eq_ignore_ascii_case(w));
    bracketed || tab_stop || word
}

fn is_code_like(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() > 2 && b[..2].eq_ignore_ascii_case(b"AF") && b[2..].iter().all(u8::is_ascii_digit)
}

/// Parses the text of one comment (with its `#`) that starts at byte `at`.
fn parse(text: &str, at: usize) -> Option<(Vec<Named>, Reason)> {
    let body = text.strip_prefix('#')?;
    let lead = body.len() - body.trim_start().len();
    let rest = body.trim_start().strip_prefix(DIRECTIVE)?;
    if rest.chars().next().is_some_and(|c| !c.is_whitespace()) {
        return None;
    }
    let mut offset = at + 1 + lead + DIRECTIVE.len();
    let mut codes = Vec::new();
    let mut remaining = rest;
    loop {
        let trimmed = remaining.trim_start();
        offset += remaining.len() - trimmed.len();
        let word_len = trimmed.find(char::is_whitespace).unwrap_or(trimmed.len());
        let word = &trimmed[..word_len];
        let parts: Vec<&str> = word.split([',', ':']).collect();
        let code_ish = !word.is_empty()
            && parts.iter().all(|p| p.is_empty() || is_code_like(p))
            && parts.iter().any(|p| !p.is_empty());
        if !code_ish {
            remaining = trimmed;
            break;
        }
        let mut part_at = offset;
        for p in parts {
            if !p.is_empty() {
                codes.push(Named {
                    written: p.to_ascii_uppercase(),
                    code: p.parse().ok(),
                    span: Span::new(part_at, part_at + p.len()),
                    used: false,
                });
            }
            part_at += p.len() + 1;
        }
        offset += word_len;
        remaining = &trimmed[word_len..];
    }
    let reason = remaining
        .trim_start_matches(|c: char| c.is_whitespace() || matches!(c, '-' | ':' | ',' | '—'));
    let reason = reason.trim();
    let reason = if reason.is_empty() {
        Reason::Missing
    } else if is_placeholder(reason) {
        Reason::Placeholder(reason.to_owned())
    } else {
        Reason::Given
    };
    Some((codes, reason))
}

fn collect(file: &SourceFile, ast: &Ast) -> Vec<Suppression> {
    let mut out: Vec<Suppression> = Vec::new();
    let mut pending: Vec<usize> = Vec::new();
    for line in &ast.lines {
        let parsed = match &line.kind {
            LineKind::Comment { text } => {
                parse(&text.text, text.span.start).map(|p| (p, text.span))
            }
            _ => None,
        };
        if let Some(((codes, reason), span)) = parsed {
            pending.push(out.len());
            out.push(Suppression {
                span,
                codes,
                reason,
                target_line: 0,
            });
            continue;
        }
        let target = file.line_of(line.span.start);
        for i in pending.drain(..) {
            out[i].target_line = target;
        }
    }
    out
}

fn without_reason(span: Span) -> Diagnostic {
    Diagnostic::new(
        Code::SuppressionWithoutReason,
        span,
        "this suppression gives no reason",
    )
    .with_label("no reason after the codes")
    .with_help("say why the finding is acceptable: `# otters:ignore AF201 <reason>`")
}

fn placeholder_reason(span: Span, written: &str) -> Diagnostic {
    Diagnostic::new(
        Code::SuppressionWithoutReason,
        span,
        format!(
            "this suppression's reason `{}` is a placeholder, not a reason",
            written.chars().take(40).collect::<String>()
        ),
    )
    .with_label("replace the placeholder")
    .with_help("say why the finding is acceptable: `# otters:ignore AF201 the dev image tracks the newest runtime`")
}

fn unused(span: Span, code: &str, why: &str) -> Diagnostic {
    let help = match why {
        "unknown" => match suggestions(code).first() {
            Some(r) => format!(
                "did you mean {}? (`otters explain --list` shows every code)",
                r.code
            ),
            None => "`otters explain --list` shows every code".to_owned(),
        },
        "error" => "errors cannot be suppressed; fix the line instead".to_owned(),
        _ => "remove the code from the comment (or the whole comment)".to_owned(),
    };
    let message = match why {
        "unknown" => format!("`{code}` is not a known code"),
        "error" => format!("{code} is an error and cannot be suppressed"),
        _ => format!("no {code} finding on the next line to suppress"),
    };
    Diagnostic::new(Code::UnusedSuppression, span, message).with_help(help)
}

fn empty(span: Span) -> Diagnostic {
    Diagnostic::new(
        Code::UnusedSuppression,
        span,
        "this suppression names no code",
    )
    .with_help("name the codes to silence: `# otters:ignore AF201 <reason>`")
}

/// Applies every suppression of the file to `diags`.
pub(crate) fn apply(file: &SourceFile, ast: &Ast, diags: Vec<Diagnostic>) -> Vec<Diagnostic> {
    let mut sups = collect(file, ast);
    if sups.is_empty() {
        return diags;
    }
    // The suppressions aimed at each line: one look-up per finding, not a scan of every
    // suppression (which made many suppressions quadratic).
    let mut by_line: HashMap<usize, Vec<usize>> = HashMap::new();
    for (i, s) in sups.iter().enumerate() {
        by_line.entry(s.target_line).or_default().push(i);
    }
    let mut kept = Vec::with_capacity(diags.len());
    for d in diags {
        let line = file.line_of(d.start());
        let suppressible = d.code.default_severity() != Severity::Error;
        let aimed = by_line.get(&line).map_or(&[][..], Vec::as_slice);
        let hit = suppressible
            && aimed.iter().any(|&i| {
                let mut any = false;
                for n in sups[i].codes.iter_mut().filter(|n| n.code == Some(d.code)) {
                    n.used = true;
                    any = true;
                }
                any
            });
        if !hit {
            kept.push(d);
        }
    }
    for s in &sups {
        match &s.reason {
            Reason::Missing => kept.push(without_reason(s.span)),
            Reason::Placeholder(p) => kept.push(placeholder_reason(s.span, p)),
            Reason::Given => {}
        }
        if s.codes.is_empty() {
            kept.push(empty(s.span));
        }
        for n in s.codes.iter().filter(|n| !n.used) {
            let why = match n.code {
                None => "unknown",
                Some(c) if c.default_severity() == Severity::Error => "error",
                Some(_) => "unused",
            };
            kept.push(unused(n.span, &n.written, why));
        }
    }
    kept
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(text: &str) -> Option<(Vec<(String, Span)>, bool)> {
        parse(text, 100).map(|(c, r)| {
            (
                c.into_iter().map(|n| (n.written, n.span)).collect(),
                r == Reason::Given,
            )
        })
    }

    #[test]
    fn parses_codes_and_reason() {
        type Case<'a> = (&'a str, Option<(Vec<(&'a str, Span)>, bool)>);
        let table: [Case<'_>; 7] = [
            (
                "# otters:ignore AF201 dev image",
                Some((vec![("AF201", Span::new(116, 121))], true)),
            ),
            (
                "#otters:ignore af201,AF205 x",
                Some((
                    vec![
                        ("AF201", Span::new(115, 120)),
                        ("AF205", Span::new(121, 126)),
                    ],
                    true,
                )),
            ),
            (
                "# otters:ignore AF201, AF205",
                Some((
                    vec![
                        ("AF201", Span::new(116, 121)),
                        ("AF205", Span::new(123, 128)),
                    ],
                    false,
                )),
            ),
            (
                "# otters:ignore AF201: because",
                Some((vec![("AF201", Span::new(116, 121))], true)),
            ),
            ("# otters:ignore", Some((vec![], false))),
            ("# otters:ignored AF201 x", None),
            ("# just a comment", None),
        ];
        for (text, want) in table {
            let want = want.map(|(c, r)| {
                (
                    c.into_iter()
                        .map(|(a, s)| (a.to_owned(), s))
                        .collect::<Vec<_>>(),
                    r,
                )
            });
            assert_eq!(parsed(text), want, "{text}");
        }
    }

    #[test]
    fn placeholders_are_not_reasons() {
        for p in [
            "<reason>",
            "< why >",
            "${1:reason}",
            "$1",
            "TODO",
            "reason",
            "…",
        ] {
            let text = format!("# otters:ignore AF201 {p}");
            let reason = parse(&text, 0).map(|(_, r)| r);
            assert_eq!(
                reason,
                Some(Reason::Placeholder(p.trim().to_owned())),
                "{p}"
            );
        }
        for given in [
            "the <dev> image",
            "todo: pin before release",
            "$HOME is fine",
        ] {
            let text = format!("# otters:ignore AF201 {given}");
            assert_eq!(
                parse(&text, 0).map(|(_, r)| r),
                Some(Reason::Given),
                "{given}"
            );
        }
    }
}
