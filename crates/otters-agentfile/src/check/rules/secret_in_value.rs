//! AF202 secret-in-value: credential-shaped text in ENV, CONFIG, LABEL and CONTEXT values.
//!
//! Two detectors: well-known token shapes anywhere in a value, and long high-entropy values
//! under a key that names a secret. The secret itself never appears in the message.

use super::Ctx;
use crate::diagnostic::{Code, Diagnostic, Span};
use crate::ir::ConfigValue;

/// A token prefix, what it is, and how many token characters must follow it.
const PREFIXES: &[(&str, &str, usize)] = &[
    ("github_pat_", "a GitHub token", 22),
    ("ghp_", "a GitHub token", 30),
    ("gho_", "a GitHub token", 30),
    ("ghu_", "a GitHub token", 30),
    ("ghs_", "a GitHub token", 30),
    ("ghr_", "a GitHub token", 30),
    ("glpat-", "a GitLab token", 20),
    ("sk-", "an API secret key", 20),
    ("AKIA", "an AWS access key", 16),
    ("ASIA", "an AWS access key", 16),
    ("xoxb-", "a Slack token", 10),
    ("xoxp-", "a Slack token", 10),
    ("xoxa-", "a Slack token", 10),
    ("xoxr-", "a Slack token", 10),
    ("xoxs-", "a Slack token", 10),
    ("AIza", "a Google API key", 35),
];

const SECRET_WORDS: &[&str] = &[
    "token",
    "secret",
    "password",
    "passwd",
    "api-key",
    "api_key",
    "apikey",
    "private-key",
    "private_key",
    "credential",
];

fn token_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c == b'-'
}

/// The first well-known secret in `text`: (byte offset, length, what it is).
pub fn find_token(text: &str) -> Option<(usize, usize, &'static str)> {
    if text.contains("-----") {
        if let Some(i) = text.find("-----BEGIN ") {
            let line_end = text[i..].find('\n').map_or(text.len(), |e| i + e);
            if text[i..line_end].contains("PRIVATE KEY-----") {
                return Some((i, line_end - i, "a private key"));
            }
        }
    }
    // One pass over the runs of token characters: a secret is a run that starts with a known
    // prefix and goes on long enough, with both digits and letters.
    let b = text.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if !token_char(b[i]) {
            i += 1;
            continue;
        }
        let start = i;
        while i < b.len() && token_char(b[i]) {
            i += 1;
        }
        let run = &b[start..i];
        // Every prefix starts with one of these bytes; most runs stop here.
        if !matches!(run[0], b'g' | b's' | b'A' | b'x') {
            continue;
        }
        for (prefix, what, min) in PREFIXES {
            if let Some(body) = run.strip_prefix(prefix.as_bytes()) {
                let looks_random =
                    body.iter().any(u8::is_ascii_digit) && body.iter().any(u8::is_ascii_alphabetic);
                if body.len() >= *min && looks_random {
                    return Some((start, run.len(), what));
                }
            }
        }
    }
    None
}

/// Shannon entropy in bits per character.
fn entropy(s: &str) -> f64 {
    let mut counts = [0u32; 256];
    for b in s.bytes() {
        counts[usize::from(b)] += 1;
    }
    let n = f64::from(u32::try_from(s.len()).unwrap_or(u32::MAX));
    counts
        .iter()
        .filter(|&&c| c > 0)
        .map(|&c| {
            let p = f64::from(c) / n;
            -p * p.log2()
        })
        .sum()
}

/// True for a value that reads like a generated secret under a key that names one.
pub fn secret_by_key(key: &str, value: &str) -> bool {
    let v = value.trim();
    // Cheapest tests first: most values are short or contain a blank.
    if v.len() < 16 || v.contains(char::is_whitespace) {
        return false;
    }
    let k = key.to_ascii_lowercase();
    SECRET_WORDS.iter().any(|w| k.contains(w))
        && !v.contains("${")
        && !v.contains("://")
        && v.bytes().any(|c| c.is_ascii_digit())
        && v.bytes().any(|c| c.is_ascii_alphabetic())
        && entropy(v) >= 3.0
}

