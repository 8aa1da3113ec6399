//! Every diagnostic code the library can emit is in `check::registry::RULES`, with the severity
//! it is emitted with, so `otters explain CODE`, the docs and the `otters.toml` overrides cover
//! whatever a user sees.
//!
//! A source scan: every `Diagnostic::error/warning/info/new(` outside test code must name its code
//! as a string literal (a computed code would hide from this check), and that code's row must
//! carry the same severity. Test modules (`#[cfg(test)]` to the end of a file, and files declared
//! as `#[cfg(test)] mod x;`) are skipped: they build diagnostics with made-up codes on purpose.

use otters_agentfile::check::registry::{lookup, RULES};
use otters_agentfile::diagnostic::Severity;
use std::path::{Path, PathBuf};

/// One constructor call found in the source.
#[derive(Debug)]
struct Call {
    at: String,
    constructor: String,
    /// The code literal, or `None` when the first argument is not a string literal.
    code: Option<String>,
    /// For `Diagnostic::new`: the `Severity::X` written as the second argument.
    severity: Option<String>,
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("read {}: {e}", dir.display()))
        .filter_map(Result::ok)
        .map(|e| e.path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
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

/// The string literal at the start of `s` (after whitespace), if any.
fn literal(s: &str) -> Option<String> {
    let s = s.trim_start().strip_prefix('"')?;
    s.find('"').map(|end| s[..end].to_owned())
}

fn scan(path: &Path, text: &str, calls: &mut Vec<Call>) {
    let code = non_test_part(text);
    for constructor in ["error", "warning", "info", "new"] {
        let needle = format!("Diagnostic::{constructor}(");
        let mut from = 0;
        while let Some(i) = code[from..].find(&needle) {
            let at = from + i;
            let args = &code[at + needle.len()..];
            let lit = literal(args);
            let severity = if constructor == "new" {
                // Diagnostic::new("AFxxx", Severity::X, …)
                args.split_once(',')
                    .map(|(_, rest)| rest.trim_start())
                    .and_then(|rest| rest.strip_prefix("Severity::"))
                    .map(|rest| {
                        rest.chars()
                            .take_while(char::is_ascii_alphabetic)
                            .collect::<String>()
                    })
            } else {
                None
            };
            calls.push(Call {
                at: format!("{}:{}", path.display(), line_of(code, at)),
                constructor: constructor.to_owned(),
                code: lit,
                severity,
            });
            from = at + needle.len();
        }
    }
}

fn all_calls() -> Vec<Call> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut paths = Vec::new();
    rust_files(&root.join("src"), &mut paths);
    for krate in [
        "otters-core",
        "otters-agentfile",
        "otters-oci",
        "otters-pipeline",
    ] {
        rust_files(&root.join("crates").join(krate).join("src"), &mut paths);
    }
    let files: Vec<(PathBuf, String)> = paths
        .into_iter()
        .map(|p| {
            let t = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            (p, t)
        })
        .collect();
    let skip = test_module_files(&files);
    let mut calls = Vec::new();
    for (path, text) in &files {
        // The constructors themselves live here.
        if path.ends_with("otters-agentfile/src/diagnostic/mod.rs") || skip.contains(path) {
            continue;
        }
        let rel = path.strip_prefix(root).unwrap_or(path);
        scan(rel, text, &mut calls);
    }
    calls
}

fn severity_name(s: Severity) -> &'static str {
    match s {
        Severity::Error => "Error",
        Severity::Warning => "Warning",
        Severity::Info => "Info",
    }
}

#[test]
fn every_emitted_code_is_in_the_table_with_its_severity() {
    let calls = all_calls();
    // The scan must see the library's diagnostics, or it proves nothing.
    assert!(
        calls.len() >= 60,
        "only {} constructor calls found: {calls:#?}",
        calls.len()
    );
    let mut wrong = Vec::new();
    for c in &calls {
        let Some(code) = &c.code else {
            wrong.push(format!(
                "{}: Diagnostic::{}( without a literal code: write the code as a string literal so this test can check it",
                c.at, c.constructor
            ));
            continue;
        };
        let Some(rule) = lookup(code) else {
            wrong.push(format!(
                "{}: {code} is not in check::registry::RULES (add a row and docs/rules/{code}.md)",
                c.at
            ));
            continue;
        };
        let emitted = match c.constructor.as_str() {
            "error" => Some("Error".to_owned()),
            "warning" => Some("Warning".to_owned()),
            "info" => Some("Info".to_owned()),
            _ => c.severity.clone(),
        };
        match emitted {
            Some(s) if s == severity_name(rule.severity) => {}
            Some(s) => wrong.push(format!(
                "{}: {code} is emitted as {s} but the table says {}",
                c.at,
                severity_name(rule.severity)
            )),
            None => wrong.push(format!(
                "{}: Diagnostic::new({code}, …) without a literal Severity::X",
                c.at
            )),
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// The scanner itself: it finds literal and computed codes, reads `new`'s severity, and skips
/// test modules.
#[test]
fn the_scanner_sees_what_it_must() {
    let text =
        "fn a() { Diagnostic::warning(\n    \"AF201\", s, m); Diagnostic::error(code, s, m); \
                Diagnostic::new(\"AF101\", Severity::Info, s, m); }\n\
                #[cfg(test)]\nmod tests { fn b() { Diagnostic::error(\"AF999\", s, m); } }\n";
    let mut calls = Vec::new();
    scan(Path::new("x.rs"), text, &mut calls);
    let seen: Vec<(String, Option<String>, Option<String>)> = calls
        .into_iter()
        .map(|c| (c.constructor, c.code, c.severity))
        .collect();
    assert_eq!(
        seen,
        vec![
            ("error".to_owned(), None, None),
            ("warning".to_owned(), Some("AF201".to_owned()), None),
            (
                "new".to_owned(),
                Some("AF101".to_owned()),
                Some("Info".to_owned())
            ),
        ]
    );
    let files = vec![(
        PathBuf::from("/r/src/ir/mod.rs"),
        "#[cfg(test)]\nmod tests;\n".to_owned(),
    )];
    assert!(test_module_files(&files).contains(&PathBuf::from("/r/src/ir/tests.rs")));
}

/// The table's own severities are what `explain` shows; every row has a page (checked in the
/// library), and the resolution codes this branch added are there.
#[test]
fn resolution_codes_are_in_the_table() {
    for (code, name) in [
        ("AF409", "lock-unreadable"),
        ("AF410", "registry-unreachable"),
        ("AF411", "platform-unavailable"),
        ("AF412", "registry-error"),
    ] {
        let r = RULES
            .iter()
            .find(|r| r.code == code)
            .unwrap_or_else(|| panic!("{code} missing"));
        assert_eq!(r.name, name);
        assert_eq!(r.severity, Severity::Error);
    }
}
