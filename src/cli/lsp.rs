//! `otters lsp`: the language server over standard input and output (see docs/editors.md).
//!
//! The server checks each open document with the options `otters lint FILE` would use: the
//! `otters.toml` found from the file's directory (lint's own search), the references the
//! `Agentfile.lock` beside it pins, and its directory as the build context.
use super::lint;
use super::CliResult;
use otters_agentfile::check::Options;
use std::path::Path;
use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Speak over standard input and output (the only transport; accepted because editors pass it)
    #[arg(long)]
    pub stdio: bool,
}

/// The project as `otters lint` sees it.
struct LintProject;

impl otters_lsp::Project for LintProject {
    fn options(&self, path: Option<&Path>) -> Result<Options, String> {
        let Some(path) = path else {
            return Ok(Options::default());
        };
        let dir = path
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        // TODO(h-entry): `otters_pipeline::project::ConfigFinder` once lint's search moves there.
        let cfg = lint::find_config(dir, &mut std::collections::BTreeMap::new())
            .map_err(|lint::Fatal(m)| m)?
            .unwrap_or_default();
        Ok(Options {
            severity_overrides: cfg.severity,
            portability: cfg.portability,
            locked: otters_pipeline::resolve::lockfile::pinned_beside(path),
            sources: Some(std::sync::Arc::new(lint::ContextDir(dir.to_path_buf()))),
            ..Options::default()
        })
    }
}

// Rationale: the signature is the one every dispatcher in cli/mod.rs has.
#[allow(clippy::unnecessary_wraps)]
pub fn run(_a: Args) -> CliResult {
    match otters_lsp::run_stdio(Box::new(LintProject)) {
        Ok(true) => Ok(ExitCode::SUCCESS),
        Ok(false) => Ok(ExitCode::FAILURE),
        Err(e) => {
            eprintln!("otters lsp: {}", otters_core::escape::escape(&e));
            Ok(ExitCode::FAILURE)
        }
    }
}
