//! The views of `otters diff`: text for people, JSON for programs (the shape of docs/diff.md),
//! Markdown for a pull-request comment (a summary table, then one `<details>` per class with
//! prompt diffs in fenced `diff` blocks).
//!
//! Takes: the two sides and the classified changes. Returns: the text to print, every value from
//! an image escaped for the terminal (text), as JSON (json), or inside code spans and fences
//! longer than any backtick run it holds (Markdown). Must never: print, or read anything.
use super::{esc, line};
use otters_diff::change::count;
use otters_diff::{Change, Class, Kind, Side, What};
use otters_schema::outputs::{
    Diff, DiffChange, DiffLevel, DiffSide, DiffSigner, DiffSummary, WithSchema,
};
use std::fmt::Write as _;

fn symbol(k: Kind) -> char {
    match k {
        Kind::Added => '+',
        Kind::Removed => '-',
        Kind::Changed => '~',
    }
}

/// `what name[ field]`, as every view names a change; `what` alone for a single item (MODEL,
/// RUNTIME, FROM, EXEC, NAME), whose name is its kind.
fn subject(c: &Change) -> String {
    let mut s = c.what.as_str().to_owned();
    if c.name != c.what.as_str() {
        s = format!("{s} {}", c.name);
    }
    match c.field {
        Some(f) => format!("{s} {f}"),
        None => s,
    }
}

/// What a change is about, in Markdown: its kind, then its name in a code span (the kind alone
/// for a single item).
fn md_subject(c: &Change) -> String {
    if c.name == c.what.as_str() {
        c.what.as_str().to_owned()
    } else {
        format!("{} {}", c.what.as_str(), code(&c.name))
    }
}

/// `before → after`, `after` (added) or `before` (removed); empty when the change has no value.
fn values(c: &Change, quote: impl Fn(&str) -> String) -> String {
    match (&c.before, &c.after) {
        (Some(b), Some(a)) => format!("{} → {}", quote(b), quote(a)),
        (None, Some(v)) | (Some(v), None) => quote(v),
        (None, None) => String::new(),
    }
}

fn side_line(label: &str, s: &Side) -> String {
    let manifest = if s.manifest == s.digest {
        String::new()
    } else {
        format!(", manifest {}", s.manifest)
    };
    let mut out = format!("{label}: {} ({}{manifest})", esc(&s.reference), s.digest);
    for (i, l) in s.chain.levels.iter().enumerate() {
        let name = otters_diff::chain::level_name(i + 1);
        let _ = write!(out, "\n   from {}: {name}", esc(&l.describe()));
    }
    // A walk cut by an unreadable parent (a digest not recorded shows on its level).
    let read_failed = s.chain.levels.last().is_some_and(|l| l.digest.is_some());
    if let Some(why) = s.chain.cut.as_ref().filter(|_| read_failed) {
        let _ = write!(out, "\n   (FROM chain not followed further: {})", esc(why));
    }
    for (kind, who) in &s.signers {
        for w in who {
            let _ = write!(out, "\n   {} by {} ({UNVERIFIED})", esc(kind), esc(w));
        }
    }
    out
}

/// The text view: both sides, then each class with its changes, or `identical`.
pub fn text(a: &Side, b: &Side, changes: &[Change]) -> String {
    let mut out = String::new();
    line!(out, "{}", side_line("a", a));
    line!(out, "{}", side_line("b", b));
    if changes.is_empty() {
        line!(out, "identical: no changes");
        return out;
    }
    for class in Class::ALL {
        let n = count(changes, class);
        if n == 0 {
            continue;
        }
        line!(out, "{} ({n})", class.as_str());
        for c in changes.iter().filter(|c| c.class == class) {
            let mut v = values(c, esc);
            if c.what == What::Signer {
                v = format!("{v} ({UNVERIFIED})");
            }
            let sep = if v.is_empty() { "" } else { ": " };
            line!(out, "  {} {}{sep}{v}", symbol(c.change), esc(&subject(c)));
            if let Some(d) = &c.detail {
                line!(out, "    {}", esc(d));
            }
            for l in c.diff.iter().flat_map(|d| d.lines()) {
                line!(out, "    {}", esc(l));
            }
        }
    }
    out
}

fn side_json(s: &Side) -> DiffSide<'_> {
    DiffSide {
        reference: &s.reference,
        digest: s.digest.to_string(),
        manifest: s.manifest.to_string(),
        platforms: &s.platforms,
        signers: s
            .signers
            .iter()
            .flat_map(|(kind, who)| {
                who.iter().map(|w| DiffSigner {
                    kind: kind.clone(),
                    signer: w.clone(),
                })
            })
            .collect(),
        chain: s
            .chain
            .levels
            .iter()
            .enumerate()
            .map(|(i, l)| DiffLevel {
                level: i + 1,
                reference: l.reference.clone(),
                digest: l.digest.as_ref().map(ToString::to_string),
            })
            .collect(),
        chain_cut: s.chain.cut.clone(),
    }
}

/// What a signer line or change adds: the bundles are read, not verified.
const UNVERIFIED: &str = "not verified; run otters verify";

