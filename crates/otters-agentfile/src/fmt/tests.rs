//! Unit tests of `fmt`: the fixtures in testdata/fmt (insta snapshots in snapshots/fmt), each
//! layout rule, refusals, the diff, the conformance corpus, and property tests that formatting is
//! idempotent and never changes what a file means.

use super::*;
use crate::check::{self, Options};
use crate::ir;
use crate::syntax::{parse_str, unquote, Args, LineKind, Value};
use proptest::prelude::*;
use std::path::{Path, PathBuf};

fn fmt(text: &str) -> String {
    format_str(text).unwrap_or_else(|d| panic!("refused {text:?}: {d:#?}"))
}

fn codes_of_refusal(text: &str) -> Vec<String> {
    format_str(text)
        .expect_err("should be refused")
        .iter()
        .map(|d| d.code.to_string())
        .collect()
}

/// What a file means, without its layout: every comment, directive and instruction (keyword,
/// token values, which values were quoted, heredoc marker, kind and body), in order.
fn meaning(text: &str) -> Vec<String> {
    let ast = parse_str(text);
    ast.lines
        .iter()
        .filter_map(|l| match &l.kind {
            LineKind::Blank => None,
            LineKind::Comment { text } => Some(format!("comment {:?}", text.text)),
            LineKind::Directive { value } => Some(format!("directive {:?}", value.text)),
            LineKind::Error { text, .. } => Some(format!("error {:?}", text.text)),
            LineKind::Instruction(i) => {
                let mut tokens: Vec<String> =
                    i.args.tokens().iter().map(|t| t.text.clone()).collect();
                let quoted: Vec<bool> = match &i.args {
                    Args::Config { value, .. } | Args::Arg { value, .. } => {
                        value.iter().map(Value::is_quoted).collect()
                    }
                    Args::Env { value, .. } | Args::Label { value, .. } => {
                        vec![value.is_quoted()]
                    }
                    _ => vec![],
                };
                let required = matches!(
                    &i.args,
                    Args::Config {
                        required: Some(_),
                        ..
                    }
                );
                if let Args::Mount { mode: Some(m), .. } = &i.args {
                    // The mode is read case-insensitively; fmt writes it in lower case.
                    for t in &mut tokens {
                        if *t == m.text {
                            *t = t.to_ascii_lowercase();
                        }
                    }
                }
                let heredoc = i
                    .heredoc
                    .as_ref()
                    .map(|h| (h.marker.clone(), h.strip_tabs, h.quoted, h.body.clone()));
                Some(format!(
                    "{:?} {tokens:?} {quoted:?} {required} {heredoc:?}",
                    i.keyword
                ))
            }
        })
        .collect()
}

/// The model's config blob and the codes of every finding, as `otters lint` would report them.
fn analysis(text: &str) -> (String, Vec<String>) {
    let file = SourceFile::new("Agentfile", text);
    let a = check::analyze(&file, &Options::default());
    let blob = format!("{:?}", ir::to_json(&a.model));
    let mut codes: Vec<String> = a.diagnostics.iter().map(|d| d.code.to_string()).collect();
    codes.sort();
    (blob, codes)
}

