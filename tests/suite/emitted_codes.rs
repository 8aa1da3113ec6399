//! Every code in the table is emitted somewhere (or is listed below as reserved), and every
//! emitted diagnostic takes its code and severity from the table.
//!
//! The compiler proves most of it: `Diagnostic::new` takes a `Code`, an enum generated from the
//! one table in `otters_agentfile::diagnostic::codes`, and gives the diagnostic that code's default
//! severity, so a code missing from the table, or a severity contradicting it, does not compile;
//! the table compiles in each code's `docs/rules/<CODE>.md` page (a library test checks that every
//! page on disk has a row). `Diagnostic` is `#[non_exhaustive]`, so no other crate can build one
//! with a struct literal. What is left is checked here, by scanning the non-test source of every
//! crate and the binary:
//!
//! - every `Diagnostic::new(` names its code as a `Code::Variant` path (a computed code would
//!   hide from the next check), and every code of the table is named so somewhere, unless it is
//!   in [`RESERVED`];
//! - no `Diagnostic { … }` literal outside `diagnostic/mod.rs`, and no severity assigned outside
//!   the `otters.toml` overrides of `check/mod.rs`;
//! - no code written as a string literal (`"AF201"`) outside the table: code that branches on a
//!   code uses the type.
//!
//! Test modules (`#[cfg(test)]` to the end of a file, and files declared as `#[cfg(test)] mod x;`)
//! are skipped.

use otters_agentfile::diagnostic::codes::RULES;
use otters_agentfile::diagnostic::{Code, Severity};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Codes the table documents but no stage emits yet, each with the reason. Empty today: every
/// code is emitted.
const RESERVED: &[(Code, &str)] = &[];

/// The file that holds the table (and so every code as a string).
const TABLE: &str = "otters-agentfile/src/diagnostic/codes.rs";
/// The file that defines `Diagnostic` (its constructor builds the one struct literal).
const DIAGNOSTIC: &str = "otters-agentfile/src/diagnostic/mod.rs";
/// The file whose `otters.toml` overrides may change a severity.
const OVERRIDES: &str = "otters-agentfile/src/check/mod.rs";

/// What the scan found in one file.
#[derive(Debug, Default, PartialEq, Eq)]
struct Found {
    /// The `Code::Variant` named as the first argument of each `Diagnostic::new(`, or `None`
    /// when the first argument is anything else.
    emitted: Vec<(usize, Option<String>)>,
    /// Lines with a `"AFnnn"` string literal.
    code_strings: Vec<usize>,
    /// Lines with a `Diagnostic {` struct literal.
    literals: Vec<usize>,
    /// Lines assigning `.severity =`.
    severity_writes: Vec<usize>,
}

/// Files that are whole test modules: `#[cfg(test)] mod name;` next to them.
fn test_module_files(files: &[(PathBuf, String)]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for (path, text) in files {
        let dir = path.parent().unwrap_or(Path::new("."));
        let stem_dir = path.with_extension("");
        let mut rest = text.as_str();
        while let Some(i) = rest.find("#[cfg(test)]") {
            rest = &rest[i + "#[cfg(test)]".len()..];
            let item = rest.trim_start();
            let Some(decl) = item.strip_prefix("mod ") else {
                continue;
            };
            let name: String = decl
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if decl[name.len()..].trim_start().starts_with(';') {
                // `mod x;` in foo.rs or mod.rs: x.rs beside it or in foo/.
                out.push(dir.join(format!("{name}.rs")));
                out.push(stem_dir.join(format!("{name}.rs")));
            }
        }
    }
    out
}

/// The text before the first inline `#[cfg(test)] mod … {` (test modules sit at the end).
fn non_test_part(text: &str) -> &str {
    let mut from = 0;
    while let Some(i) = text[from..].find("#[cfg(test)]") {
        let at = from + i;
        let after = text[at + "#[cfg(test)]".len()..].trim_start();
        if let Some(decl) = after.strip_prefix("mod ") {
            let name_len = decl
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .count();
            if decl[name_len..].trim_start().starts_with('{') {
                return &text[..at];
            }
        }
        from = at + 1;
    }
    text
}

fn line_of(text: &str, offset: usize) -> usize {
    text[..offset].matches('\n').count() + 1
}

/// The identifier at the start of `s`.
fn ident(s: &str) -> &str {
    let end = s
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(s.len());
    &s[..end]
}

/// True when `s` starts with `"AF` + three digits + `"`.
fn is_code_string(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() >= 7 && b.starts_with(b"\"AF") && b[3..6].iter().all(u8::is_ascii_digit) && b[6] == b'"'
}

fn scan(text: &str) -> Found {
    let code = non_test_part(text);
    let mut found = Found::default();
    let needle = "Diagnostic::new(";
    for (at, _) in code.match_indices(needle) {
        let first = code[at + needle.len()..].trim_start();
        let variant = first
            .strip_prefix("Code::")
            .map(|rest| ident(rest).to_owned())
            .filter(|v| !v.is_empty());
        found.emitted.push((line_of(code, at), variant));
    }
    for (at, _) in code.match_indices("\"AF") {
        if is_code_string(&code[at..]) {
            found.code_strings.push(line_of(code, at));
        }
    }
    for (at, _) in code.match_indices("Diagnostic {") {
        // `-> Diagnostic {` opens a function body, `impl Diagnostic {` and `struct Diagnostic {`
        // are the definition: only a literal is an expression.
        let before = code[..at].trim_end();
        let definition = before.ends_with("->")
            || before.ends_with("impl")
            || before.ends_with("struct")
            || before.ends_with("for");
        if !definition {
            found.literals.push(line_of(code, at));
        }
    }
    for (at, _) in code.match_indices(".severity =") {
        if !code[at + ".severity =".len()..].starts_with('=') {
            found.severity_writes.push(line_of(code, at));
        }
    }
    found
}