/// The JSON view (pretty, keys in a fixed order; docs/diff.md, "JSON"; its schema is
/// `otters schema diff`).
pub fn json(a: &Side, b: &Side, changes: &[Change]) -> String {
    let n = |class| count(changes, class);
    let summary = DiffSummary {
        escalation: n(Class::Escalation),
        behaviour: n(Class::Behaviour),
        pin: n(Class::Pin),
        configuration: n(Class::Configuration),
        data: n(Class::Data),
        provenance: n(Class::Provenance),
    };
    let list = changes
        .iter()
        .map(|c| DiffChange {
            class: c.class.as_str(),
            what: c.what.as_str(),
            name: &c.name,
            field: c.field,
            change: c.change.as_str(),
            before: c.before.as_deref(),
            after: c.after.as_deref(),
            diff: c.diff.as_deref(),
            detail: c.detail.as_deref(),
        })
        .collect();
    let doc = Diff {
        a: side_json(a),
        b: side_json(b),
        identical: changes.is_empty(),
        summary,
        changes: list,
    };
    let mut text = serde_json::to_string_pretty(&WithSchema::new("diff", doc)).unwrap_or_default();
    text.push('\n');
    text
}

/// The longest run of backticks in `s`.
fn longest_ticks(s: &str) -> usize {
    s.split(|c| c != '`').map(str::len).max().unwrap_or(0)
}

/// `s` as one inline code span: on one line, controls escaped, delimited by more backticks than
/// it holds.
fn code(s: &str) -> String {
    let one_line = esc(&s.replace(['\n', '\r'], " "));
    let ticks = "`".repeat(longest_ticks(&one_line) + 1);
    let pad = if one_line.starts_with('`') || one_line.ends_with('`') {
        " "
    } else {
        ""
    };
    format!("{ticks}{pad}{one_line}{pad}{ticks}")
}

/// The most lines of one text diff the Markdown shows: a GitHub comment holds at most 65,536
/// characters, and a reviewer reads the rest in the text or JSON output.
const MARKDOWN_DIFF_LINES: usize = 200;

/// A fenced `diff` block around `text` (at most [`MARKDOWN_DIFF_LINES`] lines, then a line saying
/// how many more there are), its fence longer than any backtick run in it.
fn fenced(text: &str) -> String {
    let fence = "`".repeat((longest_ticks(text) + 1).max(3));
    let mut body = text
        .lines()
        .take(MARKDOWN_DIFF_LINES)
        .fold(String::new(), |mut b, l| {
            line!(b, "{}", esc(l));
            b
        });
    let more = text.lines().count().saturating_sub(MARKDOWN_DIFF_LINES);
    if more > 0 {
        line!(
            body,
            "… {more} more lines (otters diff --format text shows them all)"
        );
    }
    format!("{fence}diff\n{body}{fence}\n")
}

/// The Markdown view, for a pull-request comment.
pub fn markdown(a: &Side, b: &Side, changes: &[Change]) -> String {
    let mut out = String::new();
    line!(
        out,
        "### otters diff: {} → {}\n",
        code(&a.reference),
        code(&b.reference)
    );
    if changes.is_empty() {
        line!(
            out,
            "No changes: the agents are identical ({}).",
            code(a.manifest.as_str())
        );
        return out;
    }
    line!(out, "| Class | Changes | Escalations |");
    line!(out, "|---|---:|---|");
    for class in Class::ALL {
        let n = count(changes, class);
        let named: Vec<String> = if class == Class::Escalation {
            changes
                .iter()
                .filter(|c| c.class == class)
                // A GFM table cell would split at a `|`, even in a code span.
                .map(|c| md_subject(c).replace('|', "\\|"))
                .collect()
        } else {
            Vec::new()
        };
        line!(out, "| {} | {n} | {} |", class.as_str(), named.join(", "));
    }
    for class in Class::ALL {
        let n = count(changes, class);
        if n == 0 {
            continue;
        }
        let open = if class == Class::Escalation {
            " open"
        } else {
            ""
        };
        line!(
            out,
            "\n<details{open}><summary>{} ({n})</summary>\n",
            class.as_str()
        );
        for c in changes.iter().filter(|c| c.class == class) {
            let field = c.field.map(|f| format!(" ({f})")).unwrap_or_default();
            let mut v = values(c, code);
            if c.what == What::Signer {
                v = format!("{v} (not verified; run `otters verify`)");
            }
            let sep = if v.is_empty() { "" } else { ": " };
            line!(
                out,
                "- **{}** {}{field}{sep}{v}",
                c.change.as_str(),
                md_subject(c)
            );
            if let Some(d) = &c.detail {
                line!(out, "  {}", code(d));
            }
            if let Some(d) = &c.diff {
                line!(out, "\n{}", fenced(d).trim_end());
            }
        }
        line!(out, "\n</details>");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn code_spans_and_fences_outlast_the_backticks_they_hold() {
        assert_eq!(code("a"), "`a`");
        assert_eq!(code("a`b"), "``a`b``");
        assert_eq!(code("`x"), "`` `x ``");
        assert_eq!(code("a|b\nc"), "`a|b c`");
        assert!(fenced("+ ```\n").starts_with("````diff\n"));
        assert!(fenced("+x\n").starts_with("```diff\n+x\n```\n"));
        let long = "+x\n".repeat(MARKDOWN_DIFF_LINES + 5);
        let shown = fenced(&long);
        assert_eq!(shown.lines().count(), MARKDOWN_DIFF_LINES + 3, "{shown}");
        assert!(shown.contains("… 5 more lines (otters diff --format text shows them all)\n```"));
    }
}
