//! The editor support of issue 10, through `editors/test.sh` as CI runs it: the tree-sitter
//! grammar (its generated parser up to date with grammar.js, its corpus and highlight tests, every
//! Agentfile of `../shared/conformance` (when present) parsed with no ERROR or MISSING node, syntax errors exactly
//! where `otters lint` reports them), the VS Code extension (its `TextMate` scopes, its
//! `otters lsp` client, the `.vsix`) and the Neovim package (headless).
//!
//! Takes: node and npm (the script installs tree-sitter-cli with cargo into a cache and the
//! pinned npm packages into `editors/vscode/node_modules`). Must never: pass without running the
//! checks under CI (a missing node or npm fails there).

use crate::support::tools;
use std::path::PathBuf;
use std::process::{Command, Stdio};

const TEST: &str = "editor_support_passes_its_checks";

#[test]
fn editor_support_passes_its_checks() {
    let install = "install Node.js and npm (Debian: apt-get install nodejs npm)";
    if !tools::require(TEST, "node", &["--version"], install)
        || !tools::require(TEST, "npm", &["--version"], install)
    {
        return;
    }
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let out = Command::new("bash")
        .arg(repo.join("editors/test.sh"))
        .current_dir(&repo)
        .stdin(Stdio::null())
        .output()
        .expect("bash runs editors/test.sh");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "editors/test.sh failed ({}):\n{stdout}\n{stderr}",
        out.status
    );
    // Each stage reported its result: a script that stopped early or skipped a stage fails here.
    for line in [
        "ok src/ is up to date",
        "Agentfiles parse with no ERROR or MISSING node",
        "agree with an independent reading",
        "ok tree-sitter and otters agree on",
        "ok TextMate scopes and the language client",
        "ok the .vsix holds",
        "ok queries are the same",
        "== editors: all green",
    ] {
        assert!(
            stdout.contains(line),
            "editors/test.sh printed no `{line}`:\n{stdout}"
        );
    }
    if stdout.contains("SKIP the conformance corpus") {
        tools::skip(
            TEST,
            "the conformance corpus is absent: only the repository's samples parsed",
        );
    }
    if std::env::var_os("CI").is_some() {
        assert!(
            stdout.contains(" passed, 0 failed"),
            "the headless Neovim checks did not run under CI:\n{stdout}"
        );
    }
}

/// The upstream-ready snippets of docs/editors.md are the files the editor tests load, verbatim.
#[test]
fn the_upstream_snippets_in_the_docs_are_the_tested_files() {
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let docs = std::fs::read_to_string(repo.join("docs/editors.md")).unwrap();
    let file = "editors/upstream/nvim-lspconfig/lsp/otters.lua";
    let text = std::fs::read_to_string(repo.join(file)).unwrap();
    assert!(
        docs.contains(&format!("```lua\n{text}```")),
        "docs/editors.md does not show {file} verbatim"
    );
}