/// Formatting `text` is idempotent, keeps its meaning and its model, and brings no new finding.
fn assert_sound(text: &str) {
    let Ok(once) = format_str(text) else { return };
    let twice = fmt(&once);
    assert_eq!(once, twice, "not idempotent on {text:?}");
    assert_eq!(meaning(text), meaning(&once), "meaning changed: {text:?}");
    let (blob_before, codes_before) = analysis(text);
    let (blob_after, codes_after) = analysis(&once);
    assert_eq!(blob_before, blob_after, "model changed: {text:?}");
    // Findings after formatting are findings from before, minus the layout ones it fixes. The
    // one exception: a suppression of AF208 (keyword case), which formatting fixes, is then
    // reported as suppressing nothing (AF215).
    let mut left = codes_before;
    for c in codes_after {
        if c == "AF215" && text.to_ascii_uppercase().contains("AF208") {
            continue;
        }
        let at = left
            .iter()
            .position(|b| *b == c)
            .unwrap_or_else(|| panic!("new finding {c} after formatting {text:?}:\n{once}"));
        left.remove(at);
    }
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

#[test]
fn fixtures_format_to_their_snapshots() {
    let dir = repo().join("testdata/fmt");
    let mut names: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    names.sort();
    assert!(names.len() >= 8, "fixtures missing in {}", dir.display());
    for path in names {
        let bytes = std::fs::read(&path).unwrap();
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        let out = format_bytes(&name, &bytes).unwrap_or_else(|r| panic!("{name}: {r:#?}"));
        assert_sound(std::str::from_utf8(&bytes).unwrap());
        assert!(!out.contains('\r'), "{name}: CRLF left in {out:?}");
        insta::with_settings!({
            snapshot_path => concat!(env!("CARGO_MANIFEST_DIR"), "/../../snapshots/fmt"),
            prepend_module_to_snapshot => false,
            input_file => &path,
        }, {
            insta::assert_snapshot!(name, out);
        });
    }
}

#[test]
fn keywords_are_capitals_and_tokens_one_space_apart() {
    assert_eq!(
        fmt("from   scratch\n  Name\tx  \ncapability a \t b\n"),
        "FROM scratch\nNAME x\nCAPABILITY a b\n"
    );
    assert_eq!(
        fmt("FROM scratch\nconfig k ! = \"v\"   \"d\"\nenv A = 1\nlabel a =b\nexec[ \"a\" ,\"b\" ]\n"),
        "FROM scratch\nCONFIG k!=\"v\" \"d\"\nENV A=1\nLABEL a=b\nEXEC [\"a\", \"b\"]\n"
    );
    assert_eq!(fmt("FROM scratch\nEXEC []\n"), "FROM scratch\nEXEC []\n");
    assert_eq!(
        fmt("FROM scratch\nMOUNT /d RW\n"),
        "FROM scratch\nMOUNT /d rw\n"
    );
}

#[test]
fn blank_lines_are_shortened_and_the_file_ends_with_one_line_break() {
    assert_eq!(
        fmt("\n \n\t\nFROM scratch\n\n\n\nNAME x\n\n\n"),
        "FROM scratch\n\nNAME x\n"
    );
    assert_eq!(fmt("FROM scratch"), "FROM scratch\n");
    assert_eq!(fmt(""), "");
    assert_eq!(fmt("\n\n  \n"), "");
}

#[test]
fn comments_stay_where_they_are() {
    assert_eq!(
        fmt("  # a  \nFROM scratch\n\t# otters:ignore AF201 reason\nRUNTIME r:latest\n#end"),
        "# a\nFROM scratch\n# otters:ignore AF201 reason\nRUNTIME r:latest\n#end\n"
    );
}

#[test]
fn a_directive_stays_on_line_one_or_off_it() {
    assert_eq!(
        fmt("  # syntax=openotters/agentfile:1  \nFROM scratch\n"),
        "# syntax=openotters/agentfile:1\nFROM scratch\n"
    );
    // Below a blank line it is a comment (AF212); formatting must not make it a directive.
    assert_eq!(
        fmt("\n\n\n# syntax=other:2\nFROM scratch\n"),
        "\n# syntax=other:2\nFROM scratch\n"
    );
    assert_sound("\n\n\n# syntax=other:2\nFROM scratch\n");
}

#[test]
fn heredoc_bodies_are_copied() {
    let text = "FROM scratch\nCONTEXT A <<-\"E\"\n\t  x  \n\n  Ex  \n\t\tE\nBIN b i <<U\n\r\nU\n";
    let out = fmt(text);
    assert_eq!(
        out,
        "FROM scratch\nCONTEXT A <<-\"E\"\n\t  x  \n\n  Ex  \n\t\tE\nBIN b i <<U\n\nU\n"
    );
    assert_sound(text);
    // An indented terminator of a plain heredoc loses its blanks.
    assert_eq!(
        fmt("FROM scratch\nCONTEXT A <<E\nx\n   E   \n"),
        "FROM scratch\nCONTEXT A <<E\nx\nE\n"
    );
}

#[test]
fn a_line_ending_in_cr_keeps_its_crlf() {
    // `x\r` then CRLF: the word is `x\r`, which only a CRLF break after it preserves.
    for text in [
        "FROM scratch\r\nNAME x\r\r\n",
        "FROM scratch\nCONTEXT A <<E\nbody\r\r\nE\n",
        "FROM scratch\nNAME x\r",
    ] {
        assert_sound(text);
    }
    assert_eq!(
        fmt("FROM scratch\r\nNAME x\r\r\n"),
        "FROM scratch\nNAME x\r\r\n"
    );
}

#[test]
fn strings_are_requoted_canonically() {
    assert_eq!(
        fmt("FROM scratch\nENV A=\"\\x41\\u00e9\" \"\t\"\nENV B=bare\n"),
        "FROM scratch\nENV A=\"Aé\" \"\\t\"\nENV B=bare\n"
    );
}

#[test]
fn quoting_reads_back() {
    for s in [
        "",
        "plain",
        "a\"b\\c",
        "\n\t\r\u{7}\u{8}\u{b}\u{c}",
        "\u{0}\u{1b}\u{7f}",
        "\u{85}\u{202e}é—🦦",
    ] {
        let q = quote(s);
        assert!(q.starts_with('"') && q.ends_with('"'));
        assert_eq!(unquote(&q[1..q.len() - 1]).unwrap(), s, "{q}");
        assert!(
            !q.chars()
                .any(|c| c.is_control() || otters_core::escape::is_unsafe(c)),
            "{q}"
        );
    }
    assert_eq!(
        quote("tab\there \u{1b}[2J \u{202e}"),
        "\"tab\\there \\x1b[2J \\u202e\""
    );
}

#[test]
fn syntax_errors_are_refused_with_their_diagnostics() {
    assert_eq!(
        codes_of_refusal("FORM scratch\nNAME a b\n"),
        ["AF003", "AF004"]
    );
    assert_eq!(codes_of_refusal("FROM scratch\nENV A=\"\\$\"\n"), ["AF005"]);
    assert_eq!(
        codes_of_refusal("FROM scratch\nCONTEXT A <<E\nbody\n"),
        ["AF006"]
    );
    let r = format_bytes("Agentfile", b"FROM scratch\nNAME caf\xe9\n").unwrap_err();
    assert_eq!(r.diagnostics[0].code.to_string(), "AF001");
    assert_eq!(r.file.text, "FROM scratch\nNAME caf");
    let r = format_bytes("x/Agentfile", b"FROM scratch\nBAD\n").unwrap_err();
    assert_eq!(r.file.name, "x/Agentfile");
    assert_eq!(r.file.text, "FROM scratch\nBAD\n");
}

#[test]
fn a_byte_order_mark_is_dropped() {
    assert_eq!(fmt("\u{feff}FROM scratch\n"), "FROM scratch\n");
    assert_eq!(
        format_bytes("a", "\u{feff}\u{feff}x\n".as_bytes())
            .unwrap_err()
            .diagnostics
            .len(),
        1
    );
}

#[test]
fn conformance_files_format_soundly() {
    let Some(root) = crate::corpus::conformance("conformance_files_format_soundly") else {
        return;
    };
    let mut stack = vec![root];
    let mut seen = 0;
    while let Some(dir) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.file_name().is_some_and(|n| n == "Agentfile") {
                let text = std::fs::read_to_string(&p).unwrap();
                assert_sound(&text);
                // A messier spelling of the same file formats to the same text.
                let messy = mess(&text);
                assert_eq!(fmt(&messy), fmt(&text), "{}", p.display());
                seen += 1;
            }
        }
    }
    assert!(seen >= 14, "only {seen} conformance Agentfiles");
}

