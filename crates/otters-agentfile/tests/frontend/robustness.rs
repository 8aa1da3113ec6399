//! The front end must not panic, hang or blow up on any input: arbitrary bytes, and real
//! Agentfiles mutated at random. Bounded: a fixed number of proptest cases per run.

use otters_agentfile::diagnostic::SourceFile;
use proptest::prelude::*;
use std::collections::BTreeMap;

fn front_end(bytes: &[u8]) -> usize {
    let text = match otters_agentfile::syntax::decode(bytes) {
        Ok(t) => t.to_owned(),
        Err(d) => {
            assert_eq!(d.code, otters_agentfile::diagnostic::Code::InvalidUtf8);
            return 1;
        }
    };
    let file = SourceFile::new("fuzz", text);
    let ast = otters_agentfile::syntax::parse(&file);
    let (model, diags) = otters_agentfile::ir::from_ast(&ast, &file, &BTreeMap::new());
    // Every finding of a source file has a span, inside the text and on char boundaries, or
    // rendering would panic.
    for d in ast.diagnostics.iter().chain(&diags) {
        let s = d.span.unwrap_or_else(|| panic!("no span: {d:?}"));
        assert!(s.start <= s.end && s.end <= file.text.len(), "{d:?}");
        assert!(
            file.text.is_char_boundary(s.start) && file.text.is_char_boundary(s.end),
            "{d:?}"
        );
        let _ = file.line_col(s.end);
    }
    // The blob writer may refuse only non-finite floats, which `ir` never produces. The reader
    // checks every name as the parser does, so it reads back exactly the blobs of files the
    // checks accept, and refuses (never panics on) the rest.
    let blob = otters_agentfile::ir::config_blob(&model).expect("config blob");
    match otters_agentfile::ir::from_config_blob(&blob) {
        Ok(back) => assert_eq!(otters_agentfile::ir::config_blob(&back).unwrap(), blob),
        // The reader refuses names the checker refuses (a build never writes such a blob); it
        // must refuse nothing the checker lets through, except a NUL byte in an ENV value or
        // EXEC argument (written `\x00`), which no process can be given and which the checker
        // does not report yet.
        Err(otters_agentfile::ir::BlobError::Name(why)) if why.what.contains("NUL byte") => {}
        Err(otters_agentfile::ir::BlobError::Name(why)) => {
            let analysis = otters_agentfile::check::analyze(
                &file,
                &otters_agentfile::check::Options::default(),
            );
            assert!(
                analysis
                    .diagnostics
                    .iter()
                    .any(|d| d.severity == otters_agentfile::diagnostic::Severity::Error),
                "the reader refuses ({why}) a model the checker accepts:\n{}",
                file.text
            );
        }
        Err(e) => panic!("blob reads back: {e}"),
    }
    ast.lines.len() + diags.len()
}

fn corpus() -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for dir in [
        // `../shared` beside the checkout (see TESTING.md in it).
        "../shared/conformance/openotters/agents",
        "testdata/syntax/ok",
        "testdata/syntax/err",
    ] {
        let root = crate::workspace(dir);
        let Ok(rd) = std::fs::read_dir(&root) else {
            // The shared corpus may be absent on a developer's machine; never under CI.
            assert!(
                std::env::var_os("CI").is_none(),
                "{} is absent: CI must mutate the conformance corpus",
                root.display()
            );
            // Straight to stderr: the test runner captures (and drops) `eprintln!` of a passing test.
            let _ = std::io::Write::write_fmt(
                &mut std::io::stderr().lock(),
                format_args!("SKIP corpus {}: absent\n", root.display()),
            );
            continue;
        };
        let mut paths: Vec<_> = rd.flatten().map(|e| e.path()).collect();
        paths.sort();
        for p in paths {
            let p = if p.is_dir() { p.join("Agentfile") } else { p };
            if let Ok(b) = std::fs::read(&p) {
                out.push(b);
            }
        }
    }
    assert!(!out.is_empty());
    out
}

fn fuzz_cases() -> u32 {
    std::env::var("OTTERS_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(400)
}

/// Fragments that exercise the grammar's edges when spliced into real files.
const FRAGMENTS: &[&str] = &[
    "<<",
    "<<EOF",
    "<<-",
    "<<\"",
    "\"",
    "\\",
    "${",
    "${X}",
    "}",
    "=",
    "!",
    "[",
    "]",
    ",",
    "file://",
    "\r",
    "\n",
    "\r\n",
    "\t",
    " ",
    "#",
    "# syntax=",
    "\u{feff}",
    "EXEC[",
    "CONTEXT ",
    "EOF\n",
    "é",
    "\u{2028}",
    "\0",
];

proptest! {
    // 400 cases per property a run; `OTTERS_FUZZ_CASES=100000` searches longer by hand.
    #![proptest_config(ProptestConfig { cases: fuzz_cases(), failure_persistence: None, .. ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
        front_end(&bytes);
    }

    #[test]
    fn arbitrary_text_never_panics(text in "(?s).{0,300}") {
        front_end(text.as_bytes());
    }

    #[test]
    fn mutated_real_files_never_panic(
        which in 0usize..64,
        edits in proptest::collection::vec((any::<u16>(), 0usize..FRAGMENTS.len(), any::<bool>()), 1..8),
    ) {
        let files = corpus();
        let mut bytes = files[which % files.len()].clone();
        for (at, frag, delete) in edits {
            let at = usize::from(at) % (bytes.len() + 1);
            if delete && at < bytes.len() {
                let end = (at + 7).min(bytes.len());
                bytes.drain(at..end);
            } else {
                bytes.splice(at..at, FRAGMENTS[frag].bytes());
            }
        }
        front_end(&bytes);
    }
}

/// Pathological shapes that break naive parsers: very long lines, many heredoc openers, deep runs
/// of quotes. Each must parse; a quadratic parser would make this test take minutes.
#[test]
fn pathological_shapes_parse() {
    // A hang-catcher, not a benchmark: the shapes take well under a second in a debug build; a
    // quadratic parser takes minutes. The bound is generous so a loaded machine never trips it.
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        pathological_shapes();
        let _ = tx.send(());
    });
    match rx.recv_timeout(std::time::Duration::from_secs(120)) {
        Ok(()) => {}
        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
            panic!("pathological shapes took over 120 s: a parser stage went super-linear")
        }
        Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
            panic!("pathological shapes panicked (see the thread's message above)")
        }
    }
}

fn pathological_shapes() {
    let long_word = format!("FROM scratch\nNAME {}\n", "a".repeat(1 << 20));
    assert!(front_end(long_word.as_bytes()) > 0);
    let openers = format!("FROM scratch\n{}", "CONTEXT A <<E\n".repeat(20_000));
    assert!(front_end(openers.as_bytes()) > 0);
    let quotes = format!("FROM scratch\nLABEL a=\"{}\n", "\\\"".repeat(100_000));
    assert!(front_end(quotes.as_bytes()) > 0);
    let bad = "FORM x y z <<\n".repeat(20_000);
    assert!(front_end(bad.as_bytes()) > 0);
}
