//! The server never crashes or hangs on any document: mutated Agentfiles (the conformance corpus
//! and testdata/, bytes and lines changed) opened, changed and queried at random positions
//! through the handlers the message loop calls, with the answers checked to stay inside the
//! document.

use crate::{Encoding, NoProject, State};
use lsp_types::{Position, Range, TextDocumentContentChangeEvent, Url};
use proptest::prelude::*;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// Every Agentfile of the conformance corpus and testdata/.
fn corpus() -> &'static [String] {
    static CORPUS: OnceLock<Vec<String>> = OnceLock::new();
    CORPUS.get_or_init(|| {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut out = Vec::new();
        let mut stack: Vec<PathBuf> = vec![
            root.join("../../testdata"),
            root.join("../../../shared/conformance"),
        ];
        while let Some(dir) = stack.pop() {
            let Ok(rd) = std::fs::read_dir(&dir) else {
                continue;
            };
            for e in rd.flatten() {
                let p = e.path();
                let name = e.file_name().to_string_lossy().into_owned();
                if p.is_dir() {
                    stack.push(p);
                } else if name == "Agentfile" || name.ends_with(".agentfile") {
                    if let Ok(t) = std::fs::read_to_string(&p) {
                        out.push(t);
                    }
                }
            }
        }
        out.sort();
        assert!(out.len() > 20, "corpus not found: {} files", out.len());
        out
    })
}

#[derive(Clone, Debug)]
enum Mutation {
    Insert(usize, String),
    Delete(usize, usize),
    DuplicateLine(usize),
    DeleteLine(usize),
    SwapLines(usize, usize),
    Truncate(usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let piece = prop_oneof![
        Just("${".to_owned()),
        Just("}".to_owned()),
        Just("<<EOF\n".to_owned()),
        Just("\nEOF\n".to_owned()),
        Just("\"".to_owned()),
        Just("\\".to_owned()),
        Just("\r\n".to_owned()),
        Just("😀".to_owned()),
        Just("é".to_owned()),
        Just("\u{202e}".to_owned()),
        Just("\0".to_owned()),
        Just("# otters:ignore AF201 ".to_owned()),
        Just("file://".to_owned()),
        Just("FROM ".to_owned()),
        Just("\n".to_owned()),
        "\\PC{0,6}",
    ];
    prop_oneof![
        (any::<usize>(), piece).prop_map(|(a, s)| Mutation::Insert(a, s)),
        (any::<usize>(), 0usize..40).prop_map(|(a, n)| Mutation::Delete(a, n)),
        any::<usize>().prop_map(Mutation::DuplicateLine),
        any::<usize>().prop_map(Mutation::DeleteLine),
        (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Mutation::SwapLines(a, b)),
        any::<usize>().prop_map(Mutation::Truncate),
    ]
}

fn floor(text: &str, mut at: usize) -> usize {
    at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

fn apply(text: &str, m: &Mutation) -> String {
    let mut lines: Vec<&str> = text.split_inclusive('\n').collect();
    let n = lines.len().max(1);
    match m {
        Mutation::Insert(at, s) => {
            let at = floor(text, at % (text.len() + 1));
            format!("{}{s}{}", &text[..at], &text[at..])
        }
        Mutation::Delete(at, len) => {
            let a = floor(text, at % (text.len() + 1));
            let b = floor(text, a + len);
            format!("{}{}", &text[..a], &text[b..])
        }
        Mutation::DuplicateLine(i) => {
            if let Some(l) = lines.get(i % n).copied() {
                lines.insert(i % n, l);
            }
            lines.concat()
        }
        Mutation::DeleteLine(i) => {
            if i % n < lines.len() {
                lines.remove(i % n);
            }
            lines.concat()
        }
        Mutation::SwapLines(a, b) => {
            if lines.len() > 1 {
                let (a, b) = (a % lines.len(), b % lines.len());
                lines.swap(a, b);
            }
            lines.concat()
        }
        Mutation::Truncate(at) => text[..floor(text, at % (text.len() + 1))].to_owned(),
    }
}

/// Every range lies inside the document (an end past a line's last column is allowed by LSP,
/// a line past the last is not).
fn inside(r: &Range, lines: u32) {
    assert!(r.start <= r.end, "{r:?}");
    assert!(r.end.line < lines, "{r:?} past {lines} lines");
}

/// A directory with an `Agentfile.lock` pinning references the corpus uses, and files a
/// CONTEXT or ADD may name.
fn project_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        // One fixed place, rewritten by every run (not one directory per run left behind).
        let dir = std::env::temp_dir().join("otters-lsp-proptest");
        let _ = std::fs::create_dir_all(dir.join("data"));
        let digest = format!("sha256:{}", "b".repeat(64));
        let mut images = Vec::new();
        for (role, reference) in [
            ("runtime", "ghcr.io/openotters/runtime:latest"),
            ("bin", "ghcr.io/openotters/tools/sh:latest"),
            ("from", "ghcr.io/openotters/agents/base:latest"),
        ] {
            images
                .push(serde_json::json!({"role": role, "reference": reference, "digest": digest}));
        }
        let lock = serde_json::json!({"version": 1, "platform": "linux/amd64", "images": images});
        let _ = std::fs::write(dir.join("Agentfile.lock"), lock.to_string());
        let _ = std::fs::write(dir.join("SOUL.md"), "soul\n");
        dir
    })
}

