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
use std::path::{Path, PathBuf};
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

/// The Neovim plugin's queries have one source, the grammar's: each file of
/// `editors/nvim/queries/agentfile/` is a relative link to `editors/tree-sitter-agentfile/queries/`
/// (one that works wherever the checkout is), and the two directories hold the same names.
#[test]
fn the_nvim_queries_are_links_to_the_grammars_queries() {
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let names = |dir: &str| -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(repo.join(dir))
            .unwrap_or_else(|e| panic!("{dir}: {e}"))
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| Path::new(n).extension().is_some_and(|e| e == "scm"))
            .collect();
        v.sort();
        v
    };
    let grammar = "editors/tree-sitter-agentfile/queries";
    let nvim = "editors/nvim/queries/agentfile";
    assert_eq!(
        names(nvim),
        names(grammar),
        "{nvim} and {grammar} hold other files"
    );
    for name in names(grammar) {
        let link = repo.join(nvim).join(&name);
        let target = std::fs::read_link(&link)
            .unwrap_or_else(|e| panic!("{nvim}/{name} is not a link to {grammar}/{name}: {e}"));
        assert!(
            target.is_relative(),
            "{nvim}/{name} -> {}",
            target.display()
        );
        assert_eq!(
            link.canonicalize().unwrap(),
            repo.join(grammar).join(&name).canonicalize().unwrap(),
            "{nvim}/{name} points elsewhere"
        );
    }
}
