//! House rules that keep the code base navigable, checked like any other test.

use std::path::{Path, PathBuf};

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
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

/// Every module opens with a `//!` header saying what it takes, returns and must never do
/// (docs/architecture.md), so a reader knows a file before reading it.
#[test]
fn every_module_has_a_header() {
    let mut files = Vec::new();
    rust_files(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
        &mut files,
    );
    assert!(files.len() > 50);
    let missing: Vec<_> = files
        .iter()
        .filter(|f| !std::fs::read_to_string(f).unwrap().starts_with("//!"))
        .collect();
    assert!(
        missing.is_empty(),
        "modules without a //! header: {missing:?}"
    );
}

/// Library code never prints: only `src/cli/` writes to stdout or stderr.
#[test]
fn only_the_cli_prints() {
    let mut files = Vec::new();
    rust_files(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
        &mut files,
    );
    let cli = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/cli");
    let offenders: Vec<_> = files
        .iter()
        .filter(|f| !f.starts_with(&cli) && !f.ends_with("main.rs"))
        .filter(|f| {
            let text = std::fs::read_to_string(f).unwrap();
            // Test modules may print; look only above the first `#[cfg(test)]`.
            let code = text.split("#[cfg(test)]").next().unwrap_or("");
            ["println!(", "eprintln!(", "print!(", "eprint!(", "dbg!("]
                .iter()
                .any(|m| code.contains(m))
        })
        .collect();
    assert!(
        offenders.is_empty(),
        "printing outside src/cli: {offenders:?}"
    );
}