fn pos_junk() -> serde_json::Value {
    serde_json::json!({"line": -1, "character": "x"})
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn handlers_never_panic_on_mutated_documents(
        pick in any::<usize>(),
        first in proptest::collection::vec(mutation(), 0..6),
        second in proptest::collection::vec(mutation(), 0..6),
        positions in proptest::collection::vec((0u32..400, 0u32..160), 1..12),
        utf8 in any::<bool>(),
    ) {
        let docs = corpus();
        let base = &docs[pick % docs.len()];
        let enc = if utf8 { Encoding::Utf8 } else { Encoding::Utf16 };
        let mut state = State::new(Box::new(NoProject), enc);
        // Half the documents are files beside a lock, a CONTEXT file and a directory, so hover,
        // code actions and definitions read them; the rest are unsaved buffers.
        let uri = if pick % 2 == 0 {
            Url::from_file_path(project_dir().join("Agentfile")).unwrap()
        } else {
            Url::parse("untitled:Agentfile").unwrap()
        };
        let text = first.iter().fold(base.clone(), |t, m| apply(&t, m));
        let published = state.open(uri.clone(), 1, text.clone());
        let lines = |t: &str| u32::try_from(t.split('\n').count()).unwrap_or(u32::MAX);
        for d in &published.diagnostics {
            inside(&d.range, lines(&text));
        }
        let changed = second.iter().fold(text, |t, m| apply(&t, m));
        let change = TextDocumentContentChangeEvent { range: None, range_length: None, text: changed.clone() };
        let published = state.change(&uri, 2, vec![change]).unwrap();
        let n = lines(&changed);
        for d in &published.diagnostics {
            inside(&d.range, n);
        }
        for (line, character) in positions {
            let pos = Position::new(line % (n + 2), character);
            let _ = state.hover(&uri, pos);
            let _ = state.completion(&uri, pos);
            if let Some(l) = state.definition(&uri, pos) {
                inside(&l.range, n);
            }
            for a in state.code_actions(&uri, Range::new(pos, pos), None) {
                if let Ok(lsp_types::CodeActionOrCommand::CodeAction(a)) = serde_json::from_value(a) {
                    for edits in a.edit.and_then(|e| e.changes).into_iter().flat_map(std::collections::HashMap::into_values) {
                        for e in edits {
                            inside(&e.range, n);
                        }
                    }
                }
            }
        }
        for s in state.symbols(&uri) {
            inside(&s.range, n);
            inside(&s.selection_range, n);
            assert!(s.range.start <= s.selection_range.start && s.selection_range.end <= s.range.end, "{s:?}");
        }
        for f in state.folding(&uri) {
            assert!(f.start_line < f.end_line && f.end_line < n, "{f:?}");
        }
        let _ = state.formatting(&uri);
        for l in state.links(&uri) {
            inside(&l.range, n);
        }
        let whole = Range::new(Position::new(0, 0), Position::new(n, 0));
        for h in state.inlay_hints(&uri, whole) {
            inside(&Range::new(h.position, h.position), n);
        }
        if let Ok(edits) = state.range_formatting(&uri, Range::new(Position::new(1, 0), Position::new(n / 2, 1))) {
            for e in edits {
                inside(&e.range, n);
            }
        }
        // The same requests through the dispatcher, with parameters that do not fit.
        let bad = lsp_server::Request::new(1.into(), "textDocument/hover".to_owned(), serde_json::json!({"x": pos_junk()}));
        prop_assert!(crate::server::request(&state, bad).error.is_some());
        let junk = lsp_server::Notification::new("textDocument/didChange".to_owned(), serde_json::json!([1, 2]));
        prop_assert!(crate::server::notification(&mut state, junk).is_empty());
        // An incremental edit at a random place, as a client that ignores full sync sends.
        let r = Range::new(Position::new(0, 3), Position::new(n / 2, 9));
        let edit = TextDocumentContentChangeEvent { range: Some(r), range_length: None, text: "x${".to_owned() };
        prop_assert!(state.change(&uri, 3, vec![edit]).is_some());
        state.close(&uri);
        prop_assert!(state.symbols(&uri).is_empty());
    }
}