pub fn secret_in_value(span: Option<Span>, kind: &str, key: &str, what: &str) -> Diagnostic {
    Diagnostic::new(Code::SecretInValue, span, format!("{kind} {key} looks like it holds {what}"))
        .with_label("stored in the image for anyone who can pull it")
        .with_help("supply secrets at run time (`otters run -e KEY=...`), and rotate this one: it is in the file's history")
}

/// The span of `needle` in the source at or after the start of `item`, else `item` (`None` for an
/// item not written in the file).
fn locate(cx: &Ctx<'_>, item: Option<Span>, needle: &str) -> Option<Span> {
    let from = item?.start;
    cx.file
        .text
        .get(from..)
        .and_then(|t| t.find(needle))
        .map_or(item, |i| Some(Span::new(from + i, from + i + needle.len())))
}

fn check_value(
    cx: &Ctx<'_>,
    out: &mut Vec<Diagnostic>,
    kind: &str,
    key: &str,
    value: &str,
    span: Option<Span>,
) {
    if let Some((at, len, what)) = find_token(value) {
        let found = locate(cx, span, &value[at..at + len]);
        out.push(secret_in_value(found, kind, key, what));
    } else if secret_by_key(key, value) {
        let found = locate(cx, span, value.trim());
        out.push(secret_in_value(found, kind, key, "a secret"));
    }
}

pub fn check(cx: &Ctx<'_>, out: &mut Vec<Diagnostic>) {
    let a = &cx.model.agent;
    for e in &a.envs {
        check_value(cx, out, "ENV", &e.key, &e.value, e.span);
    }
    for c in &a.configs {
        if let Some(ConfigValue::String(v)) = &c.value {
            check_value(cx, out, "CONFIG", &c.key, v, c.span);
        }
    }
    for (k, v) in &a.labels {
        check_value(cx, out, "LABEL", k, &v.value, v.span);
    }
    for c in &a.contexts {
        if let Some(content) = &c.content {
            if let Some((at, len, what)) = find_token(content) {
                let found = locate(cx, c.span, &content[at..at + len]);
                out.push(secret_in_value(found, "CONTEXT", &c.name, what));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_byte_filter_admits_every_prefix() {
        for (prefix, _, _) in PREFIXES {
            assert!(
                matches!(prefix.as_bytes()[0], b'g' | b's' | b'A' | b'x'),
                "{prefix}"
            );
        }
    }

    #[test]
    fn table() {
        super::super::assert_table(
            Code::SecretInValue,
            &[
                (
                    "ENV GH_TOKEN=ghp_0123456789abcdefghijABCDEFGHIJ012345",
                    &[2],
                ),
                ("ENV GH_TOKEN=\"${GH}\"", &[]),
                ("ENV NO_COLOR=1", &[]),
                ("CONFIG api-key=\"Zx81QpL0mN3vR7tY2wK9\"", &[2]),
                ("CONFIG api-key=\"changeme\"", &[]),
                ("LABEL x=\"key AKIAABCDEFGHIJ123456 here\"", &[2]),
                (
                    "LABEL io.openotters.required-env=\"GH_TOKEN or GITHUB_TOKEN\"",
                    &[],
                ),
                (
                    "CONTEXT SOUL <<E\nhello\n-----BEGIN RSA PRIVATE KEY-----\nE",
                    &[4],
                ),
                (
                    "CONTEXT SOUL <<E\nuse the sk- prefix for OpenAI keys\nE",
                    &[],
                ),
                ("ENV TOKEN_URL=https://example.com/a/b/c/d/e1", &[]),
            ],
        );
    }

    #[test]
    fn token_shapes() {
        assert_eq!(
            find_token("x sk-ant-api03-abcdefghijklmnop123456").map(|t| t.2),
            Some("an API secret key")
        );
        assert_eq!(find_token("task-sk-0123456789abcdefghij"), None);
        assert_eq!(
            find_token("xoxb-1234567890-abc").map(|t| (t.0, t.1)),
            Some((0, 19))
        );
    }
}