/// The file with every instruction line spelt badly: lower-case keyword, doubled blanks between
/// tokens outside quotes, trailing blanks, CRLF breaks, blank lines doubled. Heredoc bodies are
/// left alone.
fn mess(text: &str) -> String {
    let ast = parse_str(text);
    let mut out = String::new();
    for line in &ast.lines {
        match &line.kind {
            LineKind::Instruction(i) => {
                let own = &text[i.span.start..i.span.end];
                let mut in_string = false;
                let mut prev = '\0';
                let mut s = String::from("  ");
                for (n, c) in own.char_indices() {
                    if n < i.keyword_token.text.len() {
                        s.push(c.to_ascii_lowercase());
                        continue;
                    }
                    if c == '"' && prev != '\\' {
                        in_string = !in_string;
                    }
                    if c == ' ' && !in_string {
                        s.push_str(" \t ");
                    } else {
                        s.push(c);
                    }
                    prev = if prev == '\\' && c == '\\' { '\0' } else { c };
                }
                match &i.heredoc {
                    Some(h) => {
                        s.push_str("   ");
                        s.push_str(&text[h.opener.start..line.span.end]);
                    }
                    None => s.push_str(" \t"),
                }
                out.push_str(&s.replace('\n', "\r\n"));
                out.push_str("\r\n");
            }
            LineKind::Blank => out.push_str("\r\n\r\n"),
            _ => {
                out.push_str(&text[line.span.start..line.span.end]);
                out.push_str("\r\n");
            }
        }
    }
    out
}

