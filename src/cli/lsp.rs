//! `otters lsp`: the language server over standard input and output (see docs/editors.md).
//!
//! The server checks each open document with the options `otters lint FILE` would use: the
//! `otters.toml` found from the file's directory (lint's own search), the references the
//! `Agentfile.lock` beside it pins, and its directory as the build context.
use super::CliResult;
use otters_agentfile::check::Options;
use otters_cli::lsp::Args;
use otters_lsp::{Lock, Pin, Role};
use otters_pipeline::project;
use otters_pipeline::resolve::lockfile::{self, lock_path_for, Lockfile};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// The project as `otters lint` sees it.
struct LintProject;

impl otters_lsp::Project for LintProject {
    fn options(&self, path: Option<&Path>) -> Result<Options, String> {
        let Some(path) = path else {
            return Ok(Options::default());
        };
        // The same steps as `otters lint FILE`.
        let store = super::otters_home().join("store");
        otters_pipeline::lint::options_for(path, &store).map_err(|e| e.to_string())
    }

    fn capabilities(&self, file: &Path) -> Result<Vec<String>, String> {
        project::read_capabilities(file).map_err(|e| e.to_string())
    }

    /// The build's reader: its format checks and its confinement of a symlinked lock.
    fn lock(&self, agentfile: &Path) -> Option<Lock> {
        let lock = Lockfile::read(&lock_path_for(agentfile)).ok().flatten()?;
        let pins = lock
            .images
            .into_iter()
            .map(|e| Pin {
                role: match e.role {
                    lockfile::Role::From => Role::From,
                    lockfile::Role::Runtime => Role::Runtime,
                    lockfile::Role::Bin => Role::Bin,
                },
                reference: e.reference,
                digest: e.digest.to_string(),
                index: e.index.map(|i| i.to_string()),
                platform: e.platform,
                description: e.description,
            })
            .collect();
        Some(Lock { pins })
    }

    /// This binary itself: `otters lock DIR`, `otters build DIR`.
    fn command(&self, what: &str, dir: &Path) -> Option<std::process::Command> {
        let mut cmd = std::process::Command::new(std::env::current_exe().ok()?);
        cmd.arg(what).arg(dir).env("NO_COLOR", "1");
        Some(cmd)
    }

    /// The build's own confinement of sources.
    fn source(&self, dir: &Path, src: &str) -> Option<PathBuf> {
        otters_pipeline::build::source_path(dir, src).ok()
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