/// Every non-test source file of the crates and the binary, with its path relative to the
/// workspace root (`crates/...` or `src/...`).
fn sources() -> Vec<(String, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let paths = crate::tidy::all_source_files();
    let files: Vec<(PathBuf, String)> = paths
        .into_iter()
        .map(|p| {
            let t = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            (p, t)
        })
        .collect();
    let skip = test_module_files(&files);
    files
        .into_iter()
        .filter(|(p, _)| !skip.contains(p))
        .map(|(p, t)| {
            let rel = p.strip_prefix(root).unwrap_or(&p).display().to_string();
            (rel, t)
        })
        .collect()
}

fn variant_name(c: Code) -> String {
    format!("{c:?}")
}

#[test]
fn every_code_is_emitted_from_the_table_or_reserved() {
    let files = sources();
    let mut named: BTreeSet<String> = BTreeSet::new();
    let mut wrong = Vec::new();
    let mut calls = 0;
    for (path, text) in &files {
        let found = scan(text);
        for (line, variant) in found.emitted {
            calls += 1;
            match variant {
                Some(v) => {
                    named.insert(v);
                }
                None => wrong.push(format!(
                    "{path}:{line}: Diagnostic::new( without a `Code::Variant` first argument: \
                     name the code there so this test sees which codes are emitted"
                )),
            }
        }
        if !path.ends_with(TABLE) {
            for line in found.code_strings {
                wrong.push(format!(
                    "{path}:{line}: a code written as a string; use `Code` (otters_agentfile::diagnostic::Code)"
                ));
            }
        }
        if !path.ends_with(DIAGNOSTIC) {
            for line in found.literals {
                wrong.push(format!(
                    "{path}:{line}: a `Diagnostic {{ … }}` literal; build it with Diagnostic::new so its severity is the code's"
                ));
            }
        }
        if !path.ends_with(OVERRIDES) {
            for line in found.severity_writes {
                wrong.push(format!(
                    "{path}:{line}: a severity assigned; only the otters.toml overrides in check/mod.rs may change one"
                ));
            }
        }
    }
    // The scan must see the library's diagnostics, or it proves nothing.
    assert!(calls >= 60, "only {calls} constructor calls found");
    let known: BTreeSet<String> = Code::ALL.iter().map(|&c| variant_name(c)).collect();
    for v in named.difference(&known) {
        wrong.push(format!("Code::{v} is emitted but is no code"));
    }
    for &c in Code::ALL {
        let emitted = named.contains(&variant_name(c));
        let reserved = RESERVED.iter().any(|(r, _)| *r == c);
        match (emitted, reserved) {
            (false, false) => wrong.push(format!(
                "{c} ({}) is in the table but never emitted: emit it, or list it in RESERVED with the reason",
                c.name()
            )),
            (true, true) => wrong.push(format!("{c} is emitted: take it out of RESERVED")),
            _ => {}
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// The scanner itself: it reads the code of each constructor call, flags computed codes, code
/// strings, struct literals and severity writes, and skips test modules.
#[test]
fn the_scanner_sees_what_it_must() {
    let text = "fn a() -> Diagnostic {\n Diagnostic::new(\n    Code::UnusedArg, s, m); \
                Diagnostic::new(code, s, m);\n if d.code == \"AF201\" {}\n \
                let x = Diagnostic { code, severity };\n d.severity = Severity::Info;\n \
                if d.severity == s {}\n let m = \"see AF2011 and AF201\"; }\n\
                impl Diagnostic {}\n\
                #[cfg(test)]\nmod tests { fn b() { Diagnostic::new(Code::MissingFrom, s, m); \"AF101\"; } }\n";
    let found = scan(text);
    assert_eq!(
        found,
        Found {
            emitted: vec![(2, Some("UnusedArg".to_owned())), (3, None)],
            code_strings: vec![4],
            literals: vec![5],
            severity_writes: vec![6],
        }
    );
    let files = vec![(
        PathBuf::from("/r/src/ir/mod.rs"),
        "#[cfg(test)]\nmod tests;\n".to_owned(),
    )];
    assert!(test_module_files(&files).contains(&PathBuf::from("/r/src/ir/tests.rs")));
}

/// The resolution codes keep their names and stay errors.
#[test]
fn resolution_codes_are_in_the_table() {
    for (code, name) in [
        ("AF409", "lock-unreadable"),
        ("AF410", "registry-unreachable"),
        ("AF411", "platform-unavailable"),
        ("AF412", "registry-error"),
    ] {
        let c: Code = code.parse().unwrap_or_else(|_| panic!("{code} missing"));
        assert_eq!(c.name(), name);
        assert_eq!(c.default_severity(), Severity::Error);
        assert!(RULES.iter().any(|r| r.code == c));
    }
}