#[test]
fn unified_diff_shows_changed_lines_with_context() {
    assert_eq!(unified("A", "x\n", "x\n"), "");
    let old = "1\n2\n3\n4\nfive\n6\n7\n8\n9\n10\n11\n12\nthirteen\n14";
    let new = "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n13\n14\n";
    assert_eq!(
        unified("A", old, new),
        "--- A\t(original)\n+++ A\t(formatted)\n@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-five\n+5\n 6\n 7\n 8\n@@ -10,5 +10,5 @@\n 10\n 11\n 12\n-thirteen\n-14\n\\ No newline at end of file\n+13\n+14\n"
    );
    assert_eq!(
        unified("B", "a\n", "b\nc\n"),
        "--- B\t(original)\n+++ B\t(formatted)\n@@ -1,1 +1,2 @@\n-a\n+b\n+c\n"
    );
    assert_eq!(
        unified("C", "", "a\n"),
        "--- C\t(original)\n+++ C\t(formatted)\n@@ -0,0 +1,1 @@\n+a\n"
    );
}

#[test]
fn line_changes_are_the_blocks_of_the_diff() {
    assert_eq!(line_changes("x\n", "x\n"), vec![]);
    let old = "1\n2\nthree\n4\nfive\nsix\n7\n";
    let new = "1\n2\n3\n4\n5\n7\n";
    assert_eq!(
        line_changes(old, new),
        vec![
            LineChange {
                old: 2..3,
                new: 2..3
            },
            LineChange {
                old: 4..6,
                new: 4..5
            },
        ]
    );
    // A pure insertion is an empty old range at the place it goes.
    assert_eq!(
        line_changes("a\nc\n", "a\nb\nc\n"),
        vec![LineChange {
            old: 1..1,
            new: 1..2
        }]
    );
}

/// Applies a unified diff made by [`unified`] to `old`.
fn apply(old: &str, diff: &str) -> String {
    let a: Vec<&str> = old.split_inclusive('\n').collect();
    let mut out = String::new();
    let mut at = 0;
    let mut lines = diff.split_inclusive('\n').skip(2).peekable();
    while let Some(l) = lines.next() {
        if let Some(h) = l.strip_prefix("@@ -") {
            let start: usize = h.split([',', ' ']).next().unwrap().parse().unwrap();
            let len: usize = h.split([',', ' ']).nth(1).unwrap().parse().unwrap();
            let start = if len == 0 { start } else { start - 1 };
            for x in &a[at..start] {
                out.push_str(x);
            }
            at = start;
            continue;
        }
        let (sign, body) = l.split_at(1);
        let no_newline = lines.peek().is_some_and(|n| n.starts_with('\\'));
        if no_newline {
            lines.next();
        }
        let body = if no_newline {
            body.strip_suffix('\n').unwrap()
        } else {
            body
        };
        match sign {
            " " => {
                out.push_str(body);
                at += 1;
            }
            "-" => at += 1,
            "+" => out.push_str(body),
            _ => panic!("bad diff line {l:?}"),
        }
    }
    for x in &a[at..] {
        out.push_str(x);
    }
    out
}

#[test]
fn a_diff_too_large_to_search_is_still_correct() {
    let lines = |f: &dyn Fn(u32) -> u32| {
        (0..3000)
            .map(|i| f(i).to_string() + "\n")
            .collect::<String>()
    };
    let (old, new) = (lines(&|i| i), lines(&|i| i * 7 % 3001));
    let d = unified("big", &old, &new);
    assert_eq!(apply(&old, &d), new);
}

/// Issue 18.2, found by `mutated_files_format_soundly_or_are_refused`: a stray carriage return
/// before a key and a raw U+202E in the value were one AF219 finding (one per line); `fmt`
/// writes the U+202E as `\u202e`, and the escape was then reported apart from the line: two.
#[test]
fn a_carriage_return_and_a_bidi_override_stay_one_finding() {
    let text = "FROM scratch\nenv \rc=\"\u{202e}\"\n";
    let once = fmt(text);
    assert_eq!(once, "FROM scratch\nENV \rc=\"\\u202e\"\n");
    let count = |t: &str| analysis(t).1.iter().filter(|c| *c == "AF219").count();
    assert_eq!((count(text), count(&once)), (1, 1), "{once:?}");
    assert_sound(text);
}

