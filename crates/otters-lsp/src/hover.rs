//! Hover: an instruction keyword's reference text (docs/reference.md, compiled in), an ARG's
//! value on `${NAME}`, the
//! explanation of each finding under the cursor (the rule pages the check registry compiles in),
//! and for a RUNTIME, BIN or FROM image the digest `Agentfile.lock` pins it to.

use crate::document::Document;
use crate::lock;
use otters_agentfile::diagnostic::codes as registry;
use otters_agentfile::syntax::{Keyword, LineKind};
use std::fmt::Write as _;

/// The language reference, one `### KEYWORD` section per instruction.
const REFERENCE: &str = include_str!("../../../docs/reference.md");

/// The reference section of an instruction (its text below the `### KEYWORD` heading).
pub fn reference(keyword: Keyword) -> &'static str {
    let heading = format!("\n### {}\n", keyword.as_str());
    let Some(at) = REFERENCE.find(&heading) else {
        return keyword.usage();
    };
    let body = &REFERENCE[at + heading.len()..];
    let end = body.find("\n#").unwrap_or(body.len());
    body[..end].trim()
}

/// The run of letters and digits around `offset`, when it is shaped like a code (`AF201`).
fn word_at(text: &str, offset: usize) -> Option<&str> {
    let is_word = |b: &u8| b.is_ascii_alphanumeric();
    let bytes = text.as_bytes();
    let offset = offset.min(bytes.len());
    let start = bytes[..offset]
        .iter()
        .rposition(|b| !is_word(b))
        .map_or(0, |i| i + 1);
    let end = bytes[offset..]
        .iter()
        .position(|b| !is_word(b))
        .map_or(bytes.len(), |i| offset + i);
    let word = text.get(start..end)?;
    registry::is_code_shaped(&word.to_ascii_uppercase()).then_some(word)
}

/// The markdown shown at `offset`, or `None` when there is nothing to say.
pub fn hover(doc: &Document, project: &dyn crate::Project, offset: usize) -> Option<String> {
    let mut parts: Vec<String> = Vec::new();
    if let Some(LineKind::Instruction(ins)) = doc.line_at(offset).map(|l| &l.kind) {
        let arg = (offset <= ins.span.end)
            .then(|| crate::navigate::arg_reference(doc.text(), ins.span, offset))
            .flatten();
        if let Some(name) = arg {
            parts.push(match doc.model.agent.args.get(name) {
                Some(v) => format!("`ARG {name}` = `{}`", crate::outline::clip(&v.value)),
                None => format!("`{name}` is not declared by an ARG above (AF203)"),
            });
        }
        let k = &ins.keyword_token.span;
        if k.start <= offset && offset <= k.end {
            parts.push(format!(
                "**{}** — `{}`\n\n{}",
                ins.keyword.as_str(),
                ins.keyword.usage(),
                reference(ins.keyword)
            ));
        }
    }
    let refs = lock::image_refs(doc);
    let here: Vec<_> = refs
        .iter()
        .filter(|r| r.span.start <= offset && offset <= r.span.end)
        .collect();
    if !here.is_empty() {
        let locked = lock::read(doc, project);
        for r in here {
            let text = match locked.as_ref().and_then(|l| lock::entry(l, r)) {
                Some(e) => {
                    let mut s = format!(
                        "`{}` is pinned in Agentfile.lock to `{}`",
                        r.reference, e.digest
                    );
                    if let (Some(i), Some(p)) = (&e.index, &e.platform) {
                        let _ = write!(s, " ({p}, from the index `{i}`)");
                    }
                    if let Some(d) = &e.description {
                        let _ = write!(s, "\n\n{d}");
                    }
                    s
                }
                None if doc.path.is_some() => format!(
                    "`{}` is not pinned in Agentfile.lock (`otters lock` resolves and pins it)",
                    r.reference
                ),
                None => continue,
            };
            parts.push(text);
        }
    }
    // The findings under the cursor, and a code written there (`# otters:ignore AF201 …`).
    let mut codes: Vec<String> = doc
        .diagnostics
        .iter()
        .filter(|d| d.span.is_some_and(|s| s.start <= offset && offset <= s.end))
        .map(|d| d.code.to_string())
        .collect();
    codes.extend(word_at(doc.text(), offset).map(str::to_ascii_uppercase));
    let mut seen: Vec<String> = Vec::new();
    for code in codes {
        if seen.contains(&code) {
            continue;
        }
        if let Some(rule) = registry::lookup(&code) {
            parts.push(format!(
                "**{}** {} ({})\n\n{}\n\n`otters explain {}` shows the whole page.",
                rule.code,
                rule.name,
                rule.severity,
                rule.what_it_does(),
                rule.code
            ));
        }
        seen.push(code);
    }
    (!parts.is_empty()).then(|| parts.join("\n\n---\n\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_keyword_has_its_own_reference_section() {
        for k in Keyword::ALL {
            let text = reference(k);
            assert!(text.len() > 40 && !text.contains("\n### "), "{k:?}: {text}");
        }
        assert!(reference(Keyword::Runtime).contains("clears every CONFIG"));
    }

    #[test]
    fn codes_are_found_in_comments() {
        let text = "# otters:ignore af201, AF2 x\n";
        assert_eq!(word_at(text, 17), Some("af201"));
        assert_eq!(word_at(text, 21), Some("af201"));
        assert_eq!(word_at(text, 24), None);
        assert_eq!(word_at(text, 0), None);
        assert_eq!(word_at("AF201", 99), Some("AF201"));
    }
}
