//! Server-side latency of `otters lsp`: from a `didChange` of the whole text to the
//! `publishDiagnostics` notification's bytes, on the 450-line kubectl Agentfile of the
//! conformance corpus, through the same handlers the message loop calls.
//! `cargo bench -p otters-lsp --bench lsp`.

use criterion::{criterion_group, criterion_main, Criterion};
use lsp_types::{TextDocumentContentChangeEvent, Url};
use otters_agentfile::check::Options;
use otters_lsp::{Encoding, NoProject, Project, State};
use std::path::{Path, PathBuf};

fn kubectl() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/conformance/openotters/agents/kubectl/Agentfile")
}

/// Reads what `otters lsp` reads from disk for each check: the lock beside the file (the config
/// search is a few `stat`s more).
struct LockBeside;

impl Project for LockBeside {
    fn options(&self, path: Option<&Path>) -> Result<Options, String> {
        Ok(Options {
            locked: path
                .map(otters_pipeline::resolve::lockfile::pinned_beside)
                .unwrap_or_default(),
            ..Options::default()
        })
    }
}

fn change_to_publish(c: &mut Criterion) {
    let path = kubectl();
    let Ok(text) = std::fs::read_to_string(&path) else {
        // A plain clone has no corpus beside it (CI does). A benchmark's output is not captured.
        assert!(
            std::env::var_os("CI").is_none(),
            "{} is absent",
            path.display()
        );
        eprintln!("SKIP lsp benchmark: {} is absent", path.display());
        return;
    };
    assert!(text.lines().count() > 400);
    let uri = Url::from_file_path(&path).expect("absolute path");
    let edited = text.replacen("FROM ", "FORM ", 1);
    for (name, project) in [
        ("no_project", Box::new(NoProject) as Box<dyn Project>),
        ("lock_beside", Box::new(LockBeside)),
    ] {
        let mut state = State::new(project, Encoding::Utf16);
        state.open(uri.clone(), 0, text.clone());
        let mut version = 0;
        c.bench_function(&format!("did_change_to_publish/kubectl/{name}"), |b| {
            b.iter(|| {
                version += 1;
                let t = if version % 2 == 0 { &text } else { &edited };
                let change = TextDocumentContentChangeEvent {
                    range: None,
                    range_length: None,
                    text: t.clone(),
                };
                let published = state.change(&uri, version, vec![change]).expect("open");
                serde_json::to_vec(&published).expect("serialisable")
            });
        });
    }
}

criterion_group!(benches, change_to_publish);
criterion_main!(benches);