/// Agentfile lines, in canonical and less canonical spellings, to build test files from.
const PIECES: &[&str] = &[
    "FROM scratch",
    "from  ghcr.io/x/base:1",
    "RUNTIME\tghcr.io/openotters/runtime:v1",
    "MODEL anthropic/claude",
    "name   agent",
    "CONTEXT SOUL \"who\" <<EOF\nbody line\n  indented\n# hash\n\nEOF",
    "context  RULES <<-E\n\ttabbed\n\t\tmore\n\tE",
    "CONTEXT F \"d\"  file://docs/a.md",
    "CONFIG key!  \"desc\"",
    "config  n = 3",
    "CONFIG s=\"3\"",
    "ENV A = \"x\\ty\"  \"d\"",
    "ENV B=b\\",
    "BIN jq img:1 \"tool\" <<'U'\nusage\nU",
    "EXEC[\"a\",  \"b\"]",
    "ADD src dst \"d\"",
    "LABEL k =v",
    "ARG V=1",
    "ARG W=",
    "arg X",
    "CAPABILITY  a   b",
    "MOUNT /m Ro \"x\"",
    "# a comment",
    "  # otters:ignore AF201 reason",
    "# syntax=openotters/agentfile:1",
    "",
    "   ",
    "NAME x\r",
    "ENV C=\"\u{202e}\"",
];

fn assemble(picks: &[(usize, u8)]) -> String {
    let mut s = String::new();
    for (i, style) in picks {
        let piece = PIECES[i % PIECES.len()];
        let piece = match style % 4 {
            0 => piece.to_owned(),
            1 => format!("  {piece}  "),
            2 => piece.replace(' ', "\t "),
            _ => piece.to_ascii_lowercase(),
        };
        s.push_str(&piece);
        s.push_str(if style % 3 == 0 { "\r\n" } else { "\n" });
    }
    s
}

/// 400 cases per property; `OTTERS_FUZZ_CASES=50000` (with another `PROPTEST_RNG_SEED` than the
/// fixed one in `.cargo/config.toml`) searches longer by hand.
fn fuzz_cases() -> u32 {
    std::env::var("OTTERS_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(400)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: fuzz_cases(), ..ProptestConfig::default() })]

    #[test]
    fn formatting_is_idempotent_and_keeps_the_meaning(
        picks in prop::collection::vec((0usize..64, any::<u8>()), 0..24),
    ) {
        let text = assemble(&picks);
        // Built from valid lines: always formatted, never refused.
        prop_assert!(format_str(&text).is_ok(), "{:?}", text);
        assert_sound(&text);
    }

    #[test]
    fn mutated_files_format_soundly_or_are_refused(
        picks in prop::collection::vec((0usize..64, any::<u8>()), 1..16),
        edits in prop::collection::vec((any::<prop::sample::Index>(), prop::sample::select(vec![
            " ", "\t", "\n", "\r\n", "\r", "\"", "\\", "=", "!", "#", "<<", "<<-", "EOF", "E", "[", "]", ",", "x", "é", "\u{feff}", "file://"
        ]), any::<bool>()), 0..6),
    ) {
        let mut text = assemble(&picks);
        for (at, piece, delete) in edits {
            if text.is_empty() {
                text.push_str(piece);
                continue;
            }
            let mut i = at.index(text.len());
            while !text.is_char_boundary(i) {
                i -= 1;
            }
            if delete {
                let end = text[i..].chars().next().map_or(i, |c| i + c.len_utf8());
                text.replace_range(i..end, "");
            } else {
                text.insert_str(i, piece);
            }
        }
        assert_sound(&text);
    }

    #[test]
    fn any_string_quotes_and_reads_back(s in any::<String>()) {
        let q = quote(&s);
        prop_assert_eq!(unquote(&q[1..q.len() - 1]).unwrap(), s);
    }

    #[test]
    fn diffs_apply(
        a in prop::collection::vec(prop::sample::select(vec!["a", "b", "c", "d", ""]), 0..30),
        b in prop::collection::vec(prop::sample::select(vec!["a", "b", "c", "e", ""]), 0..30),
        (a_end, b_end) in (any::<bool>(), any::<bool>()),
    ) {
        let text = |lines: &[&str], end: bool| {
            let mut t = lines.join("\n");
            if end && !t.is_empty() {
                t.push('\n');
            }
            t
        };
        let (old, new) = (text(&a, a_end), text(&b, b_end));
        let d = unified("f", &old, &new);
        prop_assert_eq!(apply(&old, &d), new);
    }
}