#[test]
fn a_document_over_the_lint_limit_is_not_checked_and_says_so() {
    let mut state = State::new(Box::new(NoProject), Encoding::Utf16);
    let uri = Url::parse("untitled:big").unwrap();
    let big = "NAEM x\n".repeat(200_000);
    let published = state.open(uri.clone(), 1, big);
    assert_eq!(
        published.diagnostics.len(),
        1,
        "{:?}",
        published.diagnostics
    );
    assert!(published.diagnostics[0].message.contains("not checked"));
    assert!(state.symbols(&uri).is_empty());
}

#[test]
fn an_invalid_config_is_shown_and_the_file_still_checked() {
    struct Broken;
    impl crate::Project for Broken {
        fn options(&self, _: Option<&Path>) -> Result<otters_agentfile::check::Options, String> {
            Err("invalid config otters.toml: bad".to_owned())
        }
    }
    let mut state = State::new(Box::new(Broken), Encoding::Utf16);
    let published = state.open(Url::parse("untitled:a").unwrap(), 1, "NAEM x\n".to_owned());
    let messages: Vec<&str> = published
        .diagnostics
        .iter()
        .map(|d| d.message.as_str())
        .collect();
    assert_eq!(messages[0], "invalid config otters.toml: bad");
    assert!(
        messages.contains(&"unknown instruction `NAEM`"),
        "{messages:?}"
    );
}

/// Applies LSP edits (UTF-16, ASCII text) to `text`, last first.
fn apply_edits(state: &State, uri: &Url, mut edits: Vec<lsp_types::TextEdit>) -> String {
    let doc = state.document(uri).unwrap();
    let mut text = doc.text().to_owned();
    edits.sort_by_key(|e| std::cmp::Reverse(e.range.start));
    for e in edits {
        let (a, b) = (
            doc.offset(e.range.start, Encoding::Utf16),
            doc.offset(e.range.end, Encoding::Utf16),
        );
        text.replace_range(a..b, &e.new_text);
    }
    text
}

#[test]
fn range_formatting_formats_only_the_lines_of_the_range() {
    let mut state = State::new(Box::new(NoProject), Encoding::Utf16);
    let uri = Url::parse("untitled:a").unwrap();
    let text = "from scratch\nNAME   a\nMODEL    m/x\nlabel a=b\n";
    state.open(uri.clone(), 1, text.to_owned());
    let whole = state.formatting(&uri).unwrap();
    let formatted = apply_edits(&state, &uri, whole);
    assert_eq!(formatted, "FROM scratch\nNAME a\nMODEL m/x\nLABEL a=b\n");
    // Lines 1 and 2 (a range ending at the start of line 3 does not take line 3).
    let edits = state
        .range_formatting(&uri, Range::new(Position::new(1, 4), Position::new(3, 0)))
        .unwrap();
    assert_eq!(
        apply_edits(&state, &uri, edits),
        "from scratch\nNAME a\nMODEL m/x\nlabel a=b\n"
    );
    // The whole range is the whole formatting.
    let edits = state
        .range_formatting(&uri, Range::new(Position::new(0, 0), Position::new(4, 0)))
        .unwrap();
    assert_eq!(apply_edits(&state, &uri, edits), formatted);
}

#[test]
fn a_file_with_syntax_errors_is_not_formatted_and_the_answer_says_why() {
    let mut state = State::new(Box::new(NoProject), Encoding::Utf16);
    let uri = Url::parse("untitled:a").unwrap();
    state.open(
        uri.clone(),
        1,
        "FROM scratch\nCONTEXT P <<EOF\nx\n".to_owned(),
    );
    let why = state.formatting(&uri).unwrap_err();
    assert!(
        why.contains("cannot format") && why.contains("line 2"),
        "{why}"
    );
    let why = state
        .range_formatting(&uri, Range::new(Position::new(0, 0), Position::new(0, 3)))
        .unwrap_err();
    assert!(why.contains("line 2"), "{why}");
}
